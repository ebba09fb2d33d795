//go:build unix

package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolsd/toolsd/internal/harness"
	"github.com/toolsd/toolsd/protocol"
)

// agentRules are the editor's rules of these tests: the editor's settings layer counts as
// the person's, so its allow rules hold in an untrusted workspace.
var agentRules = map[string]any{
	"sandbox": map[string]any{"autoAllow": false},
	"permission": map[string]any{
		"bash": map[string]any{"*": "ask", "echo *": "allow", "touch *": "allow", "rm *": "deny"},
		"edit": map[string]any{"*": "ask", "secret/*": "deny"},
	},
}

// agentHookRun is one run of `toolsd hook`.
type agentHookRun struct {
	stdout, stderr string
	exit           int
	out            map[string]any // stdout as JSON (nil when empty)
}

// decision is the permissionDecision of a PreToolUse answer.
func (r agentHookRun) decision() (string, string) {
	hso, _ := r.out["hookSpecificOutput"].(map[string]any)
	d, _ := hso["permissionDecision"].(string)
	reason, _ := hso["permissionDecisionReason"].(string)
	return d, reason
}

// runHook runs `toolsd hook` on the workspace's daemon (the test's runtime folder and
// store) with payload on stdin.
func runHook(t *testing.T, ctx context.Context, e *env, payload any, args ...string) agentHookRun {
	t.Helper()
	var in []byte
	switch p := payload.(type) {
	case string:
		in = []byte(p)
	default:
		in, _ = json.Marshal(p)
	}
	cmd := exec.CommandContext(ctx, harness.Binary(t), append([]string{"hook", "--store", e.st, "--grace=200ms"}, args...)...)
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+harness.RuntimeDir(e.t), "GORACE=atexit_sleep_ms=0", "CLAUDE_PROJECT_DIR=")
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := agentHookRun{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.exit = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	if s := strings.TrimSpace(r.stdout); s != "" {
		if err := json.Unmarshal([]byte(s), &r.out); err != nil {
			t.Fatalf("the hook's stdout is not JSON: %q", s)
		}
	}
	return r
}

func claudePayload(ws, event, callID, tool string, input any, more ...any) map[string]any {
	p := map[string]any{"session_id": "claude-s1", "transcript_path": "/dev/null", "cwd": ws, "permission_mode": "default",
		"hook_event_name": event, "tool_name": tool, "tool_input": input, "tool_use_id": callID}
	for i := 0; i+1 < len(more); i += 2 {
		p[more[i].(string)] = more[i+1]
	}
	return p
}

func (e *env) agentRecord(sessionID, callID string) protocol.CallRecord {
	e.t.Helper()
	var rec protocol.CallRecord
	if err := e.d.Call(e.ctx, "calls/get", protocol.CallsGetParams{SessionID: sessionID, CallID: callID}, &rec); err != nil {
		e.t.Fatalf("calls/get %s: %v", callID, err)
	}
	return rec
}

