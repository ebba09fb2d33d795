package checkpoint

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolsd/toolsd/protocol"
	"github.com/toolsd/toolsd/store"
)

// The child process of TestKilledDuringFirstIndex: these say what it does, where.
const (
	crashEnv      = "TOOLSD_CHECKPOINT_CRASH"
	crashWSEnv    = "TOOLSD_CHECKPOINT_CRASH_WS"
	crashStoreEnv = "TOOLSD_CHECKPOINT_CRASH_STORE"
)

// crashChild opens the workspace as a daemon does, makes changing calls, says "ready" on
// stdout when it is where the parent kills it (kill -9), and never returns.
//
//   - "unwritten": the first look is done and its index is not in the store yet (its
//     writing is held): a call that reports its files (as edit does) changed a.txt and
//     ended, another is writing b.txt.
//   - "shell": a shell call changed a.txt, removed b.txt and made n.txt, and has not ended;
//     the index was written only once the call waited for it (Begin).
func crashChild(mode, ws, storePath string) {
	fail := func(err error) {
		fmt.Println("error", err)
		os.Exit(2)
	}
	st, err := store.Open(storePath, &store.Options{Retention: -1})
	if err != nil {
		fail(err)
	}
	opts := Options{Workspace: ws, Store: st}
	switch mode {
	case "unwritten":
		opts.beforeIndexWrite = func() { select {} }
	case "shell":
		// The index is written only once the call waits for it: a call that did not wait
		// would change the workspace before the store has the index it started from.
		release := make(chan struct{})
		opts.beforeIndexWrite = func() { <-release }
		opts.waitIndex = sync.OnceFunc(func() { close(release) })
	}
	tr, err := Open(opts)
	if err != nil {
		fail(err)
	}
	<-tr.Ready()
	ctx := context.Background()
	call := func(id, tool string, exact bool) *Window {
		if err := st.CreateCall(&protocol.CallRecord{SessionID: "s1", CallID: id, MessageID: "m", Tool: tool, Status: protocol.StatusRunning}); err != nil {
			fail(err)
		}
		return tr.NewWindow(store.CallRef{SessionID: "s1", CallID: id, Tool: tool}, exact)
	}
	edit := func(w *Window, name, body string) {
		abs := filepath.Join(ws, name)
		old, err := os.ReadFile(abs)
		if err != nil {
			fail(err)
		}
		if err := w.Before(ctx, abs, old, 0o644, true); err != nil {
			fail(err)
		}
		if err := os.WriteFile(abs, []byte(body), 0o644); err != nil {
			fail(err)
		}
	}
	switch mode {
	case "unwritten":
		w := call("c1", "edit", true)
		edit(w, "a.txt", "edited\n")
		if _, err := w.End(ctx); err != nil {
			fail(err)
		}
		edit(call("c2", "edit", true), "b.txt", "half\n")
	case "shell":
		w := call("c1", "bash", false)
		if err := w.Begin(ctx); err != nil {
			fail(err)
		}
		c := exec.Command("bash", "-c", "echo more >> a.txt && rm b.txt && echo new > n.txt")
		c.Dir = ws
		if out, err := c.CombinedOutput(); err != nil {
			fail(fmt.Errorf("%v: %s", err, out))
		}
	}
	fmt.Println("ready")
	select {}
}

