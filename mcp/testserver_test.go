package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The test binary doubles as a real MCP server: TestMain runs runTestServer when this
// variable is set, and the tests start the binary itself as the server's command.
const testServerEnv = "TOOLSD_MCP_TESTSERVER"

// longToolName is a tool name of 100 characters (MCP allows 128; providers 64).
var longToolName = strings.Repeat("very_long_tool_name_", 5)

// pngBytes is a 1x1 PNG.
var pngBytes = []byte{0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 'I', 'H', 'D', 'R', 0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0, 0, 0, 0x1f, 0x15, 0xc4, 0x89}

func textResult(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

func args(req *sdk.CallToolRequest) map[string]any {
	var m map[string]any
	_ = json.Unmarshal(req.Params.Arguments, &m)
	return m
}

// runTestServer serves the test tools on stdin/stdout.
func runTestServer() int {
	mode := os.Getenv(testServerEnv)
	if mode == "fail-start" {
		fmt.Fprintln(os.Stderr, "cannot start: the API token is missing")
		return 1
	}
	fmt.Fprintln(os.Stderr, "test server starting")
	srv := sdk.NewServer(&sdk.Implementation{Name: "testserver", Version: "1"}, &sdk.ServerOptions{PageSize: 3}) // several pages
	obj := map[string]any{"type": "object"}
	textSchema := map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}, "required": []string{"text"}}
	echo := func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return textResult(fmt.Sprint(args(req)["text"])), nil
	}
	srv.AddTool(&sdk.Tool{Name: "echo", Description: "Echoes text.", InputSchema: textSchema,
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}}, echo)
	srv.AddTool(&sdk.Tool{Name: "rich", Description: "Text, an image and structured content.", InputSchema: obj},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{
				Content:           []sdk.Content{&sdk.TextContent{Text: "a chart"}, &sdk.ImageContent{Data: pngBytes, MIMEType: "image/png"}},
				StructuredContent: map[string]any{"points": 3},
			}, nil
		})
	srv.AddTool(&sdk.Tool{Name: "structured", Description: "Structured content only.", InputSchema: obj},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{}, StructuredContent: map[string]any{"n": 1}}, nil
		})
	srv.AddTool(&sdk.Tool{Name: "fail", Description: "Always fails.", InputSchema: obj},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "the widget is broken"}}}, nil
		})
	srv.AddTool(&sdk.Tool{Name: "big", Description: "Many lines.", InputSchema: obj},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var b strings.Builder
			for i := range 5000 {
				fmt.Fprintf(&b, "line %d\n", i)
			}
			return textResult(b.String()), nil
		})
	cancelled := make(chan struct{})
	srv.AddTool(&sdk.Tool{Name: "slow", Description: "Reports progress, then waits to be cancelled.", InputSchema: obj},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			if tok := req.Params.GetProgressToken(); tok != nil {
				_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: 10, Message: "step 1 of 10"})
			}
			select {
			case <-ctx.Done():
				close(cancelled)
				return nil, ctx.Err()
			case <-time.After(time.Minute):
				return textResult("not cancelled"), nil
			}
		})
	srv.AddTool(&sdk.Tool{Name: "was_cancelled", Description: "Whether slow saw its cancellation.", InputSchema: obj},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			select {
			case <-cancelled:
				return textResult("yes"), nil
			case <-time.After(10 * time.Second):
				return textResult("no"), nil
			}
		})
	srv.AddTool(&sdk.Tool{Name: "add_tool", Description: "Adds an echo tool by name.", InputSchema: obj},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			name := fmt.Sprint(args(req)["name"])
			srv.AddTool(&sdk.Tool{Name: name, Description: "Added at run time.", InputSchema: textSchema}, echo)
			return textResult("added " + name), nil
		})
	srv.AddTool(&sdk.Tool{Name: "crash", Description: "Exits.", InputSchema: obj},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			fmt.Fprintln(os.Stderr, "boom: crashing on purpose")
			os.Exit(3)
			return nil, nil
		})
	srv.AddTool(&sdk.Tool{Name: "spawn", Description: "Starts a long sleep and returns its pid.", InputSchema: obj},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			cmd := exec.Command("sleep", "300")
			if err := cmd.Start(); err != nil {
				return nil, err
			}
			go func() { _ = cmd.Wait() }()
			return textResult(strconv.Itoa(cmd.Process.Pid)), nil
		})
	srv.AddTool(&sdk.Tool{Name: "pid", Description: "The server's pid.", InputSchema: obj},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return textResult(strconv.Itoa(os.Getpid())), nil
		})
	srv.AddTool(&sdk.Tool{Name: longToolName, Description: "A tool with a long name.", InputSchema: obj}, echo)
	srv.AddTool(&sdk.Tool{Name: "a.b", Description: "Collides with a_b once sanitized.", InputSchema: obj}, echo)
	srv.AddTool(&sdk.Tool{Name: "a_b", Description: "Collides with a.b once sanitized.", InputSchema: obj}, echo)
	srv.AddTool(&sdk.Tool{Name: "bad_schema", Description: "Its schema does not compile.",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "nope"}}}}, echo)
	if mode == "stubborn" {
		signal.Ignore(syscall.SIGTERM)
	}
	if err := srv.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "test server:", err)
	}
	if mode == "stubborn" {
		select {} // neither stdin closing nor SIGTERM ends it: only SIGKILL
	}
	return 0
}
