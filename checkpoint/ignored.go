package checkpoint

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/toolsd/toolsd/internal/posix"
)

// What the sandbox's look learns of the folders the journal does not watch (the ignored ones:
// node_modules, build outputs), which it looks into before and after every confined command.
// A folder's entries change only with its change time (ctime): making, removing or renaming
// an entry in it sets it, and so does setting its times (utimes, touch -d), to now; nothing a
// process without the machine's clock can do sets it back. So a listing of a folder (its
// sub-folders and its git folders and git files) stays true as long as the folder is the same
// (device, inode) with the same ctime: a look reads only the folders whose identity or ctime
// changed, and takes one lstat of each of the others, instead of reading every folder.
//
// Two limits keep that promise. A listing taken within racyMargin of the folder's ctime is
// used once and read again at the next look (git's "racily clean" entries): a change in the
// same tick of the file system's clock as the one before would leave ctime as it was. And
// only a file system whose ctime is kept by the kernel's clock is trusted (ext4, XFS,
// Btrfs, tmpfs: steadyCtime); elsewhere (a network or FUSE file system, a folder on another
// device than its tree's) every folder is read at every look, as a walk does. The clock
// stepping back (not a confined process's doing) could give a change the exact ctime of a
// listing kept, and hide it.

// racyMargin is how long after a folder's ctime a listing of it must be taken to be kept: the
// file system's timestamp granularity (a second at worst among those trusted) and the
// kernel's clock tick, with room to spare.
const racyMargin = 2 * time.Second

// listings keeps, for each folder the journal does not watch, a listing of every folder in it.
// Safe for concurrent use; looks are taken one at a time.
type listings struct {
	now func() time.Time // the clock a listing's time is read from (time.Now; tests move it)

	mu    sync.Mutex          // guards trees and reads
	trees map[string]*listing // by unwatched folder (workspace-relative)
	reads int                 // folders read (listed) so far
}

// listing is what a look saw of one folder: a tree, one listing per folder.
type listing struct {
	name     string
	dev, ino uint64
	ctime    int64      // ns
	kept     bool       // taken long enough after ctime to be trusted while ctime stays
	dirs     []*listing // the sub-folders (not git folders; no symlinks)
	git      []string   // names of the git folders and git files
}

func newListings() *listings {
	return &listings{now: time.Now, trees: map[string]*listing{}}
}

// gitIn looks into the unwatched folders rels of the workspace ws and returns the git folders
// and git files in them (workspace-relative). It forgets the listings of every other folder.
func (l *listings) gitIn(ws string, rels []string) []string {
	var out []string
	keep := map[string]bool{}
	for _, r := range rels {
		keep[r] = true
		l.gitBelow(ws, r, func(g string) { out = append(out, g) })
	}
	l.mu.Lock()
	for r := range l.trees {
		if !keep[r] {
			delete(l.trees, r)
		}
	}
	l.mu.Unlock()
	return out
}

// gitBelow calls add with every git folder or git file below the workspace folder rel (not
// below a git folder, ignore files or not, following no symlink), reading only the folders
// whose listing cannot be kept.
func (l *listings) gitBelow(ws, rel string, add func(string)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	abs := filepath.Join(ws, filepath.FromSlash(rel))
	var st posix.Stat_t
	if posix.Fstatat(posix.AT_FDCWD, abs, &st, posix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&posix.S_IFMT != posix.S_IFDIR {
		delete(l.trees, rel)
		return
	}
	lk := &treeLook{l: l, root: abs, rel: rel, steady: steadyCtime(abs), dev: uint64(st.Dev), add: add}
	if t := lk.folder(abs, l.trees[rel]); t != nil {
		l.trees[rel] = t
	} else {
		delete(l.trees, rel)
	}
}

// look is one look into an unwatched folder's tree.
type treeLook struct {
	l      *listings
	root   string // the unwatched folder's path
	rel    string // and its workspace-relative one
	steady bool   // the tree's file system keeps ctime by the kernel's clock
	dev    uint64 // the tree's device: a folder on another is read every time
	add    func(string)
}

// folder looks into the folder at abs, whose listing was old (nil: none), and returns its
// listing now, or nil if it is not a folder any more.
func (lk *treeLook) folder(abs string, old *listing) *listing {
	var st posix.Stat_t
	if posix.Fstatat(posix.AT_FDCWD, abs, &st, posix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&posix.S_IFMT != posix.S_IFDIR {
		return nil
	}
	ls, subs := old, []*listing(nil) // subs: the sub-folders' listings to check (nil: none yet)
	if old != nil {
		subs = old.dirs
	}
	if ls == nil || !ls.kept || ls.dev != uint64(st.Dev) || ls.ino != uint64(st.Ino) || ls.ctime != st.Ctim.Nano() {
		var names []string
		if ls, names = lk.l.read(abs, lk.steady && uint64(st.Dev) == lk.dev); ls == nil {
			return nil
		}
		byName := make(map[string]*listing, len(subs))
		for _, d := range subs {
			byName[d.name] = d
		}
		subs = make([]*listing, len(names))
		for i, n := range names {
			if subs[i] = byName[n]; subs[i] == nil {
				subs[i] = &listing{name: n} // not listed yet (not kept): read below
			}
		}
	}
	for _, g := range ls.git {
		lk.add(lk.rel + filepath.ToSlash(abs[len(lk.root):]) + "/" + g)
	}
	dirs := subs[:0] // in place: each is read before its slot is written
	for _, d := range subs {
		if c := lk.folder(abs+string(filepath.Separator)+d.name, d); c != nil {
			c.name = d.name
			dirs = append(dirs, c)
		} else {
			ls.kept = false // gone since the folder was read: read it again next time
		}
	}
	clear(subs[len(dirs):])
	ls.dirs = dirs
	return ls
}

// read lists the folder at abs (not a symlink), returning its listing without sub-folders and
// their names; nil if it cannot. With steady, the listing is kept if it was taken racyMargin
// after the folder's ctime. l.mu is held.
func (l *listings) read(abs string, steady bool) (*listing, []string) {
	l.reads++
	start := l.now()
	fd, err := posix.Open(abs, posix.O_RDONLY|posix.O_DIRECTORY|posix.O_NOFOLLOW|posix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil
	}
	var st posix.Stat_t
	if err := posix.Fstat(fd, &st); err != nil {
		_ = posix.Close(fd)
		return nil, nil
	}
	f := os.NewFile(uintptr(fd), abs)
	defer f.Close()
	var dirs []string
	ls := &listing{dev: uint64(st.Dev), ino: uint64(st.Ino), ctime: st.Ctim.Nano(), kept: steady && st.Ctim.Nano() < start.Add(-racyMargin).UnixNano()}
	for {
		entries, err := f.ReadDir(256)
		for _, e := range entries {
			switch name := e.Name(); {
			case isGit(name):
				ls.git = append(ls.git, name)
			case e.Type().IsDir():
				dirs = append(dirs, name)
			}
		}
		if err != nil {
			ls.kept = ls.kept && errors.Is(err, io.EOF)
			break
		}
	}
	return ls, dirs
}
