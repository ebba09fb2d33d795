package session

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolsd/toolsd/protocol"
)

// notes is a Notifier for a Workspace.
type notes struct{ asked chan protocol.AskedParams }

func (n *notes) Progress(protocol.ProgressParams) {}
func (n *notes) Asked(p protocol.AskedParams)     { n.asked <- p }
func (n *notes) Answered(protocol.AnsweredParams) {}
func (n *notes) Changed(protocol.ChangedParams)   {}
func (n *notes) Clients(protocol.ClientsParams)   {}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestProvenanceEveryLayer: every layer and kind of decision is named in calls/get, and in
// permission/asked when the call asks: the rule, its layer, file, line and column; the
// built-in default; a remembered answer with when and through which client; the shell
// analysis's reasons; how long an ask waited and who answered.
func TestProvenanceEveryLayer(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	ws := filepath.Join(root, "ws")
	managed := filepath.Join(root, "etc", "toolsd")
	haveManaged := os.Geteuid() == 0 // the managed policy must be owned by root
	writeFile(t, filepath.Join(managed, "config.json"), "{\"permission\": {\"bash\": {\"git push --force*\": \"deny\"}}}\n")
	writeFile(t, filepath.Join(home, ".config", "toolsd", "config.json"), `{
  "permission": {"bash": {"rm *": "deny", "git *": "allow"}},
  "agents": {"a": {"permission": {"bash": {"ls *": "deny"}}}}
}`)
	writeFile(t, filepath.Join(ws, ".toolsd", "config.json"), `{
  "permissions": [{"action": "shell", "resource": "make *", "effect": "allow"}],
  "examples": {"deny": ["bash make build"]}
}`)
	writeFile(t, filepath.Join(ws, "a.txt"), "hello\n")
	n := &notes{asked: make(chan protocol.AskedParams, 4)}
	w, err := Open(context.Background(), WorkspaceOptions{
		Folder: ws, StorePath: filepath.Join(root, "store.db"),
		InitOptions: json.RawMessage(`{"permission": {"bash": {"echo *": "allow"}}}`), ManagedDir: managed,
	}, ClientOptions{Name: "Test Editor", Kind: protocol.ClientEditor, CanAsk: true, Sink: n})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.SetTrusted(true); err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(ws)

	// A failing example is a positioned diagnostic.
	found := false
	for _, d := range w.Resolve(protocol.ResolveParams{SessionID: "s"}).Diagnostics {
		if strings.Contains(d.Message, `example "bash make build" should be deny but is allow`) && d.Line == 3 && d.Path == filepath.Join(real, ".toolsd", "config.json") {
			found = true
		}
	}
	if !found {
		t.Errorf("no diagnostic for the failing example: %+v", w.Resolve(protocol.ResolveParams{SessionID: "s"}).Diagnostics)
	}

	seq := 0
	call := func(tool, agent string, args map[string]any, answer *protocol.ReplyParams) (*protocol.CallRecord, *protocol.AskedParams) {
		t.Helper()
		seq++
		id := "c" + string(rune('a'+seq))
		b, _ := json.Marshal(args)
		done := make(chan error, 1)
		go func() {
			_, err := w.Execute(context.Background(), protocol.ExecuteParams{SessionID: "s", MessageID: "m", CallID: id, Tool: tool, Agent: agent, Args: b})
			done <- err
		}()
		var asked *protocol.AskedParams
		if answer != nil {
			select {
			case a := <-n.asked:
				asked = &a
				answer.ID = a.ID
				if _, err := w.Reply(*answer); err != nil {
					t.Fatal(err)
				}
			case err := <-done:
				t.Fatalf("%s %v ended without asking: %v", tool, args, err)
			case <-time.After(20 * time.Second):
				t.Fatalf("%s %v: no ask", tool, args)
			}
		}
		if err := <-done; err != nil {
			t.Fatalf("%s %v: %v", tool, args, err)
		}
		rec, err := w.GetCall(protocol.CallsGetParams{SessionID: "s", CallID: id})
		if err != nil {
			t.Fatal(err)
		}
		return rec, asked
	}
	last := func(rec *protocol.CallRecord) protocol.Decision {
		t.Helper()
		if len(rec.Decisions) == 0 {
			t.Fatalf("call %s %s has no decisions", rec.Tool, rec.Args)
		}
		d := rec.Decisions[len(rec.Decisions)-1]
		if d.Provenance == nil {
			t.Fatalf("decision without provenance: %+v", d)
		}
		return d
	}
	userFile := filepath.Join(home, ".config", "toolsd", "config.json")
	projectFile := filepath.Join(real, ".toolsd", "config.json")
	rules := []struct {
		tool, agent, command string
		action, layer, file  string
		line, col            int
	}{
		{"bash", "", "rm -rf x", "deny", "user", userFile, 2, 27},
		{"bash", "", "git status", "allow", "user", userFile, 2, 43},
		{"bash", "", "echo hi", "allow", "editor", "initializationOptions", 1, 26},
		{"bash", "", "make build", "allow", "project", projectFile, 2, 19},
		{"bash", "a", "ls -la", "deny", "agent:a", userFile, 3, 44},
	}
	if haveManaged {
		rules = append(rules, struct {
			tool, agent, command string
			action, layer, file  string
			line, col            int
		}{"bash", "", "git push --force", "deny", "managed", filepath.Join(managed, "config.json"), 1, 26})
	}
	for _, r := range rules {
		rec, _ := call(r.tool, r.agent, map[string]any{"command": r.command}, nil)
		d := last(rec)
		p := d.Provenance
		if d.Action != r.action || d.By != "rule" || p.Kind != protocol.ProvenanceRule || p.Layer != r.layer || p.File != r.file || p.Line != r.line || p.Column != r.col {
			t.Errorf("%s: %s by %s, provenance %+v; want %s from %s %s:%d:%d", r.command, d.Action, d.By, p, r.action, r.layer, r.file, r.line, r.col)
		}
	}
	// The built-in default.
	rec, _ := call("read", "", map[string]any{"filePath": "a.txt"}, nil)
	if p := last(rec).Provenance; p.Kind != protocol.ProvenanceDefault || p.Rule != `read "*": allow` {
		t.Errorf("read: %+v", p)
	}
	// Opaque: the ask and the record carry the reasons; the answer says who and how long.
	rec, asked := call("bash", "", map[string]any{"command": "eval \"$X\""}, &protocol.ReplyParams{Reply: protocol.ReplyOnce})
	if asked.Provenance == nil || asked.Provenance.Kind != protocol.ProvenanceOpaque || len(asked.Provenance.Reasons) == 0 {
		t.Errorf("asked: %+v", asked.Provenance)
	}
	d := last(rec)
	if d.By != "person" || d.AnsweredBy != "Test Editor" || d.AskedAt == nil || d.WaitedMs < 0 || d.Provenance.Kind != protocol.ProvenanceOpaque || !strings.Contains(d.Provenance.Text, "eval") {
		t.Errorf("opaque decision: %+v %+v", d, d.Provenance)
	}
	// A wildcard rule that cannot cover the command.
	rec, asked = call("bash", "", map[string]any{"command": "git -c core.pager=id log"}, &protocol.ReplyParams{Reply: protocol.ReplyReject, Message: "no"})
	if asked.Provenance.Kind != protocol.ProvenanceExactOnly || asked.Provenance.Reason == "" {
		t.Errorf("exact-only ask: %+v", asked.Provenance)
	}
	if d := last(rec); d.Action != "deny" || d.Reply != "reject" || d.Provenance.Kind != protocol.ProvenanceExactOnly {
		t.Errorf("exact-only decision: %+v", d)
	}
	// The default asks; an "always" answer for the workspace is then remembered, with when
	// and through which client.
	_, asked = call("bash", "", map[string]any{"command": "npm test"}, &protocol.ReplyParams{Reply: protocol.ReplyAlways, Scope: protocol.ScopeWorkspace, Always: []string{"npm test *"}})
	if asked.Provenance.Kind != protocol.ProvenanceDefault || asked.Provenance.Rule != `bash "*": ask` {
		t.Errorf("default ask: %+v", asked.Provenance)
	}
	rec, _ = call("bash", "", map[string]any{"command": "npm test -- -v"}, nil)
	p := last(rec).Provenance
	if p.Kind != protocol.ProvenanceRemembered || p.Layer != "workspace" || p.RememberedBy != "Test Editor" || p.RememberedAt == nil || time.Since(*p.RememberedAt) > time.Minute {
		t.Errorf("remembered: %+v", p)
	}
	// The record survives a restart with its provenance (it is in the store).
	raw, _ := json.Marshal(rec)
	if !strings.Contains(string(raw), `"provenance":{"kind":"remembered"`) {
		t.Errorf("record JSON: %s", raw)
	}
}
