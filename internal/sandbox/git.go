package sandbox

import (
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/toolsd/toolsd/internal/protect"
)

// No confined process can change what an unconfined git in the workspace runs later (the
// editor's git, which VS Code runs by itself, or the person's next git commit). Git runs
// what its configuration and hooks say, and it finds them through the git folder: its
// config, config.worktree, hooks, info, commondir, objects/info/alternates, the git folders
// of worktrees and submodules; a git file (".git" that names a folder elsewhere); and a
// git folder anywhere below, which an editor takes for a repository of its own and runs git
// in (a submodule's, git status itself goes into).
//
// So the workspace's whole git folder (or git file) is read-only, in both modes — as a
// mount of its own it cannot be renamed or replaced either — and the git folder a git file
// leads to when it is writable. Git commands that only read work confined (status, diff,
// log, show, blame); the ones that write the repository (add, commit, checkout, stash,
// fetch) are refused, and the daemon offers to run them outside the sandbox.
//
// Neither Landlock nor mounts can forbid a name at any depth: a confined command can still
// make a folder named .git somewhere below the workspace. So there is a look for git folders
// and git files before the command starts (nested ones that exist are made read-only like
// the workspace's own) and again once the command's whole tree has ended: one that
// appeared, and a protected settings entry that appeared at the top level, is moved aside
// (renamed, never deleted) and the command's output says so. The daemon takes both looks
// when the checkpoints' change journal vouches for the workspace (Policy.Journal): it knows
// the git folders there are and tells which were made, looking into the folders it does not
// watch (the ignored ones) from listings kept while each folder's ctime stays. Otherwise the guard walks the whole workspace, before and after.

// protected returns the paths Build protects for workspace ws, and the ones outside it the
// guard watches: the protected entries of the top level and the git folder (internal/
// protect), the git folder a git file leads to, and, where the policy lets a command write
// there, a git folder above the workspace and git's user configuration.
func protected(ws, home string, write []string) (prot, watch []string) {
	for _, e := range protect.Top {
		prot = append(prot, filepath.Join(ws, filepath.FromSlash(e.Name)))
	}
	gitPath := filepath.Join(ws, protect.Git)
	prot = append(prot, gitPath)
	prot = append(prot, gitTargets(gitPath, write)...)
	guard := func(p string) {
		if !within(p, write) {
			return
		}
		if _, err := os.Lstat(p); err == nil {
			prot = append(prot, p)
			prot = append(prot, gitTargets(p, write)...)
		} else {
			watch = append(watch, p)
		}
	}
	// Git looks for the repository in the folders above one that has none: a writable one
	// (the workspace in the temp folder, a sandbox.write folder above it) could get one.
	// Read-only for Landlock, a missing one would leave that whole folder without new
	// entries: the guard watches it instead.
	for below, d := ws, filepath.Dir(ws); d != below; below, d = d, filepath.Dir(d) {
		guard(filepath.Join(d, protect.Git))
	}
	if home != "" {
		guard(filepath.Join(home, ".gitconfig"))
		guard(filepath.Join(home, ".config", "git"))
	}
	return dedupe(prot), dedupe(watch)
}

// gitTargets returns, for a git file at p ("gitdir: FOLDER", a worktree's or a submodule's),
// the git folder it names and the common folder that one names (commondir), where a command
// may write them: their configuration and hooks are the ones git runs.
func gitTargets(p string, write []string) []string {
	var out []string
	for range 2 {
		fi, err := os.Lstat(p)
		if err != nil {
			return out
		}
		var target string
		if fi.Mode()&os.ModeSymlink != 0 {
			target = real(p)
		} else if fi.Mode().IsRegular() && filepath.Base(p) == protect.Git {
			b, err := os.ReadFile(p)
			rest, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
			if err != nil || !ok {
				return out
			}
			target = strings.TrimSpace(rest)
		} else if fi.IsDir() {
			b, err := os.ReadFile(filepath.Join(p, "commondir"))
			if err != nil {
				return out
			}
			target, p = strings.TrimSpace(string(b)), filepath.Join(p, "commondir")
		} else {
			return out
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(p), target)
		}
		p = real(target)
		if within(p, write) {
			out = append(out, p)
		}
	}
	return out
}

// Quarantine is the suffix of the name an entry gets when the guard moves it aside.
const Quarantine = ".toolsd-quarantine"

// A Watch is what was seen of a confined command's git folders and protected entries before
// it started; Finish compares with what is there after it. Taken by the guard, or, when the
// policy has a Journal that vouches for the workspace, by the daemon (StartWatch).
type Watch struct {
	p      *Policy
	before map[string]fileID
	// In the daemon: what the journal reports at the end.
	end func() (found []string, ok bool)
	// In the guard of a command the daemon looks after (Policy.Checker): it looks only if
	// the daemon is gone by the end.
	deferred bool
}

