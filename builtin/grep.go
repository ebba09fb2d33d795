package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/toolsd/toolsd/internal/posix"

	"github.com/toolsd/toolsd/registry"
)

const grepDescription = `Searches file contents with a regular expression (RE2 syntax, as in Go: no lookaround or backreferences).

Usage:
- pattern is the regex (log.*Error, func\s+\w+\(). Escape regex characters with a backslash to search for them literally (interface\{\}). Add (?i) at the start for a case-insensitive search.
- path is the folder (or file) to search: relative to the workspace root, or absolute. Default: the workspace root. It also accepts toolsd://output/<id> to search the full output of an earlier truncated call.
- include filters files by name with a glob ("*.go", "*.{ts,tsx}", "src/**/*.js").
- Files ignored by .gitignore or .ignore, the .git folder, binary files and symbolic links are skipped.
- Results are matching lines grouped by file, with line numbers, newest files first, at most %[1]d lines; the footer says when they were cut: then narrow path, pattern or include.
- To find files by name, use glob. For an open-ended search that takes several rounds, start broad and narrow down.`

func grepTool(o *Options) *registry.Tool {
	s := schema{
		props: []prop{
			{"pattern", map[string]any{"type": "string", "minLength": 1, "description": "The regular expression to search for (RE2 syntax)."}},
			{"path", map[string]any{"type": "string", "description": "The folder or file to search: relative to the workspace root, or absolute (default: the workspace root)."}},
			{"include", map[string]any{"type": "string", "description": `Only search files whose name matches this glob ("*.js", "*.{ts,tsx}").`}},
		},
		required: []string{"pattern"},
	}
	return &registry.Tool{
		ID:          "grep",
		Description: fmt.Sprintf(grepDescription, o.SearchLimit),
		Parameters:  s.raw(),
		Permission:  "grep",
		ReadOnly:    true,
		Execute: func(ctx context.Context, call *registry.Call, args json.RawMessage) (*registry.Result, error) {
			var a struct {
				Pattern string  `json:"pattern"`
				Path    *string `json:"path"`
				Include *string `json:"include"`
			}
			if err := decode(args, &a); err != nil {
				return nil, err
			}
			return runGrep(ctx, o, call, a.Pattern, deref(a.Path), deref(a.Include))
		},
	}
}

// matcher finds the lines that match a regex in a buffer, using a literal every match must
// contain to skip most of the text without running the regex.
type matcher struct {
	re    *regexp.Regexp // compiled with (?m)
	lit   []byte         // a literal every match contains, or nil (in lower case with fold)
	fold  bool           // lit is matched ASCII case-insensitively
	whole bool           // the regex is exactly lit: a literal hit is a match
	also  []literal      // other literals every match contains (at most maxAlso)
	// odd, with fold, holds the UTF-8 of the non-ASCII runes that letters of lit also
	// fold to (the Kelvin sign for k, the long s for s): a line holding one is given to
	// the regex, as lit's ASCII compare cannot find a match spelled with it.
	odd [][]byte
	// rare is the byte of lit least common in source text (byteFreq; with fold, its two
	// cases together), rareUp its upper case with fold (else rare again), and rareAt its
	// offset in lit: the search looks for it with IndexByte, then checks lit around it.
	rare, rareUp byte
	rareAt       int
	// runSet and runLen, when runLen > 0, say that every match is a run of at least
	// runLen bytes all in runSet: a regex without a literal is only run on the lines
	// that have such a run.
	runSet [256]bool
	runLen int
	// piece is the size of the line-aligned pieces a regex without a literal is run on:
	// small enough for Go's backtracking matcher, which is much faster than its NFA.
	piece int
}

