// Package fswalk walks a folder tree from several goroutines at once, respecting .gitignore
// and .ignore files the way git does, without following a symbolic link or a folder swapped
// for one.
package fswalk

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/toolsd/toolsd/internal/posix"

	"github.com/toolsd/toolsd/internal/fspath"
)

// openFlags are the flags files are opened with for reading: O_NONBLOCK so that a FIFO or a
// device never blocks the open (the file is then checked to be regular).
const openFlags = posix.O_RDONLY | posix.O_NONBLOCK | posix.O_NOCTTY

// ReadRetry is read(2) retried on EINTR.
func ReadRetry(fd int, b []byte) (int, error) {
	for {
		n, err := posix.Read(fd, b)
		if err != posix.EINTR {
			return n, err
		}
	}
}

// ignoreFiles are the files whose patterns the walk respects in every folder.
var ignoreFiles = []string{".gitignore", ".ignore"}

// ignoreRules are the ignore patterns in force in one folder: its own file's and, through
// parent, its ancestors'. Immutable once built; shared by the walk's goroutines.
type ignoreRules struct {
	parent *ignoreRules
	rules  *ruleSet
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
		sub := ""
		if x.rules.paths {
			sub = x.prepend + strings.TrimPrefix(rel, x.strip)
		}
		if i := x.rules.last(sub, base, isDir); i >= 0 {
			return !x.rules.rules[i].negate
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
	// need is, for a glob, a piece of text every path it matches contains ("" for none).
	need string
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
		return strings.Contains(base, r.need) && doublestar.MatchUnvalidated(r.s, base)
	case ruleExact:
		return sub == r.s
	}
	return strings.Contains(sub, r.need) && doublestar.MatchUnvalidated(r.s, sub)
}

// ruleSet is the rules of one folder's ignore files, indexed so that an entry is compared
// with the few rules that can match it: rules by name, by extension and by exact path are
// looked up in maps, and only the others are tried one by one.
type ruleSet struct {
	rules []ignoreRule
	// names, exts and exact hold the indexes in rules (ascending) of the ruleName rules by
	// name, the ruleSuffix rules whose suffix has a dot by the suffix's part from its last
	// dot on (".gz" for "*.tar.gz"), and the ruleExact rules by path.
	names, exts, exact map[string][]int
	rest               []int // the other rules' indexes, ascending
	paths              bool  // some rule matches the path below the folder, not the name
}

func indexRules(rules []ignoreRule) *ruleSet {
	if len(rules) == 0 {
		return nil
	}
	rs := &ruleSet{rules: rules}
	add := func(m *map[string][]int, key string, i int) {
		if *m == nil {
			*m = map[string][]int{}
		}
		(*m)[key] = append((*m)[key], i)
	}
	for i, r := range rules {
		switch {
		case r.kind == ruleName:
			add(&rs.names, r.s, i)
		case r.kind == ruleSuffix && strings.Contains(r.s, "."):
			add(&rs.exts, r.s[strings.LastIndexByte(r.s, '.'):], i)
		case r.kind == ruleExact:
			add(&rs.exact, r.s, i)
			rs.paths = true
		default:
			rs.rest = append(rs.rest, i)
			rs.paths = rs.paths || r.kind == rulePathGlob
		}
	}
	return rs
}

// last returns the index of the last rule that matches (sub is the path below the
// folder, needed only when paths is set; base the name), or -1.
func (rs *ruleSet) last(sub, base string, isDir bool) int {
	best := -1
	// pick looks at the rules of list (ascending indexes) from the last, down to best.
	pick := func(list []int) {
		for j := len(list) - 1; j >= 0 && list[j] > best; j-- {
			if rs.rules[list[j]].match(sub, base, isDir) {
				best = list[j]
				return
			}
		}
	}
	if rs.names != nil {
		pick(rs.names[base])
	}
	if rs.exts != nil {
		if d := strings.LastIndexByte(base, '.'); d >= 0 {
			pick(rs.exts[base[d:]])
		}
	}
	if rs.exact != nil {
		pick(rs.exact[sub])
	}
	pick(rs.rest)
	return best
}

// compileIgnore compiles the lines of ignore files (nil when none is a rule).
func compileIgnore(lines []string) *ruleSet { return indexRules(parseIgnore(lines)) }

