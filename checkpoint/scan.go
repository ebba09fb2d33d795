package checkpoint

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolsd/toolsd/internal/posix"

	"github.com/toolsd/toolsd/internal/fspath"
	"github.com/toolsd/toolsd/internal/fswalk"
	"github.com/toolsd/toolsd/store"
)

// rel is abs (a real path) relative to the workspace, slash-separated; false outside it
// (and for the workspace itself).
func (t *Tracker) rel(abs string) (string, bool) {
	r, ok := fspath.Within(t.ws, abs)
	if !ok || r == "." {
		return "", false
	}
	if t.skip(r) || fswalk.Ignored(t.ws, r, false) {
		return "", false
	}
	return r, true
}

// skip reports whether a workspace path is one of toolsd's own files (its store, if the
// person put it in the workspace; the journal's barrier folder), never tracked.
func (t *Tracker) skip(rel string) bool {
	abs := t.ws + string(filepath.Separator) + filepath.FromSlash(rel) // t.abs, without a Clean per entry of a walk
	for _, p := range t.own {
		if abs == p || strings.HasPrefix(abs, p+string(filepath.Separator)) {
			return true
		}
	}
	if t.opts.Skip != nil && t.opts.Skip(abs) {
		return true
	}
	return false
}

func (t *Tracker) skipEntry(rel string, _ bool) bool { return t.skip(rel) }

// statState is what lstat tells of a path: its kind, mode and stat identity.
func statState(st *posix.Stat_t) (store.FileState, bool) {
	s := store.FileState{Mode: uint32(st.Mode) & 0o7777, Size: st.Size, Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano(), Ino: st.Ino}
	switch st.Mode & posix.S_IFMT {
	case posix.S_IFREG:
		s.Kind = store.KindFile
	case posix.S_IFLNK:
		s.Kind = store.KindLink
		s.Mode = 0
	case posix.S_IFDIR:
		s.Kind = store.KindDir
		s.Size, s.Mtime, s.Ctime = 0, 0, 0 // a folder's times change with its entries
	default:
		return s, false // FIFOs, sockets, devices are not tracked
	}
	return s, true
}

// sameIdentity reports whether a path's stat identity is unchanged, so that its content is
// what the index says without reading it.
func sameIdentity(a, b store.FileState) bool {
	return a.Kind == b.Kind && a.Mode == b.Mode && a.Size == b.Size && a.Mtime == b.Mtime && a.Ctime == b.Ctime && a.Ino == b.Ino
}

// unchangedSince reports whether the file the index holds as old is still what it says
// without reading it: the same stat identity, and not racy. A state whose ctime is within
// racyMargin of the previous sync's start (the look that may have recorded it) or later
// cannot tell a write in the same tick of the file system's clock apart from itself (a
// write of the same size leaves every field equal): it is read again, once, as git does its
// "racily clean" entries. syncMu is held.
func (t *Tracker) unchangedSince(old, cur store.FileState) bool {
	if !sameIdentity(old, cur) {
		return false
	}
	return old.Kind != store.KindFile || t.lastSync.IsZero() || old.Ctime < t.lastSync.Add(-racyMargin).UnixNano()
}

// budget is how many bytes a look at the workspace may still store; with batch set, the
// contents go to the store in batches.
type budget struct {
	left  atomic.Int64
	batch *batcher
}

func newBudget(n int64) *budget {
	b := &budget{}
	b.left.Store(n)
	return b
}

func (b *budget) take(n int64) bool {
	if b == nil {
		return true
	}
	if b.left.Add(-n) < 0 {
		b.left.Add(n)
		return false
	}
	return true
}

// keep fills a file state's content ids from its bytes and stores them, unless over a cap.
func (t *Tracker) keep(s *store.FileState, data []byte, b *budget) {
	s.Content = store.ContentID(data)
	if t.git != nil {
		s.Git = t.git.blobID(data)
	}
	if int64(len(data)) > t.opts.MaxFileBytes {
		s.NotKept = fmt.Sprintf("larger than %d MiB", t.opts.MaxFileBytes>>20)
		return
	}
	if !b.take(int64(len(data))) {
		s.NotKept = fmt.Sprintf("more than %d MiB of files changed at once", t.opts.MaxCallBytes>>20)
		return
	}
	if b != nil && b.batch != nil {
		b.batch.add(data)
		return
	}
	if _, err := t.st.PutContent(data); err != nil {
		s.NotKept = "could not be stored: " + err.Error()
	}
}

