package builtin

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/bmatcuk/doublestar/v4"
)

// ignoreFiles are the files whose patterns the walk respects in every folder.
var ignoreFiles = []string{".gitignore", ".ignore"}

// ignoreRules are the ignore patterns in force in one folder: its own file's and, through
// parent, its ancestors'. Immutable once built; shared by the walk's goroutines.
type ignoreRules struct {
	parent *ignoreRules
	rules  []ignoreRule
	// strip is the folder of the ignore file relative to the walk root with a trailing
	// slash ("" for the root); prepend is, for ignore files above the root, the root's
	// path relative to their folder with a trailing slash.
	strip, prepend string
}

// ignored reports whether rel (relative to the walk root, slash-separated) is ignored: the
// deepest ignore file with a matching pattern decides, and in it the last matching pattern
// (a "!" pattern re-includes).
func (r *ignoreRules) ignored(rel string, isDir bool) bool {
	base := rel[strings.LastIndexByte(rel, '/')+1:]
	for x := r; x != nil; x = x.parent {
		sub := x.prepend + strings.TrimPrefix(rel, x.strip)
		for i := len(x.rules) - 1; i >= 0; i-- {
			if x.rules[i].match(sub, base, isDir) {
				return !x.rules[i].negate
			}
		}
	}
	return false
}

// ignoreRule is one line of an ignore file, in git's syntax. The common forms (a name,
// "*.ext", "prefix*", "/path") are matched with string compares, the rest with doublestar
// (whose *, **, ? and [...] mean what they mean in gitignore). The walk never looks below
// an ignored folder, so a rule only has to match the folder itself, not its contents.
type ignoreRule struct {
	negate, dirOnly bool
	kind            int
	s               string
}

const (
	ruleName     = iota // a name at any depth: base == s
	ruleSuffix          // "*" + s at any depth
	rulePrefix          // s + "*" at any depth
	ruleBaseGlob        // a glob without a slash, matched against the name at any depth
	ruleExact           // exactly the path s below the ignore file's folder
	rulePathGlob        // a glob with a slash, matched against the path below that folder
)

func (r *ignoreRule) match(sub, base string, isDir bool) bool {
	if r.dirOnly && !isDir {
		return false
	}
	switch r.kind {
	case ruleName:
		return base == r.s
	case ruleSuffix:
		return strings.HasSuffix(base, r.s)
	case rulePrefix:
		return strings.HasPrefix(base, r.s)
	case ruleBaseGlob:
		return doublestar.MatchUnvalidated(r.s, base)
	case ruleExact:
		return sub == r.s
	}
	return doublestar.MatchUnvalidated(r.s, sub)
}

// compileIgnore compiles the lines of ignore files. Lines that are not valid patterns are
// left out.
func compileIgnore(lines []string) []ignoreRule {
	var rules []ignoreRule
	for _, line := range lines {
		line = strings.TrimRight(line, "\r")
		if strings.HasPrefix(line, "#") {
			continue
		}
		if !strings.HasSuffix(line, "\\ ") {
			line = strings.TrimRight(line, " \t")
		}
		r := ignoreRule{}
		if strings.HasPrefix(line, "!") {
			r.negate = true
			line = line[1:]
		} else if strings.HasPrefix(line, "\\#") || strings.HasPrefix(line, "\\!") {
			line = line[1:]
		}
		if strings.HasSuffix(line, "/") {
			r.dirOnly = true
			line = strings.TrimRight(line, "/")
		}
		if line == "" || !doublestar.ValidatePattern(line) {
			continue
		}
		meta := strings.ContainsAny(line, "*?[\\")
		switch {
		case !strings.Contains(line, "/"):
			switch {
			case !meta:
				r.kind, r.s = ruleName, line
			case line[0] == '*' && !strings.ContainsAny(line[1:], "*?[\\"):
				r.kind, r.s = ruleSuffix, line[1:]
			case line[len(line)-1] == '*' && !strings.ContainsAny(line[:len(line)-1], "*?[\\"):
				r.kind, r.s = rulePrefix, line[:len(line)-1]
			default:
				r.kind, r.s = ruleBaseGlob, line
			}
		case strings.HasPrefix(line, "**/") && !strings.Contains(line[3:], "/"):
			// "**/x" is "x" at any depth.
			again := line[3:]
			if r.negate {
				again = "!" + again
			}
			if r.dirOnly {
				again += "/"
			}
			rules = append(rules, compileIgnore([]string{again})...)
			continue
		default:
			// A slash at the start or in the middle anchors the pattern to the folder.
			p := strings.TrimPrefix(line, "/")
			if !meta {
				r.kind, r.s = ruleExact, p
			} else {
				r.kind, r.s = rulePathGlob, p
			}
		}
		rules = append(rules, r)
	}
	return rules
}

// loadIgnore reads the ignore files of the folder abs, or returns nil if it has none.
func loadIgnore(abs string, names map[string]bool) []ignoreRule {
	var lines []string
	for _, n := range ignoreFiles {
		if names != nil && !names[n] {
			continue
		}
		b, err := os.ReadFile(filepath.Join(abs, n))
		if err != nil {
			continue
		}
		lines = append(lines, strings.Split(string(b), "\n")...)
	}
	return compileIgnore(lines)
}