// parseIgnore parses the lines of ignore files. Lines that are not valid patterns are
// left out.
func parseIgnore(lines []string) []ignoreRule {
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
				r.kind, r.s, r.need = ruleBaseGlob, line, GlobLiteral(line)
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
			rules = append(rules, parseIgnore([]string{again})...)
			continue
		default:
			// A slash at the start or in the middle anchors the pattern to the folder.
			p := strings.TrimPrefix(line, "/")
			if !meta {
				r.kind, r.s = ruleExact, p
			} else {
				r.kind, r.s, r.need = rulePathGlob, p, GlobLiteral(p)
			}
		}
		rules = append(rules, r)
	}
	return rules
}

// GlobLiteral returns the longest run of plain characters in a doublestar glob (an escaped
// character is plain), outside brackets and braces and without a slash (a slash by "**"
// may match nothing): every path the glob matches contains it, so a path without it need
// not be matched. A glob that is not valid UTF-8 or holds U+FFFD gives "" (doublestar
// reads invalid bytes in a name as U+FFFD).
func GlobLiteral(glob string) string {
	if !utf8.ValidString(glob) || strings.ContainsRune(glob, utf8.RuneError) {
		return ""
	}
	var best string
	var run []byte
	depth := 0
	for i := 0; i <= len(glob); i++ {
		if i < len(glob) && glob[i] == '\\' && i+1 < len(glob) {
			i++
			run = append(run, glob[i])
			continue
		}
		if i < len(glob) && !strings.ContainsRune("*?[]{},/\\", rune(glob[i])) {
			run = append(run, glob[i])
			continue
		}
		if depth == 0 && len(run) > len(best) {
			best = string(run)
		}
		run = run[:0]
		switch {
		case i == len(glob):
		case glob[i] == '[':
			// A class ends at the next ']', unless that is its first character or a
			// backslash comes before it: then give up rather than guess.
			j := i + 1
			if j < len(glob) && (glob[j] == '!' || glob[j] == '^') {
				j++
			}
			k := strings.IndexByte(glob[j:], ']')
			if k <= 0 || strings.IndexByte(glob[j:j+k], '\\') >= 0 {
				return ""
			}
			i = j + k
		case glob[i] == '{':
			depth++
		case glob[i] == '}':
			depth = max(0, depth-1)
		}
	}
	return best
}

// overrideIgnore is loadIgnore of the folder dirRel with the files given in files.
func overrideIgnore(dirfd int, dirRel string, files map[string][]byte) *ruleSet {
	var lines []string
	for _, n := range ignoreFiles {
		key := n
		if dirRel != "" {
			key = dirRel + "/" + n
		}
		if b, ok := files[key]; ok {
			if b != nil {
				lines = append(lines, strings.Split(string(b), "\n")...)
			}
			continue
		}
		lines = append(lines, readIgnoreLines(dirfd, n)...)
	}
	return compileIgnore(lines)
}

