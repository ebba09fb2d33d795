package builtin

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/bmatcuk/doublestar/v4"
)

// naiveLines returns the 1-based numbers of the lines of text that re matches.
func naiveLines(re *regexp.Regexp, text string) []int {
	var out []int
	if text == "" {
		return nil // an empty file has no lines
	}
	lines := strings.Split(text, "\n")
	if strings.HasSuffix(text, "\n") {
		lines = lines[:len(lines)-1]
	}
	for i, l := range lines {
		if re.MatchString(l) {
			out = append(out, i+1)
		}
	}
	return out
}

func scanLines(m *matcher, text string) ([]int, int) {
	var out []int
	end := m.scan([]byte(text), 1, func(n int, _ []byte) bool { out = append(out, n); return true })
	return out, end
}

func checkMatcher(t *testing.T, pattern, text string) {
	t.Helper()
	m, err := newMatcher(pattern)
	if err != nil {
		return
	}
	re := regexp.MustCompile(pattern)
	want := naiveLines(re, text)
	got, end := scanLines(m, text)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("pattern %q: lines %v, want %v (lit %q runLen %d)", pattern, got, want, m.lit, m.runLen)
	}
	if wantEnd := strings.Count(text, "\n") + 1; end != wantEnd {
		t.Errorf("pattern %q: next line %d, want %d", pattern, end, wantEnd)
	}
}

var matcherText = "package main\n\nfunc (r *Reader) Read(p []byte) (int, error) {\n\treturn 0, errors.New(\"reader closed\")\n}\nconst HTTPSTATUSCODES = 12\nΩmega façade ünïcode\n\tMutex_Lock(&m); mutex_loc\u212a(&m) // Kelvin sign\n\tMUTEX_LOCK(&m); \u017fkip STRASSE straße\nlast line without newline"

var matcherPatterns = []string{
	`func \(`, `errors\.New\("[a-z]+ closed`, `\bRead\b`, `[A-Z]{12}`, `(?i)reader`, `^\t`, `\)$`,
	`a`, `x*`, `[0-9]+`, `Ω\w+`, `ç`, `(?i)ÜNÏCODE`, `newline$`, `^$`, `int|error`, `[^a-z ]{3}`, `e.r`,
	`(?i)mutex_lock`, `(?i)mutex_lock\(`, `(?i)MUTEX_LOC`, `(?i)skip`, `(?i)skip strasse`, `(?i)lock\(&m\)`, `(?i)straße`, `(?i)k\(`, `(?i)x`,
	`(?i)errors\.new\("[a-z]+ CLOSED`, `mutex(?i)_lock`, `(?i)lock\b`, `(?i:m)utex`,
	`Read\(p \[\]byte\)`, `e.*(?i)READER CLOSED`, `(?i)ret.*(?-i)closed`, `[a-z]+\(&m\).*Kelvin`,
}

