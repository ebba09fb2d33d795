package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"runtime/debug"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolsd/toolsd/store"
)

// Defaults of Options.
const (
	DefaultMaxFileBytes = 4 << 20
	DefaultMaxCallBytes = 256 << 20
	DefaultMaxFiles     = 200_000
)

// Attributions of a changed file (store.FileChange.Attribution).
const (
	// AttrCall: the tool reported the change itself, with its exact images.
	AttrCall = "call"
	// AttrDuring: found changed between the call's start and its end. toolsd compares the
	// workspace before and after; it cannot tell the call's change from one made by the
	// person or another program in that time.
	AttrDuring = "during"
	// AttrInterrupted: the daemon died during the call; found changed when it started
	// again, so changed during the call or while toolsd was not running.
	AttrInterrupted = "interrupted"
)

// Options configure Open.
type Options struct {
	// Workspace is the real absolute path of the workspace folder.
	Workspace string
	Store     *store.Store
	Logger    *slog.Logger
	// MaxFileBytes: a file larger than this is recorded as changed, its content not kept.
	MaxFileBytes int64
	// MaxCallBytes: content kept for one call (and read in one look at the workspace)
	// beyond this is not kept.
	MaxCallBytes int64
	// MaxFiles: a workspace with more files (not ignored) than this is not tracked.
	MaxFiles int
	// Git is the git binary ("" looks git up on PATH; "none" never uses git).
	Git string
	// NoJournal turns the change journal off: every look at the workspace walks it.
	NoJournal bool
	// OnJournal, if set, hears when the change journal stops serving (the kernel refused
	// an inotify watch or instance: every changing call then walks the workspace) and
	// when it serves again. Called from the tracker's goroutines; it must not block or
	// call the Tracker.
	OnJournal func(JournalStatus)
	// faults, in tests, make the kernel refuse watches and instances on purpose.
	faults *faults
	// In tests: beforeIndexWrite is called before each base of the index is written, and
	// waitIndex when a call waits for the first to be written.
	beforeIndexWrite, waitIndex func()
	// Skip, if set, leaves out a path (absolute) that is toolsd's own (its store file, when
	// it lies in the workspace, and the store's slot files).
	Skip func(abs string) bool
	Now  func() time.Time
}

// Tracker keeps the checkpoints of one workspace: what toolsd last saw of every file (the
// index), the windows of the changing calls in flight, and the records of finished ones.
// Safe for concurrent use. It owns one goroutine while it starts (the first look at the
// workspace, the recovery of calls a dead daemon left), joined by Close, and the journal's.
type Tracker struct {
	opts Options
	log  *slog.Logger
	st   *store.Store
	ws   string
	git  *gitRepo
	jr   *journal // nil: every sync walks the workspace
	own  []string // absolute paths never tracked (the journal's folder)

	// followed is jr, for Follow, which does not wait for a sync (syncMu) to read it.
	followed atomic.Pointer[journal]

	// After the kernel refused the journal (guarded by syncMu): when to try again, the
	// backoff, and the limits then (a change retries at once).
	retryAt  time.Time
	backoff  time.Duration
	limitsAt [2]int

	statusMu sync.Mutex // guards status, walked and walkTook
	status   JournalStatus
	walked   int64         // files and folders of the last walk of the whole workspace
	walkTook time.Duration // how long it took

	ready    chan struct{} // closed when the first look is done
	startErr error         // written before ready is closed
	stop     chan struct{}
	wg       sync.WaitGroup
	startMu  sync.Mutex // guards started and the closing of stop
	started  bool

	// syncMu serializes looks at the workspace (syncs) and the changes a revert makes.
	syncMu sync.Mutex
	// writeMu orders the index's writes to the store (a look's changes, and a base written
	// in the background) so that the store ends with what the index in memory says. Taken
	// before mu. It guards changes: how many changes were written since the last base.
	writeMu sync.Mutex
	changes int
	writing atomic.Bool // a base is being written (writeIndex)
	// durable is closed once the stored index is the one the first look found (at once
	// when it was loaded from the store, else when writeIndex wrote it).
	durable     chan struct{}
	durableOnce sync.Once
	// lastSync is when the previous sync started (guarded by syncMu).
	lastSync time.Time

	mu       sync.Mutex // guards index, windows and disabled
	index    *pathIndex
	windows  map[*Window]struct{}
	disabled string // why tracking is off; "" when on
}