func newMatcher(pattern string) (*matcher, error) {
	parsed, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil, fmt.Errorf("pattern %q is not a valid regular expression: %v. It uses RE2 syntax (no lookaround or backreferences); escape special characters with \\ to search for them literally", pattern, explainSyntaxErr(err))
	}
	re, err := regexp.Compile("(?m)" + pattern)
	if err != nil {
		return nil, fmt.Errorf("pattern %q is not a valid regular expression: %v", pattern, err)
	}
	m := &matcher{re: re, piece: 4096}
	simp := parsed.Simplify()
	if prog, err := syntax.Compile(simp); err == nil && len(prog.Inst) > 0 {
		// regexp uses backtracking for inputs up to 256 Ki bits / instructions.
		m.piece = max(256, min(32<<10, (256<<10)/len(prog.Inst)-64))
	}
	var set [256]bool
	if anyByte := byteSet(simp, &set); !anyByte && !set['\n'] {
		n := 0
		for _, b := range set {
			if b {
				n++
			}
		}
		if ml := minBytes(simp); ml >= 2 && n <= 160 {
			m.runSet, m.runLen = set, ml
		}
	}
	if lits := requiredLiterals(simp, nil); len(lits) > 0 {
		// The longest is searched for; of two as long, one matched exactly. The others
		// are looked for in a line before the regex runs on it.
		best := 0
		for i, l := range lits {
			if len(l.b) > len(lits[best].b) || len(l.b) == len(lits[best].b) && lits[best].fold && !l.fold {
				best = i
			}
		}
		m.lit, m.fold = lits[best].b, lits[best].fold
		for i, l := range lits {
			// A line is searched for the others with an ASCII compare, which a match
			// spelled with a non-ASCII fold (odd) would fail.
			if i != best && len(m.also) < maxAlso && (!l.fold || oddFolds(l.b) == nil) {
				m.also = append(m.also, l)
			}
		}
		if m.fold {
			m.odd = oddFolds(m.lit)
		}
		// With fold, lit may be only the part of the literal that is ASCII: then a hit
		// still needs the regex.
		m.whole = simp.Op == syntax.OpLiteral && len(m.lit) == len(simp.Rune)
		best64 := uint64(math.MaxUint64)
		for i, c := range m.lit {
			f := uint64(byteFreq[c])
			if m.fold && c != upperASCII(c) {
				f += uint64(byteFreq[upperASCII(c)])
			}
			if f < best64 {
				best64, m.rareAt = f, i
			}
		}
		m.rare, m.rareUp = m.lit[m.rareAt], m.lit[m.rareAt]
		if m.fold {
			m.rareUp = upperASCII(m.rare)
		}
	}
	return m, nil
}

// maxAlso bounds the literals looked for in a line besides the one searched for.
const maxAlso = 4

func explainSyntaxErr(err error) string {
	var se *syntax.Error
	if errors.As(err, &se) {
		return fmt.Sprintf("%s in %q", se.Code, se.Expr)
	}
	return err.Error()
}

// literal is a piece of text every match of a regex contains: with fold, in lower case and
// to be matched ASCII case-insensitively.
type literal struct {
	b    []byte
	fold bool
}

// requiredLiterals appends to lits literals every match of re contains.
func requiredLiterals(re *syntax.Regexp, lits []literal) []literal {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase == 0 {
			return append(lits, literal{[]byte(string(re.Rune)), false})
		}
		if b := foldLiteral(re.Rune); len(b) > 0 {
			return append(lits, literal{b, true})
		}
	case syntax.OpCapture, syntax.OpPlus:
		return requiredLiterals(re.Sub[0], lits)
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return requiredLiterals(re.Sub[0], lits)
		}
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			lits = requiredLiterals(sub, lits)
		}
	}
	return lits
}

// foldLiteral returns, in lower case, the longest run of ASCII runes of a
// case-insensitive literal: any match of the literal holds it in some mix of cases, or
// spells one of its letters with a non-ASCII rune that letter folds to (oddFolds).
func foldLiteral(runes []rune) []byte {
	var best, cur []byte
	for _, r := range runes {
		if r >= utf8.RuneSelf {
			cur = nil
			continue
		}
		cur = append(cur, lowerASCII(byte(r)))
		if len(cur) > len(best) {
			best = cur
		}
	}
	return bytes.Clone(best)
}