func TestRequiredLiteral(t *testing.T) {
	for _, tc := range []struct {
		pattern, lit string
		fold, whole  bool
		odd          string // m.odd, joined
	}{
		{`func \(`, "func (", false, true, ""},
		{`errors\.New\("[a-z]+ closed`, `errors.New("`, false, false, ""},
		{`(?i)ReadFull`, "readfull", true, true, ""},
		{`(?i)mutex_lock`, "mutex_lock", true, true, "\u212a"}, // k also folds to the Kelvin sign
		{`(?i)straße`, "stra", true, false, "\u017f"},          // s to the long s, ß is not ASCII
		{`(?i)errors\.new\("[a-z]+ closed`, `errors.new("`, true, false, "\u017f"},
		{`(?i)Spin_Lock`, "spin_lock", true, true, "\u017f\u212a"},
		{`abc(?i)xyz`, "abc", false, false, ""}, // as long: the exact one
		{`ab(?i)wxyz`, "wxyz", true, false, ""}, // the longest
		{`kk(?i)k`, "kk", false, false, ""},
		{`(?i)k`, "k", true, true, "\u212a"},
		{`(?i)été`, "t", true, false, ""},
		{`(?i)_+`, "_", true, false, ""},
		{`[A-Z]{12}`, "", false, false, ""},
	} {
		m, err := newMatcher(tc.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if string(m.lit) != tc.lit || m.lit != nil && (m.fold != tc.fold || m.whole != tc.whole) {
			t.Errorf("%s: literal %q fold %v whole %v, want %q %v %v", tc.pattern, m.lit, m.fold, m.whole, tc.lit, tc.fold, tc.whole)
		}
		if odd := string(bytes.Join(m.odd, nil)); odd != tc.odd {
			t.Errorf("%s: odd %q, want %q", tc.pattern, odd, tc.odd)
		}
	}
}

// TestAlsoLiterals: the literals other than the one searched for, looked for in a line
// before the regex runs on it.
func TestAlsoLiterals(t *testing.T) {
	for _, tc := range []struct {
		pattern, lit string
		also         []string
	}{
		{`#define [A-Z_]+_H\b`, "#define ", []string{"_H"}},
		{`spin_lock\(&[a-z_]+->lock\)`, "spin_lock(&", []string{"->lock)"}},
		{`(?i)foo\d+barbaz`, "barbaz", []string{"foo (fold)"}},
		{`(?i)desk\d+barbazfoo`, "barbazfoo", nil}, // s and k: desk can be spelled with odd runes
		{`desk\d+barbazfoo`, "barbazfoo", []string{"desk"}},
		{`a(b|c)d+(ef)?g{2,}`, "a", []string{"d", "g", "g"}}, // g{2,} is gg+
		{`x*abc`, "abc", nil},
		{`a.b.c.d.e.f`, "a", []string{"b", "c", "d", "e"}}, // at most maxAlso
	} {
		m, err := newMatcher(tc.pattern)
		if err != nil {
			t.Fatal(err)
		}
		var also []string
		for _, l := range m.also {
			s := string(l.b)
			if l.fold {
				s += " (fold)"
			}
			also = append(also, s)
		}
		if string(m.lit) != tc.lit || fmt.Sprint(also) != fmt.Sprint(tc.also) {
			t.Errorf("%s: literal %q and %q, want %q and %q", tc.pattern, m.lit, also, tc.lit, tc.also)
		}
	}
}

// TestRareByte: the byte searched for is the literal's least common in source text,
// counting both cases of a letter when the literal folds.
func TestRareByte(t *testing.T) {
	for _, tc := range []struct {
		pattern  string
		rare, up byte
	}{
		{`e_Q_e`, 'Q', 'Q'},
		{`(?i)tetex`, 'x', 'X'},
		{`(?i)_Z_`, 'z', 'Z'},
		{`EXPORT_SYMBOL_GPL`, 'Y', 'Y'},
	} {
		m, err := newMatcher(tc.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if m.rare != tc.rare || m.rareUp != tc.up || m.lit[m.rareAt] != m.rare {
			t.Errorf("%s: rare %q/%q at %d of %q, want %q/%q", tc.pattern, m.rare, m.rareUp, m.rareAt, m.lit, tc.rare, tc.up)
		}
	}
}

func TestMatcherAgreesWithRegexp(t *testing.T) {
	for _, p := range matcherPatterns {
		checkMatcher(t, p, matcherText)
		checkMatcher(t, p, matcherText+"\n")
		checkMatcher(t, p, strings.Repeat(matcherText+"\n", 50))
	}
}

func FuzzMatcher(f *testing.F) {
	for _, p := range matcherPatterns {
		f.Add(p, matcherText)
	}
	f.Fuzz(func(t *testing.T, pattern, text string) {
		if strings.Contains(pattern, `\n`) || strings.Contains(pattern, `\s`) || strings.Contains(pattern, "(?s)") || strings.Contains(pattern, "\n") {
			return // multi-line matches are out of grep's line model
		}
		re, err := regexp.Compile(pattern)
		if err != nil {
			return
		}
		// Classes that may hold a newline ([^a], \D, ...) can match across lines in the
		// chunk but never in a line: skip them.
		if re.MatchString("\n") {
			return
		}
		checkMatcher(t, pattern, text)
		// And case-insensitively, for the folded literal search.
		if fre, err := regexp.Compile("(?i)" + pattern); err == nil && !fre.MatchString("\n") {
			checkMatcher(t, "(?i)"+pattern, text)
		}
	})
}

func TestGlobMatcher(t *testing.T) {
	for _, tc := range []struct {
		glob, name string
		want       bool
	}{
		{"*.go", "main.go", true},
		{"*.go", "main.go.orig", false},
		{"*.go", ".go", true},
		{"*_test.go", "a_test.go", true},
		{"*_test.go", "a.go", false},
		{"*.{ts,tsx}", "a.tsx", true},
		{"*.[ch]", "a.h", true},
		{"*é", "café", true},
		{"*.go", "\xff.go", true},
		{"*", "anything", true},
		{"main.*", "main.c", true},
		{"**/include/**/*.h", "arch/x86/include/asm/io.h", true},
		{"**/include/**/*.h", "arch/x86/inc/asm/io.h", false},
		{"src/**/*.ts", "src/a/b.ts", true},
	} {
		if got := globMatcher(tc.glob)(tc.name); got != tc.want {
			t.Errorf("%q on %q: %v, want %v", tc.glob, tc.name, got, tc.want)
		}
	}
}

// FuzzGlobMatcher: globMatcher says what doublestar says.
func FuzzGlobMatcher(f *testing.F) {
	f.Add("*.go", "main.go")
	f.Add("*é", "\xc3café")
	f.Add("*.c", "x\xe2\x82.c")
	f.Add("*.txt", "sub/keep.txt")
	f.Add("**/include/**/*.h", "arch/x86/include/asm/io.h")
	f.Fuzz(func(t *testing.T, glob, name string) {
		if !doublestar.ValidatePattern(glob) {
			return
		}
		if got, want := globMatcher(glob)(name), doublestar.MatchUnvalidated(glob, name); got != want {
			t.Errorf("%q on %q: %v, doublestar says %v", glob, name, got, want)
		}
	})
}
