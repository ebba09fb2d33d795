package permission

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolsd/toolsd/internal/jsonpos"
	"github.com/toolsd/toolsd/protocol"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func parseFile(t *testing.T, name string, v2 bool) Ruleset {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "syntax", name))
	if err != nil {
		t.Fatal(err)
	}
	n, err := jsonpos.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	o := Origin{Source: LayerUser, File: name, Doc: data}
	var rs Ruleset
	if v2 {
		rs, err = ParseV2(n, o)
	} else {
		rs, err = ParseV1(n, o)
	}
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// TestSyntaxGolden pins what OpenCode's two syntaxes turn into: the same rules, in the same
// order, each with where it is written.
func TestSyntaxGolden(t *testing.T) {
	t.Setenv("HOME", "/home/u")
	for _, tc := range []struct {
		file string
		v2   bool
	}{{"v1.json", false}, {"v2.json", true}} {
		t.Run(tc.file, func(t *testing.T) {
			var b strings.Builder
			for _, r := range parseFile(t, tc.file, tc.v2) {
				fmt.Fprintf(&b, "%s\t%s:%d:%d\n", r, r.File, r.Line, r.Column)
			}
			golden := filepath.Join("testdata", "syntax", strings.TrimSuffix(tc.file, ".json")+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./permission -run TestSyntaxGolden -update)", err)
			}
			if b.String() != string(want) {
				t.Errorf("rules of %s:\n%s\nwant\n%s", tc.file, b.String(), want)
			}
		})
	}
}