// oddFolds returns the UTF-8 of the non-ASCII runes that the ASCII bytes of lit fold to
// (K to the Kelvin sign, S to the long s), or nil.
func oddFolds(lit []byte) [][]byte {
	var odd [][]byte
	var seen [256]bool
	for _, c := range lit {
		if seen[c] {
			continue
		}
		seen[c] = true
		for f := unicode.SimpleFold(rune(c)); f != rune(c); f = unicode.SimpleFold(f) {
			if f >= utf8.RuneSelf {
				odd = append(odd, []byte(string(f)))
			}
		}
	}
	return odd
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func upperASCII(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - ('a' - 'A')
	}
	return c
}

// scan calls emit for each matching line of chunk (whole lines), with its 1-based number;
// line is the number of chunk's first line. It returns the number of the line after it.
// emit returning false stops the scan.
func (m *matcher) scan(chunk []byte, line int, emit func(n int, text []byte) bool) int {
	if m.lit == nil && m.runLen > 0 {
		return m.scanRuns(chunk, line, emit)
	}
	if m.lit == nil {
		return m.scanPieces(chunk, line, emit)
	}
	pos := 0 // line is the number of the line holding chunk[pos]
	f := newLitFinder(m, chunk)
	for i := 0; i < len(chunk); {
		start, exact := f.index(i)
		if start < 0 {
			break
		}
		ls := bytes.LastIndexByte(chunk[:start], '\n') + 1
		le := bytes.IndexByte(chunk[start:], '\n')
		if le < 0 {
			le = len(chunk)
		} else {
			le += start
		}
		text := chunk[ls:le]
		if exact && m.whole || m.alsoIn(text) && m.re.Match(text) {
			line += bytes.Count(chunk[pos:ls], []byte{'\n'})
			pos = ls
			if !emit(line, text) {
				return line
			}
		}
		i = le + 1
	}
	return line + bytes.Count(chunk[pos:], []byte{'\n'})
}

// litFinder finds a matcher's literal in a chunk, from left to right. With fold it looks
// for both cases of the rare byte and for the odd runes, and remembers where each is next
// so that no byte is looked at twice.
type litFinder struct {
	m     *matcher
	chunk []byte
	// next is where rare and rareUp are next at or after the last place looked from
	// (len(chunk): nowhere); below that place, not yet looked for (-1 at first).
	next [2]int
	// odd is the same for each of m.odd (only k and s fold to a non-ASCII rune).
	odd [2]int
}

func newLitFinder(m *matcher, chunk []byte) litFinder {
	return litFinder{m: m, chunk: chunk, next: [2]int{-1, -1}, odd: [2]int{-1, -1}}
}

// index returns the index of the literal in the chunk at or after from (exact), or of the
// first odd rune there if that comes first (not exact: its line needs the regex), or -1.
// Calls are made with from never decreasing.
func (f *litFinder) index(from int) (int, bool) {
	o := len(f.chunk)
	for k, enc := range f.m.odd {
		if f.odd[k] < from {
			f.odd[k] = len(f.chunk)
			if j := bytes.Index(f.chunk[from:], enc); j >= 0 {
				f.odd[k] = from + j
			}
		}
		o = min(o, f.odd[k])
	}
	if a := f.ascii(from); a >= 0 && a < o {
		return a, true
	}
	if o < len(f.chunk) {
		return o, false
	}
	return -1, false
}

