package checkpoint

import (
	"context"
	"maps"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/toolsd/toolsd/internal/fswalk"
)

// What the sandbox's look at a confined command (internal/sandbox, Watch) learns from the
// change journal instead of walking the workspace before and after the command: the git
// folders and git files there are (from every walk of the whole workspace, and from the
// journal's events since) and what was created while the command ran (Follow). The folders
// no walk watched (the ignored ones) are looked into for them at both ends, from listings
// kept while each folder's ctime stays (ignored.go): a read of the folders that changed and
// an lstat of the others.
//
// The journal vouches for a folder it watched the whole time: a git folder or git file
// made or moved into it is an event. A folder created meanwhile is looked into once its
// watch is in place (what was made in it before is found by that look). Whatever breaks
// the journal (an overflow, a folder renamed, a watch refused, a new watcher) makes Follow
// say it cannot vouch, and the sandbox walks.

// Follow starts following what is created in the workspace, for the sandbox (it is
// sandbox.Journal's method): the git folders and git files there are, and end, which returns
// those created since and every one in the folders the journal does not watch (looked into at
// both ends). ok is false when the journal cannot vouch: the first look is not done, there is no journal
// (checkpoints without one, the kernel refused it, the workspace is too large to track),
// or it is broken until the next walk. end is false when it broke meanwhile. Only inotify's
// journal vouches (Linux): its barrier and its overflow are what the promise rests on.
func (t *Tracker) Follow() (git []string, end func() ([]string, bool), ok bool) {
	if runtime.GOOS != "linux" {
		return nil, nil, false
	}
	select {
	case <-t.ready:
	default:
		return nil, nil, false
	}
	j := t.followed.Load()
	if j == nil {
		return nil, nil, false
	}
	return j.follow()
}

// follower is what the journal noted for one command while it ran.
type follower struct {
	gen       int             // the journal's generation when it started: another one cannot vouch
	git       map[string]bool // git folders and git files created
	dirs      map[string]bool // folders created
	unwatched []string        // the folders not watched when it started
}

func (j *journal) follow() (git []string, end func() ([]string, bool), ok bool) {
	if j.settle() != nil {
		return nil, nil, false
	}
	j.mu.Lock()
	if j.broken != "" || j.w == nil {
		j.mu.Unlock()
		return nil, nil, false
	}
	f := &follower{gen: j.gen, git: map[string]bool{}, dirs: map[string]bool{}}
	j.followers[f] = struct{}{}
	pending := sortedKeys(j.pending)
	j.pending = map[string]bool{}
	j.mu.Unlock()
	found := j.lookInto(pending)
	j.mu.Lock()
	for _, r := range found {
		j.git[r] = true
	}
	if j.w == nil || j.gen != f.gen {
		delete(j.followers, f)
		j.mu.Unlock()
		return nil, nil, false
	}
	all := maps.Clone(j.git)
	f.unwatched = sortedKeys(j.unwatched)
	j.mu.Unlock()
	for _, r := range j.gitIn(f.unwatched) {
		all[r] = true
	}
	for _, r := range sortedKeys(all) {
		git = append(git, j.abs(r))
	}
	return git, func() ([]string, bool) { return j.unfollow(f) }, true
}

// unfollow ends following f: once every event before it is read, the git folders and git
// files created while f was followed, with those in the folders created meanwhile and those
// in the folders not watched.
func (j *journal) unfollow(f *follower) ([]string, bool) {
	err := j.settle()
	j.mu.Lock()
	delete(j.followers, f)
	ok := err == nil && j.w != nil && j.gen == f.gen
	git, dirs := sortedKeys(f.git), sortedKeys(f.dirs)
	for _, d := range dirs {
		delete(j.pending, d)
	}
	j.mu.Unlock()
	if !ok {
		return nil, false
	}
	found := j.lookInto(dirs)
	j.mu.Lock()
	for _, r := range found {
		j.git[r] = true
	}
	ok = j.w != nil && j.gen == f.gen // no watch refused while looking
	j.mu.Unlock()
	if !ok {
		return nil, false
	}
	all := map[string]bool{}
	for _, r := range append(append(git, found...), j.gitIn(f.unwatched)...) {
		all[r] = true
	}
	out := make([]string, 0, len(all))
	for _, r := range sortedKeys(all) {
		out = append(out, j.abs(r))
	}
	return out, true
}