// Open starts the first look at the workspace in the background: it loads the index, then
// takes the baseline of a workspace never seen (from its git index where it has one), or
// the changes since the daemon last ran, which it attributes to the calls a dead daemon left
// running. Open itself reads no index, so it returns at once; Begin waits for the look. In a
// folder that is not a git repository, whose first look reads every file, it starts only
// when something needs it (the first changing call), unless a dead daemon left calls
// running.
func Open(opts Options) (*Tracker, error) {
	if opts.Store == nil || opts.Workspace == "" {
		return nil, errors.New("checkpoint: Open needs a workspace and a store")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxFileBytes <= 0 {
		opts.MaxFileBytes = DefaultMaxFileBytes
	}
	if opts.MaxCallBytes <= 0 {
		opts.MaxCallBytes = DefaultMaxCallBytes
	}
	if opts.MaxFiles <= 0 {
		opts.MaxFiles = DefaultMaxFiles
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	t := &Tracker{
		opts: opts, log: opts.Logger.With("component", "checkpoint"), st: opts.Store, ws: opts.Workspace,
		ready: make(chan struct{}), stop: make(chan struct{}), durable: make(chan struct{}), index: newIndex(), windows: map[*Window]struct{}{},
	}
	open, err := t.st.OpenCheckpoints()
	if err != nil {
		return nil, err
	}
	if (opts.Git != "none" && inGitRepo(t.ws)) || len(open) > 0 {
		t.kick()
	}
	return t, nil
}

// inGitRepo reports whether ws or a folder above it has a .git (without running git).
func inGitRepo(ws string) bool {
	for dir := ws; ; {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return false
		}
		dir = parent
	}
}

// kick starts the first look at the workspace, once.
func (t *Tracker) kick() {
	t.startMu.Lock()
	defer t.startMu.Unlock()
	select {
	case <-t.stop:
		return
	default:
	}
	if t.started {
		return
	}
	t.started = true
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		t.startErr = t.start()
		if t.startErr != nil {
			t.log.Error("checkpoints are off: the first look at the workspace failed", "err", t.startErr)
			t.mu.Lock()
			t.disabled = "the first look at the workspace failed: " + t.startErr.Error()
			t.mu.Unlock()
		}
		close(t.ready)
		// The first look of a large workspace leaves a heap many times the index's size
		// (the walk, git's index, the base's encoding): give it back to the system once
		// the first base is stored too, rather than over the next minutes.
		select {
		case <-t.durable:
			debug.FreeOSMemory()
		case <-t.stop:
		}
	}()
}

// Ready starts the first look at the workspace if it has not started, and returns a channel
// closed once it is done.
func (t *Tracker) Ready() <-chan struct{} {
	t.kick()
	return t.ready
}

// Close stops the tracker and waits for its goroutines. Windows still open stay open in the
// store, as if the daemon had died: the next Open finishes them.
func (t *Tracker) Close() error {
	t.startMu.Lock()
	select {
	case <-t.stop:
		t.startMu.Unlock()
		return nil
	default:
	}
	close(t.stop)
	t.startMu.Unlock()
	t.wg.Wait()
	if t.jr != nil {
		t.jr.close()
	}
	return nil
}

// start is the first look at the workspace.
func (t *Tracker) start() error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-t.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	t.syncMu.Lock()
	defer t.syncMu.Unlock()
	begun := t.opts.Now()
	complete, err := t.st.CheckpointIndexComplete()
	if err == nil && !complete {
		err = t.st.StartCheckpointIndex()
	}
	if err != nil {
		return err
	}
	open, err := t.st.OpenCheckpoints()
	if err != nil {
		return err
	}
	// Calls a dead daemon left running: their windows take what changed since.
	var left []*Window
	t.mu.Lock()
	for _, cp := range open {
		w := &Window{t: t, ref: store.CallRef{SessionID: cp.SessionID, CallID: cp.CallID, Tool: cp.Tool}, exact: cp.Exact, started: cp.StartedAt,
			before: map[string]store.FileState{}, reported: map[string]bool{}, others: map[string]map[store.CallRef]bool{},
			concurrent: map[store.CallRef]bool{}, attr: map[string]string{}, interrupted: true, began: true}
		for _, f := range cp.Files {
			w.before[f.Path] = f.Before
			if cp.Exact {
				w.reported[f.Path] = true
			}
		}
		t.windows[w] = struct{}{}
		left = append(left, w)
	}
	t.mu.Unlock()

	// Three things at once, each its own share of the wait for the first look: the walk
	// (which starts the journal first, so that nothing changed during it is missed); the
	// index kept from the last run (nothing reads it before the look ends); and the git
	// repository, with its index when there is no stored index to start from.
	var wg sync.WaitGroup
	defer wg.Wait()
	var loadErr error
	if complete {
		wg.Go(func() { _, t.changes, loadErr = t.st.LoadCheckpointIndex(t.index.load) })
	}
	gl := &gitLook{}
	if t.opts.Git != "none" {
		fresh := !complete
		wg.Go(func() { gl.look(ctx, t.opts.Git, t.ws, fresh) })
	}
	all, err := t.walkAll(ctx)
	if err != nil {
		return err
	}
	wg.Wait()
	if loadErr != nil {
		return loadErr
	}
	t.git = gl.repo
	if complete {
		t.durableOnce.Do(func() { close(t.durable) })
		err = t.compareLocked(ctx, all)
	} else {
		if err = gl.finish(ctx, all); err != nil {
			t.log.Info("git check-attr failed: reading every file instead", "err", err)
		}
		err = t.baseline(ctx, begun, all, gl)
	}
	if err != nil {
		return err
	}
	t.lastSync = begun
	for _, w := range left {
		if err := w.closeLocked(ctx); err != nil {
			t.log.Warn("could not record the checkpoint of an interrupted call", "call", w.ref.CallID, "err", err)
		}
	}
	return nil
}

