package permission

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolsd/toolsd/internal/jsonpos"
	"github.com/toolsd/toolsd/protocol"
)

// An untrusted workspace's ask that says what the defaults say is kept as the deciding rule,
// named as a tightening, and MayRelax then says no (issue 24, class 2).
func TestUntrustedAskEqualToTheDefaultIsKept(t *testing.T) {
	e, _ := NewEngine(nil)
	doc := []byte(`{"bash": {"rm *": "ask", "ls *": "allow"}}`)
	n, err := jsonpos.Parse(doc)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := ParseV1(n, Origin{Source: LayerProject, File: "/ws/.toolsd/config.json", Doc: doc})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.SetLayer(LayerProject, rs); err != nil {
		t.Fatal(err)
	}
	q := Query{Permission: KeyBash, Patterns: []string{"ls", "rm f.txt"}}
	d := e.Decide(q)
	if d.Action != Ask || d.Rule == nil || d.Rule.Source != LayerProject || !d.Tightening || d.Pattern != "rm f.txt" {
		t.Fatalf("decision %+v (rule %+v)", d, d.Rule)
	}
	if MayRelax(q, d) {
		t.Error("MayRelax relaxes an untrusted workspace's ask")
	}
	p := ProvenanceOf(d)
	if !strings.Contains(p.Text, "untrusted workspace: only tightens") || p.File != "/ws/.toolsd/config.json" || p.Line != 1 {
		t.Errorf("provenance %+v", p)
	}
	// What the workspace's rules do not name is the defaults' ask, which may be relaxed.
	q = Query{Permission: KeyBash, Patterns: []string{"go test ./..."}}
	if d := e.Decide(q); !MayRelax(q, d) {
		t.Errorf("MayRelax refuses a default ask: %+v", d)
	}
}

// A protected path asks under an allow rule and a remembered answer, denies under a deny
// rule, is never remembered, and is never relaxed (issue 24, class 3).
func TestProtectedPathsAlwaysAsk(t *testing.T) {
	e, _ := NewEngine(nil)
	_ = e.SetLayer(LayerUser, Ruleset{{Permission: KeyEdit, Pattern: "*", Action: Allow}, {Permission: KeyEdit, Pattern: ".vscode/*", Action: Deny}})
	if err := e.Remember("s", KeyEdit, []string{".git/config", "src/a.go"}, ""); err != nil {
		t.Fatal(err)
	}
	if ses, _ := e.Remembered("s"); len(ses) != 1 || ses[0].Pattern != "src/a.go" {
		t.Errorf("remembered %+v: a protected path must not be", ses)
	}
	for _, c := range []struct {
		pattern string
		want    Action
	}{
		{".git/config", Ask}, {".git/hooks/pre-commit", Ask}, {"sub/.git", Ask}, {".TOOLSD/config.json", Ask},
		{".vscode/settings.json", Deny}, {"src/a.go", Allow}, {".github/workflows/ci.yml", Allow}, {"/elsewhere/.git/config", Allow},
	} {
		q := Query{SessionID: "s", Permission: KeyEdit, Patterns: []string{c.pattern}}
		d := e.Decide(q)
		if d.Action != c.want {
			t.Errorf("%s: %s, want %s", c.pattern, d.Action, c.want)
		}
		if c.want == Ask && (d.Protected == "" || MayRelax(q, d) || ProvenanceOf(d).Kind != protocol.ProvenanceProtected) {
			t.Errorf("%s: protected %q, relaxable %v, provenance %+v", c.pattern, d.Protected, MayRelax(q, d), ProvenanceOf(d))
		}
	}
	// Among other paths: the query asks, names why, and is not relaxed.
	q := Query{SessionID: "s", Permission: KeyEdit, Patterns: []string{"src/a.go", ".toolsd/config.json"}}
	if d := e.Decide(q); d.Action != Ask || d.Protected == "" || MayRelax(q, d) {
		t.Errorf("a protected path among others: %+v", d)
	}
}

// A default ask of one command cannot hide a written ask of another in the same line.
func TestWrittenAskIsNamedAmongDefaultAsks(t *testing.T) {
	e, _ := NewEngine(nil)
	_ = e.SetLayer(LayerUser, Ruleset{{Permission: KeyBash, Pattern: "rm *", Action: Ask}})
	q := Query{Permission: KeyBash, Patterns: []string{"ls", "rm f.txt"}}
	d := e.Decide(q)
	if d.Rule == nil || d.Rule.Pattern != "rm *" || MayRelax(q, d) {
		t.Errorf("decision %+v, relaxable %v", d, MayRelax(q, d))
	}
	q.ExactOnly = map[string]string{"ls": "why"}
	_ = e.SetLayer(LayerUser, nil)
	if d := e.Decide(q); MayRelax(q, d) {
		t.Errorf("an exact-only command was relaxed: %+v", d)
	}
}

