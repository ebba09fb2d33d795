package mcpserver

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/toolsd/toolsd/internal/harness"
	"github.com/toolsd/toolsd/protocol"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// client is an MCP client driving a real "toolsd mcp".
type client struct {
	cs      *sdk.ClientSession
	dir     string
	changed chan struct{}

	mu       sync.Mutex
	answer   map[string]any // the elicitation form's content; nil declines
	elicits  []*sdk.ElicitParams
	progress []*sdk.ProgressNotificationParams
}

// startMCP starts "toolsd mcp" on a fresh workspace; elicit says whether the client supports
// elicitation.
func startMCP(t *testing.T, elicit bool, extra ...string) *client {
	t.Helper()
	return startMCPVersion(t, elicit, "", extra...)
}

// startMCPVersion is startMCP for a client that speaks the MCP version given ("": the
// newest).
func startMCPVersion(t *testing.T, elicit bool, version string, extra ...string) *client {
	t.Helper()
	bin := harness.Binary(t)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".toolsd"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".toolsd", "config.json"), []byte(`{"agents": {"plan": {"tools": {"bash": false}}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello from the workspace\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	c := &client{dir: dir, changed: make(chan struct{}, 10)}
	opts := &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			c.mu.Lock()
			c.progress = append(c.progress, req.Params)
			c.mu.Unlock()
		},
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			select {
			case c.changed <- struct{}{}:
			default:
			}
		},
	}
	if elicit {
		opts.ElicitationHandler = func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.elicits = append(c.elicits, req.Params)
			if c.answer == nil {
				return &sdk.ElicitResult{Action: "decline"}, nil
			}
			return &sdk.ElicitResult{Action: "accept", Content: c.answer}, nil
		}
	}
	cl := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, opts)
	// These tests are about asks: commands run confined, but ask as without a sandbox.
	if cfg := filepath.Join(home, "config", "toolsd", "config.json"); !exists(cfg) {
		if err := os.MkdirAll(filepath.Dir(cfg), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(cfg, []byte(`{"sandbox": {"autoAllow": false}}`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, append([]string{"mcp", "--workspace", dir, "--store", filepath.Join(home, "store.db"), "--grace=100ms"}, extra...)...)
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+harness.RuntimeDir(t), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, "config"), "XDG_STATE_HOME="+filepath.Join(home, "state"), "GORACE=atexit_sleep_ms=0")
	cmd.Stderr = &logWriter{t: t}
	var so *sdk.ClientSessionOptions
	if version != "" {
		so = &sdk.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := cl.Connect(deadline(t), &sdk.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, so)
	if err != nil {
		t.Fatalf("connecting to toolsd mcp: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	c.cs = cs
	return c
}

type logWriter struct {
	t  *testing.T
	mu sync.Mutex
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.t.Logf("toolsd mcp: %s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func deadline(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func (c *client) tools(t *testing.T) map[string]*sdk.Tool {
	t.Helper()
	out := map[string]*sdk.Tool{}
	for tool, err := range c.cs.Tools(deadline(t), nil) {
		if err != nil {
			t.Fatal(err)
		}
		out[tool.Name] = tool
	}
	return out
}

func (c *client) call(t *testing.T, name string, args map[string]any) (*sdk.CallToolResult, string) {
	t.Helper()
	res, err := c.cs.CallTool(deadline(t), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("calling %s: %v", name, err)
	}
	var texts []string
	for _, ct := range res.Content {
		if tc, ok := ct.(*sdk.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	return res, strings.Join(texts, "\n")
}

func (c *client) setAnswer(a map[string]any) {
	c.mu.Lock()
	c.answer, c.elicits = a, nil
	c.mu.Unlock()
}

func (c *client) elicitations() []*sdk.ElicitParams {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.elicits)
}

// The Go SDK's client speaks the newest protocol (2026-07-28): the asks below come back as
// multi round-trip input requests, which its middleware answers through the elicitation
// handler and retries. (The MCP TypeScript client of cmd/toolsd's tests speaks 2025-11-25:
// asks as server-initiated elicitations.)
func TestToolsAndCalls(t *testing.T) {
	c := startMCP(t, true)
	if r := c.cs.InitializeResult(); r == nil || r.ProtocolVersion != "2026-07-28" {
		t.Fatalf("negotiated %+v, want 2026-07-28", r)
	}
	tools := c.tools(t)
	for _, id := range []string{"read", "bash", "edit", "grep"} {
		if tools[id] == nil {
			t.Fatalf("tool %s not listed; have %d tools", id, len(tools))
		}
	}
	if s, _ := tools["read"].InputSchema.(map[string]any); s["type"] != "object" || s["properties"].(map[string]any)["filePath"] == nil {
		t.Errorf("read's inputSchema %v", tools["read"].InputSchema)
	}

	t.Run("read", func(t *testing.T) {
		res, text := c.call(t, "read", map[string]any{"filePath": "hello.txt"})
		if res.IsError || !strings.Contains(text, "hello from the workspace") {
			t.Errorf("read: isError %v, text %q", res.IsError, text)
		}
		if res.Meta["toolsd/status"] != protocol.StatusCompleted {
			t.Errorf("meta %v", res.Meta)
		}
	})

	tests := []struct {
		name      string
		answer    map[string]any
		wantError bool
		wantText  string
	}{
		{"bash allowed once", map[string]any{"answer": "once"}, false, "hi from bash"},
		{"bash rejected with a message", map[string]any{"answer": "reject", "message": "use the read tool instead"}, true, "use the read tool instead"},
		{"bash declined", nil, true, "rejected"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.setAnswer(tt.answer)
			// Different commands: the same call three times in a row is a doom loop.
			res, text := c.call(t, "bash", map[string]any{"command": "echo hi from bash " + strings.Repeat("!", i), "description": "Says hi"})
			if res.IsError != tt.wantError || !strings.Contains(text, tt.wantText) {
				t.Errorf("isError %v (want %v), text %q (want %q)", res.IsError, tt.wantError, text, tt.wantText)
			}
			el := c.elicitations()
			if len(el) != 1 {
				t.Fatalf("%d elicitations, want 1", len(el))
			}
			if !strings.Contains(el[0].Message, "echo hi from bash") || !strings.Contains(el[0].Message, "bash") {
				t.Errorf("elicitation message %q", el[0].Message)
			}
		})
	}

	t.Run("always for the session", func(t *testing.T) {
		c.setAnswer(map[string]any{"answer": "always"})
		if res, text := c.call(t, "bash", map[string]any{"command": "echo first"}); res.IsError || !strings.Contains(text, "first") {
			t.Fatalf("first call: %v %q", res.IsError, text)
		}
		c.setAnswer(nil) // a second ask would be declined
		if res, text := c.call(t, "bash", map[string]any{"command": "echo first"}); res.IsError || !strings.Contains(text, "first") {
			t.Errorf("second call, remembered: %v %q", res.IsError, text)
		}
		if n := len(c.elicitations()); n != 0 {
			t.Errorf("%d elicitations after an always answer", n)
		}
	})

	t.Run("truncated output read back, with progress", func(t *testing.T) {
		c.setAnswer(map[string]any{"answer": "once"})
		params := &sdk.CallToolParams{Name: "bash", Arguments: map[string]any{"command": "seq 1 30000"}}
		params.SetProgressToken("tok-1")
		res, err := c.cs.CallTool(deadline(t), params)
		if err != nil {
			t.Fatal(err)
		}
		text := res.Content[0].(*sdk.TextContent).Text
		id, _ := res.Meta["toolsd/outputID"].(string)
		if res.IsError || id == "" || !strings.Contains(text, "toolsd://output/"+id) {
			t.Fatalf("isError %v, outputID %q, text ends %q", res.IsError, id, text[max(0, len(text)-300):])
		}
		_, full := c.call(t, "read", map[string]any{"filePath": "toolsd://output/" + id, "offset": 29990})
		if !strings.Contains(full, "29995") {
			t.Errorf("reading the full output: %q", full[:min(300, len(full))])
		}
		c.mu.Lock()
		var n int
		for _, p := range c.progress {
			if p.ProgressToken == "tok-1" {
				n++
			}
		}
		c.mu.Unlock()
		if n == 0 {
			t.Error("no progress notification for the call's token")
		}
	})

	t.Run("invalid arguments", func(t *testing.T) {
		res, text := c.call(t, "read", map[string]any{"filePath": 3})
		if !res.IsError || !strings.Contains(text, "filePath") {
			t.Errorf("isError %v, text %q", res.IsError, text)
		}
	})
}

func TestNoElicitation(t *testing.T) {
	c := startMCP(t, false)
	res, text := c.call(t, "bash", map[string]any{"command": "echo hi"})
	if !res.IsError || !strings.Contains(text, "no one was there to approve") {
		t.Errorf("isError %v, text %q", res.IsError, text)
	}
	// No editor is attached and this client cannot ask: the text says what the person can
	// do from here, not "allow it in the editor".
	if strings.Contains(text, "in the editor or") || !strings.Contains(text, "no editor with toolsd is attached") || !strings.Contains(text, "open this workspace in an editor with toolsd") {
		t.Errorf("the refusal tells an MCP client's person to use an editor that is not there: %q", text)
	}
}

func TestListChanged(t *testing.T) {
	// A client of an older protocol hears list_changed without subscribing (Gemini CLI's).
	c := startMCPVersion(t, true, "2025-06-18")
	if c.tools(t)["hello_tool"] != nil {
		t.Fatal("hello_tool listed before it exists")
	}
	toolDir := filepath.Join(c.dir, ".toolsd", "tool")
	if err := os.MkdirAll(toolDir, 0o755); err != nil {
		t.Fatal(err)
	}
	def := `{"description": "Says hello.", "parameters": {"type": "object", "properties": {}}, "command": ["echo", "hello"]}`
	if err := os.WriteFile(filepath.Join(toolDir, "hello_tool.json"), []byte(def), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := deadline(t)
	select {
	case <-c.changed:
	case <-ctx.Done():
		t.Fatal("no notifications/tools/list_changed after a project tool was added")
	}
	// Notifications come in order: one for the tools registered at open (sent 10 ms after
	// them) would come before the change's, and list no hello_tool. The first one is the
	// change's.
	tool := c.tools(t)["hello_tool"]
	if tool == nil {
		t.Fatal("the first list_changed came without a change: the tools registered at open were announced")
	}
	if tool.Description != "Says hello." {
		t.Errorf("description %q", tool.Description)
	}
}

func TestAgent(t *testing.T) {
	c := startMCP(t, true, "--agent", "plan")
	tools := c.tools(t)
	if tools["bash"] != nil || tools["read"] == nil {
		t.Errorf("agent plan (bash switched off): bash listed %v, read listed %v", tools["bash"] != nil, tools["read"] != nil)
	}
	if _, err := c.cs.CallTool(deadline(t), &sdk.CallToolParams{Name: "bash", Arguments: map[string]any{"command": "echo hi"}}); err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Errorf("calling bash for an agent without it: %v", err)
	}
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// Gemini CLI adds wait_for_previous to every call's arguments: dropped (a schema with
// additionalProperties false would refuse the call), and said in the result's _meta.
func TestInjectedArgumentsDropped(t *testing.T) {
	c := startMCP(t, true)
	res, text := c.call(t, "read", map[string]any{"filePath": "hello.txt", "wait_for_previous": true})
	if res.IsError || !strings.Contains(text, "hello from the workspace") {
		t.Fatalf("a read with wait_for_previous: isError %v, %q", res.IsError, text)
	}
	if d, _ := res.Meta["toolsd/droppedArgs"].([]any); len(d) != 1 || d[0] != "wait_for_previous" {
		t.Fatalf("_meta does not say what was dropped: %v", res.Meta)
	}
	if res, text := c.call(t, "read", map[string]any{"filePath": "hello.txt", "wait_for_later": true}); !res.IsError || !strings.Contains(text, "wait_for_later") {
		t.Fatalf("an argument no harness is known to inject must still be refused: %q", text)
	}
}
