package permission

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolsd/toolsd/permission/shell"
)

// gen builds a shell script from fuzz bytes with a small grammar and counts the simple
// commands it holds, so the analysis can be checked against a known count; it also knows
// whether it wrote a construct outside the subset the analysis follows.
type gen struct {
	b   []byte
	i   int
	out strings.Builder
	n   int // simple commands written
	// outside: the script holds if, while or ${v:-w}, which make the line opaque.
	outside bool
}

func (g *gen) next() byte {
	if g.i >= len(g.b) {
		return 0
	}
	c := g.b[g.i]
	g.i++
	return c
}

var (
	genNames = []string{"a", "git", "ls", "rm", "echo", "make", "go", "npm"}
	genArgs  = []string{"x", "-y", "--zz=1", "status", `"d q"`, "$v", "${v:-w}", `\;`, "*.go", "../p", "~/h", "'s q'"}
	genSeps  = []string{"; ", " && ", " || ", " | ", "\n", " & ", " |& "}
)

func (g *gen) simple(inSingle bool) {
	g.out.WriteString(genNames[int(g.next())%len(genNames)])
	for k := int(g.next()) % 4; k > 0; k-- {
		a := genArgs[int(g.next())%len(genArgs)]
		if inSingle && strings.Contains(a, "'") {
			a = "q"
		}
		g.outside = g.outside || a == "${v:-w}"
		g.out.WriteString(" " + a)
	}
	g.n++
	switch g.next() % 6 {
	case 1:
		g.out.WriteString(" > out")
	case 2:
		g.out.WriteString(" 2>&1")
	}
}

func (g *gen) list(depth int, inSingle bool) {
	for k := int(g.next())%3 + 1; k > 0; k-- {
		g.cmd(depth, inSingle)
		if k > 1 {
			g.out.WriteString(genSeps[int(g.next())%len(genSeps)])
		}
	}
}

func (g *gen) cmd(depth int, inSingle bool) {
	if depth > 3 {
		g.simple(inSingle)
		return
	}
	switch g.next() % 10 {
	case 0:
		g.out.WriteString("( ") // "((" would start arithmetic
		g.list(depth+1, inSingle)
		g.out.WriteString(" )")
	case 1:
		g.out.WriteString("{ ")
		g.list(depth+1, inSingle)
		g.out.WriteString("; }")
	case 2:
		g.outside = true
		g.out.WriteString("if ")
		g.list(depth+1, inSingle)
		g.out.WriteString("; then ")
		g.list(depth+1, inSingle)
		g.out.WriteString("; fi")
	case 3:
		g.out.WriteString("echo $( ") // "$((" would start arithmetic
		g.n++
		g.list(depth+1, inSingle)
		g.out.WriteString(")")
	case 4:
		if inSingle {
			g.simple(inSingle)
			return
		}
		g.out.WriteString("bash -c '")
		g.list(depth+1, true)
		g.out.WriteString("'")
	case 5:
		g.out.WriteString("timeout 5 ")
		g.simple(inSingle)
	case 6:
		g.outside = true
		g.out.WriteString("while ")
		g.list(depth+1, inSingle)
		g.out.WriteString("; do ")
		g.list(depth+1, inSingle)
		g.out.WriteString("; done")
	case 7:
		g.out.WriteString("cat <(")
		g.n++
		g.list(depth+1, inSingle)
		g.out.WriteString(")")
	default:
		g.simple(inSingle)
	}
}

