package permission

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/toolsd/toolsd/internal/fsopen"
	"github.com/toolsd/toolsd/internal/fspath"
	"github.com/toolsd/toolsd/permission/shell"
)

// Request is one permission request a tool makes for a call (the bash tool makes up to four
// per command line).
type Request struct {
	Permission string
	Patterns   []string
	// Always are the patterns an "always" answer may remember; empty means none may be.
	Always []string
	// Opaque requests always ask (a deny still denies): see Query.Opaque.
	Opaque bool
	// ExactOnly are the patterns (of Patterns) that only a rule naming them exactly may
	// allow, with why: see Query.ExactOnly.
	ExactOnly map[string]string
	// Reasons say why an Opaque request is opaque.
	Reasons []string
}

// ShellRequests turns the analysis of a command line that runs in cwd into the requests the
// bash tool makes, in this order:
//
//   - external_directory for every path, write target or working folder outside
//     workspace (the folder + "/*", or for a file its parent folder + "/*"), resolved as
//     the kernel does from each folder the line may be in at that point (after its cd's),
//     through the symlinks it creates; and for every Dynamic word as written (no always: it
//     cannot be remembered);
//   - edit for every write target (workspace-relative inside, absolute outside);
//   - bash with one pattern per command, Always the union of the commands' Always, and
//     ExactOnly the commands whose arguments do not fit their grammar; or, when the
//     analysis does not fully understand the line, bash, Opaque, with the commands and
//     the line (a deny rule on a command still denies; nothing may be remembered).
//
// A line with neither commands nor opaque text (a bare assignment) needs no bash request.
// workspace must be a real (symlink-free) absolute path; home is used for ~ (empty: the
// current user's).
func ShellRequests(a *shell.Analysis, cwd, workspace, home string) []Request {
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	r := &resolver{workspace: filepath.Clean(workspace), home: home}
	var external, externalAlways, edits, dynamic []string
	addExternal := func(folder string) {
		p := strings.TrimSuffix(filepath.ToSlash(folder), "/") + "/*"
		external = appendNew(external, p)
		externalAlways = appendNew(externalAlways, Escape(strings.TrimSuffix(filepath.ToSlash(folder), "/"))+"/*")
	}
	cwds := r.cwds(a, cwd)
	for _, c := range cwds {
		for _, f := range c {
			if !r.inside(f.real) {
				addExternal(f.real)
			}
		}
	}
	links := r.links(a, cwds)
	protected := map[string]string{} // path words that lead to a protected path, with why
	for _, u := range a.Uses {
		for _, i := range u.At {
			for _, base := range cwds[i] {
				for _, abs := range r.resolve(u.Text, base.real, links, u.Maybe, u.Kind == shell.Create) {
					if why, ok := Protected(KeyEdit, PathPattern(abs, r.workspace)); ok && protected[u.Text] == "" {
						protected[u.Text] = why
					}
					if !r.inside(abs) {
						if fi, err := os.Stat(abs); (err == nil && fi.IsDir()) || u.Kind == shell.Chdir {
							addExternal(abs)
						} else {
							addExternal(filepath.Dir(abs))
						}
					}
					if u.Kind == shell.Write {
						edits = appendNew(edits, PathPattern(abs, r.workspace))
					}
				}
			}
		}
	}
	if len(a.Opaque) == 0 {
		// Words only known at run time are asked for as they are written; in a line that
		// asks as a whole anyway (Opaque), that would be a second ask that says nothing more.
		for _, d := range a.Dynamic {
			dynamic = appendNew(dynamic, d)
		}
		for _, d := range r.dynamic {
			dynamic = appendNew(dynamic, d)
		}
	}
	var out []Request
	if len(external)+len(dynamic) > 0 {
		out = append(out, Request{Permission: KeyExternalDirectory, Patterns: append(external, dynamic...), Always: externalAlways})
	}
	if len(edits) > 0 {
		always := make([]string, len(edits))
		for i, e := range edits {
			always[i] = Escape(e)
		}
		out = append(out, Request{Permission: KeyEdit, Patterns: edits, Always: always})
	}
	if len(a.Opaque) > 0 {
		// One ask for the line: its commands (so that a deny rule still denies) and the
		// line itself, nothing offered to remember.
		var pats []string
		for _, c := range a.Commands {
			pats = appendNew(pats, c.Text)
		}
		for _, o := range a.Opaque {
			pats = appendNew(pats, o)
		}
		return append(out, Request{Permission: KeyBash, Patterns: pats, Opaque: true, Reasons: append([]string(nil), a.Reasons...)})
	}
	if len(a.Commands) > 0 {
		var pats, always []string
		var exact map[string]string
		for _, c := range a.Commands {
			pats = appendNew(pats, c.Text)
			for _, al := range c.Always {
				always = appendNew(always, al)
			}
			why := c.Unsafe
			if why == "" {
				why = namesProtected(c, protected, len(a.Commands) == 1)
			}
			if why != "" {
				if exact == nil {
					exact = map[string]string{}
				}
				if _, seen := exact[c.Text]; !seen {
					exact[c.Text] = why
				}
			}
		}
		out = append(out, Request{Permission: KeyBash, Patterns: pats, Always: always, ExactOnly: exact})
	}
	return out
}

