package builtin

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
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

var matcherText = "package main\n\nfunc (r *Reader) Read(p []byte) (int, error) {\n\treturn 0, errors.New(\"reader closed\")\n}\nconst HTTPSTATUSCODES = 12\nΩmega façade ünïcode\nlast line without newline"

var matcherPatterns = []string{
	`func \(`, `errors\.New\("[a-z]+ closed`, `\bRead\b`, `[A-Z]{12}`, `(?i)reader`, `^\t`, `\)$`,
	`a`, `x*`, `[0-9]+`, `Ω\w+`, `ç`, `(?i)ÜNÏCODE`, `newline$`, `^$`, `int|error`, `[^a-z ]{3}`, `e.r`,
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
	})
}