// wait waits for the first look at the workspace, and reports why tracking is off.
func (t *Tracker) wait(ctx context.Context) (string, error) {
	t.kick()
	select {
	case <-t.ready:
	case <-ctx.Done():
		return "", ctx.Err()
	case <-t.stop:
		return "the workspace is closing", nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.disabled, nil
}

// Window is one changing call's view of the workspace, from Begin to End. Owned by the
// call; its methods must not be called concurrently, except End after the tool returned.
type Window struct {
	t       *Tracker
	ref     store.CallRef
	exact   bool
	started time.Time
	began   bool
	off     string // why this call has no checkpoint
	notes   []string

	// Guarded by t.mu:
	before      map[string]store.FileState // each path changed since the window opened: its state then
	reported    map[string]bool            // exact windows: the paths the tool reported
	others      map[string]map[store.CallRef]bool
	concurrent  map[store.CallRef]bool
	attr        map[string]string // attribution other than the window's default
	interrupted bool
}

// NewWindow makes the window of a call. exact: the tool reports every file it changes
// (Before); otherwise the changes are what Begin and End find changed in the workspace.
func (t *Tracker) NewWindow(ref store.CallRef, exact bool) *Window {
	return &Window{t: t, ref: ref, exact: exact, before: map[string]store.FileState{}, reported: map[string]bool{},
		others: map[string]map[store.CallRef]bool{}, concurrent: map[store.CallRef]bool{}, attr: map[string]string{}}
}

// Begin opens the window: the call is about to change the workspace. For a window that is
// not exact it first takes stock of the workspace, so that a change the person made before
// is not counted as the call's. Calls after the first do nothing. Only ctx's error is
// returned: when the checkpoint cannot be kept the call runs without one (End says why).
func (w *Window) Begin(ctx context.Context) error {
	if w.began {
		return nil
	}
	w.began = true
	t := w.t
	off, err := t.wait(ctx)
	if err != nil {
		return err
	}
	if off != "" {
		w.off = off
		return nil
	}
	if !w.exact {
		// A daemon killed during the call must find, at its next start, the index the
		// call started from (a call that reports its files records their states itself).
		if t.opts.waitIndex != nil {
			t.opts.waitIndex()
		}
		select {
		case <-t.durable:
		case <-ctx.Done():
			return ctx.Err()
		case <-t.stop:
			w.off = "the workspace is closing"
			return nil
		}
	}
	t.syncMu.Lock()
	defer t.syncMu.Unlock()
	if !w.exact {
		if err := t.syncLocked(ctx); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			w.off = "toolsd could not look at the workspace before the call: " + err.Error()
			t.log.Warn("no checkpoint for a call", "call", w.ref.CallID, "err", err)
			return nil
		}
	}
	w.started = t.opts.Now().UTC()
	t.mu.Lock()
	for o := range t.windows {
		w.concurrent[o.ref] = true
		o.concurrent[w.ref] = true
	}
	t.windows[w] = struct{}{}
	cp := w.openRecordLocked()
	t.mu.Unlock()
	if err := t.st.UpdateCheckpoints(&store.CheckpointUpdate{Open: []*store.Checkpoint{cp}}); err != nil {
		w.off = "the checkpoint could not be recorded: " + err.Error()
		t.mu.Lock()
		delete(t.windows, w)
		t.mu.Unlock()
	}
	return nil
}