// ascii returns the index of the literal, as ASCII, in the chunk at or after from, or -1.
func (f *litFinder) ascii(from int) int {
	m, chunk := f.m, f.chunk
	for p := from + m.rareAt; p < len(chunk); { // where the rare byte of a match at from would be
		c := f.look(0, m.rare, p)
		if m.rareUp != m.rare {
			c = min(c, f.look(1, m.rareUp, p))
		}
		start := c - m.rareAt
		if c == len(chunk) || start+len(m.lit) > len(chunk) {
			return -1
		}
		if m.litAt(chunk[start : start+len(m.lit)]) {
			return start
		}
		p = c + 1
	}
	return -1
}

// look returns where b is next in the chunk at or after p (len(chunk) for nowhere).
func (f *litFinder) look(k int, b byte, p int) int {
	if f.next[k] < p {
		if j := bytes.IndexByte(f.chunk[p:], b); j >= 0 {
			f.next[k] = p + j
		} else {
			f.next[k] = len(f.chunk)
		}
	}
	return f.next[k]
}

// litAt reports whether b, as long as m.lit, is m.lit (in any case with fold).
func (m *matcher) litAt(b []byte) bool {
	if !m.fold {
		return bytes.Equal(b, m.lit)
	}
	return equalFold(b, m.lit)
}

// alsoIn reports whether line holds every literal of m.also.
func (m *matcher) alsoIn(line []byte) bool {
	for _, l := range m.also {
		if !l.fold && !bytes.Contains(line, l.b) || l.fold && !containsFold(line, l.b) {
			return false
		}
	}
	return true
}

// equalFold reports whether b is lower (lower case, as long as b) in any case, ASCII only.
func equalFold(b, lower []byte) bool {
	for i, c := range b {
		if lowerASCII(c) != lower[i] {
			return false
		}
	}
	return true
}

// containsFold reports whether s holds lower (lower case) in any case, ASCII only.
func containsFold(s, lower []byte) bool {
	for i := 0; i+len(lower) <= len(s); i++ {
		if equalFold(s[i:i+len(lower)], lower) {
			return true
		}
	}
	return false
}

// scanRuns is scan for a regex without a literal whose matches are runs of bytes from a
// small set: only lines with a long enough run are given to the regex.
func (m *matcher) scanRuns(chunk []byte, line int, emit func(n int, text []byte) bool) int {
	pos := 0 // line is the number of the line holding chunk[pos]
	run := 0
	set := &m.runSet
	for i := 0; i < len(chunk); i++ {
		if !set[chunk[i]] {
			run = 0
			continue
		}
		run++
		if run < m.runLen {
			continue
		}
		ls := bytes.LastIndexByte(chunk[:i], '\n') + 1
		le := bytes.IndexByte(chunk[i:], '\n')
		if le < 0 {
			le = len(chunk)
		} else {
			le += i
		}
		text := chunk[ls:le]
		if m.re.Match(text) {
			line += bytes.Count(chunk[pos:ls], []byte{'\n'})
			pos = ls
			if !emit(line, text) {
				return line
			}
		}
		i = le // the loop's i++ steps over the newline
		run = 0
	}
	return line + bytes.Count(chunk[pos:], []byte{'\n'})
}

// byteSet adds to set every byte a match of re can contain; true means any byte can.
func byteSet(re *syntax.Regexp, set *[256]bool) bool {
	addRune := func(r rune) {
		var buf [utf8.UTFMax]byte
		n := utf8.EncodeRune(buf[:], r)
		for _, b := range buf[:n] {
			set[b] = true
		}
	}
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			addRune(r)
			if re.Flags&syntax.FoldCase != 0 {
				for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
					addRune(f)
				}
			}
		}
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			lo, hi := re.Rune[i], re.Rune[i+1]
			if hi >= utf8.RuneSelf {
				for b := 0x80; b < 0x100; b++ {
					set[b] = true
				}
				hi = utf8.RuneSelf - 1
			}
			for r := lo; r <= hi; r++ {
				set[r] = true
			}
		}
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return true
	case syntax.OpCapture, syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat, syntax.OpConcat, syntax.OpAlternate:
		for _, sub := range re.Sub {
			if byteSet(sub, set) {
				return true
			}
		}
	}
	return false
}

