//go:build unix

package main_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolsd/toolsd/internal/fakemodel"
	"github.com/toolsd/toolsd/internal/harness"
	"github.com/toolsd/toolsd/protocol"
)

// agentBin is an agent CLI installed in testdata/agents (scripts/test.sh runs npm ci there),
// or a skip that names what is missing.
func agentBin(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(moduleRoot(t), "testdata", "agents", "node_modules", ".bin", name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("%s is not installed (%v): run `npm ci` in testdata/agents (scripts/test.sh does); without the npm registry this test cannot run", name, err)
	}
	return p
}

// hookShim is a `toolsd` on a temporary PATH-less folder that runs the test's binary with the
// test's store, so that the hook an agent runs reaches the test's daemon; it is named toolsd,
// so `toolsd hook install --command` writes it as toolsd's own entry.
func hookShim(t *testing.T, e *env) string {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "toolsd")
	script := "#!/bin/sh\nsub=$1; shift\nexec " + harness.Binary(t) + " \"$sub\" --store " + e.st + " --grace=200ms \"$@\"\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// claudeRun runs the real `claude -p` in the workspace against the fake model, with
// `toolsd hook` installed in a home folder the test made.
func claudeRun(t *testing.T, ctx context.Context, e *env, fake *fakemodel.Server) string {
	t.Helper()
	claude := agentBin(t, "claude")
	home := t.TempDir()
	inst := exec.Command(harness.Binary(t), "hook", "install", "claude", "--user", "--command", hookShim(t, e))
	inst.Env = append(environWithout("CLAUDE_CONFIG_DIR"), "HOME="+home)
	if out, err := inst.CombinedOutput(); err != nil {
		t.Fatalf("toolsd hook install claude: %v\n%s", err, out)
	}
	cmd := exec.CommandContext(ctx, claude, "-p", "Do the task.", "--output-format", "json", "--max-turns", "4")
	cmd.Dir = e.ws
	cmd.Env = append(environWithout("CLAUDE_CONFIG_DIR", "CLAUDE_PROJECT_DIR", "ANTHROPIC_AUTH_TOKEN", "CLAUDECODE"), "HOME="+home, "ANTHROPIC_BASE_URL="+fake.URL, "ANTHROPIC_API_KEY=sk-ant-test-dummy",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1",
		"XDG_RUNTIME_DIR="+harness.RuntimeDir(e.t), "GORACE=atexit_sleep_ms=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("claude -p: %v\n%s", err, out)
	}
	return string(out)
}

// The real Claude Code, offline against a fake model on loopback, with toolsd's hook
// installed: a Bash call a rule denies never runs and the model reads why; an allowed one
// runs, is on record and reverts; an ask is answered in the editor.
func TestClaudeCodeUnderToolsd(t *testing.T) {
	agentBin(t, "claude")
	e := newEnv(t, envOpts{options: agentRules, files: map[string]string{"keep/file.txt": "precious\n"}})
	ctx := harness.Deadline(t, 3*time.Minute)

	t.Run("deny", func(t *testing.T) {
		fake, err := fakemodel.Start(fakemodel.ToolCall{Name: "Bash", Input: map[string]any{"command": "rm -rf keep", "description": "clean"}})
		if err != nil {
			t.Fatal(err)
		}
		defer fake.Close()
		out := claudeRun(t, ctx, e, fake)
		if _, err := os.Stat(filepath.Join(e.ws, "keep", "file.txt")); err != nil {
			t.Fatalf("the denied rm ran: %v\n%s", err, out)
		}
		res := fake.ToolResults()
		if len(res) != 1 || !strings.Contains(res[0], "rm *") || !strings.Contains(res[0], "nothing ran") {
			t.Fatalf("the model's next request does not carry the deny reason: %q\n%s", res, out)
		}
	})

	t.Run("allow, record, revert", func(t *testing.T) {
		fake, err := fakemodel.Start(fakemodel.ToolCall{Name: "Bash", Input: map[string]any{"command": "touch made.txt", "description": "make"}})
		if err != nil {
			t.Fatal(err)
		}
		defer fake.Close()
		out := claudeRun(t, ctx, e, fake)
		if _, err := os.Stat(filepath.Join(e.ws, "made.txt")); err != nil {
			t.Fatalf("the allowed touch did not run: %v\n%s", err, out)
		}
		var cl protocol.CallsListResult
		if err := e.d.Call(ctx, "calls/list", protocol.CallsListParams{Client: "Claude Code"}, &cl); err != nil {
			t.Fatal(err)
		}
		var rec *protocol.CallSummary
		for i, c := range cl.Calls {
			if strings.Contains(c.Title, "touch made.txt") {
				rec = &cl.Calls[i]
			}
		}
		if rec == nil || rec.Status != protocol.StatusCompleted || rec.Client == nil || rec.Client.Kind != protocol.ClientAgent || rec.Changes != 1 {
			b, _ := json.Marshal(cl)
			t.Fatalf("calls/list has no completed record of Claude Code's touch with its change: %s", b)
		}
		if res := e.revert(protocol.CallsRevertParams{SessionID: rec.SessionID, CallID: rec.CallID}); res.Status != protocol.RevertDone {
			t.Fatalf("calls/revert: %+v", res)
		}
		if _, err := os.Stat(filepath.Join(e.ws, "made.txt")); !os.IsNotExist(err) {
			t.Fatalf("made.txt after the revert: %v", err)
		}
	})

	t.Run("ask answered in the editor", func(t *testing.T) {
		fake, err := fakemodel.Start(fakemodel.ToolCall{Name: "Bash", Input: map[string]any{"command": "printf asked-and-ran", "description": "p"}})
		if err != nil {
			t.Fatal(err)
		}
		defer fake.Close()
		mark := e.d.Mark()
		go func() {
			raw, _, err := e.d.WaitFor(ctx, mark, "permission/asked", nil)
			if err != nil {
				return
			}
			var a protocol.AskedParams
			_ = json.Unmarshal(raw, &a)
			if a.Client != nil && a.Client.Name == "Claude Code" {
				_ = e.reply(a.ID, "once", "")
			}
		}()
		out := claudeRun(t, ctx, e, fake)
		if res := fake.ToolResults(); len(res) != 1 || !strings.Contains(res[0], "asked-and-ran") {
			t.Fatalf("the asked call's result: %q\n%s", res, out)
		}
	})
}