func readIgnoreLines(dirfd int, n string) []string {
	fd, err := posix.Openat(dirfd, n, openFlags|posix.O_NOFOLLOW|posix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	defer posix.Close(fd)
	if b, ok := readSmallRegular(fd, MaxIgnoreFileBytes); ok {
		return strings.Split(string(b), "\n")
	}
	return nil
}

// MaxIgnoreFileBytes caps an ignore file: a larger one is not read (nor is anything but a
// regular file: a FIFO would block the walk, a link to /dev/zero would never end).
const MaxIgnoreFileBytes = 1 << 20

// loadIgnore reads the ignore files of the open folder dirfd (only those in names, when
// names is not nil), or returns nil if it has none. Like git, it reads only regular files
// and follows no symbolic link.
func loadIgnore(dirfd int, names map[string]bool) *ruleSet {
	var lines []string
	for _, n := range ignoreFiles {
		if names != nil && !names[n] {
			continue
		}
		fd, err := posix.Openat(dirfd, n, openFlags|posix.O_NOFOLLOW|posix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		b, ok := readSmallRegular(fd, MaxIgnoreFileBytes)
		posix.Close(fd)
		if ok {
			lines = append(lines, strings.Split(string(b), "\n")...)
		}
	}
	return compileIgnore(lines)
}

// readSmallRegular reads the file open at fd if it is a regular file of at most limit
// bytes (also after reading: it may grow); false otherwise.
func readSmallRegular(fd int, limit int64) ([]byte, bool) {
	var st posix.Stat_t
	if posix.Fstat(fd, &st) != nil || st.Mode&posix.S_IFMT != posix.S_IFREG || st.Size > limit {
		return nil, false
	}
	b := make([]byte, 0, st.Size+512)
	for {
		if len(b) == cap(b) {
			b = slices.Grow(b, 4096)
		}
		n, err := ReadRetry(fd, b[len(b):cap(b)])
		if err != nil {
			return nil, false
		}
		if n == 0 {
			return b, true
		}
		b = b[:len(b)+n]
		if int64(len(b)) > limit {
			return nil, false
		}
	}
}

// Options configure a walk.
type Options struct {
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
	// Links asks visit to be called for symbolic links too (never followed).
	Links bool
	// Left, if set, is called with each entry the walk leaves out by a rule (the ignore
	// files, SkipDirs, .git, Skip): a folder left out is not entered. Called like visit,
	// from several goroutines at once.
	Left func(rel string, isDir bool)
}

// Entry is one file (or folder) the walk found.
type Entry struct {
	Rel  string // relative to the walk root, slash-separated
	Dir  bool
	Link bool // a symbolic link (only with Options.Links)
	// dirfd is the open folder holding the entry (valid while visit runs) and name the
	// entry's name in it: opening by them cannot be led elsewhere by a swapped folder.
	// dirAbs is that folder's absolute path.
	dirfd  int
	name   string
	dirAbs string
}

// Abs is the entry's absolute path (made when asked for: most entries of a search are
// never shown).
func (e *Entry) Abs() string { return e.dirAbs + string(filepath.Separator) + e.name }

// Open opens the entry, a file, for reading: without following a symlink put in its place
// since it was listed, and only if it is (still) a regular file. st is its fstat.
func (e *Entry) Open(st *posix.Stat_t) (int, bool) {
	fd, err := posix.Openat(e.dirfd, e.name, openFlags|posix.O_NOFOLLOW|posix.O_CLOEXEC, 0)
	if err != nil {
		return -1, false
	}
	if posix.Fstat(fd, st) != nil || st.Mode&posix.S_IFMT != posix.S_IFREG {
		posix.Close(fd)
		return -1, false
	}
	return fd, true
}

// Readlink is the target of the entry, a symbolic link.
func (e *Entry) Readlink() (string, error) {
	buf := make([]byte, 256)
	for {
		n, err := posix.Readlinkat(e.dirfd, e.name, buf)
		if err != nil {
			return "", err
		}
		if n < len(buf) {
			return string(buf[:n]), nil
		}
		buf = make([]byte, 2*len(buf))
	}
}

// Name is the entry's name in its folder.
func (e *Entry) Name() string { return e.name }

// Lstat is the entry's lstat, in its open folder.
func (e *Entry) Lstat(st *posix.Stat_t) error {
	return posix.Fstatat(e.dirfd, e.name, st, posix.AT_SYMLINK_NOFOLLOW)
}

// Walk visits every file below o.Root that is not ignored, from several goroutines at
// once: visit must be safe for concurrent use. Symbolic links are never followed (a link
// could lead out of the workspace), and visited only with Options.Links. Every folder is opened below the root
// folder, itself opened without following a symlink (fspath.Open), with openat2's
// RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS (fspath.OpenBeneath), and every file relative to its
// open folder with O_NOFOLLOW: a folder swapped for a symlink after it was listed is left
// out rather than followed. It returns an error matching fspath.ErrSymlink or
// fspath.ErrNotBeneath if the root itself was swapped, and
// ctx's error if it was cancelled, having stopped every goroutine it started.
func Walk(ctx context.Context, o Options, visit func(e Entry)) error {
	rootfd, err := fspath.Open(o.Root, posix.O_PATH|posix.O_DIRECTORY)
	if err != nil {
		return err
	}
	defer posix.Close(rootfd)
	var base *ignoreRules
	if !o.NoIgnoreFiles {
		base = ancestorRules(o.Workspace, o.Root)
	}
	q := &dirQueue{}
	q.cond = sync.NewCond(&q.mu)
	q.push(dirItem{rel: "", rules: base})
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
					walkDir(ctx, o, rootfd, it, q, visit)
				}
				q.finish()
			}
		}()
	}
	wg.Wait()
	return ctx.Err()
}