// minBytes is a lower bound of the length in bytes of a match of re.
func minBytes(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			return len(re.Rune)
		}
		n := 0
		for _, r := range re.Rune {
			n += utf8.RuneLen(r)
		}
		return n
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return 1
	case syntax.OpCapture, syntax.OpPlus:
		return minBytes(re.Sub[0])
	case syntax.OpRepeat:
		return re.Min * minBytes(re.Sub[0])
	case syntax.OpConcat:
		n := 0
		for _, sub := range re.Sub {
			n += minBytes(sub)
		}
		return n
	case syntax.OpAlternate:
		n := -1
		for _, sub := range re.Sub {
			if k := minBytes(sub); n < 0 || k < n {
				n = k
			}
		}
		return max(n, 0)
	}
	return 0
}

// scanPieces is scan for a regex without a literal: it runs the regex on line-aligned
// pieces of chunk and only looks at the lines of a piece that matches.
func (m *matcher) scanPieces(chunk []byte, line int, emit func(n int, text []byte) bool) int {
	for len(chunk) > 0 {
		end := len(chunk)
		if end > m.piece {
			end = bytes.LastIndexByte(chunk[:m.piece], '\n') + 1
			if end == 0 {
				// A line longer than a piece: take it whole.
				if i := bytes.IndexByte(chunk, '\n'); i >= 0 {
					end = i + 1
				} else {
					end = len(chunk)
				}
			}
		}
		piece := chunk[:end]
		chunk = chunk[end:]
		if !m.re.Match(piece) {
			line += bytes.Count(piece, []byte{'\n'})
			continue
		}
		for len(piece) > 0 {
			i := bytes.IndexByte(piece, '\n')
			text := piece
			if i >= 0 {
				text, piece = piece[:i], piece[i+1:]
			} else {
				piece = nil
			}
			if m.re.Match(text) && !emit(line, text) {
				return line
			}
			if i >= 0 {
				line++
			}
		}
	}
	return line
}

// grepFile is one file's matches.
type grepFile struct {
	abs     string
	name    string // as shown
	count   int
	lines   []grepLine
	modTime time.Time
}

type grepLine struct {
	n    int
	text string
}

// searchFile searches the regular file open at fd, reading it in line-aligned chunks
// through buf. It returns false for a binary file (a NUL byte in its first 8 KiB). The file
// is read with raw system calls: an os.File costs an fcntl and a poller registration per
// file.
func (m *matcher) searchFile(fd int, buf *[]byte, keep, maxLine int) (*grepFile, bool) {
	var gf *grepFile
	b := *buf
	carry := 0
	line := 1
	first := true
	for {
		want := len(b) - carry
		n, err := readRetry(fd, b[carry:])
		if n < 0 {
			n = 0
		}
		data := b[:carry+n]
		if first && len(data) > 0 {
			first = false
			if bytes.IndexByte(data[:min(len(data), 8192)], 0) >= 0 {
				return nil, false
			}
		}
		// A regular file gives a short read only at its end: no extra read to see EOF.
		eof := err != nil || n < want
		end := len(data)
		if !eof {
			end = bytes.LastIndexByte(data, '\n') + 1
			if end == 0 && len(b) >= maxGrepBuf {
				// A line longer than the largest buffer: search it in pieces (a match
				// across a piece boundary is missed).
				end = len(data)
			} else if end == 0 {
				// A line longer than the buffer: grow it.
				nb := make([]byte, 2*len(b))
				copy(nb, data)
				b = nb
				*buf = b
				carry = len(data)
				continue
			}
		}
		line = m.scan(data[:end], line, func(ln int, text []byte) bool {
			if gf == nil {
				gf = &grepFile{}
			}
			gf.count++
			if len(gf.lines) < keep {
				t := text
				if len(t) > 0 && t[len(t)-1] == '\r' {
					t = t[:len(t)-1]
				}
				s := string(cutUTF8(t, maxLine))
				if len(t) > maxLine {
					s += fmt.Sprintf("... (line truncated to %d characters)", maxLine)
				}
				gf.lines = append(gf.lines, grepLine{ln, strings.ToValidUTF8(s, "\uFFFD")})
			}
			return true
		})
		if eof {
			break
		}
		carry = copy(b, data[end:])
	}
	return gf, true
}

