package checkpoint

import (
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolsd/toolsd/internal/posix"

	"github.com/toolsd/toolsd/store"
)

// kernel plays the kernel's inotify limits for a tracker: it refuses watches (ENOSPC) or
// instances (EMFILE) while told to, and reports the limits it is told.
type kernel struct {
	refuseWatches, refuseInstances atomic.Bool
	watches                        atomic.Int64
	tries                          atomic.Int64 // journals started

	mu       sync.Mutex
	statuses []JournalStatus
	now      time.Time
}

func (k *kernel) opts(o *Options) {
	k.watches.Store(8192)
	k.now = time.Now()
	o.Now = func() time.Time { k.mu.Lock(); defer k.mu.Unlock(); return k.now }
	o.OnJournal = func(s JournalStatus) { k.mu.Lock(); k.statuses = append(k.statuses, s); k.mu.Unlock() }
}

func (k *kernel) faults(ws string) *faults {
	return &faults{
		newWatcher: func() error {
			k.tries.Add(1)
			if k.refuseInstances.Load() {
				return posix.EMFILE
			}
			return nil
		},
		addWatch: func(abs string) error {
			if k.refuseWatches.Load() && strings.HasPrefix(abs, ws) {
				return posix.ENOSPC
			}
			return nil
		},
		limits: func() [2]int { return [2]int{int(k.watches.Load()), 128} },
	}
}

func (k *kernel) last() JournalStatus {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.statuses) == 0 {
		return JournalStatus{Off: "(none said)"}
	}
	return k.statuses[len(k.statuses)-1]
}

func (k *kernel) advance(d time.Duration) { k.mu.Lock(); k.now = k.now.Add(d); k.mu.Unlock() }

// TestJournalRefusedSaidAndRecovered: when the kernel refuses the journal a watch, the
// tracker says so at once (OnJournal, Journal) with what it costs and the sysctl that fixes
// it, records every call's changes by walking, lets the watches it held go, and uses the
// journal again at the first changing call after the limit is raised — no restart.
func TestJournalRefusedSaidAndRecovered(t *testing.T) {
	k := &kernel{}
	k.refuseWatches.Store(true)
	var ws string
	e := newEnv(t, envOpts{files: base, journal: true, opts: func(o *Options) {
		k.opts(o)
		ws = o.Workspace
		o.faults = k.faults(ws)
	}})
	_ = ws
	s := k.last()
	if s.Off != "watches" || s != e.tr.Journal() {
		t.Fatalf("said %+v, Journal() %+v; want the watches refused", s, e.tr.Journal())
	}
	for _, want := range []string{"max_user_watches (8192, used up)", "walks the whole workspace", "files and folders", "/etc/sysctl.d/", "without a restart"} {
		if !strings.Contains(s.Message, want) {
			t.Errorf("the message lacks %q: %s", want, s.Message)
		}
	}
	if s.Fix != "sudo sysctl fs.inotify.max_user_watches=524288" {
		t.Errorf("fix %q", s.Fix)
	}
	if e.tr.jr != nil {
		t.Fatal("the refused journal still holds its watches")
	}
	ref := e.shell("echo walked >> a.txt")
	if ch := e.changes(ref); len(ch) != 1 || ch["a.txt"].Status != "modified" {
		t.Fatalf("a call while walking: %+v", ch)
	}
	// The limit is not raised and the backoff is not over: no new journal is tried.
	tries := k.tries.Load()
	k.refuseWatches.Store(false)
	e.shell("true")
	if k.tries.Load() != tries || e.tr.jr != nil {
		t.Fatalf("a journal was tried again before the backoff (%d tries, was %d)", k.tries.Load(), tries)
	}
	// The person raises the limit: the next changing call brings the journal back.
	k.watches.Store(524288)
	ref = e.shell("echo back >> b.txt")
	if e.tr.jr == nil || e.tr.Journal() != (JournalStatus{}) || k.last() != (JournalStatus{}) {
		t.Fatalf("after the limit was raised: journal %v, status %+v, said %+v", e.tr.jr != nil, e.tr.Journal(), k.last())
	}
	if ch := e.changes(ref); len(ch) != 1 || ch["b.txt"].Status != "modified" {
		t.Fatalf("the call that brought the journal back: %+v", ch)
	}
	ref = e.shell("echo journal >> dir/c.txt")
	if ch := e.changes(ref); len(ch) != 1 || ch["dir/c.txt"].Status != "modified" {
		t.Fatalf("a call with the journal: %+v", ch)
	}
	// Refused again later (a new folder): said again; after the backoff, without a change
	// of the limit, it is tried again.
	k.refuseWatches.Store(true)
	e.shell("mkdir -p newdir/sub && echo x > newdir/sub/f")
	if k.last().Off != "watches" || e.tr.jr != nil {
		// The refusal of newdir's watch is found by the call's look or by the next one.
		e.shell("true")
	}
	if k.last().Off != "watches" || e.tr.jr != nil {
		t.Fatalf("refused again: said %+v, journal %v", k.last(), e.tr.jr != nil)
	}
	k.refuseWatches.Store(false)
	tries = k.tries.Load()
	k.advance(maxRetry)
	e.shell("true")
	if k.tries.Load() != tries+1 || e.tr.jr == nil || k.last() != (JournalStatus{}) {
		t.Fatalf("after the backoff: %d tries (was %d), journal %v, said %+v", k.tries.Load(), tries, e.tr.jr != nil, k.last())
	}
}

// TestJournalInstancesRefused: no inotify instance to be had (max_user_instances) is said
// with its own fix, and recovered the same way.
func TestJournalInstancesRefused(t *testing.T) {
	k := &kernel{}
	k.refuseInstances.Store(true)
	e := newEnv(t, envOpts{files: base, journal: true, opts: func(o *Options) {
		k.opts(o)
		o.faults = k.faults(o.Workspace)
	}})
	if s := k.last(); s.Off != "instances" || s.Fix != "sudo sysctl fs.inotify.max_user_instances=1024" || !strings.Contains(s.Message, "max_user_instances (128, used up)") {
		t.Fatalf("said %+v", s)
	}
	ref := e.shell("echo walked >> a.txt")
	if ch := e.changes(ref); len(ch) != 1 {
		t.Fatalf("a call while walking: %+v", ch)
	}
	k.refuseInstances.Store(false)
	k.advance(minRetry)
	e.shell("true")
	if e.tr.jr == nil || k.last() != (JournalStatus{}) {
		t.Fatalf("after the backoff: journal %v, said %+v", e.tr.jr != nil, k.last())
	}
}

// TestTooLargeLetsWatchesGo: a workspace over MaxFiles is not tracked, and its journal does
// not keep the watches the walk took.
func TestTooLargeLetsWatchesGo(t *testing.T) {
	ws := t.TempDir()
	for p, body := range base {
		writeFile(t, filepath.Join(ws, p), body, 0o644)
	}
	st, err := store.Open(filepath.Join(t.TempDir(), "store.db"), &store.Options{Retention: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tr, err := Open(Options{Workspace: ws, Store: st, Git: "none", MaxFiles: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	<-tr.Ready()
	if tr.jr != nil {
		t.Fatal("an untracked workspace keeps its journal")
	}
	w := tr.NewWindow(store.CallRef{SessionID: "s", CallID: "c", Tool: "bash"}, false)
	if err := w.Begin(t.Context()); err != nil || !strings.Contains(w.Off(), "over the limit of 3") {
		t.Fatalf("Begin: %v, off %q", err, w.Off())
	}
}