// environWithout is the test's environment less the variables named (an agent reads an empty
// variable as set).
func environWithout(names ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(names, k) {
			out = append(out, kv)
		}
	}
	return out
}

// codexRun runs the real `codex exec` in the workspace against the fake model (OpenAI's
// Responses API), with `toolsd hook` installed in a CODEX_HOME the test made. Codex runs only
// hooks a person trusted in its TUI; --dangerously-bypass-hook-trust stands for that here.
func codexRun(t *testing.T, ctx context.Context, e *env, fake *fakemodel.Server) string {
	t.Helper()
	codex := agentBin(t, "codex")
	home := t.TempDir()
	cfg := "model = \"gpt-test\"\nmodel_provider = \"fake\"\n[model_providers.fake]\nname = \"fake\"\nbase_url = \"" + fake.URL + "/v1\"\nwire_api = \"responses\"\nenv_key = \"FAKE_MODEL_KEY\"\n"
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	inst := exec.Command(harness.Binary(t), "hook", "install", "codex", "--user", "--command", hookShim(t, e))
	inst.Env = append(environWithout("CODEX_HOME"), "HOME="+home, "CODEX_HOME="+home)
	if out, err := inst.CombinedOutput(); err != nil {
		t.Fatalf("toolsd hook install codex: %v\n%s", err, out)
	}
	cmd := exec.CommandContext(ctx, codex, "exec", "--skip-git-repo-check", "--dangerously-bypass-hook-trust", "--sandbox", "workspace-write", "Do the task.")
	cmd.Dir = e.ws
	cmd.Env = append(environWithout("CODEX_HOME", "OPENAI_API_KEY", "OPENAI_BASE_URL"), "HOME="+home, "CODEX_HOME="+home, "FAKE_MODEL_KEY=dummy",
		"XDG_RUNTIME_DIR="+harness.RuntimeDir(e.t), "GORACE=atexit_sleep_ms=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("codex exec: %v\n%s", err, out)
	}
	return string(out)
}

// The real Codex, offline: its exec_command calls reach toolsd's hook as Bash.
func TestCodexUnderToolsd(t *testing.T) {
	agentBin(t, "codex")
	e := newEnv(t, envOpts{options: agentRules, files: map[string]string{"keep/file.txt": "precious\n"}})
	ctx := harness.Deadline(t, 3*time.Minute)

	fake, err := fakemodel.Start(fakemodel.ToolCall{Name: "exec_command", Input: map[string]any{"cmd": "rm -rf keep"}})
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	out := codexRun(t, ctx, e, fake)
	if _, err := os.Stat(filepath.Join(e.ws, "keep", "file.txt")); err != nil {
		t.Fatalf("the denied rm ran: %v\n%s", err, out)
	}
	if res := fake.ToolResults(); len(res) != 1 || !strings.Contains(res[0], "rm *") {
		t.Fatalf("the model's next request does not carry the deny reason: %q\n%s", res, out)
	}

	fake2, err := fakemodel.Start(fakemodel.ToolCall{Name: "exec_command", Input: map[string]any{"cmd": "touch made.txt"}})
	if err != nil {
		t.Fatal(err)
	}
	defer fake2.Close()
	out = codexRun(t, ctx, e, fake2)
	if _, err := os.Stat(filepath.Join(e.ws, "made.txt")); err != nil {
		t.Fatalf("the allowed touch did not run: %v\n%s", err, out)
	}
	var cl protocol.CallsListResult
	if err := e.d.Call(ctx, "calls/list", protocol.CallsListParams{Client: "Codex"}, &cl); err != nil {
		t.Fatal(err)
	}
	var done *protocol.CallSummary
	for i, c := range cl.Calls {
		if strings.Contains(c.Title, "touch made.txt") && c.Status == protocol.StatusCompleted && c.Changes == 1 {
			done = &cl.Calls[i]
		}
	}
	if done == nil {
		b, _ := json.Marshal(cl)
		t.Fatalf("calls/list has no completed record of Codex's touch with its change: %s", b)
	}
	if res := e.revert(protocol.CallsRevertParams{SessionID: done.SessionID, CallID: done.CallID}); res.Status != protocol.RevertDone {
		t.Fatalf("calls/revert: %+v", res)
	}
}
