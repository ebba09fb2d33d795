package hook

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/toolsd/toolsd/protocol"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// py writes a python3 hook script and returns its argv.
func py(t *testing.T, body string) []string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "hook.py")
	if err := os.WriteFile(p, []byte("import json, os, sys, time\n"+body), 0o644); err != nil {
		t.Fatal(err)
	}
	return []string{"python3", p}
}

func newRunner(t *testing.T, specs ...Spec) *Runner {
	t.Helper()
	r := New(Options{Workspace: t.TempDir()})
	r.SetConfig(specs)
	return r
}

func bashCall(cmd string) *Call {
	args, _ := json.Marshal(map[string]string{"command": cmd})
	return &Call{SessionID: "s", CallID: "c", Tool: "bash", Source: "builtin", Args: args,
		Requests: func(a json.RawMessage) []Request {
			var v struct{ Command string }
			_ = json.Unmarshal(a, &v)
			return []Request{{Permission: "bash", Patterns: strings.Split(v.Command, " && ")}}
		}}
}

func TestParseIf(t *testing.T) {
	for _, c := range []struct{ in, perm, pat string }{
		{"bash(git push *)", "bash", "git push *"},
		{"Bash(git push:*)", "bash", "git push *"},
		{"Edit(./src/**)", "edit", "src/**"},
		{"Write(*.go)", "edit", "*.go"},
		{"read", "read", "*"},
		{"deploy()", "deploy", "*"},
	} {
		perm, pat, err := ParseIf(c.in)
		if err != nil || perm != c.perm || pat != c.pat {
			t.Errorf("ParseIf(%q) = %q, %q, %v; want %q, %q", c.in, perm, pat, err, c.perm, c.pat)
		}
	}
	for _, bad := range []string{"", "bash(", "(x)", "a)"} {
		if _, _, err := ParseIf(bad); err == nil {
			t.Errorf("ParseIf(%q): no error", bad)
		}
	}
}

func TestMatch(t *testing.T) {
	call := bashCall("cd x && git push origin main")
	for _, c := range []struct {
		spec Spec
		call *Call
		want bool
	}{
		{Spec{}, call, true},
		{Spec{Match: "*"}, call, true},
		{Spec{Match: "bash"}, call, true},
		{Spec{Match: "Bash"}, call, true},
		{Spec{Match: "Edit|Bash"}, call, true},
		{Spec{Match: "edit|write"}, call, false},
		{Spec{Match: "mcp__.*"}, call, false},
		{Spec{Source: "builtin"}, call, true},
		{Spec{Source: "mcp:*"}, call, false},
		{Spec{If: "bash(git push *)"}, call, true},
		{Spec{If: "Bash(git push:*)"}, call, true},
		{Spec{If: "bash(rm *)"}, call, false},
		{Spec{If: "edit(*)"}, call, false},
		{Spec{Match: "mcp__github__*"}, &Call{Tool: "github_create_issue", Source: "mcp:github"}, true},
		{Spec{Match: "mcp__.*"}, &Call{Tool: "github_create_issue", Source: "mcp:github"}, true},
		{Spec{Match: "MultiEdit"}, &Call{Tool: "apply_patch", Source: "builtin"}, true},
		{Spec{If: "deploy(*)"}, &Call{Tool: "deploy", Source: "project", Requests: func(json.RawMessage) []Request {
			return []Request{{Permission: "deploy", Patterns: []string{"*"}}}
		}}, true},
	} {
		if got := compile(c.spec).matches(c.call, c.call.Args); got != c.want {
			t.Errorf("%+v on %s: %v, want %v", c.spec, c.call.Tool, got, c.want)
		}
	}
}

func TestClaudeInput(t *testing.T) {
	ws := "/ws"
	edit := &Call{Tool: "edit", Source: "builtin"}
	in := claudeInput(ws, edit, json.RawMessage(`{"filePath":"src/a.go","oldString":"a","newString":"b","replaceAll":true}`))
	var m map[string]any
	if err := json.Unmarshal(in, &m); err != nil {
		t.Fatal(err)
	}
	if m["file_path"] != "/ws/src/a.go" || m["old_string"] != "a" || m["new_string"] != "b" || m["replace_all"] != true || m["filePath"] != nil {
		t.Fatalf("Edit's tool_input: %s", in)
	}
	back := fromClaudeInput(edit, json.RawMessage(`{"file_path":"/ws/src/a.go","old_string":"a","new_string":"c"}`))
	if string(back) != `{"filePath":"/ws/src/a.go","newString":"c","oldString":"a"}` {
		t.Fatalf("updatedInput back: %s", back)
	}
	patch := &Call{Tool: "apply_patch", Source: "builtin", Requests: func(json.RawMessage) []Request {
		return []Request{{Permission: "external_directory", Patterns: []string{"/x/*"}}, {Permission: "edit", Patterns: []string{`a\*.go`}}}
	}}
	in = claudeInput(ws, patch, json.RawMessage(`{"patchText":"..."}`))
	if !strings.Contains(string(in), `"file_path":"/ws/a*.go"`) || !strings.Contains(string(in), `"file_paths":["/ws/a*.go"]`) {
		t.Fatalf("apply_patch's tool_input: %s", in)
	}
	if ClaudeName("bash", "builtin") != "Bash" || ClaudeName("deploy", "project") != "deploy" || ClaudeName("my_srv_do_it", "mcp:my.srv") != "mcp__my.srv__do_it" {
		t.Fatal("ClaudeName")
	}
}

