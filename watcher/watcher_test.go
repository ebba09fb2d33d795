package watcher_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/toolsd/toolsd/watcher"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorder collects batches on a channel.
type recorder struct{ ch chan []string }

func newRecorder() *recorder { return &recorder{ch: make(chan []string, 100)} }

func (r *recorder) onChange(paths []string) { r.ch <- paths }

// waitFor reads batches until every path in want has been reported (in one or more
// batches), and returns all batches read. It fails after a deadline.
func (r *recorder) waitFor(t *testing.T, want ...string) [][]string {
	t.Helper()
	seen := map[string]bool{}
	var got [][]string
	deadline := time.After(5 * time.Second)
	for {
		missing := false
		for _, w := range want {
			if !seen[w] {
				missing = true
			}
		}
		if !missing {
			return got
		}
		select {
		case b := <-r.ch:
			got = append(got, b)
			for _, p := range b {
				seen[p] = true
			}
		case <-deadline:
			t.Fatalf("timed out waiting for %v; got batches %v", want, got)
		}
	}
}

func start(t *testing.T, opts watcher.Options) (*watcher.Watcher, *recorder) {
	t.Helper()
	r := newRecorder()
	opts.OnChange = r.onChange
	if opts.Debounce == 0 {
		opts.Debounce = 20 * time.Millisecond
	}
	w, err := watcher.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w, r
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// atomicWrite saves like editors do: a temporary file renamed over the target.
func atomicWrite(t *testing.T, path, content string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	write(t, tmp, content)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func TestWatch(t *testing.T) {
	cases := []struct {
		name string
		// setup runs before the watcher starts; act after. Both get the workspace.
		setup func(t *testing.T, ws string)
		act   func(t *testing.T, ws string)
		want  []string // relative to ws
	}{
		{
			name: "folder created after start",
			act: func(t *testing.T, ws string) {
				write(t, filepath.Join(ws, ".toolsd/tool/a.json"), "{}")
			},
			want: []string{".toolsd/tool/a.json"},
		},
		{
			name: "config file created with its folder",
			act: func(t *testing.T, ws string) {
				write(t, filepath.Join(ws, ".toolsd/config.json"), "{}")
			},
			want: []string{".toolsd/config.json"},
		},
		{
			name:  "edit in place",
			setup: func(t *testing.T, ws string) { write(t, filepath.Join(ws, ".toolsd/tool/a.json"), "{}") },
			act: func(t *testing.T, ws string) {
				write(t, filepath.Join(ws, ".toolsd/tool/a.json"), `{"description":"x"}`)
			},
			want: []string{".toolsd/tool/a.json"},
		},
		{
			name:  "atomic save of a config file",
			setup: func(t *testing.T, ws string) { write(t, filepath.Join(ws, ".toolsd/config.json"), "{}") },
			act: func(t *testing.T, ws string) {
				atomicWrite(t, filepath.Join(ws, ".toolsd/config.json"), `{"logLevel":"debug"}`)
			},
			want: []string{".toolsd/config.json"},
		},
		{
			name:  "delete",
			setup: func(t *testing.T, ws string) { write(t, filepath.Join(ws, ".toolsd/tool/a.json"), "{}") },
			act: func(t *testing.T, ws string) {
				if err := os.Remove(filepath.Join(ws, ".toolsd/tool/a.json")); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{".toolsd/tool/a.json"},
		},
		{
			name:  "folder deleted and created again",
			setup: func(t *testing.T, ws string) { write(t, filepath.Join(ws, ".toolsd/tool/a.json"), "{}") },
			act: func(t *testing.T, ws string) {
				if err := os.RemoveAll(filepath.Join(ws, ".toolsd")); err != nil {
					t.Fatal(err)
				}
				write(t, filepath.Join(ws, ".toolsd/tool/b.json"), "{}")
			},
			want: []string{".toolsd/tool/b.json"},
		},
		{
			name: "symlinked tool folder",
			setup: func(t *testing.T, ws string) {
				if err := os.MkdirAll(filepath.Join(ws, "shared/tools"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.MkdirAll(filepath.Join(ws, ".toolsd"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(filepath.Join(ws, "shared/tools"), filepath.Join(ws, ".toolsd/tool")); err != nil {
					t.Fatal(err)
				}
			},
			act: func(t *testing.T, ws string) {
				write(t, filepath.Join(ws, "shared/tools/a.json"), "{}")
			},
			want: []string{".toolsd/tool/a.json"},
		},
		{
			name: "symlinked tool folder re-pointed",
			setup: func(t *testing.T, ws string) {
				write(t, filepath.Join(ws, "one/a.json"), "{}")
				write(t, filepath.Join(ws, "two/b.json"), "{}")
				if err := os.MkdirAll(filepath.Join(ws, ".toolsd"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(filepath.Join(ws, "one"), filepath.Join(ws, ".toolsd/tool")); err != nil {
					t.Fatal(err)
				}
			},
			act: func(t *testing.T, ws string) {
				// As ln -sfn does: a new link renamed over the old one.
				tmp := filepath.Join(ws, ".toolsd/.tool.new")
				if err := os.Symlink(filepath.Join(ws, "two"), tmp); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(tmp, filepath.Join(ws, ".toolsd/tool")); err != nil {
					t.Fatal(err)
				}
				write(t, filepath.Join(ws, "two/c.json"), "{}")
			},
			want: []string{".toolsd/tool/b.json", ".toolsd/tool/c.json"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			if tc.setup != nil {
				tc.setup(t, ws)
			}
			_, r := start(t, watcher.Options{Paths: []string{
				filepath.Join(ws, ".toolsd/tool"),
				filepath.Join(ws, ".toolsd/config.json"),
			}})
			tc.act(t, ws)
			var want []string
			for _, p := range tc.want {
				want = append(want, filepath.Join(ws, p))
			}
			r.waitFor(t, want...)
		})
	}
}

func TestIrrelevantChangesAreNotReported(t *testing.T) {
	ws := t.TempDir()
	write(t, filepath.Join(ws, ".toolsd/tool/a.json"), "{}")
	cfg := filepath.Join(ws, ".toolsd/config.json")
	_, r := start(t, watcher.Options{Paths: []string{filepath.Join(ws, ".toolsd/tool"), cfg}})
	write(t, filepath.Join(ws, "main.go"), "package main")       // the workspace root is not watched
	write(t, filepath.Join(ws, ".toolsd/notes.txt"), "x")        // a sibling of the targets
	write(t, filepath.Join(ws, ".toolsd/.config.json.swp"), "x") // an editor's temp file
	write(t, cfg, "{}")
	for _, b := range r.waitFor(t, cfg) {
		for _, p := range b {
			if p != cfg {
				t.Errorf("reported an irrelevant path %s", p)
			}
		}
	}
}

func TestBurstIsOneBatch(t *testing.T) {
	ws := t.TempDir()
	dir := filepath.Join(ws, ".toolsd/tool")
	write(t, filepath.Join(dir, "seed.json"), "{}")
	_, r := start(t, watcher.Options{Paths: []string{dir}, Debounce: 100 * time.Millisecond})
	var want []string
	for i := range 50 {
		p := filepath.Join(dir, fmt.Sprintf("t%02d.json", i))
		want = append(want, p)
		for j := range 4 {
			write(t, p, fmt.Sprint(j))
		}
	}
	batches := r.waitFor(t, want...)
	if len(batches) > 2 {
		t.Errorf("a burst of 200 writes gave %d batches, want 1 (2 on a slow machine)", len(batches))
	}
	for _, b := range batches {
		if !slices.IsSorted(b) || len(slices.Compact(slices.Clone(b))) != len(b) {
			t.Errorf("batch not sorted and de-duplicated: %v", b)
		}
	}
}

// syncBuffer is a log sink safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestFallBackToPolling(t *testing.T) {
	cases := []struct {
		name    string
		opts    func(o *watcher.Options)
		wantLog string
	}{
		{
			name: "watch limit reached",
			opts: func(o *watcher.Options) {
				watcher.SetAddWatch(o, func(path string) error {
					return fmt.Errorf("inotify_add_watch %s: %w", path, syscall.ENOSPC)
				})
			},
			wantLog: "max_user_watches",
		},
		{
			name:    "no notifier",
			opts:    watcher.ForcePoll,
			wantLog: "polling instead",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			var logs syncBuffer
			dir := filepath.Join(ws, ".toolsd/tool")
			cfg := filepath.Join(ws, ".toolsd/config.json")
			opts := watcher.Options{
				Paths:        []string{dir, cfg},
				PollInterval: 10 * time.Millisecond,
				Logger:       slog.New(slog.NewTextHandler(&logs, nil)),
			}
			tc.opts(&opts)
			w, r := start(t, opts)
			if !w.Polling() {
				t.Fatal("watcher is not polling")
			}
			if !strings.Contains(logs.String(), tc.wantLog) {
				t.Errorf("log %q does not mention %q", logs.String(), tc.wantLog)
			}
			write(t, filepath.Join(dir, "a.json"), "{}")
			r.waitFor(t, filepath.Join(dir, "a.json"))
			atomicWrite(t, cfg, "{}")
			r.waitFor(t, cfg)
			if err := os.Remove(filepath.Join(dir, "a.json")); err != nil {
				t.Fatal(err)
			}
			r.waitFor(t, filepath.Join(dir, "a.json"))
		})
	}
}

func TestCloseWaitsForCallback(t *testing.T) {
	ws := t.TempDir()
	entered := make(chan struct{})
	release := make(chan struct{})
	var finished bool
	w, err := watcher.New(watcher.Options{
		Paths:    []string{ws + "/f"},
		Debounce: time.Millisecond,
		OnChange: func([]string) {
			close(entered)
			<-release
			finished = true
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	write(t, ws+"/f", "x")
	<-entered
	closed := make(chan struct{})
	go func() { w.Close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("Close returned while OnChange was running")
	default:
	}
	close(release)
	<-closed
	if !finished {
		t.Fatal("OnChange did not finish before Close returned")
	}
	w.Close() // a second Close is harmless
}

func TestBadOptions(t *testing.T) {
	for name, o := range map[string]watcher.Options{
		"no callback":   {Paths: []string{"/x"}},
		"relative path": {Paths: []string{"x"}, OnChange: func([]string) {}},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := watcher.New(o); err == nil {
				t.Fatal("want an error")
			}
		})
	}
}

// inotifyFDs counts this process's inotify instances.
func inotifyFDs(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	n := 0
	for _, fd := range fds {
		if l, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && l == "anon_inode:inotify" {
			n++
		}
	}
	return n
}

// TestOneInstanceShared: the Watchers of a process share one inotify instance (a scarce
// per-user resource); each still hears only about its own paths, one that closes leaves the
// other watching (also a folder both watch), and the last one closes the instance.
func TestOneInstanceShared(t *testing.T) {
	before := inotifyFDs(t)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	wa, ra := start(t, watcher.Options{Paths: []string{a, filepath.Join(dir, "both.json")}})
	wb, rb := start(t, watcher.Options{Paths: []string{b, filepath.Join(dir, "both.json")}})
	if n := inotifyFDs(t) - before; n != 1 {
		t.Fatalf("%d inotify instances for two watchers, want 1", n)
	}
	write(t, filepath.Join(a, "x.json"), "1")
	ra.waitFor(t, filepath.Join(a, "x.json"))
	write(t, filepath.Join(b, "y.json"), "1")
	for _, p := range rb.waitFor(t, filepath.Join(b, "y.json")) {
		for _, q := range p {
			if strings.HasPrefix(q, a) {
				t.Errorf("b heard about a's path %s", q)
			}
		}
	}
	wa.Close()
	atomicWrite(t, filepath.Join(dir, "both.json"), "2")
	rb.waitFor(t, filepath.Join(dir, "both.json"))
	write(t, filepath.Join(b, "z.json"), "1")
	rb.waitFor(t, filepath.Join(b, "z.json"))
	if wb.Polling() {
		t.Fatal("b polls")
	}
	wb.Close()
	if n := inotifyFDs(t) - before; n != 0 {
		t.Fatalf("%d inotify instances left after both closed", n)
	}
}

// TestWatchAgainAfterRefusal: a watcher that polls because the kernel refused a watch
// (max_user_watches) watches with inotify again once the kernel allows it, and reports what
// changed meanwhile and after; one polling because it was forced to stays polling.
func TestWatchAgainAfterRefusal(t *testing.T) {
	ws := t.TempDir()
	dir := filepath.Join(ws, ".toolsd/tool")
	var refuse atomic.Bool
	refuse.Store(true)
	opts := watcher.Options{Paths: []string{dir}, PollInterval: 10 * time.Millisecond}
	watcher.SetAddWatch(&opts, func(path string) error {
		if refuse.Load() {
			return fmt.Errorf("inotify_add_watch %s: %w", path, syscall.ENOSPC)
		}
		return nil
	})
	watcher.SetRetry(&opts, 20*time.Millisecond)
	w, r := start(t, opts)
	if !w.Polling() {
		t.Fatal("not polling while watches are refused")
	}
	write(t, filepath.Join(dir, "a.json"), "{}")
	r.waitFor(t, filepath.Join(dir, "a.json"))
	refuse.Store(false)
	// Watching again reports the folder's entries (they may have changed meanwhile).
	r.waitFor(t, filepath.Join(dir, "a.json"))
	if w.Polling() {
		t.Fatal("still polling after the kernel allowed watches again")
	}
	write(t, filepath.Join(dir, "b.json"), "{}")
	r.waitFor(t, filepath.Join(dir, "b.json"))

	forced := watcher.Options{Paths: []string{dir}, PollInterval: 10 * time.Millisecond}
	watcher.ForcePoll(&forced)
	watcher.SetRetry(&forced, 10*time.Millisecond)
	f, fr := start(t, forced)
	write(t, filepath.Join(dir, "c.json"), "{}")
	fr.waitFor(t, filepath.Join(dir, "c.json"))
	if !f.Polling() {
		t.Error("a watcher forced to poll stopped polling")
	}
}

// TestInotifyAddAfterClose: a share of the inotify instance that was closed watches nothing
// more (a user may still be reading its last events as it closes): Add says so, and does
// not touch the instance, even when it was the last share and the instance is gone.
func TestInotifyAddAfterClose(t *testing.T) {
	i, err := watcher.JoinInotify()
	if err != nil {
		t.Skip("no inotify here:", err)
	}
	dir := t.TempDir()
	if err := i.Add(dir); err != nil {
		t.Fatal(err)
	}
	i.Close()
	if err := i.Add(dir); !errors.Is(err, watcher.ErrLeft) {
		t.Fatalf("Add after Close: %v, want ErrLeft", err)
	}
	if i.Watched(dir) {
		t.Fatal("a closed share still watches its folder")
	}
}
