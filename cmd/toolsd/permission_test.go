//go:build unix

package main_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolsd/toolsd/internal/harness"
	"github.com/toolsd/toolsd/protocol"
)

// An "always" for the workspace holds in the next daemon on the same workspace.
func TestAlwaysForWorkspaceSurvivesRestart(t *testing.T) {
	ws := t.TempDir()
	st := filepath.Join(t.TempDir(), "store.db")
	e := newEnv(t, envOpts{ws: ws, store: st})
	mark := e.d.Mark()
	_, wait := e.start(protocol.ExecuteParams{CallID: "g1", Tool: "bash", Args: args("command", "git --version")})
	ask := e.waitAsk(mark, "g1")
	if !contains(ask.Always, "git --version *") && !contains(ask.Always, "git --version") {
		t.Fatalf("always offered %v", ask.Always)
	}
	if err := e.d.Call(e.ctx, "permission/reply", protocol.ReplyParams{ID: ask.ID, Reply: "always", Scope: "workspace", Always: []string{ask.Patterns[0]}}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := wait(); err != nil {
		t.Fatal(err)
	}
	if code, err := e.d.Shutdown(e.ctx); err != nil || code != 0 {
		t.Fatal(code, err)
	}
	// The workspace's daemon exits after its grace: the next one reads the store anew.
	if err := harness.WaitOwnersGone(e.ctx, harness.RuntimeDir(t)); err != nil {
		t.Fatal(err)
	}

	e2 := newEnv(t, envOpts{ws: ws, store: st})
	mark = e2.d.Mark()
	res, err := e2.execute(protocol.ExecuteParams{SessionID: "other", CallID: "g2", Tool: "bash", Args: args("command", "git --version")})
	if err != nil || res.Status != "completed" {
		t.Fatalf("remembered command: %+v %v", res, err)
	}
	if n := e2.d.Count(mark, "permission/asked"); n != 0 {
		t.Fatalf("asked %d times after a workspace always", n)
	}
	var rec protocol.CallRecord
	if err := e2.d.Call(e2.ctx, "calls/get", protocol.CallsGetParams{SessionID: "other", CallID: "g2"}, &rec); err != nil {
		t.Fatal(err)
	}
	if len(rec.Decisions) == 0 || rec.Decisions[0].Rule == nil || rec.Decisions[0].Rule.Source != "workspace" {
		t.Fatalf("decision does not name the remembered rule: %+v", rec.Decisions)
	}
}

// A project config comes from the repository: untrusted, it may tighten but not loosen.
func TestProjectConfigTrust(t *testing.T) {
	e := newEnv(t, envOpts{noAsk: true, files: map[string]string{
		".toolsd/config.json": `{"permission": {"bash": {"*": "allow", "rm *": "deny"}}}`,
	}})
	res, err := e.execute(protocol.ExecuteParams{CallID: "t1", Tool: "bash", Args: args("command", "echo loosened")})
	if err != nil || res.Status != "error" || !strings.Contains(res.Error, "no one was there") {
		t.Fatalf("untrusted project allow must not allow: %+v %v", res, err)
	}
	res, err = e.execute(protocol.ExecuteParams{CallID: "t2", Tool: "bash", Args: args("command", "rm -rf x")})
	if err != nil || res.Status != "error" || !strings.Contains(res.Error, "rm *") {
		t.Fatalf("untrusted project deny must still deny, naming the rule: %+v %v", res, err)
	}
	var tr protocol.TrustResult
	if err := e.d.Call(e.ctx, "permission/trust", protocol.TrustParams{Trusted: true}, &tr); err != nil || !tr.Trusted {
		t.Fatalf("trust: %+v %v", tr, err)
	}
	res, err = e.execute(protocol.ExecuteParams{CallID: "t3", Tool: "bash", Args: args("command", "echo trusted")})
	if err != nil || res.Status != "completed" || !strings.Contains(res.Output, "trusted") {
		t.Fatalf("trusted project allow: %+v %v", res, err)
	}
}

// A tool whose rules deny it outright is not offered; the same tool called anyway is refused.
func TestDeniedToolIsHidden(t *testing.T) {
	e := newEnv(t, envOpts{options: map[string]any{"permission": map[string]any{"webfetch": "deny", "bash": map[string]any{"*": "deny"}}}})
	var rr protocol.ResolveResult
	if err := e.d.Call(e.ctx, "tools/resolve", protocol.ResolveParams{SessionID: "s1"}, &rr); err != nil {
		t.Fatal(err)
	}
	for _, tl := range rr.Tools {
		if tl.ID == "bash" || tl.ID == "webfetch" {
			t.Fatalf("%s resolved although denied", tl.ID)
		}
	}
	res, err := e.execute(protocol.ExecuteParams{CallID: "h1", Tool: "bash", Args: args("command", "ls")})
	if err != nil || res.Status != "error" {
		t.Fatalf("hidden tool ran: %+v %v", res, err)
	}
}

// The same call three times in a row asks under doom_loop.
func TestDoomLoop(t *testing.T) {
	e := newEnv(t, envOpts{files: map[string]string{"a.txt": "a\n"}})
	for i := range 2 {
		if res, err := e.execute(protocol.ExecuteParams{CallID: "d" + itoa(i), Tool: "read", Args: args("filePath", "a.txt")}); err != nil || res.Status != "completed" {
			t.Fatal(res, err)
		}
	}
	mark := e.d.Mark()
	_, wait := e.start(protocol.ExecuteParams{CallID: "d2", Tool: "read", Args: args("filePath", "a.txt")})
	ask := e.waitAsk(mark, "d2")
	if ask.Permission != "doom_loop" {
		t.Fatalf("third identical call asked %q", ask.Permission)
	}
	if err := e.reply(ask.ID, "reject", "stop reading the same file"); err != nil {
		t.Fatal(err)
	}
	res, err := wait()
	if err != nil || res.Status != "error" || !strings.Contains(res.Error, "stop reading the same file") {
		t.Fatalf("doom loop reject: %+v %v", res, err)
	}
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// An agent's rules from an untrusted project config may only tighten too.
func TestProjectAgentRulesFollowTrust(t *testing.T) {
	e := newEnv(t, envOpts{noAsk: true, files: map[string]string{
		".toolsd/config.json": `{"agents": {"build": {"permission": {"bash": "allow"}}}}`,
	}})
	res, err := e.execute(protocol.ExecuteParams{CallID: "a1", Tool: "bash", Agent: "build", Args: args("command", "echo agent")})
	if err != nil || res.Status != "error" {
		t.Fatalf("untrusted project agent allow must not allow: %+v %v", res, err)
	}
	if err := e.d.Call(e.ctx, "permission/trust", protocol.TrustParams{Trusted: true}, nil); err != nil {
		t.Fatal(err)
	}
	res, err = e.execute(protocol.ExecuteParams{CallID: "a2", Tool: "bash", Agent: "build", Args: args("command", "echo agent")})
	if err != nil || res.Status != "completed" {
		t.Fatalf("trusted project agent allow: %+v %v", res, err)
	}
	res, err = e.execute(protocol.ExecuteParams{CallID: "a3", Tool: "bash", Args: args("command", "echo agent")})
	if err != nil || res.Status != "error" {
		t.Fatalf("the agent's rules leaked to calls without the agent: %+v %v", res, err)
	}
}