// The before hooks: their order, how their changes and decisions compose, and what a block,
// a failure and an odd answer do.
func TestBefore(t *testing.T) {
	ctx := context.Background()
	out := func(v any) []string {
		b, _ := json.Marshal(v)
		return py(t, "json.load(sys.stdin)\nprint("+strconv.Quote(string(b))+")\n")
	}
	specific := func(m map[string]any) []string { return out(map[string]any{"hookSpecificOutput": m}) }

	t.Run("ask outweighs allow, defer is no decision", func(t *testing.T) {
		r := newRunner(t,
			Spec{Name: "allow", Point: "before", Layer: LayerUser, Command: specific(map[string]any{"permissionDecision": "allow"})},
			Spec{Name: "defer", Point: "before", Layer: LayerUser, Command: specific(map[string]any{"permissionDecision": "defer"})},
			Spec{Name: "ask", Point: "before", Layer: LayerProject, Command: specific(map[string]any{"permissionDecision": "ask", "permissionDecisionReason": "look"})},
		)
		res := r.Before(ctx, bashCall("ls"))
		if res.Block != nil || res.Verdict == nil || res.Verdict.Action != "ask" || res.Verdict.Hook.Name != "ask" || res.Verdict.Reason != "look" {
			t.Fatalf("verdict: %+v", res.Verdict)
		}
		// The project's ran first, then the user's in the order written.
		if len(res.Runs) != 3 || res.Runs[0].Hook != "ask" || res.Runs[1].Hook != "allow" || !strings.Contains(res.Runs[2].Note, "no decision") {
			t.Fatalf("runs: %+v", res.Runs)
		}
	})
	t.Run("a block stops the chain", func(t *testing.T) {
		r := newRunner(t,
			Spec{Name: "block", Point: "before", Layer: LayerUser, Command: py(t, "print('no way', file=sys.stderr); sys.exit(2)\n")},
			Spec{Name: "after-block", Point: "before", Layer: LayerUser, Command: specific(map[string]any{"permissionDecision": "allow"})},
		)
		res := r.Before(ctx, bashCall("ls"))
		if res.Block == nil || !strings.Contains(res.Block.Reason, "no way") || len(res.Runs) != 1 || res.Runs[0].Outcome != protocol.HookBlocked {
			t.Fatalf("block: %+v %+v", res.Block, res.Runs)
		}
	})
	t.Run("deny, continue false and exit 2 without a reason block", func(t *testing.T) {
		for _, cmd := range [][]string{
			specific(map[string]any{"permissionDecision": "deny"}),
			out(map[string]any{"decision": "block", "reason": "old style"}),
			out(map[string]any{"continue": false, "stopReason": "enough"}),
			py(t, "sys.exit(2)\n"),
		} {
			res := newRunner(t, Spec{Name: "b", Point: "before", Layer: LayerUser, Command: cmd}).Before(ctx, bashCall("ls"))
			if res.Block == nil || res.Runs[0].Reason == "" {
				t.Errorf("%v: %+v", cmd, res)
			}
		}
	})
	t.Run("updatedInput that is not an object is ignored", func(t *testing.T) {
		res := newRunner(t, Spec{Name: "x", Point: "before", Layer: LayerUser, Command: specific(map[string]any{"updatedInput": "rm -rf /"})}).Before(ctx, bashCall("ls"))
		if res.Args != nil || !strings.Contains(res.Runs[0].Note, "not a JSON object") {
			t.Fatalf("%+v", res)
		}
	})
	t.Run("toolsd's own args win over updatedInput", func(t *testing.T) {
		res := newRunner(t, Spec{Name: "x", Point: "before", Layer: LayerUser, Command: out(map[string]any{
			"hookSpecificOutput": map[string]any{"updatedInput": map[string]any{"command": "a"}}, "toolsd": map[string]any{"args": map[string]any{"command": "b"}}})}).Before(ctx, bashCall("ls"))
		if string(res.Args) != `{"command":"b"}` {
			t.Fatalf("%s", res.Args)
		}
	})
	t.Run("a hook that is not matched does not run", func(t *testing.T) {
		res := newRunner(t, Spec{Name: "x", Point: "before", Layer: LayerUser, Match: "edit", Command: []string{"/nonexistent"}}).Before(ctx, bashCall("ls"))
		if len(res.Runs) != 0 {
			t.Fatalf("%+v", res.Runs)
		}
	})
	t.Run("failures follow the policy", func(t *testing.T) {
		// Only the hook that sleeps is meant to run out of time: the others get long enough
		// for the interpreter to start on a loaded machine.
		for _, c := range []struct {
			cmd     []string
			closed  bool
			words   string
			timeout time.Duration
		}{
			{[]string{"/nonexistent/hook"}, false, "could not start", time.Minute},
			{py(t, "sys.exit(3)\n"), true, "exited with code 3", time.Minute},
			{py(t, "print('{not json')\n"), true, "not a JSON object", time.Minute},
			{py(t, "time.sleep(30)\n"), true, "did not answer within", 500 * time.Millisecond},
		} {
			r := newRunner(t, Spec{Name: "f", Point: "before", Layer: LayerUser, Command: c.cmd, FailClosed: c.closed, Timeout: c.timeout})
			res := r.Before(ctx, bashCall("ls"))
			if len(res.Runs) != 1 || res.Runs[0].Outcome != protocol.HookFailed || !strings.Contains(res.Runs[0].Error, c.words) {
				t.Fatalf("%v: runs %+v", c.cmd, res.Runs)
			}
			if (res.Block != nil) != c.closed {
				t.Fatalf("%v: block %+v, fail-closed %v", c.cmd, res.Block, c.closed)
			}
			if d := r.Diagnostics(); len(d) != 1 || !strings.Contains(d[0].Message, c.words) {
				t.Fatalf("diagnostics: %+v", d)
			}
		}
	})
	t.Run("the input is Claude Code's, with toolsd's own", func(t *testing.T) {
		dump := filepath.Join(t.TempDir(), "in.json")
		r := newRunner(t, Spec{Name: "d", Point: "before", Layer: LayerUser, Env: map[string]string{"OUT": dump},
			Command: py(t, "open(os.environ['OUT'], 'w').write(sys.stdin.read() + '\\n' + os.environ['CLAUDE_PROJECT_DIR'] + ' ' + os.environ['TOOLSD_HOOK'])\n")})
		r.Before(ctx, bashCall("ls"))
		b, err := os.ReadFile(dump)
		if err != nil {
			t.Fatal(err)
		}
		j, env, _ := strings.Cut(string(b), "\n")
		var in map[string]any
		if err := json.Unmarshal([]byte(j), &in); err != nil {
			t.Fatal(err)
		}
		if in["hook_event_name"] != "PreToolUse" || in["tool_name"] != "Bash" || in["session_id"] != "s" || in["tool_use_id"] != "c" || in["cwd"] != r.opts.Workspace ||
			in["tool_input"].(map[string]any)["command"] != "ls" || in["toolsd"].(map[string]any)["tool"] != "bash" {
			t.Fatalf("input: %s", j)
		}
		if env != r.opts.Workspace+" d" {
			t.Fatalf("environment: %q", env)
		}
	})
}

