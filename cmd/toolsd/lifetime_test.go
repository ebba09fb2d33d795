package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolsd/toolsd/internal/harness"
	"github.com/toolsd/toolsd/protocol"
)

// procsWithArgv returns the pids whose command line is exactly argv.
func procsWithArgv(argv ...string) []int {
	want := []byte(strings.Join(argv, "\x00") + "\x00")
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Equal(b, want) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitNoProcs waits until no process runs argv, or fails at the deadline.
func waitNoProcs(t *testing.T, ctx context.Context, argv ...string) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if len(procsWithArgv(argv...)) == 0 {
			return
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("processes %v still running: %v", argv, procsWithArgv(argv...))
		}
	}
}

// waitProcs waits until n processes run argv.
func waitProcs(t *testing.T, ctx context.Context, n int, argv ...string) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for len(procsWithArgv(argv...)) < n {
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("want %d processes %v, have %v", n, argv, procsWithArgv(argv...))
		}
	}
}

// startAllowed starts a bash call and allows its ask once.
func (e *env) startAllowed(callID, command string) func() (*protocol.ExecuteResult, error) {
	e.t.Helper()
	mark := e.d.Mark()
	_, wait := e.start(protocol.ExecuteParams{CallID: callID, Tool: "bash", Args: args("command", command)})
	ask := e.waitAsk(mark, callID)
	if err := e.reply(ask.ID, "once", ""); err != nil {
		e.t.Fatal(err)
	}
	return wait
}

func TestEndOfInputKillsEverything(t *testing.T) {
	e := newEnv(t, envOpts{})
	marker := fmt.Sprint(6000 + os.Getpid()%1000)
	for i := range 10 {
		// Each command differs, or the third identical one would be a doom loop.
		e.startAllowed(fmt.Sprintf("sleep%d", i), fmt.Sprintf(": %d; sleep %s & sleep %s", i, marker, marker))
	}
	waitProcs(t, e.ctx, 20, "sleep", marker)
	closed := time.Now()
	_ = e.d.Stdin.Close()
	deadline := harness.Deadline(t, 2*time.Second)
	select {
	case <-e.d.Exited():
	case <-deadline.Done():
		t.Fatalf("daemon still running 2 s after end of input")
	}
	t.Logf("exited %v after end of input", time.Since(closed))
	waitNoProcs(t, harness.Deadline(t, 5*time.Second), "sleep", marker)
}

func TestKill9KeepsTheRecord(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "f.txt"), []byte("durable\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	st := filepath.Join(t.TempDir(), "store.db")
	marker := fmt.Sprint(7000 + os.Getpid()%1000)
	for round := range 3 {
		// A daemon serving its editor alone: killing it is killing the store's writer.
		e := newEnv(t, envOpts{ws: ws, store: st, args: []string{"--standalone"}})
		done := fmt.Sprintf("done%d", round)
		res, err := e.execute(protocol.ExecuteParams{CallID: done, Tool: "read", Args: args("filePath", "f.txt")})
		if err != nil || res.Status != "completed" {
			t.Fatalf("read: %+v %v", res, err)
		}
		e.startAllowed(fmt.Sprintf("inflight%d", round), "sleep "+marker+" & sleep "+marker)
		waitProcs(t, e.ctx, 2, "sleep", marker)
		e.d.Kill()
		// The guard kills the tool's process group when the daemon dies.
		waitNoProcs(t, harness.Deadline(t, 5*time.Second), "sleep", marker)

		// The next daemon on the same store finds everything.
		e2 := newEnv(t, envOpts{ws: ws, store: st})
		for r := 0; r <= round; r++ {
			var rec protocol.CallRecord
			if err := e2.d.Call(e2.ctx, "calls/get", protocol.CallsGetParams{SessionID: "s1", CallID: fmt.Sprintf("done%d", r)}, &rec); err != nil {
				t.Fatal(err)
			}
			if rec.Status != "completed" || !strings.Contains(rec.Output, "durable") {
				t.Fatalf("round %d: delivered call lost: %+v", round, rec)
			}
			if err := e2.d.Call(e2.ctx, "calls/get", protocol.CallsGetParams{SessionID: "s1", CallID: fmt.Sprintf("inflight%d", r)}, &rec); err != nil {
				t.Fatal(err)
			}
			if rec.Status != "interrupted" {
				t.Fatalf("round %d: in-flight call reads %q, want interrupted", round, rec.Status)
			}
		}
		if code, err := e2.d.Shutdown(e2.ctx); err != nil || code != 0 {
			t.Fatalf("shutdown: %d %v", code, err)
		}
	}
}

// Two editor windows on one workspace share its daemon: one store, one history, seen live.
func TestTwoWindowsShareOneDaemon(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "f.txt"), []byte("shared\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	st := filepath.Join(t.TempDir(), "store.db")
	a := newEnv(t, envOpts{ws: ws, store: st})
	b := newEnv(t, envOpts{ws: ws, store: st})
	if pids := harness.OwnerPIDs(harness.RuntimeDir(t)); len(pids) != 1 {
		t.Fatalf("want one owner, have %v", pids)
	}
	for i, e := range []*env{a, b} {
		res, err := e.execute(protocol.ExecuteParams{CallID: fmt.Sprint("c", i), Tool: "read", Args: args("filePath", "f.txt")})
		if err != nil || res.Status != "completed" {
			t.Fatalf("window %d: %+v %v", i, res, err)
		}
	}
	// Each window sees the other's call at once, and who made it.
	for _, e := range []*env{a, b} {
		var cl protocol.CallsListResult
		if err := e.d.Call(e.ctx, "calls/list", protocol.CallsListParams{}, &cl); err != nil {
			t.Fatal(err)
		}
		clients := map[string]string{}
		for _, x := range cl.Calls {
			if x.Client != nil {
				clients[x.CallID] = x.Client.ID
			}
		}
		if len(clients) != 2 || clients["c0"] == clients["c1"] || clients["c0"] == "" {
			raw, _ := json.Marshal(cl)
			t.Fatalf("calls of both windows, each with its client, not listed: %s", raw)
		}
		var one protocol.CallsListResult
		if err := e.d.Call(e.ctx, "calls/list", protocol.CallsListParams{Client: clients["c1"]}, &one); err != nil || len(one.Calls) != 1 || one.Calls[0].CallID != "c1" {
			t.Fatalf("calls/list by client: %+v %v", one, err)
		}
	}
	var cs protocol.ClientsParams
	if err := a.d.Call(a.ctx, "clients/list", nil, &cs); err != nil || len(cs.Clients) != 2 {
		t.Fatalf("clients/list: %+v %v", cs, err)
	}
}
