package session

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolsd/toolsd/hook"
	"github.com/toolsd/toolsd/internal/proc"
	"github.com/toolsd/toolsd/internal/sandbox"
	"github.com/toolsd/toolsd/permission"
	"github.com/toolsd/toolsd/protocol"
	"github.com/toolsd/toolsd/registry"
)

// nobody is an ask router with no one to show asks to: an ask is refused as "no-ui", so a
// test sees at once whether a request would have run without a person.
type nobody struct{}

func (nobody) Targets(*protocol.ClientRef) []string       { return nil }
func (nobody) Show([]string, protocol.AskedParams)        {}
func (nobody) Answered([]string, protocol.AnsweredParams) {}
func outcomeOf(d protocol.Decision, err error) (outcome string) {
	switch {
	case err == nil && d.Action == string(permission.Allow):
		return "allow:" + d.By
	case d.By == "no-ui":
		return "ask"
	}
	return "deny"
}

// TestCompositionNeverLoosens is the composition test of docs/security.md: over every layer
// a rule can be written in (none, managed, user, editor, project trusted and untrusted,
// agent, project-agent) × its action × trust × the sandbox on and off × a before hook's
// answer (none, allow, ask) × a remembered "always" (none, one), through the broker's real
// decision path with the real engine, it asserts that the sandbox, a hook or a remembered
// answer never turn a deny into an allow; that the sandbox and a hook never settle an ask
// that a rule someone wrote makes; and that nothing runs unasked that writes a protected
// path or that the shell analysis does not fully understand. (A before hook's deny blocks a
// call before any permission is decided, so it cannot loosen anything here.)
func TestCompositionNeverLoosens(t *testing.T) {
	type reqCase struct {
		name   string
		req    registry.AskRequest
		rule   string   // the pattern a layer writes under req.Permission
		always []string // what a remembered "always" names
		// unsure: the request has a reason (outside a safe grammar, opaque); protected: it
		// writes a protected path. Neither ever runs without a person.
		unsure, protected bool
	}
	exact := map[string]string{"git -c core.fsmonitor=x status": "git -c sets configuration"}
	cases := []reqCase{
		{name: "plain", req: registry.AskRequest{Permission: "bash", Patterns: []string{"rm f.txt"}}, rule: "rm *", always: []string{"rm f.txt"}},
		{name: "two commands", req: registry.AskRequest{Permission: "bash", Patterns: []string{"ls", "rm f.txt"}}, rule: "rm *", always: []string{"ls", "rm f.txt"}},
		{name: "exact-only", req: registry.AskRequest{Permission: "bash", Patterns: []string{"git -c core.fsmonitor=x status"}, ExactOnly: exact}, rule: "git *", always: []string{"git *"}, unsure: true},
		{name: "exact-only among others", req: registry.AskRequest{Permission: "bash", Patterns: []string{"ls", "git -c core.fsmonitor=x status"}, ExactOnly: exact}, rule: "git *", always: []string{"ls", "git *"}, unsure: true},
		{name: "opaque", req: registry.AskRequest{Permission: "bash", Patterns: []string{"eval x"}, Opaque: true, Reasons: []string{"eval"}}, rule: "eval *", always: []string{"eval x"}, unsure: true},
		{name: "edit", req: registry.AskRequest{Permission: "edit", Patterns: []string{"src/a.go"}}, rule: "src/*", always: []string{"src/a.go"}},
		{name: "protected", req: registry.AskRequest{Permission: "edit", Patterns: []string{".git/config"}}, rule: "*", always: []string{".git/config"}, protected: true},
		{name: "protected among others", req: registry.AskRequest{Permission: "edit", Patterns: []string{"src/a.go", ".toolsd/config.json"}}, rule: "*", always: []string{"src/a.go", ".toolsd/config.json"}, protected: true},
	}
	layers := []string{"", permission.LayerManaged, permission.LayerUser, permission.LayerEditor, permission.LayerProject, permission.LayerAgentPrefix + "a", permission.LayerProjectAgentPrefix + "a"}
	actions := []permission.Action{permission.Allow, permission.Ask, permission.Deny}
	run := func(t *testing.T, c reqCase, layer string, action permission.Action, trusted, sandboxed bool, verdict string, remembered bool) (string, protocol.Decision) {
		t.Helper()
		e, err := permission.NewEngine(nil)
		if err != nil {
			t.Fatal(err)
		}
		if layer != "" {
			if err := e.SetLayer(layer, permission.Ruleset{{Permission: c.req.Permission, Pattern: c.rule, Action: action, File: "config.json", Line: 1}}); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.SetTrusted(trusted); err != nil {
			t.Fatal(err)
		}
		if remembered {
			if err := e.Remember("s", c.req.Permission, c.always, "test"); err != nil {
				t.Fatal(err)
			}
		}
		b := &broker{policy: e, router: nobody{}, now: time.Now, pending: map[string]*pendingAsk{}}
		cs := &callState{sessionID: "s", callID: "c", tool: c.req.Permission, permKey: c.req.Permission, agent: "a"}
		if verdict != "" {
			cs.verdict = &hook.Verdict{Action: verdict, Hook: hook.Ref{Name: "h", Layer: "user"}}
		}
		req := c.req
		req.Sandboxed = sandboxed
		d, err := b.ask(context.Background(), cs, req)
		return outcomeOf(d, err), d
	}
	n := 0
	for _, c := range cases {
		for _, layer := range layers {
			for ai, action := range actions {
				if layer == "" && ai > 0 {
					continue // no rule: one case
				}
				for _, trusted := range []bool{false, true} {
					base, _ := run(t, c, layer, action, trusted, false, "", false)
					counts := layer != "" && (trusted || action != permission.Allow || (layer != permission.LayerProject && layer != permission.LayerProjectAgentPrefix+"a"))
					writtenAsk := counts && action == permission.Ask
					for _, sandboxed := range []bool{false, true} {
						for _, verdict := range []string{"", "allow", "ask"} {
							for _, remembered := range []bool{false, true} {
								n++
								got, d := run(t, c, layer, action, trusted, sandboxed, verdict, remembered)
								where := fmt.Sprintf("%s, rule %q: %s in %q (trusted %v), sandbox %v, hook %q, remembered %v: base %s, got %s (%+v)",
									c.name, c.rule, action, layer, trusted, sandboxed, verdict, remembered, base, got, d.Provenance)
								unasked := got == "allow:rule" || got == "allow:sandbox" || got == "allow:hook"
								switch {
								case base == "deny" && got != "deny":
									t.Errorf("a deny was loosened: %s", where)
								case (c.unsure || c.protected) && unasked:
									t.Errorf("ran unasked though not fully understood or protected: %s", where)
								case writtenAsk && (got == "allow:sandbox" || got == "allow:hook"):
									t.Errorf("the sandbox or a hook settled a written ask: %s", where)
								case writtenAsk && layer == permission.LayerManaged && unasked:
									t.Errorf("the administrator's ask was settled: %s", where)
								case !remembered && base != "allow:rule" && got == "allow:rule":
									t.Errorf("allowed by a rule only once the sandbox or a hook joined: %s", where)
								}
								// The counterweight: what only the defaults ask about, of a
								// request toolsd understands, the sandbox and a hook allow.
								if layer == "" && !c.unsure && !c.protected && !remembered && verdict == "" && sandboxed && got != "allow:sandbox" {
									t.Errorf("the sandbox did not allow a default ask: %s", where)
								}
								if layer == "" && !c.unsure && !c.protected && !remembered && verdict == "allow" && !sandboxed && got != "allow:hook" {
									t.Errorf("a hook did not allow a default ask: %s", where)
								}
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d combinations", n)
}

// typicalRules are rules people write for an agent: edits allowed, a push asked about, a
// recursive delete denied.
var typicalRules = map[string]any{"edit": "allow", "bash": map[string]any{"git push *": "ask", "rm -rf *": "deny"}}

// TestCounterweightDay is the counterweight of issue 24: hardening must not make toolsd
// useless. A scripted day of ordinary work (the shell lines of TestSandboxDayOfWork, with
// reads, searches and edits between them) runs through the real workspace under typical
// rules, once with the sandbox's auto-allow and once without: with it, at least 80% fewer
// asks, and at least 90% of the day's calls run unasked.
func TestCounterweightDay(t *testing.T) {
	if !sandbox.Probe("").Available() {
		t.Skip("the kernel offers no Landlock")
	}
	for _, tool := range []string{"go", "git", "make", "npm", "node"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("GORACE", "atexit_sleep_ms=0")
	for k, v := range map[string]string{"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com", "XDG_CONFIG_HOME": t.TempDir(), "GOFLAGS": "-mod=mod", "GOTOOLCHAIN": "local"} {
		t.Setenv(k, v)
	}
	proc.SetGuardPath(exe)
	defer proc.SetGuardPath("")
	type call struct {
		tool string
		args map[string]any
	}
	var calls []call
	for i, line := range day {
		calls = append(calls, call{"bash", map[string]any{"command": line, "timeout": 120000}})
		switch i % 4 { // a read, a search or an edit between shell lines, as an agent works
		case 0:
			calls = append(calls, call{"read", map[string]any{"filePath": "main.go"}})
		case 1:
			calls = append(calls, call{"grep", map[string]any{"pattern": "greet"}})
		case 2:
			calls = append(calls, call{"write", map[string]any{"filePath": fmt.Sprintf("notes/n%d.md", i), "content": "note\n"}})
		case 3:
			calls = append(calls, call{"glob", map[string]any{"pattern": "**/*.go"}})
		}
	}
	calls = append(calls, call{"edit", map[string]any{"filePath": "main.go", "oldString": "more greetings", "newString": "even more greetings"}})
	run := func(t *testing.T, autoAllow bool) (asks, asked int) {
		ws := t.TempDir()
		for name, content := range dayFiles {
			if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-qm", "start"}} {
			if out, err := exec.Command("git", append([]string{"-C", ws}, args...)...).CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v %s", args, err, out)
			}
		}
		a := &answerer{}
		opts, _ := json.Marshal(map[string]any{"sandbox": map[string]any{"autoAllow": autoAllow}, "permission": typicalRules})
		w, err := Open(context.Background(), WorkspaceOptions{Folder: ws, StorePath: filepath.Join(t.TempDir(), "s.db"), InitOptions: opts},
			ClientOptions{Name: "test", Kind: protocol.ClientEditor, CanAsk: true, Sink: a})
		if err != nil {
			t.Fatal(err)
		}
		a.w = w
		defer func() {
			a.wg.Wait()
			_ = w.Close()
		}()
		for i, c := range calls {
			args, _ := json.Marshal(c.args)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			res, err := w.Execute(ctx, protocol.ExecuteParams{SessionID: "day", MessageID: "m", CallID: fmt.Sprint("c", i), Tool: c.tool, Args: args})
			cancel()
			if err != nil || res.Status != protocol.StatusCompleted {
				t.Errorf("%s %s: %+v %v", c.tool, args, res, err)
			}
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		callsAsked := map[string]bool{}
		for _, p := range a.asks {
			callsAsked[p.CallID] = true
		}
		return len(a.asks), len(callsAsked)
	}
	var with, without, askedWith int
	t.Run("auto-allow", func(t *testing.T) { with, askedWith = run(t, true) })
	t.Run("asking", func(t *testing.T) { without, _ = run(t, false) })
	unasked := float64(len(calls)-askedWith) / float64(len(calls))
	t.Logf("a day of %d calls (%d shell lines) under typical rules: %d asks with the sandbox's auto-allow, %d without (%.0f%% fewer); %.0f%% of the calls ran unasked with it",
		len(calls), len(day), with, without, 100*float64(without-with)/float64(max(without, 1)), 100*unasked)
	if without == 0 || float64(without-with) < 0.8*float64(without) {
		t.Errorf("asks: %d with the auto-allow, %d without: want at least 80%% fewer", with, without)
	}
	if unasked < 0.9 {
		t.Errorf("%.0f%% of the day's calls ran unasked with the sandbox: want at least 90%%", 100*unasked)
	}
}