// maxGrepBuf bounds the buffer a single long line can grow.
const maxGrepBuf = 16 << 20

// bufPool holds the read buffers of grep's workers.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

func runGrep(ctx context.Context, o *Options, call *registry.Call, pattern, path, include string) (*registry.Result, error) {
	m, err := newMatcher(pattern)
	if err != nil {
		return nil, err
	}
	if include != "" && !doublestar.ValidatePattern(include) {
		return nil, fmt.Errorf("include %q is not a valid glob: use patterns like \"*.go\" or \"*.{ts,tsx}\"", include)
	}
	meta := map[string]any{"pattern": pattern, "path": path, "include": include}
	ask := func() error {
		return call.Ask(ctx, registry.AskRequest{Permission: "grep", Patterns: []string{pattern}, Always: exactly(pattern), Metadata: meta})
	}
	if strings.HasPrefix(path, registry.OutputURIPrefix) {
		if err := ask(); err != nil {
			return nil, err
		}
		return grepOutput(ctx, o, call, m, path, meta)
	}
	root := call.Workspace
	var t *target
	if path != "" {
		if t, err = resolvePath(call.Workspace, "", "path", path); err != nil {
			return nil, err
		}
		if !t.Exists() {
			return nil, notFoundError(call.Workspace, t)
		}
		if err := askExternal(ctx, call, t, t.Info.IsDir()); err != nil {
			return nil, err
		}
		root = t.Abs
		meta["path"] = t.Display()
	}
	if err := ask(); err != nil {
		return nil, err
	}

	limit := o.SearchLimit
	var mu sync.Mutex // guards files
	var files []*grepFile
	// search searches the regular file open at fd (and closes it); st is its fstat. A file
	// with matches is kept, named by e (a walked file) or else abs.
	search := func(fd int, st *posix.Stat_t, e *walkEntry, abs string) {
		defer posix.Close(fd)
		bp := bufPool.Get().(*[]byte)
		gf, _ := m.searchFile(fd, bp, limit, o.ReadMaxLineLength)
		if len(*bp) <= 1<<20 {
			bufPool.Put(bp)
		}
		if gf != nil {
			if e != nil {
				abs = e.Abs()
			}
			gf.abs = abs
			gf.modTime = time.Unix(st.Mtim.Unix())
			gf.name = relOrAbs(call.Workspace, abs)
			mu.Lock()
			files = append(files, gf)
			mu.Unlock()
		}
	}
	inc := includeMatcher(include)
	if t != nil && !t.Info.IsDir() {
		if !t.Info.Mode().IsRegular() {
			return nil, fmt.Errorf("path %s is not a regular file or folder (it is a %s): grep searches files and folders", t.Display(), fileKind(t.Info.Mode()))
		}
		if inc == nil || inc(filepath.Base(t.Abs), filepath.Base(t.Abs)) {
			fd, st, err := openRegular(t)
			if err != nil {
				return nil, fmt.Errorf("cannot search %s: %w", t.Display(), err)
			}
			search(fd, st, nil, t.Abs)
		}
	} else {
		err := walk(ctx, walkOptions{Root: root, Workspace: call.Workspace}, func(e walkEntry) {
			if inc != nil && !inc(e.Rel, e.Name()) {
				return
			}
			st := statPool.Get().(*posix.Stat_t)
			if fd, ok := e.Open(st); ok {
				search(fd, st, &e, "")
			}
			statPool.Put(st)
		})
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			return nil, fmt.Errorf("cannot search %s: %w", relOrAbs(call.Workspace, root), err)
		}
	}
	sort.Slice(files, func(i, j int) bool {
		if !files[i].modTime.Equal(files[j].modTime) {
			return files[i].modTime.After(files[j].modTime)
		}
		return files[i].name < files[j].name
	})
	return grepResult(o, pattern, files, meta), nil
}