// readAt completes the state of the path name in the open folder dirfd: a file's content
// (read, identified and kept), a link's target.
func (t *Tracker) readAt(dirfd int, name string, s store.FileState, b *budget) store.FileState {
	switch s.Kind {
	case store.KindLink:
		buf := make([]byte, 4096)
		if n, err := posix.Readlinkat(dirfd, name, buf); err == nil {
			s.Link = string(buf[:n])
			s.Size = int64(n)
		}
	case store.KindFile:
		if s.Size > t.opts.MaxFileBytes {
			s.NotKept = fmt.Sprintf("larger than %d MiB", t.opts.MaxFileBytes>>20)
			return s
		}
		fd, err := posix.Openat(dirfd, name, posix.O_RDONLY|posix.O_NONBLOCK|posix.O_NOCTTY|posix.O_NOFOLLOW|posix.O_CLOEXEC, 0)
		if err != nil {
			s.NotKept = "unreadable: " + err.Error()
			return s
		}
		f := os.NewFile(uintptr(fd), name)
		defer f.Close()
		var st posix.Stat_t
		if posix.Fstat(fd, &st) != nil || st.Mode&posix.S_IFMT != posix.S_IFREG {
			s.NotKept = "unreadable"
			return s
		}
		data, err := io.ReadAll(io.LimitReader(f, t.opts.MaxFileBytes+1))
		if err != nil {
			s.NotKept = "unreadable: " + err.Error()
			return s
		}
		// The identity after reading: a write during the read shows as a change next time.
		if after, ok := statState(&st); ok {
			s.Mode, s.Mtime, s.Ctime, s.Ino = after.Mode, after.Mtime, after.Ctime, after.Ino
		}
		s.Size = int64(len(data))
		t.keep(&s, data, b)
	}
	return s
}

// syncLocked brings the index up to date with the workspace: from the journal's list of
// paths touched since the last sync when it can be trusted, else by walking the whole
// workspace. syncMu is held.
func (t *Tracker) syncLocked(ctx context.Context) error {
	start := t.opts.Now()
	var err error
	if t.jr != nil {
		paths, ok := t.jr.drain()
		if ok {
			err = t.refreshLocked(ctx, paths)
			if err == nil {
				t.lastSync = start
			}
			return err
		}
	}
	if err = t.scanLocked(ctx); err == nil {
		t.lastSync = start
	}
	return err
}

// walked is one entry of a walk of the whole workspace: its path and its stat identity, in
// a form without pointers (a walk keeps one per path, 100,000 on a large tree).
type walked struct {
	rel string
	id  statID
}

type statID struct {
	kind               uint8 // index of kinds
	mode               uint32
	size, mtime, ctime int64
	ino                uint64
}

var kinds = [...]string{store.KindAbsent, store.KindFile, store.KindLink, store.KindDir}

func idOf(s store.FileState) statID {
	id := statID{mode: s.Mode, size: s.Size, mtime: s.Mtime, ctime: s.Ctime, ino: s.Ino}
	for i, k := range kinds {
		if s.Kind == k {
			id.kind = uint8(i)
		}
	}
	return id
}

// state is the FileState of a stat identity (no content ids).
func (id statID) state() store.FileState {
	return store.FileState{Kind: kinds[id.kind], Mode: id.mode, Size: id.size, Mtime: id.mtime, Ctime: id.ctime, Ino: id.ino}
}

