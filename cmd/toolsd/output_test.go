//go:build unix

package main_test

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/toolsd/toolsd/protocol"
	"github.com/toolsd/toolsd/store"
)

// backlogArg makes the test binary a tool (see TestMain) that reports it is ready, waits for
// the test's go, then writes a file to stdout in one go, through a pipe grown to hold all of
// it, and exits: when the process is gone, all of its output still waits in the pipe.
//
//	test.binary __backlog FILE READY-FIFO GO-FIFO
const backlogArg = "__backlog"

func writeBacklog(args []string) int {
	file, ready, start := args[0], args[1], args[2]
	b, err := os.ReadFile(file)
	if err == nil {
		err = os.WriteFile(ready, []byte{'.'}, 0)
	}
	if err == nil {
		var f *os.File
		f, err = os.Open(start) // blocks until the test opens the fifo to write
		if err == nil {
			_ = f.Close()
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// Best effort: without it the pipe holds 64 KiB and the test is weaker, not wrong.
	growPipe(1, len(b))
	if _, err := os.Stdout.Write(b); err != nil {
		return 1
	}
	return 0
}

// Under load, every call's output comes back whole, byte for byte. Many bash calls run at
// once and end together, each writing a payload of 1 MiB into its output pipe and exiting,
// while busy processes load the CPU: all the payloads still wait in the pipes after their
// commands are gone, and the daemon takes seconds to read them. A daemon that stops reading a
// fixed time after a command exits (as it did, after a second) loses the end of most of
// them.
func TestOutputCompleteUnderLoad(t *testing.T) {
	const calls = 12
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ws, dir := t.TempDir(), t.TempDir()
	ready, start := filepath.Join(dir, "ready"), filepath.Join(dir, "go")
	for _, f := range []string{ready, start} {
		if err := syscall.Mkfifo(f, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Read and write: opening does not wait for a writer, and reads never see an end.
	readyR, err := os.OpenFile(ready, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer readyR.Close()
	// Lines of random text, 1 MiB of them; each call's payload starts at a different line.
	raw := make([]byte, (1<<20)/77*57)
	_, _ = rand.Read(raw)
	var lines []string
	for enc := base64.StdEncoding.EncodeToString(raw); enc != ""; enc = enc[76:] {
		lines = append(lines, enc[:76]+"\n")
	}
	payloads := make([]string, calls)
	for i := range payloads {
		k := i * len(lines) / calls
		payloads[i] = strings.Join(lines[k:], "") + strings.Join(lines[:k], "")
		if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("p%d.txt", i)), []byte(payloads[i]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e := newEnv(t, envOpts{ws: ws, options: map[string]any{"permission": map[string]any{"bash": "allow", "external_directory": "allow"}}})

	waits := make([]func() (*protocol.ExecuteResult, error), calls)
	for i := range calls {
		command := fmt.Sprintf("%s %s p%d.txt %s %s", self, backlogArg, i, ready, start)
		// Allowed by the rules above; an ask a stricter analysis may add is answered.
		waits[i] = e.startAnswered(fmt.Sprint("c", i), args("command", command))
	}
	// Once every tool is ready, let them all go at once.
	if deadline, ok := e.ctx.Deadline(); ok {
		_ = readyR.SetReadDeadline(deadline)
	}
	buf := make([]byte, calls)
	for n := 0; n < calls; {
		k, err := readyR.Read(buf[:calls-n])
		if err != nil {
			t.Fatalf("waiting for the tools to be ready: %v", err)
		}
		n += k
	}
	// Load the CPU while the daemon reads: busy processes take most of it.
	var burners []*exec.Cmd
	stopBurners := func() {
		for _, b := range burners {
			_ = b.Process.Kill()
			_ = b.Wait()
		}
		burners = nil
	}
	defer stopBurners()
	for range 4 * runtime.NumCPU() {
		b := exec.Command("sh", "-c", "while :; do :; done")
		if err := b.Start(); err != nil {
			t.Fatal(err)
		}
		burners = append(burners, b)
	}
	goW, err := os.OpenFile(start, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer goW.Close()

	results := make([]*protocol.ExecuteResult, calls)
	var wg sync.WaitGroup
	for i, wait := range waits {
		wg.Go(func() {
			res, err := wait()
			if err != nil {
				t.Errorf("call %d: %v", i, err)
			}
			results[i] = res
		})
	}
	wg.Wait()
	stopBurners()
	if code, err := e.d.Shutdown(e.ctx); err != nil || code != 0 {
		t.Fatalf("shutdown: %d %v", code, err)
	}
	st, err := store.Open(e.init.StorePath, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	lost := 0
	for i, res := range results {
		if res == nil {
			continue
		}
		if why := checkOutput(st, res, payloads[i]); why != "" {
			lost++
			t.Errorf("call %d: %s", i, why)
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d calls lost output", lost, calls)
	}
}

// checkOutput says how the result of a call differs from want, the output it should have:
// what the model sees must be want's head and tail, and the stored full output want itself.
func checkOutput(st *store.Store, res *protocol.ExecuteResult, want string) string {
	if res.Status != "completed" || !res.Truncated || res.OutputID == "" {
		return fmt.Sprintf("status %s, truncated %v, output id %q: %.200q", res.Status, res.Truncated, res.OutputID, res.Output)
	}
	head, rest, ok := strings.Cut(res.Output, "\n[... ")
	_, tail, ok2 := strings.Cut(rest, " ...]\n\n")
	if !ok || !ok2 || !strings.HasPrefix(want, head) || !strings.HasSuffix(want, tail) {
		return fmt.Sprintf("the output the model sees is not the head and tail of the payload: %.200q … %.200q", head, tail)
	}
	var lines []string
	for {
		page, err := st.ReadOutput(res.OutputID, len(lines), 1<<20)
		if err != nil {
			return err.Error()
		}
		if page.TotalBytes != int64(len(want)) {
			return fmt.Sprintf("stored %d bytes of %d", page.TotalBytes, len(want))
		}
		if page.Lines == 0 {
			break
		}
		lines = append(lines, strings.Split(page.Content, "\n")[:page.Lines]...)
	}
	if got := strings.Join(lines, "\n") + "\n"; got != want {
		return fmt.Sprintf("the stored output differs from the payload (%d bytes of %d)", len(got), len(want))
	}
	return ""
}