// namesProtected says why a command is exact-only for the protected paths it names (cp, mv,
// sed -i, ln, rm, touch write them without a redirection the analysis sees as a write): an
// argument (or an option's value) that is one of the line's path words leading to a
// protected path, or, for the only command of the line, any such word. "" when none.
func namesProtected(c shell.Command, protected map[string]string, only bool) string {
	if len(protected) == 0 {
		return ""
	}
	for _, arg := range c.Args {
		w := arg
		if i := strings.IndexByte(arg, '='); i > 0 && strings.HasPrefix(arg, "-") {
			w = arg[i+1:]
		}
		if why, ok := protected[w]; ok {
			return protectedReason(w, why)
		}
	}
	if only {
		words := make([]string, 0, len(protected))
		for w := range protected {
			words = append(words, w)
		}
		sort.Strings(words)
		return protectedReason(words[0], protected[words[0]])
	}
	return ""
}

func protectedReason(word, why string) string {
	return fmt.Sprintf("it names %q, a protected path (%s)", word, why)
}

// PathPattern is the pattern of a file under edit, read and the like: the slash path relative
// to the workspace when abs is inside it, else the absolute slash path.
func PathPattern(abs, workspace string) string {
	if rel, ok := within(workspace, abs); ok {
		return rel
	}
	return filepath.ToSlash(abs)
}

func within(workspace, abs string) (string, bool) { return fspath.Within(workspace, abs) }

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

type resolver struct {
	workspace, home string
	dynamic         []string // words found to be dynamic while resolving (~user)
}

func (r *resolver) inside(abs string) bool {
	_, ok := within(r.workspace, abs)
	return ok
}

// folder is one place a working folder of the line may be: bash's logical path (what cd
// .. goes up from) and where it really is.
type folder struct{ logical, real string }

// maxFolders bounds the places a working folder is tried in.
const maxFolders = 16

// cwds returns, for each Cwd of the analysis, where it may really be. bash's cd is logical:
// "cd link/.." goes back to the folder holding link, and the folder it lands in is where
// that textual path leads; where the kernel would resolve the path from the real folder
// is tried too, since bash falls back to it.
func (r *resolver) cwds(a *shell.Analysis, cwd string) [][]folder {
	out := make([][]folder, len(a.Cwds))
	for i, c := range a.Cwds {
		if i == 0 || c.From < 0 || c.From >= i {
			out[i] = []folder{{logical: cwd, real: cwd}}
			continue
		}
		t := c.Text
		if t == "~" || strings.HasPrefix(t, "~/") {
			t = r.home + t[1:]
		} else if strings.HasPrefix(t, "~") {
			r.dynamic = appendNew(r.dynamic, t)
			out[i] = out[c.From]
			continue
		}
		var fs []folder
		add := func(f folder) {
			for _, g := range fs {
				if g == f {
					return
				}
			}
			if len(fs) < maxFolders {
				fs = append(fs, f)
			}
		}
		for _, from := range out[c.From] {
			phys, err := fspath.Resolve(from.real, t, nil)
			if err != nil {
				phys = filepath.Join(from.real, t)
			}
			if c.Physical {
				add(folder{logical: phys, real: phys})
				continue
			}
			logical := t
			if !filepath.IsAbs(t) {
				logical = filepath.Join(from.logical, t)
			}
			logical = filepath.Clean(logical)
			real := realPath(logical)
			add(folder{logical: logical, real: real})
			if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
				// bash falls back to the physical path when the logical one is no folder.
				add(folder{logical: phys, real: phys})
			}
		}
		out[i] = fs
	}
	return out
}

// links returns where the symlinks the line creates would be, as real paths, with their
// targets.
func (r *resolver) links(a *shell.Analysis, cwds [][]folder) map[string]string {
	if len(a.Links) == 0 {
		return nil
	}
	m := map[string]string{}
	for _, l := range a.Links {
		for _, i := range l.At {
			for _, base := range cwds[i] {
				p := l.Path
				if strings.HasPrefix(p, "~/") {
					p = r.home + p[1:]
				}
				dir, err := fspath.Resolve(base.real, filepath.Dir(p), nil)
				if err != nil {
					continue
				}
				m[filepath.Join(dir, filepath.Base(p))] = l.Target
			}
		}
	}
	return m
}

// maxGlob bounds how many matches of a glob path are checked.
const maxGlob = 256

