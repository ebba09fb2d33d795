package store

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolsd/toolsd/protocol"
)

const (
	crashWriterEnv = "TOOLSD_STORE_CRASH_WRITER"
	crashRoundEnv  = "TOOLSD_STORE_CRASH_ROUND"
)

// crashOutputLines is how many lines the writer puts in the output of call i: some outputs
// span several chunks.
func crashOutputLines(i int) int {
	if i%4 == 3 {
		return 30000 // ~700 KiB: three chunks
	}
	return 50 + i
}

func crashLine(id string, k int) string { return fmt.Sprintf("line %d of %s", k, id) }

// crashWriter is the child process of TestCrashDurability: it records calls as the session
// pipeline does (create running, stream an output, complete with the outputID) from two
// goroutines, and reports each step on stdout after the store returned. It never returns.
func crashWriter(path string) {
	round := os.Getenv(crashRoundEnv)
	s, err := Open(path, &Options{Timeout: 10 * time.Second})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	var outMu sync.Mutex // guards stdout lines
	say := func(format string, a ...any) {
		outMu.Lock()
		defer outMu.Unlock()
		fmt.Printf(format+"\n", a...)
	}
	say("open %s", s.Path())
	work := func(worker int) {
		for i := 0; ; i++ {
			id := fmt.Sprintf("r%s-w%d-%d", round, worker, i)
			r := newRec("crash", id)
			r.Status = protocol.StatusRunning
			if err := s.CreateCall(r); err != nil {
				say("error %v", err)
				os.Exit(2)
			}
			say("started %s", id)
			w, err := s.NewOutput("crash", id)
			if err != nil {
				say("error %v", err)
				os.Exit(2)
			}
			n := crashOutputLines(i)
			bw := bufio.NewWriterSize(w, 4096)
			for k := range n {
				bw.WriteString(crashLine(id, k))
				bw.WriteByte('\n')
			}
			if err := bw.Flush(); err != nil {
				say("error %v", err)
				os.Exit(2)
			}
			if err := w.Close(); err != nil {
				say("error %v", err)
				os.Exit(2)
			}
			err = s.UpdateCall("crash", id, func(r *protocol.CallRecord) {
				r.Status = protocol.StatusCompleted
				r.OutputID = w.ID()
				r.Truncated = true
				r.Output = "done " + id
			})
			if err != nil {
				say("error %v", err)
				os.Exit(2)
			}
			say("done %s %s %d", id, w.ID(), n)
		}
	}
	go work(1)
	work(0)
}

type crashDone struct {
	outputID string
	lines    int
}

// TestCrashDurability kills a writer process with SIGKILL in the middle of its writes,
// several times on the same file, and checks after each kill that every call it reported done
// is intact with its full output, and that every call it had started reads interrupted (or
// completed, if it finished between its last report and the kill).
func TestCrashDurability(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	path := t.TempDir() + "/toolsd.db"
	allDone := map[string]crashDone{}
	allStarted := map[string]bool{}
	totalInFlight := 0
	for round := range 4 {
		killAfter := 6 + 5*round
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashWriterEnv+"="+path, crashRoundEnv+"="+strconv.Itoa(round))
		cmd.Stderr = os.Stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		done := 0
		killed := false
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) == 0 {
				continue
			}
			switch f[0] {
			case "error":
				t.Fatalf("writer: %s", sc.Text())
			case "started":
				allStarted[f[1]] = true
			case "done":
				n, _ := strconv.Atoi(f[3])
				allDone[f[1]] = crashDone{outputID: f[2], lines: n}
				done++
			}
			if done >= killAfter && !killed {
				// SIGKILL: no deferred code, no Close; the writer is mid-write.
				if err := cmd.Process.Kill(); err != nil {
					t.Fatal(err)
				}
				killed = true
			}
		}
		err = cmd.Wait()
		timedOut := ctx.Err() != nil
		cancel()
		if timedOut {
			t.Fatalf("round %d: writer timed out", round)
		}
		if !killed {
			t.Fatalf("round %d: writer ended before it was killed: %v", round, err)
		}

		s, err := Open(path, nil)
		if err != nil {
			t.Fatalf("round %d: open after kill -9: %v", round, err)
		}
		for id, d := range allDone {
			rec, err := s.GetCall("crash", id)
			if err != nil {
				t.Fatalf("round %d: done call %s: %v", round, id, err)
			}
			if rec.Status != protocol.StatusCompleted || rec.OutputID != d.outputID || rec.Output != "done "+id {
				t.Fatalf("round %d: done call %s reads %+v", round, id, rec)
			}
			checkCrashOutput(t, s, id, d)
		}
		inFlight := 0
		for id := range allStarted {
			if _, ok := allDone[id]; ok {
				continue
			}
			rec, err := s.GetCall("crash", id)
			if err != nil {
				t.Fatalf("round %d: started call %s: %v", round, id, err)
			}
			switch rec.Status {
			case protocol.StatusInterrupted:
				inFlight++
			case protocol.StatusCompleted: // finished after its last report
			default:
				t.Fatalf("round %d: in-flight call %s reads %q", round, id, rec.Status)
			}
		}
		totalInFlight += inFlight
		// Nothing in the whole store is left pending or running.
		cursor := ""
		for {
			page, next, err := s.ListCalls("", MaxListLimit, cursor)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range page {
				if c.Status == protocol.StatusPending || c.Status == protocol.StatusRunning {
					t.Fatalf("round %d: %s still %s after recovery", round, c.CallID, c.Status)
				}
			}
			if next == "" {
				break
			}
			cursor = next
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if totalInFlight == 0 {
		t.Fatal("no kill hit a call in flight: the test did not test interruption")
	}
	t.Logf("%d calls done, %d interrupted", len(allDone), totalInFlight)
}

