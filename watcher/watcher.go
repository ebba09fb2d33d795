// Package watcher reports settled bursts of changes to a set of files and folders, which may
// not exist yet, using fsnotify with a debounce and falling back to polling.
//
// A watched path is a file (a config file) or a folder (a tool folder, whose direct entries
// are watched). Since editors save by writing a temporary file and renaming it over the
// original, and since a folder may be created or deleted while the daemon runs, the watcher
// never watches files themselves: it watches each folder target and the nearest existing
// ancestor of every target, re-arming itself when a folder on the way appears or goes away.
// Folders are watched at their real (symlink-resolved) paths and, when a path component is a
// symlink, the folder holding the link is watched too, so that re-pointing the link is seen.
//
// Events are debounced with a timer that restarts on each event, then de-duplicated and
// delivered as one batch. The Watchers of a process share one inotify instance (instances
// are few per user: fs.inotify.max_user_instances). When the OS refuses another watch
// (inotify's max_user_watches, ENOSPC) or the instance, the watcher logs a warning and polls
// instead, trying inotify again every 30 s.
package watcher

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Defaults for Options.
const (
	DefaultDebounce     = 50 * time.Millisecond
	DefaultMaxWait      = time.Second
	DefaultPollInterval = 500 * time.Millisecond
)

// Options configure a Watcher.
type Options struct {
	// Paths are the absolute paths to watch: files or folders, existing or not.
	Paths []string
	// OnChange is called with the sorted, de-duplicated set of changed paths of each settled
	// burst. The paths are among Paths, under a folder of Paths, or ancestors of Paths (a
	// folder on the way that appeared or went away). It is called sequentially from one
	// goroutine that the Watcher owns, never concurrently with itself, and must not block
	// for long: changes that settle meanwhile are merged into the next call. It must not
	// call Close.
	OnChange func(paths []string)
	// Debounce is how long the paths must be quiet before a batch is delivered; each event
	// restarts it. Zero means DefaultDebounce.
	Debounce time.Duration
	// MaxWait bounds how long a continuous stream of events can hold a batch back. Zero
	// means DefaultMaxWait.
	MaxWait time.Duration
	// PollInterval is the polling period after a fall back to polling. Zero means
	// DefaultPollInterval.
	PollInterval time.Duration
	// Logger receives warnings (the fall back to polling, watch errors). nil means
	// slog.Default().
	Logger *slog.Logger

	// addWatch replaces fsnotify's Add, so tests can inject ENOSPC.
	addWatch func(path string) error
	// forcePollOnStart starts in polling mode, as if inotify could not be initialised.
	forcePollOnStart bool
	// retryEvery is how often a watcher that polls because the kernel refused a watch or
	// the instance tries inotify again. Zero means DefaultRetry.
	retryEvery time.Duration
}

// DefaultRetry is how often a watcher polling after a refusal of the kernel (inotify's
// limits) tries to watch again.
const DefaultRetry = 30 * time.Second

// Watcher watches a fixed set of paths. It owns two goroutines, which Close stops and joins.
// Its methods are safe for concurrent use.
type Watcher struct {
	opts    Options
	targets []string // cleaned absolute paths
	log     *slog.Logger

	done      chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup

	// Owned by the loop goroutine.
	sub     *subscription        // our share of the process's inotify instance; nil while polling
	watched map[string]watchInfo // by real folder path
	snap    map[string]fileState
	pending map[string]struct{}
	first   time.Time // when the oldest pending event arrived
	last    time.Time // when the newest pending event arrived
	timer   *time.Timer
	// A long burst (a checkout, a generator writing many files) with short pauses would
	// be cut into many batches: when a batch whose events kept coming for longer than the
	// debounce is followed soon by another, the debounce doubles (up to 8 times); anything
	// else resets it, so a person saving one file after another keeps the short debounce.
	lastFlush time.Time
	lastSpan  time.Duration
	factor    time.Duration

	readyMu sync.Mutex // guards ready
	ready   map[string]struct{}
	kick    chan struct{}

	pollingMu sync.Mutex // guards polling
	polling   bool

	// Owned by the loop goroutine: polling because the kernel refused (not forced), so
	// inotify is tried again from retryAt on.
	retry   bool
	retryAt time.Time
}

// watchInfo is a watched folder: the logical paths it stands for and the inode that was
// watched, so that a folder deleted and created again is watched anew.
type watchInfo struct {
	logical []string
	ino     uint64
}

