package registry

import (
	"regexp"
	"strings"
	"testing"
)

func TestValidID(t *testing.T) {
	for _, tc := range []struct {
		id   string
		want bool
	}{
		{"", false},
		{"a", true},
		{"Z", true},
		{"7", true},
		{"_", true},
		{"-", true},
		{"read_file-2", true},
		{strings.Repeat("a", 64), true},
		{strings.Repeat("a", 65), false},
		{strings.Repeat("é", 32), false}, // 64 bytes, none of them ASCII
		{"café", false},
		{"a b", false},
		{"a.b", false},
		{"a/b", false},
		{"a:b", false},
		{"ab\n", false},
		{"\nab", false},
		{"a\x00", false},
		{"[", false}, // between 'Z' and 'a'
		{"`", false},
		{"@", false}, // before 'A'
		{"{", false}, // after 'z'
	} {
		if got := ValidID(tc.id); got != tc.want {
			t.Errorf("ValidID(%q) = %v, want %v", tc.id, got, tc.want)
		}
	}
}

// FuzzValidID holds ValidID to the regular expression it replaced.
func FuzzValidID(f *testing.F) {
	re := regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	for _, s := range []string{"", "a", "a-b_C9", strings.Repeat("x", 64), strings.Repeat("x", 65), "é", "a\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		if got, want := ValidID(id), re.MatchString(id); got != want {
			t.Fatalf("ValidID(%q) = %v, the expression says %v", id, got, want)
		}
	})
}
