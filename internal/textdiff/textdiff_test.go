package textdiff

import (
	"fmt"
	"strings"
	"testing"
)

func TestUnifiedDiff(t *testing.T) {
	tests := []struct {
		name     string
		old, new string
		want     string
		add, del int
	}{
		{"same", "a\nb\n", "a\nb\n", "", 0, 0},
		{"one line", "a\nb\nc\n", "a\nB\nc\n", "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n", 1, 1},
		{"create", "", "x\n", "--- a/f\n+++ b/f\n@@ -0,0 +1 @@\n+x\n", 1, 0},
		{"no newline at end", "a\n", "a\nb", "--- a/f\n+++ b/f\n@@ -1 +1,2 @@\n a\n+b\n\\ No newline at end of file\n", 1, 0},
		{"context is 3 lines", "1\n2\n3\n4\n5\n6\n7\n8\n9\n", "1\n2\n3\n4\nX\n6\n7\n8\n9\n", "--- a/f\n+++ b/f\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+X\n 6\n 7\n 8\n", 1, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := Unified("f", []byte(tc.old), []byte(tc.new))
			if d.Text != tc.want || d.Additions != tc.add || d.Deletions != tc.del {
				t.Errorf("diff = %q +%d -%d, want %q +%d -%d", d.Text, d.Additions, d.Deletions, tc.want, tc.add, tc.del)
			}
		})
	}
}

// TestUnifiedDiffLarge: a change of more lines than the matcher is given becomes one
// replaced block, and the text is capped.
func TestUnifiedDiffLarge(t *testing.T) {
	var a, b strings.Builder
	for i := range 20000 {
		fmt.Fprintf(&a, "line %d\n", i)
		fmt.Fprintf(&b, "LINE %d\n", i)
	}
	d := Unified("big", []byte(a.String()), []byte(b.String()))
	if d.Additions != 20000 || d.Deletions != 20000 {
		t.Errorf("+%d -%d", d.Additions, d.Deletions)
	}
	if len(d.Text) > MaxBytes+1024 || !strings.Contains(d.Text, "diff cut at 256 KiB: +20000 -20000 lines in all") {
		t.Errorf("diff of %d bytes, tail %q", len(d.Text), d.Text[len(d.Text)-100:])
	}
}

// TestUnifiedDiffRegionMatchesWhole: diffing only the changed region gives the same text
// as diffing the whole files.
func TestUnifiedDiffRegionMatchesWhole(t *testing.T) {
	var base []string
	for i := range 200 {
		base = append(base, fmt.Sprintf("l%d", i%7))
	}
	whole := func(a, b string) string { return diffLines("f", []byte(a), []byte(b), 0).Text }
	cases := []func([]string) []string{
		func(l []string) []string { l[100] = "X"; return l },
		func(l []string) []string { l[0] = "X"; return l },
		func(l []string) []string { l[199] = "X"; return l },
		func(l []string) []string { return append(l[:50], l[53:]...) },
		func(l []string) []string { return append(l[:2], append([]string{"new", "lines"}, l[2:]...)...) },
		func(l []string) []string { l[10], l[150] = "A", "B"; return l },
		func(l []string) []string { return l[:0] },
	}
	for i, mutate := range cases {
		for _, nl := range []string{"\n", ""} {
			a := strings.Join(base, "\n") + nl
			b := strings.Join(mutate(append([]string(nil), base...)), "\n") + nl
			if got, want := Unified("f", []byte(a), []byte(b)).Text, whole(a, b); got != want {
				t.Errorf("case %d (newline %q): region diff\n%s\nwhole diff\n%s", i, nl, got, want)
			}
		}
	}
}