// walkAll walks the whole workspace (up to MaxFiles entries), watching each folder before
// it lists it when the journal runs, and returns every entry that is not ignored with its
// stat identity, in path order (the index's). Entries that cannot be stat'ed, or of a kind
// not tracked, are left out.
func (t *Tracker) walkAll(ctx context.Context) ([]walked, error) {
	t.statusMu.Lock()
	hint := t.walked
	t.statusMu.Unlock()
	var mu sync.Mutex // guards all
	all := make([]walked, 0, hint+hint/8)
	var count atomic.Int64
	seen := &walkSeen{}
	gen, walkStart := t.beginWalk()
	err := fswalk.Walk(ctx, fswalk.Options{Root: t.ws, Workspace: t.ws, Dirs: true, Links: true, Skip: t.skipEntry, Left: seen.left}, func(e fswalk.Entry) {
		if count.Add(1) > int64(t.opts.MaxFiles) {
			return
		}
		seen.visit(e.Rel)
		if e.Dir && t.jr != nil {
			t.jr.watch(e.Rel)
		}
		var st posix.Stat_t
		if e.Lstat(&st) != nil {
			return
		}
		if cur, ok := statState(&st); ok {
			id := idOf(cur)
			mu.Lock()
			all = append(all, walked{e.Rel, id})
			mu.Unlock()
		}
	})
	if err != nil {
		return nil, err
	}
	if n := count.Load(); n > int64(t.opts.MaxFiles) {
		return nil, t.tooLarge(n)
	}
	t.endWalk(gen, walkStart, count.Load(), seen)
	slices.SortFunc(all, func(a, b walked) int { return strings.Compare(a.rel, b.rel) })
	return all, nil
}

// readAll reads the walked entries at the given positions (a file's content read,
// identified and kept; a link's target), a few at a time, and returns their states.
func (t *Tracker) readAll(ctx context.Context, all []walked, which []int, b *budget) ([]store.FileState, error) {
	out := make([]store.FileState, len(which))
	var wg sync.WaitGroup
	var next atomic.Int64
	for range min(4, len(which)) {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(which)) && ctx.Err() == nil; i = next.Add(1) - 1 {
				e := &all[which[i]]
				if out[i] = e.id.state(); out[i].Kind != store.KindDir {
					out[i] = t.readRel(e.rel, out[i], b)
				}
			}
		})
	}
	wg.Wait()
	return out, ctx.Err()
}

// scanLocked walks the workspace and applies what changed since the index. syncMu is held.
func (t *Tracker) scanLocked(ctx context.Context) error {
	all, err := t.walkAll(ctx)
	if err != nil {
		return err
	}
	return t.compareLocked(ctx, all)
}

// compareLocked applies what a walk of the whole workspace (all, in path order) found
// changed since the index: the entries whose stat identity changed are read, those the
// index has and the walk did not find are gone. syncMu is held.
func (t *Tracker) compareLocked(ctx context.Context, all []walked) error {
	idx := t.index // only syncMu holders write it
	var toRead []int
	gone := []string{}
	// Both are in path order: one pass over the two.
	i := 0
	fresh := func(upto string, last bool) {
		for ; i < len(all) && (last || all[i].rel < upto); i++ {
			toRead = append(toRead, i)
		}
	}
	idx.each(func(p string, old store.FileState) {
		fresh(p, false)
		if i < len(all) && all[i].rel == p {
			if !t.unchangedSince(old, all[i].id.state()) {
				toRead = append(toRead, i)
			}
			i++
			return
		}
		gone = append(gone, p)
	})
	fresh("", true)
	b := newBudget(t.opts.MaxCallBytes)
	read, err := t.readAll(ctx, all, toRead, b)
	if err != nil {
		return err
	}
	changed := map[string]store.FileState{}
	quiet := map[string]bool{}
	ignoreChanged := false
	for j, k := range toRead {
		p, s := all[k].rel, read[j]
		old, ok := idx.get(p)
		if ok && sameIdentity(old, s) && old.Content == s.Content && old.NotKept == s.NotKept {
			continue
		}
		changed[p] = s
		if b := path.Base(p); b == ".gitignore" || b == ".ignore" {
			ignoreChanged = true
		}
	}
	if ignoreChanged {
		// A path seen for the first time that the ignore files as they were before left out
		// was not made now: it is only newly seen. Tell it with the old ignore files.
		old := t.oldIgnoreFiles(changed, idx)
		for p, s := range changed {
			if _, ok := idx.get(p); !ok && fswalk.IgnoredWith(t.ws, p, s.Kind == store.KindDir, old) {
				quiet[p] = true
			}
		}
	}
	for _, p := range gone {
		changed[p] = store.FileState{}
		if _, err := os.Lstat(filepath.Join(t.ws, filepath.FromSlash(p))); err == nil {
			quiet[p] = true // still there, but ignored now
		}
	}
	return t.commitLocked(changed, quiet)
}

