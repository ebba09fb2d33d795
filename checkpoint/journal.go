package checkpoint

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/toolsd/toolsd/internal/posix"

	"github.com/toolsd/toolsd/internal/fspath"
	"github.com/toolsd/toolsd/watcher"
)

// journal lists the paths of the workspace touched since it was last drained, from inotify
// watches on every folder that is not ignored, so that a look at the workspace reads a
// handful of paths instead of walking it. It says when it cannot be trusted (a queue
// overflow, a folder renamed, an ignore file changed, a watch refused): the next look then
// walks the whole workspace, and the journal watches anew.
//
// A barrier makes a drain complete: the journal writes a file in a private folder it also
// watches and waits for that event; inotify queues the events of one instance in order, so
// every change made before the drain began has been read by then.
type journal struct {
	ws      string
	log     *slog.Logger
	private string // the barrier's folder, outside the workspace
	faults  *faults
	// onRefused is called (without any lock of the journal held) when the kernel first
	// refuses a watch: the journal cannot cover the workspace.
	onRefused func(error)

	mu      sync.Mutex // guards the fields below
	w       *watcher.Inotify
	dirty   map[string]bool // workspace-relative paths touched
	broken  string          // why the journal cannot be trusted until the next walk
	refused error           // the kernel refused a watch: the journal cannot cover the workspace
	gen     int             // incremented whenever broken is set
	barrier map[string]chan struct{}
	seq     int
	done    chan struct{}
	wg      sync.WaitGroup
	// What the sandbox's look at a confined command learns instead of walking (follow.go):
	// the git folders and git files seen (workspace-relative; some may be gone), the
	// folders no walk watched (ignored ones), the folders created since they were last
	// looked into, and the commands being followed.
	git       map[string]bool
	unwatched map[string]bool
	pending   map[string]bool
	followers map[*follower]struct{}
	// The listings of the unwatched folders' trees (ignored.go; not guarded by mu).
	listed *listings
}

// faults make the kernel's refusals happen on purpose, in tests (nil: none).
type faults struct {
	newWatcher func() error           // an error: inotify_init1 fails (max_user_instances)
	addWatch   func(abs string) error // an error: inotify_add_watch fails (max_user_watches)
	limits     func() [2]int          // the limits read instead of /proc/sys/fs/inotify
}

func newJournal(ws string, log *slog.Logger, f *faults, onRefused func(error)) (*journal, error) {
	private, err := os.MkdirTemp("", "toolsd-journal-")
	if err != nil {
		return nil, err
	}
	j := &journal{ws: ws, log: log, private: private, faults: f, onRefused: onRefused, dirty: map[string]bool{}, barrier: map[string]chan struct{}{},
		git: map[string]bool{}, unwatched: map[string]bool{}, pending: map[string]bool{}, followers: map[*follower]struct{}{},
		listed: newListings()}
	if err := j.restart(); err != nil {
		_ = os.RemoveAll(private)
		return nil, err
	}
	return j, nil
}

// restart replaces the watcher with a fresh one that watches only the private folder (and
// marks the journal broken: a walk must add the workspace's folders).
func (j *journal) restart() error {
	j.stopLoop()
	if j.faults != nil && j.faults.newWatcher != nil {
		if err := j.faults.newWatcher(); err != nil {
			return err
		}
	}
	// A share of the process's one inotify instance (instances are few per user); a new
	// share drops every watch of the old one.
	w, err := watcher.JoinInotify()
	if err != nil {
		return err
	}
	if err := j.add(w, j.private); err != nil {
		w.Close()
		return err
	}
	j.mu.Lock()
	j.w = w
	j.dirty = map[string]bool{}
	j.brokeLocked("the journal starts")
	j.done = make(chan struct{})
	j.mu.Unlock()
	j.wg.Add(1)
	go j.loop(w, j.done)
	return nil
}

func (j *journal) stopLoop() {
	j.mu.Lock()
	w, done := j.w, j.done
	j.w, j.done = nil, nil
	j.mu.Unlock()
	if w == nil {
		return
	}
	close(done)
	w.Close()
	j.wg.Wait()
}

func (j *journal) close() {
	j.stopLoop()
	_ = os.RemoveAll(j.private)
}

func (j *journal) brokeLocked(why string) {
	if j.broken == "" {
		j.broken = why
	}
	j.gen++
}

// loop reads the watcher's events until it is closed.
func (j *journal) loop(w *watcher.Inotify, done chan struct{}) {
	defer j.wg.Done()
	for {
		select {
		case <-done:
			return
		case ev, ok := <-w.Events():
			if !ok {
				return
			}
			// An error queued before this event (an overflow) counts first: the barrier's
			// event must not vouch for a journal that lost events before it.
			select {
			case err, ok := <-w.Errors():
				if ok {
					j.fault(err)
				}
			default:
			}
			if err := j.event(w, ev); err != nil && j.onRefused != nil {
				j.onRefused(err)
			}
		case err, ok := <-w.Errors():
			if !ok {
				return
			}
			j.fault(err)
		}
	}
}

// fault takes an error of the watcher: the journal cannot be trusted until the next walk.
func (j *journal) fault(err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if errors.Is(err, fsnotify.ErrEventOverflow) {
		j.brokeLocked("the event queue overflowed")
	} else {
		j.brokeLocked("watch error: " + err.Error())
	}
}