func TestAfter(t *testing.T) {
	ctx := context.Background()
	res := Result{Status: protocol.StatusCompleted, Title: "t", Output: "out", Metadata: map[string]any{"exit": 0}}
	r := newRunner(t,
		Spec{Name: "redact", Point: "after", Layer: LayerUser, Command: py(t, `d = json.load(sys.stdin)
print(json.dumps({"toolsd": {"output": d["toolsd"]["result"]["output"].replace("out", "***"), "metadata": {"redacted": True}}}))
`)},
		Spec{Name: "feedback", Point: "after", Layer: LayerUser, Command: py(t, `d = json.load(sys.stdin)
assert d["hook_event_name"] == "PostToolUse" and d["tool_response"]["stdout"] == "***", d
print(json.dumps({"decision": "block", "reason": "tests fail now", "hookSpecificOutput": {"additionalContext": "run make test"}}))
`)},
	)
	a := r.After(ctx, bashCall("ls"), res)
	if a.Result.Output != "***" || a.Result.Metadata["redacted"] != true || a.Result.Metadata["exit"] != 0 || strings.Join(a.Changed, ",") != "output,metadata" {
		t.Fatalf("result: %+v", a)
	}
	if len(a.Context) != 1 || a.Context[0].Text != "tests fail now\nrun make test" || a.Withheld != nil {
		t.Fatalf("context: %+v", a.Context)
	}
	// A fail-closed after hook that fails withholds the result.
	r = newRunner(t, Spec{Name: "scan", Point: "after", Layer: LayerUser, Command: py(t, "sys.exit(1)\n"), FailClosed: true})
	if a := r.After(ctx, bashCall("ls"), res); a.Withheld == nil || !strings.Contains(a.Withheld.Message, "withheld") {
		t.Fatalf("withheld: %+v", a)
	}
}