// TestKilledDuringFirstIndex: a daemon killed (kill -9) right after the first look at a
// workspace, before or after its index reached the store, with a call ended and one in
// flight, loses nothing: the next start completes, each call's changes are in its
// checkpoint (the one in flight as interrupted), and reverting them gives back the files as
// they were.
func TestKilledDuringFirstIndex(t *testing.T) {
	if mode := os.Getenv(crashEnv); mode != "" {
		crashChild(mode, os.Getenv(crashWSEnv), os.Getenv(crashStoreEnv))
		return
	}
	files := map[string]string{"a.txt": "alpha\n", "b.txt": "beta\n", "dir/c.txt": "c\n"}
	for i := range 300 {
		files[fmt.Sprintf("many/%d/f%d.c", i%10, i)] = fmt.Sprintf("file %d\n", i)
	}
	for _, mode := range []string{"unwritten", "shell"} {
		t.Run(mode, func(t *testing.T) {
			e := &env{t: t, seq: 10}
			ws, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			e.ws = ws
			for p, body := range files {
				writeFile(t, filepath.Join(ws, p), body, 0o644)
			}
			gitRun(t, ws, "init", "-q")
			gitRun(t, ws, "add", "-A")
			gitRun(t, ws, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "init")
			before := e.snapshot()
			storePath := filepath.Join(t.TempDir(), "store.db")

			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			c := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestKilledDuringFirstIndex$")
			c.Env = append(os.Environ(), crashEnv+"="+mode, crashWSEnv+"="+ws, crashStoreEnv+"="+storePath, "GIT_CONFIG_NOSYSTEM=1", "HOME="+ws)
			out, err := c.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			c.Stderr = os.Stderr
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			lines := bufio.NewScanner(out)
			said := ""
			for lines.Scan() {
				if said = lines.Text(); said == "ready" || strings.HasPrefix(said, "error") {
					break
				}
			}
			_ = c.Process.Signal(syscall.SIGKILL)
			_ = c.Wait()
			if said != "ready" {
				t.Fatalf("the child said %q", said)
			}

			e.st, err = store.Open(storePath, &store.Options{Retention: -1})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { e.st.Close() })
			e.open(envOpts{git: true, journal: true})
			c1 := store.CallRef{SessionID: "s1", CallID: "c1"}
			switch mode {
			case "unwritten":
				// Made anew as a first look (the store's half-made index was not taken for
				// the workspace): a clean file comes from git's index, unread.
				if d, _ := e.tr.index.get("dir/c.txt"); d.Git == "" || d.Content != "" {
					t.Fatalf("the index made again: %+v is not from git's index", d)
				}
				c2 := store.CallRef{SessionID: "s1", CallID: "c2"}
				if ch := e.changes(c1); len(ch) != 1 || ch["a.txt"].Status != protocol.ChangeModified {
					t.Fatalf("the ended call: %+v", ch)
				}
				if ch := e.changes(c2); len(ch) != 1 || ch["b.txt"].Status != protocol.ChangeModified {
					t.Fatalf("the call in flight: %+v", ch)
				}
				e.revert(c2, false, false)
				e.revert(c1, false, false)
			case "shell":
				ch := e.changes(c1)
				if len(ch) != 3 || ch["a.txt"].Status != protocol.ChangeModified || ch["b.txt"].Status != protocol.ChangeDeleted || ch["n.txt"].Status != protocol.ChangeAdded {
					t.Fatalf("the shell call in flight: %+v", ch)
				}
				e.revert(c1, false, false)
			}
			if d := diffSnap(before, e.snapshot()); d != "" {
				t.Fatalf("after the reverts:\n%s", d)
			}
		})
	}
}

// TestCallsWhileFirstIndexWritten: calls made while the first index is being written to the
// store are checkpointed and revert correctly: one that reports its files goes ahead, a shell
// call waits for the writing (which here starts only once it waits).
func TestCallsWhileFirstIndexWritten(t *testing.T) {
	release := make(chan struct{})
	e := newEnv(t, envOpts{files: base, git: true, journal: true, opts: func(o *Options) {
		o.beforeIndexWrite = func() { <-release }
		o.waitIndex = sync.OnceFunc(func() { close(release) })
	}})
	before := e.snapshot()
	ctx := context.Background()
	edit := e.call("edit")
	w := e.tr.NewWindow(edit, true)
	abs := filepath.Join(e.ws, "a.txt")
	if err := w.Before(ctx, abs, []byte(base["a.txt"]), 0o644, true); err != nil {
		t.Fatal(err)
	}
	writeFile(t, abs, "edited\n", 0o644)
	if _, err := w.End(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-e.tr.durable:
		t.Fatal("the index was written before any call waited for it")
	default:
	}
	sh := e.shell("echo more >> b.txt && rm dir/c.txt && echo new > n.txt")
	if ch := e.changes(edit); len(ch) != 1 || ch["a.txt"].Status != protocol.ChangeModified {
		t.Fatalf("the edit: %+v", ch)
	}
	if ch := e.changes(sh); len(ch) != 3 || ch["b.txt"].Status != protocol.ChangeModified || ch["dir/c.txt"].Status != protocol.ChangeDeleted || ch["n.txt"].Status != protocol.ChangeAdded {
		t.Fatalf("the shell call: %+v", ch)
	}
	e.revert(edit, true, false)
	if d := diffSnap(before, e.snapshot()); d != "" {
		t.Fatalf("after the reverts:\n%s", d)
	}
}
