package shquote

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"
)

func TestWord(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", "''"},
		{"abc", "abc"},
		{"/usr/local/bin/toolsd", "/usr/local/bin/toolsd"},
		{"a-b_c.d+e,f:g@h", "a-b_c.d+e,f:g@h"},
		{"two words", "'two words'"},
		{"it's", `'it'\''s'`},
		{"'", `''\'''`},
		{`say "hi"`, `'say "hi"'`},
		{"a\nb", "'a\nb'"},
		{"a\tb", "'a\tb'"},
		{"$HOME", "'$HOME'"},
		{"$(touch x)", "'$(touch x)'"},
		{"`touch x`", "'`touch x`'"},
		{"!!", "'!!'"},
		{`back\slash`, `'back\slash'`},
		{"café", "'café'"},
		{"\xff\xfe", "'\xff\xfe'"},
		{"-rf", "-rf"}, // one word; whether a command reads it as an option is its grammar
		{"~", "'~'"},
		{"~root/x", "'~root/x'"},
		{"=cmd", "'=cmd'"}, // zsh expands a leading = to a command's path
		{"a=b", "'a=b'"},   // as a line's first word, an assignment
		{"*.go", "'*.go'"},
		{"{a,b}", "'{a,b}'"},
		{"a;b", "'a;b'"},
		{"#x", "'#x'"},
		{"%1", "'%1'"},
	}
	var words []string
	for _, tc := range cases {
		if got := Word(tc.in); got != tc.want {
			t.Errorf("Word(%q) = %q, want %q", tc.in, got, tc.want)
		}
		words = append(words, tc.in)
	}
	// The property, in every shell here: each quoted word is one word equal to the input.
	rng := rand.New(rand.NewPCG(25, 1))
	for range 500 {
		words = append(words, randomWord(rng))
	}
	for _, sh := range shells(t) {
		checkInShell(t, sh, words)
	}
}

// FuzzWord checks that Word's output, given to sh -c where a word goes, is one word equal to
// the input. Seeds are in testdata/fuzz/FuzzWord.
func FuzzWord(f *testing.F) {
	f.Add("it's $HOME `x` \"y\" !z\n~")
	shs := shells(f)
	f.Fuzz(func(t *testing.T, s string) {
		if strings.IndexByte(s, 0) >= 0 {
			t.Skip("no shell word holds a NUL byte")
		}
		for _, sh := range shs {
			checkInShell(t, sh, []string{s})
		}
	})
}

// shells are the shells to check in: sh, and bash, dash and zsh where they are installed.
func shells(tb testing.TB) []string {
	tb.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		tb.Fatalf("no sh to check the quoting with: %v", err)
	}
	out := []string{sh}
	for _, name := range []string{"bash", "dash", "zsh"} {
		if p, err := exec.LookPath(name); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// checkInShell runs one script in sh that, for each word, sets the positional parameters
// to Word(word) and prints their count and the first, and checks that each count is 1 and
// each first parameter is the word.
func checkInShell(t *testing.T, sh string, words []string) {
	t.Helper()
	var script strings.Builder
	for _, w := range words {
		fmt.Fprintf(&script, "set -- %s\nprintf '%%d\\0%%s\\0' \"$#\" \"$1\"\n", Word(w))
	}
	args := []string{"-c", script.String()}
	if strings.HasSuffix(sh, "zsh") {
		args = append([]string{"--emulate", "sh"}, args...)
	}
	out, err := exec.Command(sh, args...).Output()
	if ee, ok := err.(*exec.ExitError); ok {
		t.Fatalf("%s: %v: %s", sh, err, ee.Stderr)
	} else if err != nil {
		t.Fatalf("%s: %v", sh, err)
	}
	fields := bytes.Split(out, []byte{0})
	if len(fields) != 2*len(words)+1 {
		t.Fatalf("%s printed %d fields for %d words: %q", sh, len(fields), len(words), out)
	}
	for i, w := range words {
		if n, got := string(fields[2*i]), string(fields[2*i+1]); n != "1" || got != w {
			t.Errorf("%s read Word(%q) = %s as %s words, the first %q", sh, w, Word(w), n, got)
		}
	}
}

// randomWord is a short string leaning on the bytes shells treat specially.
func randomWord(rng *rand.Rand) string {
	const special = " \t\n'\"\\$`!~=*?[]{}()<>|&;#%^,:@+-./_"
	var b strings.Builder
	for range rng.IntN(12) {
		switch rng.IntN(6) {
		case 0:
			b.WriteByte(byte(1 + rng.IntN(255))) // any byte but NUL
		case 1:
			b.WriteString("é")
		default:
			b.WriteByte(special[rng.IntN(len(special))])
		}
	}
	return b.String()
}