// fileID is a file's identity: its device, inode, type and birth time (0 where the file
// system keeps none). The inode number alone does not do: a file system hands a freed number
// to the next file it makes, so a git folder removed and made again (as another folder, a
// link, a git file) in the same folder often comes back under the number it had.
type fileID struct {
	dev, ino uint64
	kind     uint32 // the type bits of the mode
	born     int64  // nanoseconds
}

// A Journal tells the daemon what is in a workspace and what was created in it without
// walking it: the checkpoints' change journal (checkpoint.Tracker.Follow). Safe for
// concurrent use.
type Journal interface {
	// Follow starts following what is created in the workspace. It returns the git folders
	// and git files in the workspace now (absolute paths), and end, which returns every git
	// folder or git file created (or replaced) since, and every one in the folders the
	// journal does not watch (it looks into those at both ends), or false when it cannot vouch
	// for the time since any more. ok is false when it cannot vouch now. end must be called
	// once.
	Follow() (git []string, end func() (found []string, ok bool), ok bool)
}

// maxChecked bounds the policy a command the daemon looks after is started with (the guard's
// argument): past it (thousands of nested repositories), the guard looks itself.
const maxChecked = 64 << 10

// StartWatch looks at the workspace of p before a confined command starts, and returns the
// policy to start it with: p, with the nested git folders and git files found made
// read-only too. nil when p confines no workspace.
//
// In the daemon, with p.Journal: the journal says which git folders there are (looking only
// into the folders it does not watch); the policy returned says the daemon looks after the
// command (Checker, Seen), and Finish, called by the daemon once the guard has ended, asks
// the journal what was created. When the journal cannot vouch, it returns p and no Watch:
// the guard looks, as without a journal. In the guard, with p.Checker, nothing is walked.
func StartWatch(p *Policy) (*Policy, *Watch) {
	if p == nil || p.Workspace == "" {
		return p, nil
	}
	if p.Checker != 0 {
		w := &Watch{p: p, before: map[string]fileID{}, deferred: true}
		for path, id := range p.Seen {
			w.before[path] = fileID{dev: id[0], ino: id[1], kind: uint32(id[2]), born: int64(id[3])}
		}
		return p, w
	}
	if p.Journal == nil {
		w := &Watch{p: p, before: gitEntries(p)}
		return w.protect(), w
	}
	git, end, ok := p.Journal.Follow()
	if !ok {
		return p, nil
	}
	w := &Watch{p: p, before: topEntries(p), end: end}
	for _, path := range git {
		w.add(w.before, path)
	}
	q := w.protect()
	q.Journal, q.Checker, q.Seen = nil, os.Getpid(), make(map[string][4]uint64, len(w.before))
	for path, id := range w.before {
		q.Seen[path] = [4]uint64{id.dev, id.ino, uint64(id.kind), uint64(id.born)}
	}
	if len(q.Encode()) > maxChecked {
		end()
		return p, nil
	}
	return q, w
}