// openRecordLocked is the window's open checkpoint as the store keeps it. t.mu is held.
func (w *Window) openRecordLocked() *store.Checkpoint {
	cp := &store.Checkpoint{SessionID: w.ref.SessionID, CallID: w.ref.CallID, Tool: w.ref.Tool, Exact: w.exact, StartedAt: w.started, Files: []store.FileChange{}}
	for _, p := range sortedKeys(w.before) {
		if w.exact && !w.reported[p] {
			continue
		}
		cp.Files = append(cp.Files, store.FileChange{Path: p, Before: w.before[p], Attribution: w.defaultAttr()})
	}
	return cp
}

func (w *Window) defaultAttr() string {
	if w.exact {
		return AttrCall
	}
	return AttrDuring
}

// Before records a file the call is about to change, with its exact content and mode (data
// nil and existed false for a file about to be created). abs is a real path; a path
// outside the workspace is not tracked. The window is opened first if it was not.
func (w *Window) Before(ctx context.Context, abs string, data []byte, mode uint32, existed bool) error {
	if err := w.Begin(ctx); err != nil {
		return err
	}
	if w.off != "" {
		return nil
	}
	t := w.t
	rel, ok := t.rel(abs)
	if !ok {
		return nil
	}
	var st store.FileState
	var missing []string // folders the write will create
	if existed {
		st = store.FileState{Kind: store.KindFile, Mode: mode & 0o7777, Size: int64(len(data))}
		t.keep(&st, data, nil)
	} else {
		for d := path.Dir(rel); d != "." && d != "/"; d = path.Dir(d) {
			if _, err := os.Lstat(t.abs(d)); !errors.Is(err, os.ErrNotExist) {
				break
			}
			missing = append(missing, d)
		}
	}
	t.mu.Lock()
	if _, seen := w.before[rel]; !seen || !w.reported[rel] {
		w.before[rel] = st
	}
	w.reported[rel] = true
	for _, d := range missing {
		if !w.reported[d] {
			w.before[d] = store.FileState{}
			w.reported[d] = true
		}
	}
	cp := w.openRecordLocked()
	t.mu.Unlock()
	if err := t.st.UpdateCheckpoints(&store.CheckpointUpdate{Open: []*store.Checkpoint{cp}}); err != nil {
		t.log.Warn("recording a file's state before a change failed", "call", w.ref.CallID, "path", rel, "err", err)
	}
	return nil
}

// Note adds a note to the checkpoint (what the person should know about how its changes
// came about). Called by the call's goroutine, before End.
func (w *Window) Note(text string) {
	w.notes = append(w.notes, text)
}

// End closes the window: it takes stock of what changed (the reported files of an exact
// window, the whole workspace otherwise), records the checkpoint, and returns how many
// paths the call changed. A window never begun records nothing.
func (w *Window) End(ctx context.Context) (int, error) {
	if !w.began || w.off != "" {
		return 0, nil
	}
	t := w.t
	t.syncMu.Lock()
	defer t.syncMu.Unlock()
	if w.exact {
		t.mu.Lock()
		paths := sortedKeys(w.reported)
		t.mu.Unlock()
		if err := t.refreshLocked(ctx, paths); err != nil {
			w.notes = append(w.notes, "the files could not all be looked at after the call: "+err.Error())
		}
	} else if err := t.syncLocked(ctx); err != nil {
		w.notes = append(w.notes, "the workspace could not be looked at after the call: "+err.Error())
	}
	n, err := w.closeLockedN(ctx)
	return n, err
}

func (w *Window) closeLocked(ctx context.Context) error {
	_, err := w.closeLockedN(ctx)
	return err
}