func FuzzAnalyze(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("git status; rm -rf /"))
	f.Add([]byte{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2, 3, 8, 4, 6, 2, 6, 4, 3, 3, 8, 3, 2, 7, 9, 5})
	f.Add([]byte{4, 4, 4, 4, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	f.Fuzz(func(t *testing.T, b []byte) {
		// Arbitrary text: never panics.
		raw := shell.Analyze(string(b))
		_ = ShellRequests(raw, "/w", "/w", "/home/u")

		// Generated scripts: at least as many commands as written (also in an opaque line,
		// so that deny rules see them), opaque exactly when a construct outside the subset
		// was written.
		g := &gen{b: b}
		g.list(0, false)
		script := g.out.String()
		a := shell.Analyze(script)
		if len(a.Commands) < g.n {
			t.Fatalf("script %q: %d commands, the generator wrote %d:\n%q", script, len(a.Commands), g.n, cmdTexts(a))
		}
		if opaque := len(a.Opaque) > 0; opaque != g.outside {
			t.Fatalf("script %q: opaque %v (%q), want %v", script, opaque, a.Reasons, g.outside)
		}
	})
}

func cmdTexts(a *shell.Analysis) []string {
	var out []string
	for _, c := range a.Commands {
		out = append(out, c.Text)
	}
	return out
}

// refRegexp is the reference model of Match: the pattern turned into an anchored regular
// expression.
func refRegexp(pattern string) (*regexp.Regexp, error) {
	type tok struct {
		lit  string
		star bool
		any  bool
	}
	var toks []tok
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		switch {
		case c == '\\' && i+1 < len(pattern) && strings.IndexByte(`*?\`, pattern[i+1]) >= 0:
			toks = append(toks, tok{lit: pattern[i+1 : i+2]})
			i++
		case c == '*':
			toks = append(toks, tok{star: true})
		case c == '?':
			toks = append(toks, tok{any: true})
		default:
			toks = append(toks, tok{lit: pattern[i : i+1]})
		}
	}
	optional := false
	if n := len(toks); n >= 2 && toks[n-1].star && toks[n-2].lit == " " {
		optional = true
		toks = toks[:n-2]
	}
	var b strings.Builder
	b.WriteString(`(?s)^`)
	var lit []byte
	flush := func() {
		b.WriteString(regexp.QuoteMeta(string(lit)))
		lit = lit[:0]
	}
	for _, t := range toks {
		switch {
		case t.star:
			flush()
			b.WriteString(`.*`)
		case t.any:
			flush()
			b.WriteString(`.`)
		default:
			lit = append(lit, t.lit...)
		}
	}
	flush()
	if optional {
		b.WriteString(`(?: .*)?`)
	}
	b.WriteString(`$`)
	return regexp.Compile(b.String())
}

func FuzzEvaluate(f *testing.F) {
	f.Add("git status*", "git status --short", "rm *", "*", byte(0x1b), "rm -rf /")
	f.Add("git status *", "git statusx", `echo \*`, "?s", byte(7), "echo *")
	f.Add("*.env", ".env.local", "*.env.*", "a\\\\b", byte(0x2d), `a\b`)
	f.Fuzz(func(t *testing.T, p1, s, p2, p3 string, acts byte, s2 string) {
		for _, p := range []string{p1, p2, p3} {
			if !utf8.ValidString(p) || !utf8.ValidString(s) || !utf8.ValidString(s2) || len(p) > 64 || len(s) > 256 || len(s2) > 256 {
				return
			}
		}
		for _, p := range []string{p1, p2, p3} {
			re, err := refRegexp(p)
			if err != nil {
				return
			}
			for _, x := range []string{s, s2} {
				if got, want := Match(p, x), re.MatchString(x); got != want {
					t.Fatalf("Match(%q, %q) = %v, reference %v (%s)", p, x, got, want, re)
				}
			}
			if !Match(Escape(p), p) {
				t.Fatalf("Escape(%q) = %q does not match its text", p, Escape(p))
			}
		}
		// Last match wins, any deny denies, else any ask asks, against a naive reference.
		as := []Action{Allow, Ask, Deny}
		rs := Ruleset{
			{Permission: "bash", Pattern: p1, Action: as[int(acts)%3]},
			{Permission: "*", Pattern: p2, Action: as[int(acts/3)%3]},
			{Permission: "bash", Pattern: p3, Action: as[int(acts/9)%3]},
		}
		ref := func(x string) Action {
			for i := len(rs) - 1; i >= 0; i-- {
				re, _ := refRegexp(rs[i].Pattern)
				if re.MatchString(x) {
					return rs[i].Action
				}
			}
			return Ask
		}
		want := ref(s)
		if r2 := ref(s2); rank(r2) > rank(want) {
			want = r2
		}
		e, _ := NewEngine(nil)
		_ = e.SetLayer(LayerUser, rs)
		if got := e.Decide(Query{Permission: "bash", Patterns: []string{s, s2}}); got.Action != want {
			t.Fatalf("Decide(%q, %q) = %s, reference %s; rules %v", s, s2, got.Action, want, rs)
		}
	})
}

func TestGeneratorCounts(t *testing.T) {
	g := &gen{b: []byte{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3}}
	g.list(0, false)
	if g.n == 0 || g.out.Len() == 0 {
		t.Fatalf("generator wrote nothing")
	}
	a := shell.Analyze(g.out.String())
	if len(a.Commands) < g.n {
		t.Fatalf("%q: %d commands < %d", g.out.String(), len(a.Commands), g.n)
	}
}