// protect is w's policy with the git folders and git files seen before the command made
// read-only too.
func (w *Watch) protect() *Policy {
	q := *w.p
	q.Protect = slices.Clone(w.p.Protect)
	paths := make([]string, 0, len(w.before))
	for path := range w.before {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	for _, path := range paths {
		if !within(path, q.Protect) && within(path, q.Write) {
			q.Protect = append(q.Protect, path)
			q.Protect = append(q.Protect, gitTargets(path, q.Write)...)
		}
	}
	q.Protect = dedupe(q.Protect)
	return &q
}

// Same reports whether w and o saw the same git folders, git files and protected entries
// (the same paths, each the same file).
func (w *Watch) Same(o *Watch) bool {
	if w == nil || o == nil {
		return w == o
	}
	return maps.Equal(w.before, o.before)
}

// Finish looks again once the command's tree has ended: every git folder or git file that
// appeared (or replaced one), and every protected entry that appeared at the workspace's
// top level or among the watched paths, is renamed aside (NAME.toolsd-quarantine), and out
// (the command's stderr) says so, for the model and the person. It returns what it moved.
//
// What it looks at: with a journal, the entries the journal reports (created, or in the
// folders it does not watch), the top level and the watched paths; without one, or when the
// journal cannot vouch for the command's time, the whole workspace. In the guard of a command the
// daemon looks after, nothing while the daemon is its parent (the daemon looks once the
// guard has ended), and the whole workspace if the daemon died.
func (w *Watch) Finish(out io.Writer) []string {
	if w == nil || (w.deferred && os.Getppid() == w.p.Checker) {
		return nil
	}
	var after map[string]fileID
	if w.end != nil {
		if found, ok := w.end(); ok {
			journaled.Add(1)
			after = topEntries(w.p)
			for _, path := range found {
				w.add(after, path)
			}
		}
	}
	if after == nil {
		after = gitEntries(w.p)
	}
	known := map[fileID]bool{}
	for _, ino := range w.before {
		known[ino] = true
	}
	var moved, said []string
	paths := make([]string, 0, len(after))
	for p := range after {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		ino := after[p]
		if b, ok := w.before[p]; ok && b == ino {
			continue
		}
		if _, ok := w.before[p]; !ok && known[ino] {
			continue // one that was there, moved with the folder it is in (it stayed read-only)
		}
		moved = append(moved, p)
		said = append(said, w.quarantine(p))
	}
	// Said once all is moved: out may be a pipe nobody reads any more (the daemon died).
	for _, line := range said {
		fmt.Fprintln(out, line)
	}
	return moved
}

// add adds path to m with its identity, if it exists.
func (w *Watch) add(m map[string]fileID, path string) {
	if id, ok := fileIDOf(path); ok {
		m[path] = id
	}
}

// quarantine renames p aside and says so.
func (w *Watch) quarantine(p string) string {
	name := p
	if rel, err := filepath.Rel(w.p.Workspace, p); err == nil && !strings.HasPrefix(rel, "..") {
		name = rel
	}
	what := "a git repository (or a git file naming one)"
	why := "git (the editor's, which runs by itself, and the person's) would run what its configuration and hooks say, outside the sandbox"
	if r, ok := protect.Check(w.p.Workspace, p); ok && !strings.EqualFold(filepath.Base(p), protect.Git) {
		what, why = "a protected entry", r
	} else if !strings.EqualFold(filepath.Base(p), protect.Git) {
		what = "git's user configuration"
	}
	dst, err := renameAside(p)
	if err != nil {
		return fmt.Sprintf("toolsd: this command made %s at %s, which the sandbox could not move aside (%v): %s. Remove it before git or the editor runs there.", what, name, err, why)
	}
	return fmt.Sprintf("toolsd: this command made %s at %s; the sandbox moved it aside to %s (its contents are kept): %s. A confined command cannot make one; if it is wanted, ask the person to run the command outside the sandbox.", what, name, filepath.Base(dst), why)
}

// quarantineName is the name of the n-th candidate (from 1) an entry named base is renamed to.
func quarantineName(base string, n int) string {
	if n == 1 {
		return base + Quarantine
	}
	return fmt.Sprintf("%s%s-%d", base, Quarantine, n)
}

// gitEntries finds what a Watch compares: the protected entries of the workspace's top level, the
// watched paths, and every git folder or git file in the workspace (not below a git folder;
// symlinks are not followed), each with its identity.
func gitEntries(p *Policy) map[string]fileID {
	out := topEntries(p)
	walks.Add(1)
	walkGit(p.Workspace, func(path string) {
		if id, ok := fileIDOf(path); ok {
			out[path] = id
		}
	})
	return out
}

// topEntries are the protected entries of the workspace's top level and the watched paths
// that exist, each with its identity.
func topEntries(p *Policy) map[string]fileID {
	out := map[string]fileID{}
	add := func(path string) {
		if id, ok := fileIDOf(path); ok {
			out[path] = id
		}
	}
	for _, e := range protect.Top {
		add(filepath.Join(p.Workspace, filepath.FromSlash(e.Name)))
	}
	for _, path := range p.Watch {
		add(path)
	}
	return out
}

// walks counts the walks of a whole workspace for git folders (gitEntries), and journaled
// the looks after a command that took the journal's answer (Finish).
var walks, journaled atomic.Int64

// Looks is how many times this process walked a whole workspace for its git folders and git
// files (before or after a command), and how many looks after a command took a journal's
// answer instead.
func Looks() (walked, fromJournal int64) { return walks.Load(), journaled.Load() }

// walkGit calls found with every git folder or git file below root (not below a git folder),
// following no symlink. It runs before and after each confined command, on every folder of
// the workspace.
func walkGit(root string, found func(path string)) {
	stack := []string{root}
	for len(stack) > 0 {
		dir := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		f, err := os.Open(dir)
		if err != nil {
			continue
		}
		for {
			entries, err := f.ReadDir(256)
			for _, e := range entries {
				path := filepath.Join(dir, e.Name())
				switch {
				case strings.EqualFold(e.Name(), protect.Git):
					found(path)
				case e.Type().IsDir():
					stack = append(stack, path)
				}
			}
			if err != nil {
				break
			}
		}
		_ = f.Close()
	}
}