func (t *Tracker) tooLarge(n int64) error {
	t.mu.Lock()
	t.disabled = fmt.Sprintf("the workspace has more than %d files and folders that are not ignored", t.opts.MaxFiles)
	t.mu.Unlock()
	if t.jr != nil {
		// Tracking is off for good: the watches the walk took go back to the person.
		t.jr.close()
		t.jr, t.own = nil, nil
		t.followed.Store(nil)
	}
	return fmt.Errorf("checkpoint: %d files and folders: over the limit of %d", n, t.opts.MaxFiles)
}

// readRel is readAt for the workspace path rel.
func (t *Tracker) readRel(rel string, s store.FileState, b *budget) store.FileState {
	dir, name := path.Split(rel)
	dirfd, err := t.openDir(strings.TrimSuffix(dir, "/"))
	if err != nil {
		s.NotKept = "unreadable"
		return s
	}
	defer posix.Close(dirfd)
	return t.readAt(dirfd, name, s, b)
}

// openDir opens the workspace folder rel ("" for the workspace) without following a link.
func (t *Tracker) openDir(rel string) (int, error) {
	abs := t.ws
	if rel != "" {
		abs = filepath.Join(t.ws, filepath.FromSlash(rel))
	}
	return fspath.Open(abs, posix.O_RDONLY|posix.O_DIRECTORY)
}

// commitLocked applies changed paths to the index (quiet ones without telling any window),
// and persists the index and the open checkpoints that changed in one transaction.
func (t *Tracker) commitLocked(changed map[string]store.FileState, quiet map[string]bool) error {
	if len(changed) == 0 {
		return nil
	}
	loud := make(map[string]store.FileState, len(changed))
	t.writeMu.Lock()
	defer t.writeMu.Unlock()
	t.mu.Lock()
	idxDelta := map[string]*store.FileState{}
	for p, s := range changed {
		if quiet[p] {
			if s.Kind == store.KindAbsent {
				t.index.del(p)
				idxDelta[p] = nil
			} else {
				t.index.set(p, s)
				n := s
				idxDelta[p] = &n
			}
			continue
		}
		loud[p] = s
	}
	delta, open := t.applyLocked(loud)
	n := t.index.len()
	t.mu.Unlock()
	for p, s := range delta {
		idxDelta[p] = s
	}
	if err := t.st.UpdateCheckpoints(&store.CheckpointUpdate{Index: idxDelta, Open: open}); err != nil {
		return err
	}
	// Changes are written one by one; when they are many, they go into a new base.
	if t.changes += len(idxDelta); t.changes > max(foldAfter, n/4) {
		t.writeIndex(nil)
	}
	return nil
}

// refreshLocked looks at the given paths only (and below a folder among them that is new or
// gone) and applies what changed. syncMu is held.
func (t *Tracker) refreshLocked(ctx context.Context, paths []string) error {
	changed := map[string]store.FileState{}
	b := newBudget(t.opts.MaxCallBytes)
	idx := t.index
	var walkDirs []string
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return err
		}
		if p == "" || p == "." || t.skip(p) {
			continue
		}
		dir, name := path.Split(p)
		dirfd, err := t.openDir(strings.TrimSuffix(dir, "/"))
		var st posix.Stat_t
		if err == nil {
			err = posix.Fstatat(dirfd, name, &st, posix.AT_SYMLINK_NOFOLLOW)
		}
		cur, ok := store.FileState{}, false
		if err == nil {
			cur, ok = statState(&st)
		}
		if !ok {
			if dirfd >= 0 {
				posix.Close(dirfd)
			}
			// Gone (or no longer a file we track): it and everything the index has below it.
			if _, had := idx.get(p); had {
				changed[p] = store.FileState{}
			}
			idx.below(p, func(q string) { changed[q] = store.FileState{} })
			continue
		}
		if fswalk.Ignored(t.ws, p, cur.Kind == store.KindDir) {
			posix.Close(dirfd)
			continue
		}
		old, had := idx.get(p)
		if had && old.Kind == store.KindDir && cur.Kind != store.KindDir {
			idx.below(p, func(q string) { changed[q] = store.FileState{} })
		}
		if !had || !t.unchangedSince(old, cur) {
			if cur.Kind != store.KindDir || !had {
				cur = t.readAt(dirfd, name, cur, b)
			}
			changed[p] = cur
		}
		posix.Close(dirfd)
		if cur.Kind == store.KindDir && (!had || old.Kind != store.KindDir) {
			walkDirs = append(walkDirs, p)
		}
	}
	for _, d := range walkDirs {
		var mu sync.Mutex
		root := filepath.Join(t.ws, filepath.FromSlash(d))
		if t.jr != nil {
			t.jr.watch(d)
		}
		err := fswalk.Walk(ctx, fswalk.Options{Root: root, Workspace: t.ws, Dirs: true, Links: true, Skip: func(rel string, isDir bool) bool { return t.skipEntry(d+"/"+rel, isDir) }}, func(e fswalk.Entry) {
			rel := d + "/" + e.Rel
			if e.Dir && t.jr != nil {
				t.jr.watch(rel)
			}
			var st posix.Stat_t
			if e.Lstat(&st) != nil {
				return
			}
			cur, ok := statState(&st)
			if !ok {
				return
			}
			if old, ok := idx.get(rel); ok && t.unchangedSince(old, cur) {
				return
			}
			cur = t.readRel(rel, cur, b)
			mu.Lock()
			changed[rel] = cur
			mu.Unlock()
		})
		if err != nil && !errors.Is(err, fspath.ErrSymlink) && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return t.commitLocked(changed, nil)
}