type fileState struct {
	mode  os.FileMode
	size  int64
	mtime time.Time
	ino   uint64
}

// New starts watching. It fails only for bad options; an OS that refuses watches makes the
// watcher poll.
func New(opts Options) (*Watcher, error) {
	if opts.OnChange == nil {
		return nil, errors.New("watcher: OnChange is required")
	}
	if opts.Debounce <= 0 {
		opts.Debounce = DefaultDebounce
	}
	if opts.MaxWait <= 0 {
		opts.MaxWait = DefaultMaxWait
	}
	if opts.MaxWait < opts.Debounce {
		opts.MaxWait = opts.Debounce
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	if opts.retryEvery <= 0 {
		opts.retryEvery = DefaultRetry
	}
	w := &Watcher{
		opts:    opts,
		log:     opts.Logger,
		done:    make(chan struct{}),
		watched: map[string]watchInfo{},
		pending: map[string]struct{}{},
		ready:   map[string]struct{}{},
		kick:    make(chan struct{}, 1),
	}
	if w.log == nil {
		w.log = slog.Default()
	}
	w.log = w.log.With("component", "watcher")
	seen := map[string]bool{}
	for _, p := range opts.Paths {
		if !filepath.IsAbs(p) {
			return nil, fmt.Errorf("watcher: path %q is not absolute", p)
		}
		p = filepath.Clean(p)
		if !seen[p] {
			seen[p] = true
			w.targets = append(w.targets, p)
		}
	}
	w.timer = time.NewTimer(time.Hour)
	w.timer.Stop()

	if opts.forcePollOnStart {
		w.startPolling(errors.New("polling forced"))
	} else if sub, err := shared.join(); err != nil {
		w.startPolling(err)
	} else {
		w.sub = sub
		w.arm(false)
	}
	w.wg.Add(2)
	go w.loop()
	go w.deliver()
	return w, nil
}

// Polling reports whether the watcher has fallen back to polling.
func (w *Watcher) Polling() bool {
	w.pollingMu.Lock()
	defer w.pollingMu.Unlock()
	return w.polling
}

// Close stops watching and waits for the watcher's goroutines, including a running
// OnChange, to return. Safe to call more than once.
func (w *Watcher) Close() error {
	w.closeOnce.Do(func() {
		close(w.done)
	})
	w.wg.Wait()
	return nil
}

func (w *Watcher) loop() {
	defer w.wg.Done()
	defer w.timer.Stop()
	var tick *time.Ticker
	defer func() {
		if tick != nil {
			tick.Stop()
		}
		if w.sub != nil {
			shared.leave(w.sub)
		}
	}()
	for {
		var events <-chan fsnotify.Event
		var errs <-chan error
		var tickC <-chan time.Time
		if w.sub != nil {
			events, errs = w.sub.events, w.sub.errs
		} else {
			if tick == nil {
				tick = time.NewTicker(w.opts.PollInterval)
			}
			tickC = tick.C
		}
		select {
		case <-w.done:
			return
		case ev, ok := <-events:
			if !ok {
				w.startPolling(errors.New("fsnotify stopped"))
				continue
			}
			w.handle(ev)
		case err, ok := <-errs:
			if !ok {
				continue
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				// Events were lost: treat everything as changed.
				w.log.Warn("watcher: event queue overflowed; rescanning")
				for _, t := range w.targets {
					w.add(t)
				}
				w.arm(true)
				continue
			}
			w.log.Warn("watcher: error", "err", err)
		case <-tickC:
			w.poll()
			if w.retry && !time.Now().Before(w.retryAt) {
				w.watchAgain()
			}
		case <-w.timer.C:
			w.flush()
		}
	}
}

// handle takes one fsnotify event.
func (w *Watcher) handle(ev fsnotify.Event) {
	relevant := false
	for _, p := range w.logical(ev.Name) {
		if w.relevant(p) {
			w.add(p)
			relevant = true
		}
	}
	if ev.Op&(fsnotify.Remove|fsnotify.Rename) != 0 {
		// A watched folder that went away (or moved) has lost its watch here. Forget it, and
		// what is under it, so that arm watches the folder created in its place even when
		// the file system hands the new folder the same inode number.
		for real := range w.watched {
			if real == ev.Name || within(real, ev.Name) {
				if w.sub != nil {
					shared.remove(w.sub, real) // a moved folder keeps its watch; a removed one has none
				}
				delete(w.watched, real)
			}
		}
	}
	if relevant && ev.Op&(fsnotify.Create|fsnotify.Remove|fsnotify.Rename) != 0 {
		w.arm(true)
	}
}

// logical maps a real path from an event to the logical paths it stands for.
func (w *Watcher) logical(name string) []string {
	var out []string
	if wi, ok := w.watched[name]; ok {
		out = append(out, wi.logical...)
	}
	dir, base := filepath.Dir(name), filepath.Base(name)
	for _, l := range w.watched[dir].logical {
		out = append(out, filepath.Join(l, base))
	}
	if len(out) == 0 {
		out = append(out, name)
	}
	return out
}

// relevant reports whether a change at p can affect a target: p is a target, is inside a
// target folder, or is a folder on the way to a target.
func (w *Watcher) relevant(p string) bool {
	for _, t := range w.targets {
		if p == t || within(p, t) || within(t, p) {
			return true
		}
	}
	return false
}

// inTarget reports whether p is a target or inside a target folder.
func (w *Watcher) inTarget(p string) bool {
	for _, t := range w.targets {
		if p == t || within(p, t) {
			return true
		}
	}
	return false
}

// within reports whether p is strictly inside dir.
func within(p, dir string) bool {
	return len(p) > len(dir) && strings.HasPrefix(p, dir) && (p[len(dir)] == filepath.Separator || dir == string(filepath.Separator))
}

// add records a changed path and restarts the debounce timer.
func (w *Watcher) add(p string) {
	now := time.Now()
	if len(w.pending) == 0 {
		w.first = now
		if w.lastSpan > w.opts.Debounce && now.Sub(w.lastFlush) < 2*w.opts.Debounce*w.factor {
			w.factor = min(w.factor*2, 8)
		} else {
			w.factor = 1
		}
	}
	w.last = now
	w.pending[p] = struct{}{}
	d := w.opts.Debounce * max(w.factor, 1)
	if left := w.first.Add(w.opts.MaxWait).Sub(now); left < d {
		d = max(left, 0)
	}
	w.timer.Reset(d)
}

func (w *Watcher) flush() {
	if len(w.pending) == 0 {
		return
	}
	w.lastFlush = time.Now()
	w.lastSpan = w.last.Sub(w.first)
	w.readyMu.Lock()
	for p := range w.pending {
		w.ready[p] = struct{}{}
	}
	w.readyMu.Unlock()
	clear(w.pending)
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

func (w *Watcher) deliver() {
	defer w.wg.Done()
	for {
		select {
		case <-w.done:
			return
		case <-w.kick:
		}
		w.readyMu.Lock()
		batch := make([]string, 0, len(w.ready))
		for p := range w.ready {
			batch = append(batch, p)
		}
		clear(w.ready)
		w.readyMu.Unlock()
		if len(batch) == 0 {
			continue
		}
		sort.Strings(batch)
		w.opts.OnChange(batch)
	}
}

// desired computes the folders to watch: real path -> the logical paths it stands for.
func (w *Watcher) desired() map[string][]string {
	out := map[string][]string{}
	var addDir func(l string, depth int)
	addDir = func(l string, depth int) {
		real, err := filepath.EvalSymlinks(l)
		if err != nil {
			return
		}
		if !contains(out[real], l) {
			out[real] = append(out[real], l)
		}
		// A symlink on the way: watch the folder holding it, to see it re-pointed. A path
		// that is its own real path has none (EvalSymlinks looked at every component).
		if real != l && depth < 8 {
			for d := l; d != filepath.Dir(d); d = filepath.Dir(d) {
				if fi, err := os.Lstat(d); err == nil && fi.Mode()&os.ModeSymlink != 0 {
					addDir(filepath.Dir(d), depth+1)
				}
			}
		}
	}
	for _, t := range w.targets {
		if fi, err := os.Stat(t); err == nil && fi.IsDir() {
			addDir(t, 0)
		}
		for d := filepath.Dir(t); ; d = filepath.Dir(d) {
			if fi, err := os.Stat(d); err == nil && fi.IsDir() {
				addDir(d, 0)
				break
			}
			if d == filepath.Dir(d) {
				break
			}
		}
	}
	return out
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// arm brings the set of fsnotify watches in line with the file system. When report is
// set, the relevant entries of newly watched folders count as changed: they may have been
// created before the watch was in place.
func (w *Watcher) arm(report bool) {
	// A folder may appear between computing the wanted set and watching its parent; go
	// round until nothing new is wanted.
	for range 16 {
		if w.sub == nil || !w.armOnce(report) {
			return
		}
	}
}

// armOnce does one round of arm and reports whether it added a watch.
func (w *Watcher) armOnce(report bool) (added bool) {
	want := w.desired()
	for real := range w.watched {
		if _, ok := want[real]; !ok {
			shared.remove(w.sub, real)
			delete(w.watched, real)
		}
	}
	for real, logical := range want {
		ino := inode(real)
		old, had := w.watched[real]
		if had && old.ino != ino {
			had = false // deleted and created again: the old watch is gone
		}
		if !had {
			err := w.addWatch(real)
			if err != nil {
				if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EMFILE) {
					w.startPolling(err)
					if report {
						for _, t := range w.targets {
							w.add(t)
						}
					}
					return false
				}
				// The folder may have gone away meanwhile; its parent's event re-arms.
				w.log.Debug("watcher: cannot watch folder", "path", real, "err", err)
				delete(w.watched, real)
				continue
			}
		}
		w.watched[real] = watchInfo{logical: logical, ino: ino}
		added = added || !had
		if !had && report {
			entries, _ := os.ReadDir(real)
			for _, l := range logical {
				if w.inTarget(l) {
					w.add(l)
				}
				for _, e := range entries {
					if p := filepath.Join(l, e.Name()); w.inTarget(p) {
						w.add(p)
					}
				}
			}
		}
	}
	return added
}

func inode(path string) uint64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return inodeOf(fi)
}

func (w *Watcher) addWatch(path string) error {
	if w.opts.addWatch != nil {
		if err := w.opts.addWatch(path); err != nil {
			return err
		}
	}
	return shared.add(w.sub, path)
}

// watchAgain tries inotify again after a refusal: the kernel may allow it now (the limit
// was raised, other programs let watches go). What changed meanwhile is reported. Called
// from the loop goroutine.
func (w *Watcher) watchAgain() {
	sub, err := shared.join()
	if err != nil {
		w.retryAt = time.Now().Add(w.opts.retryEvery)
		return
	}
	w.sub = sub
	clear(w.watched)
	w.arm(true)
	if w.sub == nil {
		return // refused again: arm went back to polling
	}
	w.retry = false
	w.pollingMu.Lock()
	w.polling = false
	w.pollingMu.Unlock()
	w.log.Info("watcher: watching with the OS notifier again")
}

// startPolling switches to polling; after a refusal of the kernel (a limit) the loop tries
// inotify again every Options.retryEvery. Called from New or the loop goroutine.
func (w *Watcher) startPolling(cause error) {
	if w.sub != nil {
		shared.leave(w.sub)
		w.sub = nil
	}
	clear(w.watched)
	w.pollingMu.Lock()
	w.polling = true
	w.pollingMu.Unlock()
	limit := errors.Is(cause, syscall.ENOSPC) || errors.Is(cause, syscall.EMFILE)
	msg := "watcher: cannot watch with the OS notifier; polling instead"
	if errors.Is(cause, syscall.ENOSPC) {
		msg = "watcher: OS watch limit reached (raise fs.inotify.max_user_watches); polling instead"
	}
	if w.retry {
		w.log.Debug(msg, "err", cause) // said when it first happened
	} else {
		w.log.Warn(msg, "err", cause, "interval", w.opts.PollInterval)
	}
	w.retry = limit
	w.retryAt = time.Now().Add(w.opts.retryEvery)
	w.snap = w.scan()
}

// scan stats every target and the entries of target folders.
func (w *Watcher) scan() map[string]fileState {
	out := map[string]fileState{}
	stat := func(p string) (os.FileInfo, bool) {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, false
		}
		out[p] = stateOf(fi)
		return fi, true
	}
	for _, t := range w.targets {
		fi, ok := stat(t)
		if !ok || !fi.IsDir() {
			continue
		}
		entries, _ := os.ReadDir(t)
		for _, e := range entries {
			stat(filepath.Join(t, e.Name()))
		}
	}
	return out
}

func stateOf(fi os.FileInfo) fileState {
	s := fileState{mode: fi.Mode(), size: fi.Size(), mtime: fi.ModTime()}
	s.ino = inodeOf(fi)
	return s
}

func (w *Watcher) poll() {
	cur := w.scan()
	for p, s := range cur {
		if old, ok := w.snap[p]; !ok || old != s {
			w.add(p)
		}
	}
	for p := range w.snap {
		if _, ok := cur[p]; !ok {
			w.add(p)
		}
	}
	w.snap = cur
}