// gitIn looks into the folders rels (not watched) for the git folders and git files in
// them, from their listings (ignored.go).
func (j *journal) gitIn(rels []string) []string { return j.listed.gitIn(j.ws, rels) }

// createdLocked notes an entry made in a watched folder (rel, workspace-relative). j.mu is
// held.
func (j *journal) createdLocked(rel string, isDir bool) {
	if belowGit(rel) {
		return
	}
	switch {
	case isGit(path.Base(rel)):
		j.git[rel] = true
		for f := range j.followers {
			f.git[rel] = true
		}
	case isDir:
		j.pending[rel] = true
		for f := range j.followers {
			f.dirs[rel] = true
		}
	}
}

// goneLocked notes an entry removed or moved away from a watched folder. j.mu is held.
func (j *journal) goneLocked(rel string) {
	if isGit(path.Base(rel)) {
		delete(j.git, rel)
	}
}

// lookInto looks into folders created since their parent was watched (lookIn), each once
// (not again below one looked into), and returns the git folders and git files found.
func (j *journal) lookInto(dirs []string) []string {
	var found []string
	last := ""
	for _, d := range dirs { // sorted: a folder comes before what is below it
		if last != "" && strings.HasPrefix(d, last+"/") {
			continue
		}
		last = d
		found = append(found, j.lookIn(d)...)
	}
	return found
}

// lookIn looks into the folder rel, created since its parent was watched: each folder in it
// is watched before it is listed (as a walk of the whole workspace does), and the git
// folders and git files in it are returned. A folder the ignore files leave out is not
// watched: it is noted as unwatched (looked into at every look since), and looked into for git folders
// here, since it is new.
func (j *journal) lookIn(rel string) []string {
	var mu sync.Mutex // guards found
	var found []string
	add := func(r string) {
		mu.Lock()
		found = append(found, r)
		mu.Unlock()
	}
	ignored := func(r string) {
		j.mu.Lock()
		j.unwatched[r] = true
		j.mu.Unlock()
		j.listed.gitBelow(j.ws, r, add)
	}
	if fi, err := os.Lstat(j.abs(rel)); err != nil || !fi.IsDir() {
		return nil
	}
	if fswalk.Ignored(j.ws, rel, true) {
		ignored(rel)
		return found
	}
	j.watch(rel)
	_ = fswalk.Walk(context.Background(), fswalk.Options{Root: j.abs(rel), Workspace: j.ws, Dirs: true, Links: true,
		Left: func(r string, isDir bool) {
			switch r = rel + "/" + r; {
			case isGit(path.Base(r)):
				add(r)
			case isDir:
				ignored(r)
			}
		}}, func(e fswalk.Entry) {
		r := rel + "/" + e.Rel
		if isGit(e.Name()) {
			add(r)
		}
		if e.Dir {
			j.watch(r)
		}
	})
	return found
}

func (j *journal) abs(rel string) string { return filepath.Join(j.ws, filepath.FromSlash(rel)) }

// walkSeen is what a walk of the whole workspace found for Follow: the git folders and git
// files, and the folders it left out (not watched). Safe for concurrent use.
type walkSeen struct {
	mu        sync.Mutex // guards git and unwatched
	git       []string
	unwatched []string
}

// visit takes an entry the walk visits.
func (s *walkSeen) visit(rel string) {
	if isGit(path.Base(rel)) {
		s.mu.Lock()
		s.git = append(s.git, rel)
		s.mu.Unlock()
	}
}

// left takes an entry the walk left out (fswalk.Options.Left).
func (s *walkSeen) left(rel string, isDir bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case isGit(path.Base(rel)):
		s.git = append(s.git, rel)
	case isDir:
		s.unwatched = append(s.unwatched, rel)
	}
}

// isGit reports whether name is a git folder's or git file's (as a case-insensitive file
// system resolves it).
func isGit(name string) bool { return strings.EqualFold(name, ".git") }

// belowGit reports whether rel lies in a git folder.
func belowGit(rel string) bool {
	parts := strings.Split(rel, "/")
	for _, p := range parts[:len(parts)-1] {
		if isGit(p) {
			return true
		}
	}
	return false
}