// baseline makes the index of a workspace never seen from a walk of it (all): every
// file's state, its bytes kept, except for files that are exactly what the workspace's git
// index says (gl; their blobs are in git's object store: reading them would cost a read of
// the whole repository). syncMu is held.
func (t *Tracker) baseline(ctx context.Context, start time.Time, all []walked, gl *gitLook) error {
	// Every path is new to the index, and none is a change. Both lists are in path order:
	// one pass takes a file whose stat is what git's index says from git, unread.
	states := make([]store.FileState, len(all))
	fromGit, g := 0, 0
	var toRead []int
	for i, e := range all {
		states[i] = e.id.state()
		if states[i].Kind == store.KindDir {
			continue
		}
		for g < len(gl.clean) && string(gl.clean[g].name) < e.rel {
			g++
		}
		if g < len(gl.clean) && string(gl.clean[g].name) == e.rel && !gl.converts(e.rel) && gl.clean[g].matches(states[i], gl.racy) {
			states[i].Git = hex.EncodeToString(gl.clean[g].oid)
			fromGit++
			continue
		}
		toRead = append(toRead, i)
	}
	b := newBudget(4 * t.opts.MaxCallBytes)
	b.batch = &batcher{st: t.st}
	read, err := t.readAll(ctx, all, toRead, b)
	if err != nil {
		return err
	}
	if err := b.batch.flush(); err != nil {
		return fmt.Errorf("storing the workspace's files: %w", err)
	}
	for j, i := range toRead {
		states[i] = read[j]
	}
	t.log.Info("first look at the workspace", "paths", len(all), "fromGit", fromGit, "took", t.opts.Now().Sub(start))
	// The store gets the states as the index's first base, written from them while the
	// index is built.
	t.writeIndex(func(yield func(string, *store.FileState) bool) {
		for i := range all {
			if !yield(all[i].rel, &states[i]) {
				return
			}
		}
	})
	t.mu.Lock()
	for i, e := range all {
		t.index.set(e.rel, states[i])
	}
	t.mu.Unlock()
	return nil
}

// foldAfter is how many changes written one by one make a new base (with a quarter of the
// index, if that is more).
var foldAfter = 4096

