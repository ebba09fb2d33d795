//go:build unix

package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolsd/toolsd/internal/fakemodel"
	"github.com/toolsd/toolsd/internal/harness"
	"github.com/toolsd/toolsd/protocol"
)

// adapterBin is Zed's claude-agent-acp installed in testdata/acpadapter (scripts/test.sh
// runs npm ci there), or a skip that names what is missing.
func adapterBin(t *testing.T) string {
	t.Helper()
	p := filepath.Join(moduleRoot(t), "testdata", "acpadapter", "node_modules", "@zed-industries", "claude-agent-acp", "dist", "index.js")
	if _, err := os.Stat(p); err != nil {
		t.Skipf("claude-agent-acp is not installed (%v): run `npm ci` in testdata/acpadapter (scripts/test.sh does); without the npm registry this test cannot run", err)
	}
	return p
}

// A real ACP adapter, Zed's claude-agent-acp (Claude Code behind ACP), behind `toolsd acp`,
// offline against a fake model on loopback: it initializes with toolsd's client
// capabilities, its session starts toolsd mcp (the adapter hands the server to Claude Code,
// which attaches it to the workspace's daemon), and the Bash call the model makes asks
// permission, which toolsd's deny rule answers without the editor: the command never runs.
func TestACPRealAdapter(t *testing.T) {
	adapter := adapterBin(t)
	e := newEnv(t, envOpts{noAsk: true, options: agentRules, files: map[string]string{"keep/file.txt": "precious\n"}})
	ctx := harness.Deadline(t, 3*time.Minute) // Claude Code starts slowly on a loaded machine
	fake, err := fakemodel.Start(fakemodel.ToolCall{Name: "Bash", Input: map[string]any{"command": "rm -rf keep", "description": "clean"}},
		fakemodel.ToolCall{Name: "Bash", Input: map[string]any{"command": "echo from-the-adapter", "description": "say"}})
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	home := t.TempDir()
	// IS_SANDBOX: Claude Code refuses to start as root (CI) unless told it is in a sandbox,
	// because the adapter may offer its bypass mode; nothing here uses it.
	env := append(environWithout("CLAUDE_CONFIG_DIR", "CLAUDE_PROJECT_DIR", "ANTHROPIC_AUTH_TOKEN", "CLAUDECODE"), "HOME="+home, "IS_SANDBOX=1",
		"ANTHROPIC_BASE_URL="+fake.URL, "ANTHROPIC_API_KEY=sk-ant-test-dummy", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1")
	mark := e.d.Mark()
	ed, _, _ := startACP(t, e, env, "node", adapter)

	ed.send(rpcReq(1, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}}))
	_, m := ed.next()
	if r, _ := m["result"].(map[string]any); r == nil || r["protocolVersion"] != float64(1) {
		t.Fatalf("the adapter's initialize: %v", m)
	}
	ed.send(rpcReq(2, "session/new", map[string]any{"cwd": e.ws, "mcpServers": []any{}}))
	_, m = ed.next()
	r, _ := m["result"].(map[string]any)
	session, _ := r["sessionId"].(string)
	if session == "" {
		t.Fatalf("the adapter's session/new: %v", m)
	}

	turn := func(id int, session string) []string {
		t.Helper()
		ed.send(rpcReq(id, "session/prompt", map[string]any{"sessionId": session, "prompt": []any{map[string]any{"type": "text", "text": "Do the task."}}}))
		var updates []string
		for {
			_, m := ed.next()
			if m["id"] == float64(id) {
				if m["result"] == nil {
					t.Fatalf("the prompt failed: %v", m)
				}
				return updates
			}
			switch m["method"] {
			case "session/request_permission":
				t.Fatalf("the editor was asked about a call the rules decide: %v", m)
			case "session/update":
				u, _ := m["params"].(map[string]any)["update"].(map[string]any)
				b, _ := json.Marshal(u)
				updates = append(updates, string(b))
			}
		}
	}
	updates := turn(3, session)
	if _, err := os.Stat(filepath.Join(e.ws, "keep", "file.txt")); err != nil {
		t.Fatalf("the denied rm ran: %v\nupdates: %s", err, strings.Join(updates, "\n"))
	}
	// The adapter's session started toolsd mcp, with the route toolsd acp gave it.
	if _, _, err := e.d.WaitFor(ctx, mark, "clients/changed", func(raw json.RawMessage) bool {
		var p protocol.ClientsParams
		_ = json.Unmarshal(raw, &p)
		for _, c := range p.Clients {
			if c.Kind == protocol.ClientMCP {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("no toolsd mcp attached for the adapter's session: %v", err)
	}
	// recorded waits until a call of the session whose title has what ends with status (the
	// proxy records it after it forwarded the update), and returns the session's record.
	recorded := func(session, status, what string) (bool, string) {
		t.Helper()
		_, _, err := e.d.WaitFor(ctx, mark, "tools/progress", func(raw json.RawMessage) bool {
			var p protocol.ProgressParams
			return json.Unmarshal(raw, &p) == nil && p.SessionID == session && p.Status == status && strings.Contains(p.Title, what)
		})
		var list protocol.CallsListResult
		if err := e.d.Call(ctx, protocol.MethodCallsList, protocol.CallsListParams{SessionID: session}, &list); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(list)
		return err == nil, string(b)
	}
	if ok, list := recorded(session, protocol.StatusError, "rm -rf keep"); !ok {
		t.Fatalf("the record has no refused rm of the adapter's session: %s", list)
	}

	// An allowed command runs, and its call is in the record, completed (in a new session:
	// the fake model makes one tool call a conversation).
	ed.send(rpcReq(4, "session/new", map[string]any{"cwd": e.ws, "mcpServers": []any{}}))
	_, m = ed.next()
	r, _ = m["result"].(map[string]any)
	if session, _ = r["sessionId"].(string); session == "" {
		t.Fatalf("the second session/new: %v", m)
	}
	updates = turn(5, session)
	ran, list := recorded(session, protocol.StatusCompleted, "echo from-the-adapter")
	if res := fake.ToolResults(); !ran || len(res) < 2 || !strings.Contains(res[len(res)-1], "from-the-adapter") {
		t.Fatalf("the allowed echo: record %s\ntool results %q\nupdates: %s", list, res, strings.Join(updates, "\n"))
	}
}