func walkDir(ctx context.Context, o Options, rootfd int, it dirItem, q *dirQueue, visit func(e Entry)) {
	rel := it.rel
	if rel == "" {
		rel = "."
	}
	fd, err := fspath.OpenBeneath(rootfd, rel, posix.O_RDONLY|posix.O_DIRECTORY)
	if err != nil {
		return
	}
	dirAbs := o.Root
	if it.rel != "" {
		dirAbs = o.Root + string(filepath.Separator) + filepath.FromSlash(it.rel)
	}
	f := os.NewFile(uintptr(fd), dirAbs)
	defer f.Close()
	ents, _ := f.ReadDir(-1)
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
			if rs := loadIgnore(fd, names); rs != nil {
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
		rel := name
		if it.rel != "" {
			rel = it.rel + "/" + name
		}
		if t&fs.ModeSymlink != 0 {
			if !o.Links && o.Left == nil {
				continue
			}
			if (rules != nil && rules.ignored(rel, false)) || (o.Skip != nil && o.Skip(rel, false)) {
				left(o, rel, false)
			} else if o.Links {
				visit(Entry{Rel: rel, Link: true, dirfd: fd, name: name, dirAbs: dirAbs})
			}
			continue
		}
		isDir := t.IsDir()
		if (isDir && (name == ".git" || o.SkipDirs[name])) || (rules != nil && rules.ignored(rel, isDir)) || (o.Skip != nil && o.Skip(rel, isDir)) {
			left(o, rel, isDir)
			continue
		}
		if isDir {
			if o.Dirs {
				visit(Entry{Rel: rel, Dir: true, dirfd: fd, name: name, dirAbs: dirAbs})
			}
			q.push(dirItem{rel: rel, rules: rules})
			continue
		}
		if !t.IsRegular() {
			continue
		}
		visit(Entry{Rel: rel, dirfd: fd, name: name, dirAbs: dirAbs})
		if ctx.Err() != nil {
			return
		}
	}
}

// left tells o.Left of an entry left out.
func left(o Options, rel string, isDir bool) {
	if o.Left != nil {
		o.Left(rel, isDir)
	}
}

// ancestorRules loads the ignore files of the folders from the workspace down to root's
// parent (none when root is outside the workspace).
func ancestorRules(ws, root string) *ignoreRules {
	rel, ok := fspath.Within(ws, root)
	if !ok || rel == "." {
		return nil
	}
	var rules *ignoreRules
	parts := strings.Split(rel, "/")
	dir := ws
	for i := range parts {
		if fd, err := fspath.Open(dir, posix.O_PATH|posix.O_DIRECTORY); err == nil {
			if rs := loadIgnore(fd, nil); rs != nil {
				rules = &ignoreRules{parent: rules, rules: rs, prepend: strings.Join(parts[i:], "/") + "/"}
			}
			posix.Close(fd)
		}
		dir = filepath.Join(dir, parts[i])
	}
	return rules
}

type dirItem struct {
	rel   string // relative to the walk root, slash-separated ("" for the root)
	rules *ignoreRules
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

// Ignored reports whether the walk of ws would leave out rel (slash-separated, relative to
// ws; isDir for a folder): the path itself or one of its folders is .git or matches the
// ignore files of ws and the folders down to it.
func Ignored(ws, rel string, isDir bool) bool { return IgnoredWith(ws, rel, isDir, nil) }

// IgnoredWith is Ignored with some ignore files read from files instead of the disk: keys are
// workspace-relative paths of .gitignore or .ignore files, values their content (nil: the file
// does not exist). It tells what older ignore files left out.
func IgnoredWith(ws, rel string, isDir bool, files map[string][]byte) bool {
	parts := strings.Split(rel, "/")
	rootfd, err := fspath.Open(ws, posix.O_PATH|posix.O_DIRECTORY)
	if err != nil {
		return false
	}
	defer posix.Close(rootfd)
	var rules *ignoreRules
	for i, part := range parts {
		dirRel := strings.Join(parts[:i], "/")
		name := "."
		if dirRel != "" {
			name = dirRel
		}
		if fd, err := fspath.OpenBeneath(rootfd, name, posix.O_RDONLY|posix.O_DIRECTORY); err == nil {
			rs := loadIgnore(fd, nil)
			if files != nil {
				rs = overrideIgnore(fd, dirRel, files)
			}
			if rs != nil {
				strip := ""
				if dirRel != "" {
					strip = dirRel + "/"
				}
				rules = &ignoreRules{parent: rules, rules: rs, strip: strip}
			}
			posix.Close(fd)
		}
		sub := strings.Join(parts[:i+1], "/")
		dir := isDir || i < len(parts)-1
		if dir && part == ".git" {
			return true
		}
		if rules != nil && rules.ignored(sub, dir) {
			return true
		}
	}
	return false
}