// Claude Code's calls decided by the workspace's rules and the editor's person, recorded,
// and checkpointed, through the real binary: what `toolsd hook` answers is what the agent
// reads.
func TestHookDecidesClaudeCodeCalls(t *testing.T) {
	e := newEnv(t, envOpts{options: agentRules, files: map[string]string{"a.txt": "one\ntwo\n"}})
	ctx := e.ctx

	// A deny rule: denied, with the rule in the reason the model reads; on record as refused.
	r := runHook(t, ctx, e, claudePayload(e.ws, "PreToolUse", "toolu_deny", "Bash", map[string]any{"command": "rm -rf build"}), "PreToolUse")
	if d, reason := r.decision(); r.exit != 0 || d != "deny" || !strings.Contains(reason, `rm *`) || !strings.Contains(reason, "nothing ran") {
		t.Fatalf("a denied Bash call: exit %d, %s %s", r.exit, r.stdout, r.stderr)
	}
	if rec := e.agentRecord("claude-s1", "toolu_deny"); rec.Status != protocol.StatusError || rec.Agent != "claude-code" || rec.Client == nil || rec.Client.Name != "Claude Code" || len(rec.Decisions) != 1 || rec.Decisions[0].Action != "deny" {
		t.Fatalf("the denied call's record: %+v", rec)
	}

	// An allow rule: allowed without an ask, running until its PostToolUse, then completed
	// with the output.
	mark := e.d.Mark()
	r = runHook(t, ctx, e, claudePayload(e.ws, "PreToolUse", "toolu_echo", "Bash", map[string]any{"command": "echo hello"}), "PreToolUse")
	if d, _ := r.decision(); d != "allow" {
		t.Fatalf("an allowed Bash call: %s %s", r.stdout, r.stderr)
	}
	if n := e.d.Count(mark, "permission/asked"); n != 0 {
		t.Fatalf("an allowed call asked (%d)", n)
	}
	if rec := e.agentRecord("claude-s1", "toolu_echo"); rec.Status != protocol.StatusRunning {
		t.Fatalf("between PreToolUse and PostToolUse the call should be running: %+v", rec)
	}
	if _, _, err := e.d.WaitFor(ctx, mark, "tools/progress", func(raw json.RawMessage) bool {
		var p protocol.ProgressParams
		return json.Unmarshal(raw, &p) == nil && p.CallID == "toolu_echo" && p.Status == protocol.StatusRunning && p.Client != nil && p.Client.Kind == protocol.ClientAgent
	}); err != nil {
		t.Fatalf("the Running view hears of the agent's call: %v", err)
	}
	long := strings.Repeat("line of output\n", 5000)
	r = runHook(t, ctx, e, claudePayload(e.ws, "PostToolUse", "toolu_echo", "Bash", map[string]any{"command": "echo hello"},
		"tool_response", map[string]any{"stdout": "hello\n" + long, "stderr": "", "interrupted": false}), "PostToolUse")
	if r.exit != 0 || r.stdout != "" {
		t.Fatalf("PostToolUse: exit %d %q %q", r.exit, r.stdout, r.stderr)
	}
	rec := e.agentRecord("claude-s1", "toolu_echo")
	if rec.Status != protocol.StatusCompleted || !strings.HasPrefix(rec.Output, "hello\n") || !rec.Truncated || rec.OutputID == "" || rec.EndedAt == nil {
		t.Fatalf("the completed call's record: status %s truncated %v output %d bytes", rec.Status, rec.Truncated, len(rec.Output))
	}
	var out protocol.OutputsReadResult
	if err := e.d.Call(ctx, "outputs/read", protocol.OutputsReadParams{OutputID: rec.OutputID, Limit: 100000}, &out); err != nil || !strings.Contains(out.Content, strings.TrimSuffix(long, "\n")) {
		t.Fatalf("the whole output in the store: %v (%d bytes)", err, len(out.Content))
	}

	// An ask goes to the editor, naming the agent; the person's answer becomes the agent's.
	for _, c := range []struct{ reply, want string }{{"once", "allow"}, {"reject", "deny"}} {
		mark = e.d.Mark()
		id := "toolu_ask_" + c.reply
		done := make(chan agentHookRun, 1)
		go func() {
			done <- runHook(t, ctx, e, claudePayload(e.ws, "PreToolUse", id, "Bash", map[string]any{"command": "curl -s example.org"}), "PreToolUse")
		}()
		ask := e.waitAsk(mark, id)
		if ask.Client == nil || ask.Client.Name != "Claude Code" || ask.Permission != "bash" || ask.Patterns[0] != "curl -s example.org" {
			t.Fatalf("the ask does not name the agent and its command: %+v", ask)
		}
		if err := e.reply(ask.ID, c.reply, "not now"); err != nil {
			t.Fatal(err)
		}
		r := <-done
		if d, reason := r.decision(); d != c.want || (c.want == "deny" && !strings.Contains(reason, "not now")) {
			t.Fatalf("answered %s: %s %s", c.reply, r.stdout, r.stderr)
		}
		if c.want == "allow" {
			runHook(t, ctx, e, claudePayload(e.ws, "PostToolUse", id, "Bash", map[string]any{"command": "curl -s example.org"}, "tool_response", map[string]any{"stdout": "<html>"}), "PostToolUse")
		}
	}

	// An edit asks with its diff; a deny rule on its path denies it.
	mark = e.d.Mark()
	done := make(chan agentHookRun, 1)
	go func() {
		done <- runHook(t, ctx, e, claudePayload(e.ws, "PreToolUse", "toolu_edit", "Edit", map[string]any{"file_path": filepath.Join(e.ws, "a.txt"), "old_string": "two", "new_string": "TWO"}), "PreToolUse")
	}()
	ask := e.waitAsk(mark, "toolu_edit")
	var md map[string]any
	_ = json.Unmarshal(ask.Metadata, &md)
	if diff, _ := md["diff"].(string); ask.Permission != "edit" || !strings.Contains(diff, "-two") || !strings.Contains(diff, "+TWO") {
		t.Fatalf("the edit's ask has no diff: %+v %s", ask, ask.Metadata)
	}
	_ = e.reply(ask.ID, "once", "")
	if d, _ := (<-done).decision(); d != "allow" {
		t.Fatalf("the edit allowed in the editor: %s", d)
	}
	runHook(t, ctx, e, claudePayload(e.ws, "PostToolUseFailure", "toolu_edit", "Edit", map[string]any{}, "error", "String to replace not found", "is_interrupt", false), "PostToolUseFailure")
	if rec := e.agentRecord("claude-s1", "toolu_edit"); rec.Status != protocol.StatusError || rec.Error != "String to replace not found" || len(rec.Decisions) != 1 || rec.Decisions[0].By != "person" {
		t.Fatalf("the failed edit's record: %+v", rec)
	}
	r = runHook(t, ctx, e, claudePayload(e.ws, "PreToolUse", "toolu_secret", "Write", map[string]any{"file_path": filepath.Join(e.ws, "secret", "k"), "content": "x"}), "PreToolUse")
	if d, _ := r.decision(); d != "deny" {
		t.Fatalf("a write under a deny rule: %s", r.stdout)
	}
}