// A shell command that names a protected path (cp, mv, sed -i, ln write it without a
// redirection) is exact-only: a wildcard rule does not cover it and nothing relaxes it; the
// same command on other paths is allowed as before.
func TestShellCommandNamingAProtectedPathIsExactOnly(t *testing.T) {
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".git", filepath.Join(ws, "g")); err != nil {
		t.Fatal(err)
	}
	e, _ := NewEngine(nil)
	_ = e.SetLayer(LayerUser, Ruleset{{Permission: KeyBash, Pattern: "cp *", Action: Allow}, {Permission: KeyBash, Pattern: "sed *", Action: Allow}, {Permission: KeyBash, Pattern: "go test *", Action: Allow}})
	for line, want := range map[string]Action{
		"cp evil .git/config":              Ask,
		"cp evil g/hooks/pre-commit":       Ask,
		"cp evil .toolsd/config.json":      Ask,
		"sed -i s/a/b/ .vscode/tasks.json": Ask,
		"go test ./... && cp a .envrc":     Ask,
		"cp a b":                           Allow,
		"go test ./...":                    Allow,
	} {
		sd := e.DecideShell("", "", line, ws, ws)
		if sd.Action != want {
			t.Errorf("%s: %s, want %s", line, sd.Action, want)
		}
		for i, rq := range sd.Requests {
			q := Query{Permission: rq.Permission, Patterns: rq.Patterns, ExactOnly: rq.ExactOnly, Opaque: rq.Opaque, Reasons: rq.Reasons}
			if want == Ask && rq.Permission == KeyBash && MayRelax(q, sd.Decisions[i]) {
				t.Errorf("%s: relaxable", line)
			}
		}
	}
}

// Remembered answers across agents and routes (an "always" given through toolsd acp or on
// an ask of toolsd hook's call): a workspace answer is the person's for every agent, so it
// settles another agent's ask, also one that agent's own rules make (docs/security.md,
// Remembered answers), but never that agent's deny; a session answer covers its session
// alone, whichever agent or editor asks in another.
func TestRememberedAnswersAcrossAgents(t *testing.T) {
	e, _ := NewEngine(nil)
	if err := e.SetLayer(LayerAgentPrefix+"codex", Ruleset{{Permission: KeyBash, Pattern: "git push *", Action: Ask}, {Permission: KeyBash, Pattern: "rm *", Action: Deny}}); err != nil {
		t.Fatal(err)
	}
	// Given on claude's calls: "always in this workspace" for a push and a removal, "always in
	// this session" for a build.
	if err := e.Remember("", KeyBash, []string{"git push origin main", "rm -rf build"}, ""); err != nil {
		t.Fatal(err)
	}
	if err := e.Remember("claude-session", KeyBash, []string{"make release"}, ""); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		session, agent, pattern string
		want                    Action
	}{
		{"codex-session", "codex", "git push origin main", Allow}, // the person's answer, for every agent
		{"codex-session", "codex", "git push origin dev", Ask},    // not what was answered
		{"codex-session", "codex", "rm -rf build", Deny},          // a deny holds
		{"codex-session", "codex", "make release", Ask},           // another session's answer
		{"claude-session", "codex", "make release", Allow},        // the session's answer, whoever asks in it
		{"claude-session", "claude", "rm -rf build", Allow},
	} {
		q := Query{SessionID: c.session, Agent: c.agent, Permission: KeyBash, Patterns: []string{c.pattern}}
		if d := e.Decide(q); d.Action != c.want {
			t.Errorf("%s in %s by %s: %s, want %s (%+v)", c.pattern, c.session, c.agent, d.Action, c.want, d.Rule)
		}
	}
	// The managed floor is not settled by a remembered answer.
	if err := e.SetLayer(LayerManaged, Ruleset{{Permission: KeyBash, Pattern: "git push *", Action: Ask}}); err != nil {
		t.Fatal(err)
	}
	if d := e.Decide(Query{SessionID: "codex-session", Agent: "codex", Permission: KeyBash, Patterns: []string{"git push origin main"}}); d.Action != Ask {
		t.Errorf("a remembered answer settled the managed floor's ask: %+v", d)
	}
}