// event takes one event; it returns the error of a watch the kernel refused first.
func (j *journal) event(w *watcher.Inotify, ev fsnotify.Event) error {
	if filepath.Dir(ev.Name) == j.private {
		j.mu.Lock()
		if ch, ok := j.barrier[filepath.Base(ev.Name)]; ok && ev.Has(fsnotify.Create) {
			delete(j.barrier, filepath.Base(ev.Name))
			close(ch)
		}
		j.mu.Unlock()
		return nil
	}
	rel, ok := fspath.Within(j.ws, ev.Name)
	if !ok || rel == "." {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	base := filepath.Base(rel)
	switch {
	case base == ".gitignore" || base == ".ignore":
		j.brokeLocked("an ignore file changed")
	case ev.Has(fsnotify.Rename) && w.Watched(ev.Name):
		// A folder moved away: the watches below it would report under its old name.
		j.brokeLocked("a folder was renamed")
	}
	if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
		j.goneLocked(rel)
	}
	j.dirty[rel] = true
	if ev.Has(fsnotify.Create) {
		fi, err := os.Lstat(ev.Name)
		isDir := err == nil && fi.IsDir()
		j.createdLocked(rel, isDir)
		// A new folder is watched at once; the look that drains this path walks it, so
		// whatever was made in it before the watch is found too.
		if isDir {
			if err := j.add(w, ev.Name); err != nil {
				return j.addFailedLocked(err)
			}
		}
	}
	return nil
}

// add watches a folder, unless a fault refuses it.
func (j *journal) add(w *watcher.Inotify, abs string) error {
	if j.faults != nil && j.faults.addWatch != nil {
		if err := j.faults.addWatch(abs); err != nil {
			return err
		}
	}
	return w.Add(abs)
}

// watch adds a folder of the workspace (relative; "" for the workspace) during a walk, before
// the walk lists it.
func (j *journal) watch(rel string) {
	abs := j.ws
	if rel != "" {
		abs = filepath.Join(j.ws, filepath.FromSlash(rel))
	}
	j.mu.Lock()
	w := j.w
	j.mu.Unlock()
	if w == nil {
		return
	}
	if err := j.add(w, abs); err != nil {
		j.mu.Lock()
		first := j.addFailedLocked(err)
		j.mu.Unlock()
		if first != nil && j.onRefused != nil {
			j.onRefused(first)
		}
	}
}

// addFailedLocked handles a watch that could not be added: a folder gone meanwhile is no
// matter (its parent's events cover it); any other failure (the kernel's limit on watches)
// means the journal cannot cover the workspace. It returns err when it is the first
// refusal.
func (j *journal) addFailedLocked(err error) error {
	if errors.Is(err, posix.ENOENT) || errors.Is(err, posix.ENOTDIR) || errors.Is(err, watcher.ErrLeft) {
		return nil // gone; or the journal is closing
	}
	j.brokeLocked("a watch was refused: " + err.Error())
	if j.refused != nil {
		return nil
	}
	j.refused = err
	return err
}

// refusal is the first watch the kernel refused (nil: none).
func (j *journal) refusal() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.refused
}

// beginWalk prepares a walk of the whole workspace: a fresh watcher when the journal was
// broken, then the workspace folder watched. It returns the generation that endWalk needs.
func (j *journal) beginWalk() (int, error) {
	j.mu.Lock()
	fresh := j.broken != "" && j.broken != "the journal starts"
	refused := j.refused
	j.mu.Unlock()
	if refused != nil {
		// Watching anew would be refused again (max_user_watches): the tracker stops this
		// journal and starts another when watches may be free.
		return 0, refused
	}
	if fresh {
		if err := j.restart(); err != nil {
			return 0, err
		}
	}
	j.mu.Lock()
	gen := j.gen
	j.dirty = map[string]bool{}
	j.mu.Unlock()
	j.watch("")
	return gen, nil
}

// endWalk trusts the journal again after a walk that added every folder, unless it broke
// meanwhile. seen is what the walk found of git folders and of folders it left out.
func (j *journal) endWalk(gen int, seen *walkSeen) {
	j.mu.Lock()
	for _, p := range seen.git {
		j.git[p] = true
	}
	j.unwatched = make(map[string]bool, len(seen.unwatched))
	for _, p := range seen.unwatched {
		j.unwatched[p] = true
	}
	if j.gen == gen {
		j.broken = ""
	}
	j.mu.Unlock()
}

// settle returns once every event of a change made before the call has been read: it
// writes a file in the private folder and waits for its event.
func (j *journal) settle() error {
	j.mu.Lock()
	if j.w == nil {
		j.mu.Unlock()
		return errors.New("the journal is closed")
	}
	j.seq++
	name := fmt.Sprintf("b%d", j.seq)
	ch := make(chan struct{})
	j.barrier[name] = ch
	j.mu.Unlock()
	f, err := os.Create(filepath.Join(j.private, name))
	if err == nil {
		f.Close()
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			err = errors.New("the barrier event did not come")
		}
		_ = os.Remove(filepath.Join(j.private, name))
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	delete(j.barrier, name)
	if err != nil {
		j.brokeLocked("barrier: " + err.Error())
	}
	return err
}

// drain returns the paths touched since the last drain, once every event before the call is
// read; false when the journal cannot be trusted (the caller walks instead).
func (j *journal) drain() ([]string, bool) {
	j.mu.Lock()
	broken := j.broken != "" || j.w == nil
	j.mu.Unlock()
	if broken {
		return nil, false
	}
	err := j.settle()
	j.mu.Lock()
	defer j.mu.Unlock()
	if err != nil || j.broken != "" {
		return nil, false
	}
	out := make([]string, 0, len(j.dirty))
	for p := range j.dirty {
		out = append(out, p)
	}
	j.dirty = map[string]bool{}
	return out, true
}