// closeLockedN records the window's checkpoint and removes it. syncMu is held.
func (w *Window) closeLockedN(ctx context.Context) (int, error) {
	t := w.t
	t.mu.Lock()
	delete(t.windows, w)
	end := t.opts.Now().UTC()
	cp := &store.Checkpoint{SessionID: w.ref.SessionID, CallID: w.ref.CallID, Tool: w.ref.Tool, Exact: w.exact, Interrupted: w.interrupted,
		StartedAt: w.started, EndedAt: &end, Files: []store.FileChange{}, Notes: w.notes}
	for _, p := range sortedKeys(w.before) {
		if w.exact && !w.reported[p] {
			continue
		}
		before := w.before[p]
		after, ok := t.index.get(p)
		if !ok {
			after = store.FileState{}
		}
		if sameState(before, after) {
			continue
		}
		attr := w.defaultAttr()
		if a, ok := w.attr[p]; ok {
			attr = a
		}
		fc := store.FileChange{Path: p, Before: before, After: &after, Attribution: attr}
		for o := range w.others[p] {
			fc.AlsoTouchedBy = append(fc.AlsoTouchedBy, o)
		}
		sortRefs(fc.AlsoTouchedBy)
		cp.Files = append(cp.Files, fc)
	}
	for o := range w.concurrent {
		cp.Concurrent = append(cp.Concurrent, o)
	}
	sortRefs(cp.Concurrent)
	t.mu.Unlock()

	// Every state the checkpoint names must be kept: a before-image known only to the
	// workspace's git store is copied in now, within the call's budget.
	budget := t.opts.MaxCallBytes
	var fromGit []*store.FileState
	for i := range cp.Files {
		for _, s := range []*store.FileState{&cp.Files[i].Before, cp.Files[i].After} {
			if s.Kind != store.KindFile || s.NotKept != "" {
				continue
			}
			if budget -= s.Size; budget < 0 {
				s.NotKept = fmt.Sprintf("the call changed more than %d MiB of files", t.opts.MaxCallBytes>>20)
				continue
			}
			if s.Content == "" && s.Git != "" {
				fromGit = append(fromGit, s)
			}
		}
	}
	if len(fromGit) > 0 {
		t.copyFromGit(ctx, fromGit)
	}
	if err := t.st.UpdateCheckpoints(&store.CheckpointUpdate{Done: []*store.Checkpoint{cp}}); err != nil {
		return 0, fmt.Errorf("recording the checkpoint: %w", err)
	}
	return len(cp.Files), nil
}

// Off says why the window records nothing ("" when it does).
func (w *Window) Off() string { return w.off }

// applyLocked makes the index say what a look at the workspace found: for each changed path
// its new state (KindAbsent for a path gone). Every open window that had not seen the path
// change takes its old state as the state before it. t.mu is held.
func (t *Tracker) applyLocked(found map[string]store.FileState) (map[string]*store.FileState, []*store.Checkpoint) {
	delta := make(map[string]*store.FileState, len(found))
	touched := map[*Window]bool{}
	for p, now := range found {
		old, _ := t.index.get(p)
		if now.Kind == store.KindAbsent {
			t.index.del(p)
			delta[p] = nil
		} else {
			t.index.set(p, now)
			n := now
			delta[p] = &n
		}
		if sameState(old, now) {
			continue
		}
		var claim []*Window
		for w := range t.windows {
			if w.exact && !w.reported[p] {
				continue
			}
			claim = append(claim, w)
			if _, seen := w.before[p]; !seen {
				w.before[p] = old
				touched[w] = true
				if w.interrupted {
					w.attr[p] = AttrInterrupted
				}
			}
		}
		for _, w := range claim {
			for _, o := range claim {
				if o != w {
					if w.others[p] == nil {
						w.others[p] = map[store.CallRef]bool{}
					}
					w.others[p][o.ref] = true
				}
			}
		}
	}
	var open []*store.Checkpoint
	for w := range touched {
		if !w.interrupted {
			open = append(open, w.openRecordLocked())
		}
	}
	return delta, open
}

// sameState reports whether two states are the same file as far as a revert is concerned:
// kind, mode and content (or link target).
func sameState(a, b store.FileState) bool {
	if a.Kind != b.Kind || a.Mode != b.Mode {
		return false
	}
	switch a.Kind {
	case store.KindFile:
		return sameContent(a, b)
	case store.KindLink:
		return a.Link == b.Link
	}
	return true
}

// sameContent compares two files' bytes by whatever ids both have.
func sameContent(a, b store.FileState) bool {
	if a.Size != b.Size {
		return false
	}
	if a.Content != "" && b.Content != "" {
		return a.Content == b.Content
	}
	if a.Git != "" && b.Git != "" {
		return a.Git == b.Git
	}
	// Neither id (a file over the size cap): the stat identity is all there is.
	return a.Mtime == b.Mtime && a.Ctime == b.Ctime && a.Ino == b.Ino
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortRefs(rs []store.CallRef) {
	sort.Slice(rs, func(i, j int) bool {
		if rs[i].SessionID != rs[j].SessionID {
			return rs[i].SessionID < rs[j].SessionID
		}
		return rs[i].CallID < rs[j].CallID
	})
}