func TestPermission(t *testing.T) {
	ctx := context.Background()
	deny := py(t, "print('not here', file=sys.stderr); sys.exit(2)\n")
	r := newRunner(t, Spec{Name: "p", Point: "permission", Layer: LayerUser, Command: deny})
	ask := protocol.Decision{Permission: "bash", Patterns: []string{"ls"}, Action: "ask", By: "rule"}
	if res := r.Permission(ctx, bashCall("ls"), nil, ask, true); res.Deny == nil || res.Deny.Reason != "not here" || res.Runs[0].Outcome != protocol.HookBlocked {
		t.Fatalf("pending ask: %+v", res)
	}
	allow := protocol.Decision{Permission: "bash", Patterns: []string{"ls"}, Action: "allow", By: "rule"}
	if res := r.Permission(ctx, bashCall("ls"), nil, allow, false); res.Deny != nil || !strings.Contains(res.Runs[0].Note, "not followed") {
		t.Fatalf("allow: %+v", res)
	}
	r = newRunner(t, Spec{Name: "p", Point: "permission", Layer: LayerUser, Command: py(t, "sys.exit(1)\n"), FailClosed: true})
	if res := r.Permission(ctx, bashCall("ls"), nil, allow, false); res.Deny == nil {
		t.Fatalf("fail-closed: %+v", res)
	}
}

func TestDefinition(t *testing.T) {
	ctx := context.Background()
	count := filepath.Join(t.TempDir(), "count")
	def := py(t, `d = json.load(sys.stdin)
open(os.environ["COUNT"], "a").write("x")
t = d["toolsd"]["definition"]
if d["toolsd"]["tool"] == "secret":
    sys.exit(2)
print(json.dumps({"toolsd": {"description": t["description"] + " (team note)", "inputSchema": {"type": "object"}}}))
`)
	r := newRunner(t, Spec{Name: "d", Point: "definition", Layer: LayerUser, Env: map[string]string{"COUNT": count}, Command: def})
	tool := Tool{ID: "bash", Source: "builtin", Description: "Run.", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}
	for range 3 {
		got, hidden := r.Definition(ctx, tool, "", nil)
		if hidden || got.Description != "Run. (team note)" || string(got.Parameters) != `{"type":"object"}` {
			t.Fatalf("definition: %+v %v", got, hidden)
		}
	}
	if _, hidden := r.Definition(ctx, Tool{ID: "secret", Source: "builtin"}, "", nil); !hidden {
		t.Fatal("exit code 2 did not hide the tool")
	}
	if b, _ := os.ReadFile(count); string(b) != "xx" {
		t.Fatalf("the hook ran %d times; answers are remembered", len(b))
	}
	// A reload forgets them.
	r.SetConfig([]Spec{{Name: "d", Point: "definition", Layer: LayerUser, Env: map[string]string{"COUNT": count}, Command: def}})
	r.Definition(ctx, tool, "", nil)
	if b, _ := os.ReadFile(count); string(b) != "xxx" {
		t.Fatalf("after a reload the hook ran %d times in all", len(b))
	}
	// Fail-closed hides, fail-open shows the tool as it is.
	for _, closed := range []bool{false, true} {
		r := newRunner(t, Spec{Name: "f", Point: "definition", Layer: LayerUser, Command: py(t, "sys.exit(1)\n"), FailClosed: closed})
		got, hidden := r.Definition(ctx, tool, "", nil)
		if hidden != closed || (!closed && got.Description != "Run.") {
			t.Fatalf("fail-closed %v: %+v hidden %v", closed, got, hidden)
		}
	}
}

// fakeEditor answers hooks/run.
type fakeEditor struct {
	mu    sync.Mutex
	calls []protocol.HookParams
	f     func(ctx context.Context, p protocol.HookParams) (*protocol.HookResult, error)
}