// resolve returns the real absolute paths p may name when used from the folder base, as
// the kernel resolves them (with and without the symlinks the line creates). A maybe path
// is one only if it names something that exists; else it yields nothing.
func (r *resolver) resolve(p, base string, links map[string]string, maybe, create bool) []string {
	if p == "" {
		return nil
	}
	if strings.HasPrefix(p, "~") {
		rest := p[1:]
		if rest != "" && !strings.HasPrefix(rest, "/") {
			r.dynamic = appendNew(r.dynamic, p) // ~user, ~+, ~-
			return nil
		}
		p = r.home + rest
	}
	if maybe {
		if _, err := os.Lstat(filepath.Join(base, p)); err != nil {
			return nil
		}
	}
	var out []string
	add := func(dir, p string, links map[string]string) {
		abs, err := fspath.Resolve(dir, p, links)
		if err != nil {
			// A loop: the kernel would refuse it; say where it starts.
			abs = filepath.Join(dir, p)
		}
		out = appendNew(out, abs)
	}
	if create {
		// A new entry: its folder is resolved, the entry itself is not followed.
		if dir, err := fspath.Resolve(base, filepath.Dir(p), nil); err == nil {
			return []string{filepath.Join(dir, filepath.Base(p))}
		}
		return []string{filepath.Join(base, p)}
	}
	if !strings.ContainsAny(p, "*?[") {
		add(base, p, nil)
		if links != nil {
			add(base, p, links)
		}
		return out
	}
	// A glob: where it could lead whatever it matches (a segment that can match ".." is
	// taken as ".."; others as a child), and what it matches now, each match resolved.
	segs := strings.Split(filepath.ToSlash(p), "/")
	placeholder := make([]string, len(segs))
	for i, s := range segs {
		placeholder[i] = s
		if strings.ContainsAny(s, "*?[") {
			// Only a segment starting with a literal dot can match ".." (older bash's
			// ".*"); "*" and "?" never match a leading dot.
			if ok, _ := path.Match(s, ".."); ok && strings.HasPrefix(s, ".") {
				placeholder[i] = ".."
			} else {
				placeholder[i] = "glob"
			}
		}
	}
	add(base, strings.Join(placeholder, "/"), links)
	for _, m := range globMatches(base, segs, maxGlob) {
		add(base, m, links)
	}
	return out
}

// globMatches expands the segments of a glob as the shell would (a leading dot is matched
// only by a leading dot), from base, looking at no more than budget directory entries in
// all, so that "/*/*/*/*" costs little. The matches are returned as paths relative to base
// (or absolute), for Resolve to follow.
func globMatches(base string, segs []string, budget int) []string {
	type cand struct{ rel, dir string }
	start := base
	first := ""
	if len(segs) > 0 && segs[0] == "" { // absolute
		start, first = "/", "/"
		segs = segs[1:]
	}
	cur := []cand{{rel: first, dir: start}}
	for _, seg := range segs {
		var next []cand
		for _, c := range cur {
			if !strings.ContainsAny(seg, "*?[") {
				d, err := fspath.Resolve(c.dir, seg, nil)
				if err != nil {
					continue
				}
				next = append(next, cand{rel: path.Join(c.rel, seg), dir: d})
				continue
			}
			if budget <= 0 {
				break
			}
			// Not os.Open: a FIFO where the pattern expects a folder would block it.
			f, err := fsopen.OpenDir(c.dir)
			if err != nil {
				continue
			}
			entries, _ := f.ReadDir(budget)
			f.Close()
			budget -= len(entries)
			sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
			for _, e := range entries {
				name := e.Name()
				if strings.HasPrefix(name, ".") && !strings.HasPrefix(seg, ".") {
					continue
				}
				if ok, _ := path.Match(seg, name); ok {
					d, err := fspath.Resolve(c.dir, name, nil)
					if err != nil {
						continue
					}
					next = append(next, cand{rel: path.Join(c.rel, name), dir: d})
				}
			}
		}
		cur = next
		if len(cur) == 0 || len(cur) > maxGlob {
			break
		}
	}
	if len(cur) > maxGlob {
		cur = cur[:maxGlob]
	}
	out := make([]string, len(cur))
	for i, c := range cur {
		out[i] = c.rel
	}
	return out
}

// realPath is where abs really leads (fspath.Real), or abs itself when that cannot be told.
func realPath(abs string) string {
	if r, err := fspath.Real(abs); err == nil {
		return r
	}
	return abs
}

// ShellDecision is the outcome of a command line.
type ShellDecision struct {
	Action    Action
	Requests  []Request
	Decisions []Decision // one per request
}

// DecideShell analyses script as the bash tool does, builds its requests (ShellRequests) and
// decides each: the line runs without asking only if every request is allowed. It is how
// tests see what the bash tool will do; the tool itself asks request by request.
func (e *Engine) DecideShell(sessionID, agent, script, cwd, workspace string) ShellDecision {
	reqs := ShellRequests(shell.Analyze(script), cwd, workspace, "")
	sd := ShellDecision{Action: Allow, Requests: reqs}
	for _, rq := range reqs {
		d := e.Decide(Query{SessionID: sessionID, Agent: agent, Tool: KeyBash, Permission: rq.Permission, Patterns: rq.Patterns, Opaque: rq.Opaque, ExactOnly: rq.ExactOnly, Reasons: rq.Reasons})
		sd.Decisions = append(sd.Decisions, d)
		if rank(d.Action) > rank(sd.Action) {
			sd.Action = d.Action
		}
	}
	return sd
}
