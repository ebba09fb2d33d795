//go:build unix

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

// escapeMarker returns a sleep duration that names the processes of one test: a command
// line `sleep <marker>` no other process has, and that ends by itself within minutes if a
// test fails to kill it.
func escapeMarker(n int) string { return fmt.Sprintf("120.%d%d", os.Getpid(), n) }

// escapes is a command that leaves escapeCount processes `sleep marker` running in every
// way a tool's descendant can leave its process group, its session or its parent: setsid, a
// double fork (that one keeps the output open), nohup, and a daemon that detaches and forks.
func escapes(marker string) string {
	return strings.NewReplacer("M", marker).Replace(
		`setsid sleep M >/dev/null 2>&1 & (sleep M &); nohup sleep M >/dev/null 2>&1 & ` +
			`(setsid sh -c 'sleep M & exec sleep M' </dev/null >/dev/null 2>&1 &)`)
}

const escapeCount = 5

// startAnswered starts a bash call with args and answers "once" to every ask it makes.
func (e *env) startAnswered(callID string, a json.RawMessage) func() (*protocol.ExecuteResult, error) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(e.ctx)
	mark := e.d.Mark()
	_, wait := e.start(protocol.ExecuteParams{CallID: callID, Tool: "bash", Args: a})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			raw, pos, err := e.d.WaitFor(ctx, mark, "permission/asked", func(r json.RawMessage) bool {
				var a protocol.AskedParams
				return json.Unmarshal(r, &a) == nil && a.CallID == callID
			})
			if err != nil {
				return
			}
			mark = pos + 1
			var a protocol.AskedParams
			if json.Unmarshal(raw, &a) == nil {
				_ = e.reply(a.ID, "once", "")
			}
		}
	}()
	return func() (*protocol.ExecuteResult, error) {
		res, err := wait()
		cancel()
		<-done
		return res, err
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
	escaped := escapeMarker(0)
	e.startAllowed("escapes", escapes(escaped)+"; sleep "+marker)
	waitProcs(t, e.ctx, 21, "sleep", marker)
	waitProcs(t, e.ctx, escapeCount, "sleep", escaped)
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
	waitNoProcs(t, harness.Deadline(t, 5*time.Second), "sleep", escaped)
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
		escaped := escapeMarker(round)
		e.startAllowed(fmt.Sprintf("inflight%d", round), escapes(escaped)+"; sleep "+marker+" & sleep "+marker)
		waitProcs(t, e.ctx, 2, "sleep", marker)
		waitProcs(t, e.ctx, escapeCount, "sleep", escaped)
		e.d.Kill()
		// The guard kills the tool's whole tree when the daemon dies, escapees included.
		waitNoProcs(t, harness.Deadline(t, 5*time.Second), "sleep", marker)
		waitNoProcs(t, harness.Deadline(t, 5*time.Second), "sleep", escaped)

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

// Nothing a bash call starts outlives the call, however it left the call's process group or
// session: when the call completes or times out, every such process is dead before the
// result comes; when it is cancelled, soon after.
func TestEscapesDieWithTheCall(t *testing.T) {
	e := newEnv(t, envOpts{})

	t.Run("completed", func(t *testing.T) {
		m := escapeMarker(1)
		// The command ends once the test has seen every escapee running.
		wait := e.startAnswered("completed", args("command", escapes(m)+"; while [ ! -e go ]; do sleep 0.01; done; echo done"))
		waitProcs(t, e.ctx, escapeCount, "sleep", m)
		if err := os.WriteFile(filepath.Join(e.ws, "go"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := wait()
		if err != nil || res.Status != "completed" || res.Output != "done\n" {
			t.Fatalf("%+v %v", res, err)
		}
		if left := procsWithArgv("sleep", m); len(left) > 0 {
			t.Fatalf("processes %v outlived the call", left)
		}
	})

	t.Run("timed out", func(t *testing.T) {
		m := escapeMarker(2)
		res, err := e.startAnswered("timeout", args("command", escapes(m)+"; sleep 120", "timeout", 1500))()
		if err != nil || res.Status != "completed" || !strings.Contains(res.Output, "timed out") {
			t.Fatalf("%+v %v", res, err)
		}
		if left := procsWithArgv("sleep", m); len(left) > 0 {
			t.Fatalf("processes %v outlived the call", left)
		}
	})

	t.Run("cancelled", func(t *testing.T) {
		m := escapeMarker(3)
		wait := e.startAnswered("cancelled", args("command", escapes(m)+"; sleep 120"))
		waitProcs(t, e.ctx, escapeCount, "sleep", m)
		var cr protocol.CancelResult
		if err := e.d.Call(e.ctx, "tools/cancel", protocol.CancelParams{CallID: "cancelled"}, &cr); err != nil || !cr.Cancelled {
			t.Fatalf("tools/cancel: %+v %v", cr, err)
		}
		if _, err := wait(); harness.RPCError(err) != protocol.CodeRequestCancelled {
			t.Fatalf("cancelled execute answered %v, want -32800", err)
		}
		waitNoProcs(t, harness.Deadline(t, 5*time.Second), "sleep", m)
	})
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