// includeMatcher returns a filter for the include glob (nil for none): a glob without a
// slash matches the file name at any depth, one with a slash the path below the root.
func includeMatcher(include string) func(rel, base string) bool {
	if include == "" {
		return nil
	}
	if !strings.Contains(include, "/") {
		name := globMatcher(include)
		return func(_, base string) bool { return name(base) }
	}
	path := globMatcher(strings.TrimPrefix(include, "./"))
	return func(rel, _ string) bool { return path(rel) }
}

func grepResult(o *Options, pattern string, files []*grepFile, meta map[string]any) *registry.Result {
	total := 0
	for _, f := range files {
		total += f.count
	}
	meta["matches"] = total
	meta["files"] = len(files)
	if total == 0 {
		meta["truncated"] = false
		return &registry.Result{Title: pattern, Output: "No matches found.", Metadata: meta}
	}
	var b strings.Builder
	shown := 0
	fmt.Fprintf(&b, "Found %d matches in %d files", total, len(files))
	if total > o.SearchLimit {
		fmt.Fprintf(&b, " (showing %d, newest files first)", o.SearchLimit)
	}
	b.WriteString(":\n")
	for _, f := range files {
		if shown >= o.SearchLimit {
			break
		}
		fmt.Fprintf(&b, "\n%s:\n", f.name)
		for _, l := range f.lines {
			if shown >= o.SearchLimit {
				break
			}
			fmt.Fprintf(&b, "  Line %d: %s\n", l.n, l.text)
			shown++
		}
	}
	meta["truncated"] = shown < total
	if shown < total {
		fmt.Fprintf(&b, "\n(Results are truncated: showing %d of %d matches. Narrow the path, the pattern or include to see the rest.)", shown, total)
	}
	return &registry.Result{Title: pattern, Output: b.String(), Metadata: meta}
}

// grepOutput searches a stored output, page by page.
func grepOutput(ctx context.Context, o *Options, call *registry.Call, m *matcher, uri string, meta map[string]any) (*registry.Result, error) {
	id := strings.TrimPrefix(uri, registry.OutputURIPrefix)
	if call.Outputs == nil {
		return nil, errors.New("stored outputs cannot be searched in this session")
	}
	gf := &grepFile{name: uri}
	const pageLines = 10000
	// Page by the lines the store returned: a page also stops at a byte cap, so it can hold
	// far fewer lines than asked for.
	for off := 0; ; {
		content, total, _, err := call.Outputs.ReadLines(ctx, id, off, pageLines)
		if err != nil {
			if errors.Is(err, registry.ErrOutputNotFound) {
				return nil, fmt.Errorf("no stored output %s: it may have been pruned, or the id is mistyped", uri)
			}
			return nil, fmt.Errorf("cannot read %s: %w", uri, err)
		}
		if off >= total {
			break
		}
		m.scan([]byte(content), off+1, func(n int, text []byte) bool {
			gf.count++
			if len(gf.lines) < o.SearchLimit {
				gf.lines = append(gf.lines, grepLine{n, strings.ToValidUTF8(string(cutUTF8(text, o.ReadMaxLineLength)), "\uFFFD")})
			}
			return true
		})
		off += outputPageLines(content)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	var files []*grepFile
	if gf.count > 0 {
		files = append(files, gf)
	}
	return grepResult(o, m.re.String()[4:], files, meta), nil
}