// What an agent's Bash call changed is its checkpoint: calls/changes shows it and
// calls/revert puts it back.
func TestHookBashChangeReverts(t *testing.T) {
	e := newEnv(t, envOpts{options: agentRules, files: map[string]string{"keep.txt": "kept\n"}})
	ctx := e.ctx
	in := map[string]any{"command": "touch made.txt"}
	if d, _ := runHook(t, ctx, e, claudePayload(e.ws, "PreToolUse", "toolu_touch", "Bash", in), "PreToolUse").decision(); d != "allow" {
		t.Fatalf("touch: %s", d)
	}
	// The agent runs it.
	if err := os.WriteFile(filepath.Join(e.ws, "made.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.ws, "keep.txt"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runHook(t, ctx, e, claudePayload(e.ws, "PostToolUse", "toolu_touch", "Bash", in, "tool_response", map[string]any{"stdout": ""}), "PostToolUse")
	if rec := e.agentRecord("claude-s1", "toolu_touch"); rec.Status != protocol.StatusCompleted || rec.Changes != 2 {
		t.Fatalf("the Bash call's record: status %s, %d changes", rec.Status, rec.Changes)
	}
	ch := e.changes("claude-s1", "toolu_touch")
	if got := statuses(ch); got["made.txt"] != "added" || got["keep.txt"] != "modified" {
		t.Fatalf("calls/changes of the agent's Bash call: %v", got)
	}
	if res := e.revert(protocol.CallsRevertParams{SessionID: "claude-s1", CallID: "toolu_touch"}); res.Status != protocol.RevertDone {
		t.Fatalf("calls/revert: %+v", res)
	}
	if _, err := os.Stat(filepath.Join(e.ws, "made.txt")); !os.IsNotExist(err) {
		t.Fatalf("made.txt is still there after the revert: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(e.ws, "keep.txt")); string(b) != "kept\n" {
		t.Fatalf("keep.txt after the revert: %q", b)
	}
}

// Whatever keeps the decision from being made denies the call: the agent reads exit 2 as
// blocked, and the reason says what happened.
func TestHookFailsClosed(t *testing.T) {
	e := newEnv(t, envOpts{options: agentRules})
	ctx := e.ctx
	mark := e.d.Mark()
	for name, c := range map[string]struct {
		payload any
		args    []string
		want    string
	}{
		"malformed payload": {`{"tool_name": `, []string{"PreToolUse"}, "not JSON"},
		"no tool":           {`{"session_id": "s"}`, []string{"PreToolUse"}, "no tool_name"},
		"no daemon":         {claudePayload("/nonexistent/folder", "PreToolUse", "t1", "Bash", map[string]any{"command": "echo x"}), []string{"PreToolUse"}, "could not be reached"},
		"unknown event":     {claudePayload(e.ws, "Stop", "t2", "Bash", map[string]any{"command": "echo x"}), []string{"Stop"}, "no hook event"},
		"unknown agent":     {claudePayload(e.ws, "PreToolUse", "t3", "Bash", map[string]any{"command": "echo x"}), []string{"--agent", "gemini", "PreToolUse"}, "unknown agent"},
		"time-out":          {claudePayload(e.ws, "PreToolUse", "t4", "Bash", map[string]any{"command": "curl x"}), []string{"--timeout", "500ms", "PreToolUse"}, "time-out"},
	} {
		t.Run(name, func(t *testing.T) {
			r := runHook(t, ctx, e, c.payload, c.args...)
			d, reason := r.decision()
			if r.exit != 2 || d != "deny" || !strings.Contains(reason, c.want) || !strings.Contains(r.stderr, c.want) {
				t.Fatalf("exit %d, decision %q, reason %q, stderr %q; want exit 2, deny, %q", r.exit, d, reason, r.stderr, c.want)
			}
		})
	}
	// The timed-out ask was withdrawn, not left for a person to answer: the editor that
	// showed it is told so.
	raw, _, err := e.d.WaitFor(ctx, mark, "permission/asked", func(raw json.RawMessage) bool {
		var a protocol.AskedParams
		return json.Unmarshal(raw, &a) == nil && a.CallID == "t4"
	})
	if err != nil {
		t.Fatalf("the time-out's ask: %v", err)
	}
	var ask protocol.AskedParams
	_ = json.Unmarshal(raw, &ask)
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, _, err := e.d.WaitFor(wctx, mark, "permission/answered", func(raw json.RawMessage) bool {
		var a protocol.AnsweredParams
		return json.Unmarshal(raw, &a) == nil && a.ID == ask.ID && a.By == "cancel"
	}); err != nil {
		t.Fatalf("the ask was not withdrawn after the hook gave up: %v", err)
	}
	var res protocol.ListAsksResult
	if err := e.d.Call(ctx, "permission/list", nil, &res); err != nil || len(res.Asks) != 0 {
		t.Fatalf("asks left pending after the hook gave up: %+v %v", res.Asks, err)
	}
}

// With no editor to show an ask, it is the agent's own prompt ("ask"), or a deny with
// --no-editor deny; Codex, which refuses an explicit allow, gets silence for allow and a
// deny for each file of a patch a rule denies.
func TestHookWithoutEditorAndCodex(t *testing.T) {
	e := newEnv(t, envOpts{options: agentRules, noAsk: true})
	ctx := e.ctx
	in := map[string]any{"command": "curl x"}
	if d, reason := runHook(t, ctx, e, claudePayload(e.ws, "PreToolUse", "n1", "Bash", in), "PreToolUse").decision(); d != "ask" || !strings.Contains(reason, "no editor") {
		t.Fatalf("no editor: %q %q", d, reason)
	}
	if d, _ := runHook(t, ctx, e, claudePayload(e.ws, "PreToolUse", "n2", "Bash", in), "--no-editor", "deny", "PreToolUse").decision(); d != "deny" {
		t.Fatalf("no editor, --no-editor deny: %q", d)
	}
	codex := func(id, patch string) agentHookRun {
		return runHook(t, ctx, e, map[string]any{"session_id": "codex-s1", "turn_id": "turn1", "cwd": e.ws, "hook_event_name": "PreToolUse", "model": "gpt",
			"tool_name": "apply_patch", "tool_input": map[string]any{"command": patch}, "tool_use_id": id}, "--agent", "codex", "PreToolUse")
	}
	patch := "*** Begin Patch\n*** Add File: notes.md\n+hi\n*** Update File: secret/key\n@@\n-a\n+b\n*** End Patch\n"
	if d, reason := codex("c1", patch).decision(); d != "deny" || !strings.Contains(reason, "secret/key") {
		t.Fatalf("a Codex patch with one denied file: %q %q", d, reason)
	}
	r := runHook(t, ctx, e, map[string]any{"session_id": "codex-s1", "cwd": e.ws, "hook_event_name": "PreToolUse", "tool_name": "Bash",
		"tool_input": map[string]any{"command": "echo ok"}, "tool_use_id": "c2"}, "--agent", "codex", "PreToolUse")
	if r.exit != 0 || r.stdout != "" {
		t.Fatalf("an allowed Codex call must be silence (Codex fails a hook that says allow): exit %d %q", r.exit, r.stdout)
	}
	runHook(t, ctx, e, map[string]any{"session_id": "codex-s1", "cwd": e.ws, "hook_event_name": "PostToolUse", "tool_name": "Bash",
		"tool_input": map[string]any{"command": "echo ok"}, "tool_use_id": "c2", "tool_response": "ok\n"}, "--agent", "codex", "PostToolUse")
	if rec := e.agentRecord("codex-s1", "c2"); rec.Status != protocol.StatusCompleted || rec.Output != "ok\n" || rec.Agent != "codex" {
		t.Fatalf("the Codex call's record: %+v", rec)
	}
}

// `toolsd hook install` and `uninstall` through the binary: the diff printed, --dry-run
// writing nothing, the person's file kept.
func TestHookInstall(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	settings := filepath.Join(home, ".claude", "settings.json")
	orig := "{\n  \"model\": \"opus\",\n  \"hooks\": {\n    \"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"say done\"}]}]\n  }\n}\n"
	if err := os.MkdirAll(filepath.Dir(settings), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(settings, []byte(orig), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, int) {
		cmd := exec.Command(harness.Binary(t), append([]string{"hook"}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+home, "CLAUDE_CONFIG_DIR=", "CODEX_HOME=")
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return string(out), ee.ExitCode()
		}
		return string(out), 0
	}
	out, code := run("install", "claude", "--user", "--dry-run")
	if b, _ := os.ReadFile(settings); code != 0 || string(b) != orig || !strings.Contains(out, "+        \"matcher\": \"Bash|") || !strings.Contains(out, "dry run") {
		t.Fatalf("dry run: exit %d\n%s", code, out)
	}
	if out, code = run("install", "claude", "--user"); code != 0 {
		t.Fatalf("install: %d %s", code, out)
	}
	b, _ := os.ReadFile(settings)
	if fi, _ := os.Stat(settings); !strings.Contains(string(b), `"model": "opus"`) || !strings.Contains(string(b), `"say done"`) || !strings.Contains(string(b), "hook --agent claude PostToolUseFailure") || fi.Mode().Perm() != 0o600 {
		t.Fatalf("installed settings (mode %v):\n%s", fi.Mode(), b)
	}
	if out, _ := run("install", "claude", "--user"); !strings.Contains(out, "nothing to change") {
		t.Fatalf("a second install: %s", out)
	}
	if out, code = run("uninstall", "claude", "--user"); code != 0 {
		t.Fatalf("uninstall: %d %s", code, out)
	}
	if b, _ := os.ReadFile(settings); string(b) != orig {
		t.Fatalf("after uninstall:\n%s\nwant\n%s", b, orig)
	}
	// A project's Codex hooks, made from nothing; a file that is not settings is left alone.
	if out, code = run("install", "codex", "--project", "--workspace", ws); code != 0 || !strings.Contains(out, filepath.Join(ws, ".codex", "hooks.json")) {
		t.Fatalf("codex install: %d %s", code, out)
	}
	bad := filepath.Join(ws, ".cursor", "hooks.json")
	_ = os.MkdirAll(filepath.Dir(bad), 0o755)
	_ = os.WriteFile(bad, []byte("not json"), 0o644)
	if out, code = run("install", "cursor", "--workspace", ws); code != 1 || !strings.Contains(out, "nothing was changed") {
		t.Fatalf("a broken file: %d %s", code, out)
	}
	if b, _ := os.ReadFile(bad); string(b) != "not json" {
		t.Fatalf("the broken file was changed: %q", b)
	}
}

// The daemon killed in the middle: the hook waiting on an ask denies; the calls it had read
// interrupted in the next daemon; an after that comes then completes its call's record.
func TestHookDaemonKilled(t *testing.T) {
	e := newEnv(t, envOpts{options: agentRules})
	ctx := e.ctx
	if d, _ := runHook(t, ctx, e, claudePayload(e.ws, "PreToolUse", "k_allowed", "Bash", map[string]any{"command": "echo long"}), "PreToolUse").decision(); d != "allow" {
		t.Fatalf("allowed: %s", d)
	}
	mark := e.d.Mark()
	done := make(chan agentHookRun, 1)
	go func() {
		done <- runHook(t, ctx, e, claudePayload(e.ws, "PreToolUse", "k_asked", "Bash", map[string]any{"command": "curl x"}), "PreToolUse")
	}()
	e.waitAsk(mark, "k_asked")
	pids := harness.OwnerPIDs(harness.RuntimeDir(t))
	if len(pids) != 1 {
		t.Fatalf("owners: %v", pids)
	}
	if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if d, reason := r.decision(); r.exit != 2 || d != "deny" {
		t.Fatalf("the hook whose daemon died: exit %d %q %q %s", r.exit, d, reason, r.stderr)
	}
	<-e.d.Exited()
	e2 := newEnv(t, envOpts{options: agentRules, ws: e.ws, store: e.st})
	for _, id := range []string{"k_allowed", "k_asked"} {
		if rec := e2.agentRecord("claude-s1", id); rec.Status != protocol.StatusInterrupted {
			t.Fatalf("%s after the daemon died: %s", id, rec.Status)
		}
	}
	runHook(t, ctx, e2, claudePayload(e.ws, "PostToolUse", "k_allowed", "Bash", map[string]any{"command": "echo long"}, "tool_response", map[string]any{"stdout": "long\n"}), "PostToolUse")
	if rec := e2.agentRecord("claude-s1", "k_allowed"); rec.Status != protocol.StatusCompleted || rec.Output != "long\n" {
		t.Fatalf("the after that came later: %+v", rec)
	}
}

// A call one of whose requests a rule denies is denied without asking about the others (a
// path outside the workspace asks, but the rm is denied anyway).
func TestHookDenyBeforeAsk(t *testing.T) {
	e := newEnv(t, envOpts{options: agentRules})
	mark := e.d.Mark()
	r := runHook(t, e.ctx, e, claudePayload(e.ws, "PreToolUse", "d1", "Bash", map[string]any{"command": "rm -rf /tmp/elsewhere-never"}), "--timeout", "20s", "PreToolUse")
	if d, reason := r.decision(); d != "deny" || !strings.Contains(reason, "rm *") {
		t.Fatalf("%q %q %s", d, reason, r.stderr)
	}
	if n := e.d.Count(mark, "permission/asked"); n != 0 {
		t.Fatalf("asked %d times for a call a rule denies", n)
	}
}

// "Always" answered in the editor for an agent's call is toolsd's: the agent's next such call
// is allowed without an ask, and so is the editor's own.
func TestHookAlwaysIsToolsds(t *testing.T) {
	e := newEnv(t, envOpts{options: agentRules})
	mark := e.d.Mark()
	done := make(chan agentHookRun, 1)
	go func() {
		done <- runHook(t, e.ctx, e, claudePayload(e.ws, "PreToolUse", "a1", "Bash", map[string]any{"command": "git status"}), "PreToolUse")
	}()
	ask := e.waitAsk(mark, "a1")
	if err := e.d.Call(e.ctx, "permission/reply", protocol.ReplyParams{ID: ask.ID, Reply: "always", Scope: "workspace"}, nil); err != nil {
		t.Fatal(err)
	}
	if d, _ := (<-done).decision(); d != "allow" {
		t.Fatalf("answered always: %s", d)
	}
	mark = e.d.Mark()
	if d, _ := runHook(t, e.ctx, e, claudePayload(e.ws, "PreToolUse", "a2", "Bash", map[string]any{"command": "git status"}), "PreToolUse").decision(); d != "allow" {
		t.Fatalf("the agent's next call: %s", d)
	}
	if res, err := e.execute(protocol.ExecuteParams{CallID: "own1", Tool: "bash", Args: args("command", "git status")}); err != nil || res.Status == protocol.StatusError && strings.Contains(res.Error, "approve") {
		t.Fatalf("the editor's own call after the agent's always: %+v %v", res, err)
	}
	if n := e.d.Count(mark, "permission/asked"); n != 0 {
		t.Fatalf("asked %d times after always", n)
	}
	for _, id := range []string{"a1", "a2"} { // the agent ran them: their ends let the owner go
		runHook(t, e.ctx, e, claudePayload(e.ws, "PostToolUse", id, "Bash", map[string]any{"command": "git status"}, "tool_response", map[string]any{"stdout": ""}), "PostToolUse")
	}
}