// writeIndex writes a base of the index to the store (in one transaction: a few MiB for
// 100,000 paths), from a goroutine, one at a time: the first look's entries (first, in path
// order: the changes written meanwhile are newer and stay), or the whole index when the
// changes written since the last base are many (first nil: commitLocked). Until the first
// is written, a call that looks at the workspace waits for it (Begin): if the daemon dies
// during the call, the next start must find the index the call started from. Close waits
// for it.
func (t *Tracker) writeIndex(first func(yield func(string, *store.FileState) bool)) {
	if !t.writing.CompareAndSwap(false, true) {
		return
	}
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		defer t.writing.Store(false)
		stored := func() { t.durableOnce.Do(func() { close(t.durable) }) }
		defer stored() // also when the writing failed: calls go on (without it)
		if t.opts.beforeIndexWrite != nil {
			t.opts.beforeIndexWrite()
		}
		start := t.opts.Now()
		each, fold := first, first == nil
		if fold {
			// Changes committed after the copy wait for writeMu: the base cannot drop them.
			t.writeMu.Lock()
			t.mu.Lock()
			each = t.index.clone().ascend
			t.mu.Unlock()
		}
		err := t.st.WriteCheckpointIndex(each, fold)
		if fold {
			if err == nil {
				t.changes = 0
			}
			t.writeMu.Unlock()
		}
		first, each = nil, nil // the first look's entries, for kick's FreeOSMemory
		if err != nil {
			t.log.Warn("writing the workspace's index failed", "err", err)
			return
		}
		stored()
		t.log.Debug("the workspace's index is written", "fold", fold, "took", t.opts.Now().Sub(start))
		if fold {
			debug.FreeOSMemory() // as after the first look (kick)
		}
	}()
}

// beginWalk readies the journal for a walk of the whole workspace (which watches every
// folder it lists), starting one first when there is none and the kernel may allow it now.
// It returns the generation that endWalk needs.
func (t *Tracker) beginWalk() (int, time.Time) {
	start := t.opts.Now()
	t.retryJournal()
	if t.jr == nil {
		return 0, start
	}
	gen, err := t.jr.beginWalk()
	if err != nil {
		t.dropJournal(err)
	}
	return gen, start
}

// endWalk trusts the journal again after a walk of n entries, unless the kernel refused it a
// watch meanwhile: then the journal stops.
func (t *Tracker) endWalk(gen int, start time.Time, n int64, seen *walkSeen) {
	t.statusMu.Lock()
	t.walked, t.walkTook = n, t.opts.Now().Sub(start)
	t.statusMu.Unlock()
	if t.jr == nil {
		return
	}
	if err := t.jr.refusal(); err != nil {
		t.dropJournal(err)
		return
	}
	t.jr.endWalk(gen, seen)
	t.journalServes()
}

// batcher stores contents in batches of a few MiB, one transaction each (the first look
// at a workspace that is not a git repository stores every file). Safe for concurrent use.
type batcher struct {
	st   *store.Store
	mu   sync.Mutex // guards the fields below
	pend [][]byte
	size int
	err  error
}

const batchBytes = 8 << 20

func (b *batcher) add(data []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pend = append(b.pend, data)
	b.size += len(data)
	if b.size >= batchBytes || len(b.pend) >= 2048 {
		b.flushLocked()
	}
}

func (b *batcher) flushLocked() {
	if len(b.pend) == 0 {
		return
	}
	if _, err := b.st.PutContents(b.pend); err != nil && b.err == nil {
		b.err = err
	}
	b.pend, b.size = nil, 0
}

// flush stores what is pending and returns the first error of any batch.
func (b *batcher) flush() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.flushLocked()
	return b.err
}

// oldIgnoreFiles is the content before this look of every ignore file that changed in it
// (nil for one that did not exist), for fswalk.IgnoredWith.
func (t *Tracker) oldIgnoreFiles(changed map[string]store.FileState, idx *pathIndex) map[string][]byte {
	out := map[string][]byte{}
	for p := range changed {
		if b := path.Base(p); b != ".gitignore" && b != ".ignore" {
			continue
		}
		old, ok := idx.get(p)
		if !ok || old.Kind != store.KindFile {
			out[p] = nil
			continue
		}
		if old.Content != "" && old.NotKept == "" {
			if data, err := t.st.Content(old.Content); err == nil {
				out[p] = data
				continue
			}
		}
		if old.Git != "" && t.git != nil {
			if blobs, err := t.git.blobs(context.Background(), []string{old.Git}, maxIgnoreBytes); err == nil {
				if data, ok := blobs[old.Git]; ok {
					out[p] = data
					continue
				}
			}
		}
		// Unknown: the ignore file as it is now is the best guess.
		delete(out, p)
	}
	return out
}

// maxIgnoreBytes bounds an ignore file read back from git.
const maxIgnoreBytes = fswalk.MaxIgnoreFileBytes