func checkCrashOutput(t *testing.T, s *Store, id string, d crashDone) {
	t.Helper()
	for _, off := range []int{0, d.lines / 2, max(0, d.lines-3)} {
		r, err := s.ReadOutput(d.outputID, off, 3)
		if err != nil {
			t.Fatalf("output of %s: %v", id, err)
		}
		if r.TotalLines != d.lines {
			t.Fatalf("output of %s: %d lines, want %d", id, r.TotalLines, d.lines)
		}
		var want []string
		for k := off; k < min(off+3, d.lines); k++ {
			want = append(want, crashLine(id, k))
		}
		if r.Content != strings.Join(want, "\n") {
			t.Fatalf("output of %s at %d: %q, want %q", id, off, r.Content, strings.Join(want, "\n"))
		}
	}
}

// TestTwoProcesses: a second process opening a store that a live daemon holds is refused at
// once (ErrLocked), and after the first dies (kill -9) the next Open gets everything it
// committed.
func TestTwoProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	path := t.TempDir() + "/toolsd.db"
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashWriterEnv+"="+path, crashRoundEnv+"=p")
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	done := map[string]crashDone{}
	deadline := time.After(30 * time.Second)
	waitDone := func(n int) {
		for len(done) < n {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatal("writer ended early")
				}
				f := strings.Fields(l)
				if len(f) > 0 && f[0] == "error" {
					t.Fatalf("writer: %s", l)
				}
				if len(f) == 4 && f[0] == "done" {
					k, _ := strconv.Atoi(f[3])
					done[f[1]] = crashDone{outputID: f[2], lines: k}
				}
			case <-deadline:
				t.Fatal("writer made no progress")
			}
		}
	}
	waitDone(2)

	// The writer holds the file: we are refused, without waiting long.
	if s, err := Open(path, &Options{Timeout: 100 * time.Millisecond}); !errors.Is(err, ErrLocked) {
		if s != nil {
			s.Close()
		}
		t.Fatalf("second process: %v, want ErrLocked", err)
	}
	waitDone(4) // the writer keeps working meanwhile

	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	for l := range lines { // drain before Wait
		f := strings.Fields(l)
		if len(f) == 4 && f[0] == "done" {
			k, _ := strconv.Atoi(f[3])
			done[f[1]] = crashDone{outputID: f[2], lines: k}
		}
	}
	_ = cmd.Wait()

	s := openAt(t, path, nil)
	for cid, d := range done {
		rec, err := s.GetCall("crash", cid)
		if err != nil || rec.Status != protocol.StatusCompleted {
			t.Fatalf("writer's call %s: %+v %v", cid, rec, err)
		}
		checkCrashOutput(t, s, cid, d)
	}
}