// TestV1V2DecideTheSame checks a table of calls against a v1 config and its v2 translation.
func TestV1V2DecideTheSame(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	ws := t.TempDir()
	engines := map[string]*Engine{}
	for name, v2 := range map[string]bool{"v1.json": false, "v2.json": true} {
		e, err := NewEngine(nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.SetLayer(LayerUser, parseFile(t, name, v2)); err != nil {
			t.Fatal(err)
		}
		engines[name] = e
	}
	shellCalls := []string{
		"git status", "git log --oneline -5", "git", "git push origin main", "git push", "rm -rf build",
		"ls -la", "ls", "make test", "git status && rm x", "cat README.md | grep x", "eval $x",
	}
	type call struct{ perm, pattern string }
	calls := []call{
		{"read", "main.go"}, {"read", ".env"}, {"read", "config/prod.env"}, {"read", "secrets/key"},
		{"edit", "docs/intro.md"}, {"edit", "main.go"}, {"task", "general"}, {"webfetch", "https://pkg.go.dev/net/http"},
		{"webfetch", "https://example.com"}, {"external_directory", home + "/notes/*"}, {"external_directory", "/etc/*"},
		{"glob", "*.go"}, {"doom_loop", "bash"},
	}
	n := 0
	for _, line := range shellCalls {
		a := engines["v1.json"].DecideShell("s", "", line, ws, ws)
		b := engines["v2.json"].DecideShell("s", "", line, ws, ws)
		if a.Action != b.Action {
			t.Errorf("bash %q: v1 %s, v2 %s", line, a.Action, b.Action)
		}
		n++
	}
	for _, c := range calls {
		q := Query{SessionID: "s", Permission: c.perm, Patterns: []string{c.pattern}}
		a, b := engines["v1.json"].Decide(q), engines["v2.json"].Decide(q)
		if a.Action != b.Action || (a.Rule == nil) != (b.Rule == nil) || a.Rule != nil && a.Rule.String() != b.Rule.String() {
			t.Errorf("%s %q: v1 %+v, v2 %+v", c.perm, c.pattern, a, b)
		}
		n++
	}
	// The table must tell the syntaxes' actions apart: it holds allows, asks and denies.
	seen := map[Action]bool{}
	for _, line := range shellCalls {
		seen[engines["v2.json"].DecideShell("s", "", line, ws, ws).Action] = true
	}
	if len(seen) != 3 || n < 25 {
		t.Errorf("the table covers %v in %d calls; want allow, ask and deny in at least 25", seen, n)
	}
}

func TestParseV2Errors(t *testing.T) {
	tests := []struct{ raw, want string }{
		{`{"action": "shell"}`, `user: permissions: expected an array of rules ([{"action": "shell", "resource": "git *", "effect": "allow"}]), got an object`},
		{`[1]`, `user: permissions[0]: expected a rule {"action": ..., "resource": ..., "effect": ...}, got the number 1`},
		{`[{"action": "shell", "resource": "*"}]`, `user: permissions[0]: the rule has no "effect": a rule has "action", "resource" and "effect"`},
		{`[{"action": "shell", "resource": "*", "effect": "yes"}]`, `user: permissions[0].effect: expected "allow", "ask" or "deny", got "yes"`},
		{`[{"action": "shell", "resource": "*", "effect": "ask", "when": "x"}]`, `user: permissions[0].when: unknown field "when": a rule has "action", "resource" and "effect"`},
		{`[{"action": "", "resource": "*", "effect": "ask"}]`, `user: permissions[0].action: cannot be empty (use "*" for everything)`},
		{`[{"action": 1, "resource": "*", "effect": "ask"}]`, `user: permissions[0].action: expected a string, got the number 1`},
	}
	for _, tt := range tests {
		n, err := jsonpos.Parse([]byte(tt.raw))
		if err != nil {
			t.Fatal(err)
		}
		_, err = ParseV2(n, Origin{Source: "user", Doc: []byte(tt.raw)})
		ce, ok := err.(*ConfigError)
		if !ok || err.Error() != tt.want {
			t.Errorf("%s: err = %v\nwant %s", tt.raw, err, tt.want)
			continue
		}
		if ce.Line != 1 || ce.Column < 1 {
			t.Errorf("%s: position %d:%d, want line 1", tt.raw, ce.Line, ce.Column)
		}
	}
}

func TestParsePositions(t *testing.T) {
	raw := "{\n  \"bash\": {\n    \"*\": \"ask\",\n    \"rm *\": \"deny\"\n  },\n  \"edit\": \"ask\"\n}"
	rs, err := ParseConfig([]byte(raw), "user")
	if err != nil {
		t.Fatal(err)
	}
	want := [][2]int{{3, 5}, {4, 5}, {6, 3}}
	for i, r := range rs {
		if r.Line != want[i][0] || r.Column != want[i][1] {
			t.Errorf("%s at %d:%d, want %v", r, r.Line, r.Column, want[i])
		}
	}
	_, err = ParseConfig([]byte("{\n \"bash\": {\"rm *\": \"nope\"}}"), "user")
	if ce, ok := err.(*ConfigError); !ok || ce.Line != 2 || ce.Column != 19 {
		t.Errorf("error position: %#v, want 2:19", err)
	}
}

// TestManagedBeatsEveryLayer: a managed rule is a floor that project, user, editor and agent
// rules and remembered answers cannot go below; a managed allow counts just above the
// defaults, where the others may tighten it.
func TestManagedBeatsEveryLayer(t *testing.T) {
	st := &fakeStore{}
	e := newEngine(t, st, map[string]string{
		LayerManaged: `{"bash": {"git push *": "deny", "curl *": "ask", "make *": "allow"}, "webfetch": "deny"}`,
		LayerUser:    `{"bash": {"*": "allow"}, "webfetch": "allow"}`,
		LayerEditor:  `{"bash": {"curl *": "allow"}}`,
		LayerProject: `{"bash": {"git push *": "allow", "make clean": "deny"}}`,
		"agent:x":    `{"bash": {"git push *": "allow"}}`,
	})
	if err := e.SetTrusted(true); err != nil {
		t.Fatal(err)
	}
	if err := e.Remember("", "bash", []string{"git push *", "curl *"}, "VS Code"); err != nil {
		t.Fatal(err)
	}
	if err := e.Remember("s", "bash", []string{"*"}, "VS Code"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		perm, pattern, agent string
		want                 Action
		managed              bool // the managed rule decides
	}{
		{"bash", "git push origin", "", Deny, true},
		{"bash", "git push origin", "x", Deny, true},
		{"bash", "curl https://x", "", Ask, true},
		{"bash", "make test", "", Allow, false},   // the user's "*" allows too (last match)
		{"bash", "make clean", "", Deny, false},   // the project tightens a managed allow
		{"webfetch", "https://x", "", Deny, true}, // the user's allow cannot loosen it
		{"bash", "ls", "", Allow, false},
	}
	for _, tt := range tests {
		d := e.Decide(Query{SessionID: "s", Agent: tt.agent, Permission: tt.perm, Patterns: []string{tt.pattern}})
		if d.Action != tt.want {
			t.Errorf("%s %q (agent %q): %s, want %s (%+v)", tt.perm, tt.pattern, tt.agent, d.Action, tt.want, d.Rule)
		}
		if tt.managed && (d.Rule == nil || d.Rule.Source != LayerManaged) {
			t.Errorf("%s %q: decided by %+v, want the managed rule", tt.perm, tt.pattern, d.Rule)
		}
	}
	if !e.Hidden("webfetch", "") {
		t.Error("a managed deny of webfetch * does not hide webfetch")
	}
	// Without managed rules a managed allow still applies where no other layer says anything.
	e2 := newEngine(t, nil, map[string]string{LayerManaged: `{"bash": {"make *": "allow"}}`})
	if d := e2.Decide(Query{Permission: "bash", Patterns: []string{"make test"}}); d.Action != Allow {
		t.Errorf("managed allow over defaults: %s", d.Action)
	}
}

// TestRememberedNeverBeatsDeny: an "always" answer — even a remembered "*" — never outranks
// a deny rule of any layer (OpenCode #31540: a stored "*" beat denies).
func TestRememberedNeverBeatsDeny(t *testing.T) {
	for _, layer := range []string{LayerManaged, LayerUser, LayerEditor, LayerProject, "agent:a", "project-agent:a"} {
		t.Run(layer, func(t *testing.T) {
			e := newEngine(t, &fakeStore{}, map[string]string{layer: `{"bash": {"rm *": "deny"}, "edit": {"*.lock": "deny"}}`})
			for _, sid := range []string{"", "s"} {
				for _, key := range []string{"bash", "edit"} {
					if err := e.Remember(sid, key, []string{"*"}, "p"); err != nil {
						t.Fatal(err)
					}
				}
			}
			for _, q := range []Query{
				{SessionID: "s", Agent: "a", Permission: "bash", Patterns: []string{"rm -rf /"}},
				{SessionID: "s", Agent: "a", Permission: "bash", Patterns: []string{"ls", "rm -rf /"}},
				{SessionID: "s", Agent: "a", Permission: "edit", Patterns: []string{"go.lock"}},
				{SessionID: "s", Agent: "a", Permission: "bash", Patterns: []string{"rm x"}, Opaque: true},
			} {
				if d := e.Decide(q); d.Action != Deny {
					t.Errorf("%+v: %s by %+v, want deny", q, d.Action, d.Rule)
				}
			}
			if d := e.Decide(Query{SessionID: "s", Agent: "a", Permission: "bash", Patterns: []string{"ls"}}); d.Action != Allow {
				t.Errorf("the remembered * does not allow ls: %s", d.Action)
			}
		})
	}
}

// TestProvenanceKinds: every kind of decision says what decided it.
func TestProvenanceKinds(t *testing.T) {
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	e := newEngine(t, &fakeStore{}, nil)
	e.now = func() time.Time { return at }
	data := []byte("{\"bash\": {\"rm *\": \"deny\", \"git status*\": \"allow\"}}")
	n, _ := jsonpos.Parse(data)
	rs, err := ParseV1(n, Origin{Source: LayerUser, File: "/home/u/.config/toolsd/config.json", Doc: data})
	if err != nil {
		t.Fatal(err)
	}
	_ = e.SetLayer(LayerUser, rs)
	_ = e.SetLayer(LayerProject, mustParse(t, `{"bash": {"make *": "allow"}}`, ""))
	_ = e.Remember("", "bash", []string{"go test *"}, "VS Code")
	tests := []struct {
		q    Query
		kind string
		text string
	}{
		{Query{Permission: "bash", Patterns: []string{"rm -rf x"}}, protocol.ProvenanceRule,
			`rule bash "rm *": deny (user config /home/u/.config/toolsd/config.json:1:11)`},
		{Query{Permission: "read", Patterns: []string{"a.go"}, ReadOnly: true}, protocol.ProvenanceDefault, `built-in default read "*": allow`},
		{Query{Permission: "bash", Patterns: []string{"go test ./..."}}, protocol.ProvenanceRemembered,
			`remembered answer bash "go test *": allow (an answer remembered for this workspace on 2026-11-30 12:00:00 UTC by VS Code)`},
		{Query{Permission: "bash", Patterns: []string{"eval x"}, Opaque: true, Reasons: []string{"eval runs text as code"}}, protocol.ProvenanceOpaque,
			`the shell line is not fully understood, so it always asks: eval runs text as code`},
		{Query{Permission: "bash", Patterns: []string{"git status -c x"}, ExactOnly: map[string]string{"git status -c x": "-c sets configuration"}}, protocol.ProvenanceExactOnly,
			`a rule with a wildcard matches, but cannot allow this command: -c sets configuration`},
		{Query{Permission: "mytool", Patterns: []string{"*"}}, protocol.ProvenanceDefault, `built-in default * "*": ask`},
		{Query{Permission: "bash", Patterns: []string{"make x"}}, protocol.ProvenanceDefault,
			`built-in default bash "*": ask; the project rule bash "make *": allow would allow it once the workspace is trusted`},
	}
	for _, tt := range tests {
		p := ProvenanceOf(e.Decide(tt.q))
		if p.Kind != tt.kind || p.Text != tt.text {
			t.Errorf("%+v:\n got %s: %s\nwant %s: %s", tt.q, p.Kind, p.Text, tt.kind, tt.text)
		}
	}
	p := ProvenanceOf(e.Decide(tests[2].q))
	if p.RememberedAt == nil || !p.RememberedAt.Equal(at) || p.RememberedBy != "VS Code" || p.Layer != SourceWorkspace {
		t.Errorf("remembered provenance: %+v", p)
	}
	p = ProvenanceOf(e.Decide(tests[0].q))
	if p.File != "/home/u/.config/toolsd/config.json" || p.Line != 1 || p.Column != 11 || p.Layer != LayerUser || p.Rule != `bash "rm *": deny` {
		t.Errorf("rule provenance: %+v", p)
	}
	if p := ProvenanceOf(Decision{Action: Ask, Pattern: "x"}); p.Kind != protocol.ProvenanceNoRule {
		t.Errorf("no rule: %+v", p)
	}
}