// walkOptions configure a walk.
type walkOptions struct {
	// Root is the real absolute folder to walk; Workspace bounds the ancestors whose
	// ignore files apply.
	Root, Workspace string
	// NoIgnoreFiles turns .gitignore and .ignore off.
	NoIgnoreFiles bool
	// SkipDirs are folder names never entered (.git always is).
	SkipDirs map[string]bool
	// Skip, if set, leaves out an entry (rel to Root, slash-separated).
	Skip func(rel string, isDir bool) bool
	// Dirs asks visit to be called for folders too.
	Dirs bool
}

// walkEntry is one file (or folder) the walk found.
type walkEntry struct {
	Abs, Rel string // Rel is relative to the walk root, slash-separated
	Dir      bool
}

// walk visits every file below o.Root that is not ignored, from several goroutines at
// once: visit must be safe for concurrent use. Symbolic links are not followed (nor
// visited): a link could lead out of the workspace. It returns ctx's error if it was
// cancelled, having stopped every goroutine it started.
func walk(ctx context.Context, o walkOptions, visit func(e walkEntry)) error {
	var base *ignoreRules
	if !o.NoIgnoreFiles {
		base = ancestorRules(o.Workspace, o.Root)
	}
	q := &dirQueue{}
	q.cond = sync.NewCond(&q.mu)
	q.push(dirItem{abs: o.Root, rel: "", rules: base})
	workers := max(2, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				it, ok := q.pop()
				if !ok {
					return
				}
				if ctx.Err() == nil {
					walkDir(ctx, o, it, q, visit)
				}
				q.finish()
			}
		}()
	}
	wg.Wait()
	return ctx.Err()
}

func walkDir(ctx context.Context, o walkOptions, it dirItem, q *dirQueue, visit func(e walkEntry)) {
	f, err := os.Open(it.abs)
	if err != nil {
		return
	}
	ents, _ := f.ReadDir(-1)
	f.Close()
	rules := it.rules
	if !o.NoIgnoreFiles {
		var names map[string]bool
		for _, e := range ents {
			n := e.Name()
			if n == ".gitignore" || n == ".ignore" {
				if names == nil {
					names = map[string]bool{}
				}
				names[n] = true
			}
		}
		if names != nil {
			if rs := loadIgnore(it.abs, names); len(rs) > 0 {
				strip := ""
				if it.rel != "" {
					strip = it.rel + "/"
				}
				rules = &ignoreRules{parent: rules, rules: rs, strip: strip}
			}
		}
	}
	for _, e := range ents {
		name := e.Name()
		t := e.Type()
		if t&fs.ModeSymlink != 0 {
			continue
		}
		rel := name
		if it.rel != "" {
			rel = it.rel + "/" + name
		}
		isDir := t.IsDir()
		if isDir && (name == ".git" || o.SkipDirs[name]) {
			continue
		}
		if rules != nil && rules.ignored(rel, isDir) {
			continue
		}
		if o.Skip != nil && o.Skip(rel, isDir) {
			continue
		}
		abs := it.abs + string(filepath.Separator) + name
		if isDir {
			if o.Dirs {
				visit(walkEntry{Abs: abs, Rel: rel, Dir: true})
			}
			q.push(dirItem{abs: abs, rel: rel, rules: rules})
			continue
		}
		if !t.IsRegular() {
			continue
		}
		visit(walkEntry{Abs: abs, Rel: rel})
		if ctx.Err() != nil {
			return
		}
	}
}

// ancestorRules loads the ignore files of the folders from the workspace down to root's
// parent (none when root is outside the workspace).
func ancestorRules(ws, root string) *ignoreRules {
	rel, ok := within(ws, root)
	if !ok || rel == "." {
		return nil
	}
	var rules *ignoreRules
	parts := strings.Split(rel, "/")
	dir := ws
	for i := range parts {
		if rs := loadIgnore(dir, nil); len(rs) > 0 {
			rules = &ignoreRules{parent: rules, rules: rs, prepend: strings.Join(parts[i:], "/") + "/"}
		}
		dir = filepath.Join(dir, parts[i])
	}
	return rules
}

type dirItem struct {
	abs, rel string
	rules    *ignoreRules
}

// dirQueue is the walk's stack of folders still to read, with a count of folders queued
// or being read: the walk is over when it reaches zero.
type dirQueue struct {
	mu      sync.Mutex // guards items and pending
	cond    *sync.Cond
	items   []dirItem
	pending int
}

func (q *dirQueue) push(it dirItem) {
	q.mu.Lock()
	q.items = append(q.items, it)
	q.pending++
	q.mu.Unlock()
	q.cond.Signal()
}

// pop waits for a folder; false means the walk is over.
func (q *dirQueue) pop() (dirItem, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.items) == 0 {
		if q.pending == 0 {
			return dirItem{}, false
		}
		q.cond.Wait()
	}
	it := q.items[len(q.items)-1]
	q.items = q.items[:len(q.items)-1]
	return it, true
}

// finish marks a popped folder done.
func (q *dirQueue) finish() {
	q.mu.Lock()
	q.pending--
	done := q.pending == 0
	q.mu.Unlock()
	if done {
		q.cond.Broadcast()
	}
}
