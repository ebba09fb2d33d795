package permission

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOrdinaryCorpus: safety must not turn into an ask for everything. testdata/corpus holds
// ordinary agent shell lines (builds, tests, git inspection, search, formatting) and the
// rules a careful user writes; each line is marked with what the analysis decided before
// it required a line to be fully understood ("+" ran without an ask, "-" asked). Now:
// nothing that asked runs without an ask, and at least 90% of what ran still runs; every
// line that now asks is listed with why (docs/permissions.md explains the classes).
func TestOrdinaryCorpus(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile("testdata/corpus/rules.json")
	if err != nil {
		t.Fatal(err)
	}
	e := newEngine(t, nil, map[string]string{LayerUser: string(raw)})
	f, err := os.Open("testdata/corpus/ordinary.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var before, still, lines int
	for sc.Scan() {
		l := sc.Text()
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		mark, line, ok := strings.Cut(l, " ")
		if !ok || (mark != "+" && mark != "-") {
			t.Fatalf("corpus line %q: want + or - first", l)
		}
		lines++
		d := e.DecideShell("s", "", line, ws, ws)
		if mark == "-" {
			if d.Action == Allow {
				t.Errorf("%q asked before and runs without an ask now", line)
			}
			continue
		}
		before++
		if d.Action == Allow {
			still++
			continue
		}
		t.Logf("now asks: %-50q %s", line, why(d))
	}
	if lines < 200 {
		t.Fatalf("the corpus has %d lines, want at least 200", lines)
	}
	t.Logf("%d of %d lines that ran without an ask still do (%.1f%%)", still, before, 100*float64(still)/float64(before))
	if still*10 < before*9 {
		t.Fatalf("only %d of %d ordinary lines that ran without an ask still do: want at least 90%%", still, before)
	}
}

// why says why a shell decision asks, for the log.
func why(d ShellDecision) string {
	for i, r := range d.Requests {
		dec := d.Decisions[i]
		if dec.Action == Allow {
			continue
		}
		switch {
		case r.Opaque:
			return "opaque: " + strings.Join(r.Reasons, "; ")
		case dec.Reason != "":
			return "unsafe: " + dec.Reason
		default:
			return r.Permission + " " + strings.Join(dec.Asks, ", ")
		}
	}
	return ""
}

// TestOrdinaryDay is the counterweight of issue 24: hardening must not make toolsd useless.
// testdata/corpus/day.txt is a scripted day of ordinary lines (catching up, reading code, a
// fix, tests, a feature, review, chores). Under the rules people write for such a project
// (day-rules.json: "git *", "go *", "npm test*", "python3 *", the readers and filters, edits
// allowed, git push and rm asked) at least 90% of them must be fully understood and run
// unasked. The figure under the careful rules of rules.json (which name fewer commands, and
// ask for edits) is logged too. Every line that asks is logged with why.
func TestOrdinaryDay(t *testing.T) {
	raw, err := os.ReadFile("testdata/corpus/day.txt")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(raw), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, strings.ReplaceAll(l, `\n`, "\n"))
		}
	}
	if len(lines) < 150 {
		t.Fatalf("the day has %d lines, want at least 150", len(lines))
	}
	for _, tt := range []struct {
		rules string
		want  int // percent
	}{{"day-rules.json", 90}, {"rules.json", 0}} {
		rules := tt.rules
		t.Run(rules, func(t *testing.T) {
			ws, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := os.ReadFile(filepath.Join("testdata/corpus", rules))
			if err != nil {
				t.Fatal(err)
			}
			e := newEngine(t, nil, map[string]string{LayerUser: string(cfg)})
			runs := 0
			for _, line := range lines {
				d := e.DecideShell("s", "", line, ws, ws)
				if d.Action == Allow {
					runs++
					continue
				}
				t.Logf("asks: %-60q %s", line, why(d))
			}
			t.Logf("%d of %d lines of the day run unasked (%.1f%%)", runs, len(lines), 100*float64(runs)/float64(len(lines)))
			if runs*100 < len(lines)*tt.want {
				t.Fatalf("only %d of %d ordinary lines run unasked: want at least %d%%", runs, len(lines), tt.want)
			}
		})
	}
}
