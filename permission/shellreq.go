package permission

import (
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
}

// ShellRequests turns the analysis of a command line that runs in cwd into the requests the
// bash tool makes, in this order:
//
//   - external_directory for every path, write target or cd target outside workspace (the
//     folder + "/*", or for a file its parent folder + "/*"; symlinks resolved; relative
//     paths are tried against cwd and against every cd target of the line), and for every
//     Dynamic word as written (no always: it cannot be remembered);
//   - edit for every write target (workspace-relative inside, absolute outside);
//   - bash with one pattern per command, Always the union of the commands' Always;
//   - bash, Opaque, with every Opaque text.
//
// A line with neither commands nor opaque text (a bare assignment) needs no bash request.
// workspace must be a real (symlink-free) absolute path; home is used for ~ (empty: the
// current user's).
func ShellRequests(a *shell.Analysis, cwd, workspace, home string) []Request {
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	r := &resolver{workspace: filepath.Clean(workspace), home: home}
	bases := []string{cwd}
	for _, d := range a.Dirs {
		for _, abs := range r.resolve(d, cwd) {
			bases = appendNew(bases, abs)
		}
	}
	var external, externalAlways, edits []string
	addExternal := func(folder string) {
		p := strings.TrimSuffix(filepath.ToSlash(folder), "/") + "/*"
		external = appendNew(external, p)
		externalAlways = appendNew(externalAlways, Escape(strings.TrimSuffix(filepath.ToSlash(folder), "/"))+"/*")
	}
	for _, d := range a.Dirs {
		for _, abs := range r.resolve(d, cwd) {
			if !r.inside(abs) {
				addExternal(abs)
			}
		}
	}
	check := func(p string) []string {
		var all []string
		for _, b := range bases {
			for _, abs := range r.resolve(p, b) {
				all = appendNew(all, abs)
				if r.inside(abs) {
					continue
				}
				if fi, err := os.Stat(abs); err == nil && fi.IsDir() {
					addExternal(abs)
				} else {
					addExternal(filepath.Dir(abs))
				}
			}
		}
		return all
	}
	for _, p := range a.Paths {
		check(p)
	}
	for _, w := range a.Writes {
		for _, abs := range check(w) {
			edits = appendNew(edits, PathPattern(abs, r.workspace))
		}
	}
	var dynamic []string
	for _, d := range a.Dynamic {
		dynamic = appendNew(dynamic, d)
	}
	for _, d := range r.dynamic {
		dynamic = appendNew(dynamic, d)
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
	if len(a.Commands) > 0 {
		var pats, always []string
		for _, c := range a.Commands {
			pats = appendNew(pats, c.Text)
			for _, al := range c.Always {
				always = appendNew(always, al)
			}
		}
		out = append(out, Request{Permission: KeyBash, Patterns: pats, Always: always})
	}
	if len(a.Opaque) > 0 {
		out = append(out, Request{Permission: KeyBash, Patterns: append([]string(nil), a.Opaque...), Opaque: true})
	}
	return out
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

// maxGlob bounds how many matches of a glob path are checked.
const maxGlob = 256

// resolve returns the real absolute paths p may name, relative paths taken from base.
func (r *resolver) resolve(p, base string) []string {
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
	if !filepath.IsAbs(p) {
		p = filepath.Join(base, p)
	}
	p = filepath.Clean(p)
	if !strings.ContainsAny(p, "*?[") {
		return []string{realPath(p)}
	}
	// A glob: where it could lead whatever it matches (a segment that can match ".." is
	// taken as ".."; others as a child), and what it matches now (symlinks followed).
	segs := strings.Split(p, string(filepath.Separator))
	for i, s := range segs {
		if strings.ContainsAny(s, "*?[") {
			// Only a segment starting with a literal dot can match ".." (older bash's
			// ".*"); "*" and "?" never match a leading dot.
			if ok, _ := path.Match(s, ".."); ok && strings.HasPrefix(s, ".") {
				segs[i] = ".."
			} else {
				segs[i] = "glob"
			}
		}
	}
	out := []string{realPath(filepath.Clean(strings.Join(segs, string(filepath.Separator))))}
	for _, m := range boundedGlob(p, maxGlob) {
		out = appendNew(out, realPath(m))
	}
	return out
}

// boundedGlob expands an absolute, clean glob pattern as the shell would (a leading dot is
// matched only by a leading dot), looking at no more than budget directory entries in all,
// so that "/*/*/*/*" costs little.
func boundedGlob(pattern string, budget int) []string {
	cur := []string{string(filepath.Separator)}
	for _, seg := range strings.Split(pattern, string(filepath.Separator)) {
		if seg == "" {
			continue
		}
		var next []string
		for _, dir := range cur {
			if !strings.ContainsAny(seg, "*?[") {
				p := filepath.Join(dir, seg)
				if _, err := os.Lstat(p); err == nil {
					next = append(next, p)
				}
				continue
			}
			if budget <= 0 {
				break
			}
			// Not os.Open: a FIFO where the pattern expects a folder would block it.
			f, err := fsopen.OpenDir(dir)
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
					next = append(next, filepath.Join(dir, name))
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
	return cur
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
		d := e.Decide(Query{SessionID: sessionID, Agent: agent, Tool: KeyBash, Permission: rq.Permission, Patterns: rq.Patterns, Opaque: rq.Opaque})
		sd.Decisions = append(sd.Decisions, d)
		if rank(d.Action) > rank(sd.Action) {
			sd.Action = d.Action
		}
	}
	return sd
}