func (f *fakeEditor) Hook(ctx context.Context, p protocol.HookParams) (*protocol.HookResult, error) {
	f.mu.Lock()
	f.calls = append(f.calls, p)
	f.mu.Unlock()
	return f.f(ctx, p)
}

func TestEditorHooks(t *testing.T) {
	ctx := context.Background()
	ref := &protocol.ClientRef{ID: "c1", Name: "Editor"}
	slow := &fakeEditor{f: func(ctx context.Context, _ protocol.HookParams) (*protocol.HookResult, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	broken := &fakeEditor{f: func(context.Context, protocol.HookParams) (*protocol.HookResult, error) {
		return nil, errors.New("no handler")
	}}
	deny := &fakeEditor{f: func(context.Context, protocol.HookParams) (*protocol.HookResult, error) {
		return &protocol.HookResult{Decision: "deny", Reason: "editor says no"}, nil
	}}
	r := New(Options{Workspace: t.TempDir()})
	r.SetClients([]Spec{
		{Name: "slow", Point: "before", Layer: LayerClient, Client: ref, Requester: slow, Timeout: 50 * time.Millisecond},
		{Name: "broken", Point: "before", Layer: LayerClient, Client: ref, Requester: broken},
		{Name: "broken", Point: "before", Layer: LayerClient, Client: &protocol.ClientRef{ID: "c2"}, Requester: broken}, // a second editor, same name: once
		{Name: "deny", Point: "before", Layer: LayerClient, Client: ref, Requester: deny},
	})
	res := r.Before(ctx, bashCall("ls"))
	if len(res.Runs) != 3 || res.Runs[0].Outcome != protocol.HookFailed || !strings.Contains(res.Runs[0].Error, "did not answer") ||
		!strings.Contains(res.Runs[1].Error, "no handler") || res.Block == nil || res.Block.Hook.Client != ref {
		t.Fatalf("runs %+v block %+v", res.Runs, res.Block)
	}
	if len(deny.calls) != 1 || deny.calls[0].Point != "before" || deny.calls[0].Tool != "bash" || string(deny.calls[0].Args) != `{"command":"ls"}` {
		t.Fatalf("hooks/run params: %+v", deny.calls)
	}
	if len(broken.calls) != 1 {
		t.Fatalf("a hook two editors subscribed to ran %d times", len(broken.calls))
	}
}

// Diagnostics are told when a hook starts failing and when it recovers, not at every failure.
func TestDiagnosticsOnTransitions(t *testing.T) {
	flag := filepath.Join(t.TempDir(), "fail")
	var told [][]protocol.Diagnostic
	r := New(Options{Workspace: t.TempDir(), OnDiagnostics: func(d []protocol.Diagnostic) { told = append(told, d) }})
	r.SetConfig([]Spec{{Name: "flaky", Point: "before", Layer: LayerUser, File: "/u/config.json", Line: 3, Column: 5,
		Command: py(t, "sys.exit(1 if os.path.exists("+strconv.Quote(flag)+") else 0)\n")}})
	ctx := context.Background()
	r.Before(ctx, bashCall("ls"))
	_ = os.WriteFile(flag, nil, 0o644)
	r.Before(ctx, bashCall("ls"))
	r.Before(ctx, bashCall("ls"))
	_ = os.Remove(flag)
	r.Before(ctx, bashCall("ls"))
	if len(told) != 3 || len(told[0]) != 0 || len(told[1]) != 1 || len(told[2]) != 0 {
		t.Fatalf("told %+v", told)
	}
	d := told[1][0]
	if d.Path != "/u/config.json" || d.Line != 3 || !strings.Contains(d.Message, `hook "flaky" (before, user config /u/config.json:3:5) failed`) || !strings.Contains(d.Message, "fail-open") {
		t.Fatalf("diagnostic %+v", d)
	}
}

// BenchmarkBefore is what the before point costs a call when no hook runs: with no hooks at
// all, and with a hook whose matcher does not take the call.
func BenchmarkBefore(b *testing.B) {
	call := bashCall("ls")
	for _, c := range []struct {
		name  string
		specs []Spec
	}{
		{"none", nil},
		{"unmatched", []Spec{{Name: "x", Point: "before", Layer: LayerUser, Match: "edit|write", Command: []string{"/bin/true"}}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			r := New(Options{Workspace: b.TempDir()})
			r.SetConfig(c.specs)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if res := r.Before(ctx, call); len(res.Runs) != 0 {
					b.Fatal("a hook ran")
				}
			}
		})
	}
}
