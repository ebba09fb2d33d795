package mcpserver

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsd/toolsd/internal/harness"
)

// TestNested runs the whole chain: an MCP client talks to `toolsd mcp`, whose user config
// names an MCP server "inner" that is another `toolsd mcp` on a second workspace. The inner
// daemon's read tool appears in the outer catalogue as inner_read (after list_changed), its
// call asks through elicitation, and it returns the inner workspace's file.
func TestNested(t *testing.T) {
	bin := harness.Binary(t)
	outer, inner, home := t.TempDir(), t.TempDir(), t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(inner, "secret.txt"), []byte("inner content\n"), 0o644))
	cfgDir := filepath.Join(home, "config", "toolsd")
	must(os.MkdirAll(cfgDir, 0o755))
	cfg, err := json.Marshal(map[string]any{"sandbox": map[string]any{"autoAllow": false},
		"mcp": map[string]any{"inner": map[string]any{"command": []string{bin, "mcp", "--workspace", inner, "--store", filepath.Join(home, "inner.db"), "--grace=100ms"}}}})
	must(err)
	must(os.WriteFile(filepath.Join(cfgDir, "config.json"), cfg, 0o644))
	changed := make(chan struct{}, 10)
	cl := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
		ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			t.Logf("elicit: %s", req.Params.Message)
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"answer": "once"}}, nil
		},
	})
	cmd := exec.Command(bin, "mcp", "--workspace", outer, "--store", filepath.Join(home, "outer.db"), "--grace=100ms")
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+harness.RuntimeDir(t), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, "config"), "XDG_STATE_HOME="+filepath.Join(home, "state"), "GORACE=atexit_sleep_ms=0")
	cmd.Stderr = &logWriter{t: t}
	ctx := deadline(t)
	cs, err := cl.Connect(ctx, &sdk.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for {
		found := false
		for tool, err := range cs.Tools(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			if tool.Name == "inner_read" {
				found = true
			}
		}
		if found {
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatal("inner_read never listed")
		}
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "inner_read", Arguments: map[string]any{"filePath": "secret.txt"}})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Content[0].(*sdk.TextContent).Text
	if res.IsError || !strings.Contains(text, "inner content") {
		t.Fatalf("%v %q", res.IsError, text)
	}
	t.Logf("result: %q", text)
}
