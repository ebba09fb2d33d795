package mcpserver

import (
	"context"
	"encoding/json"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// What MCP clients do that the protocol does not say, and what toolsd does about it (found
// with eight real clients).

// injectedArgs are arguments a client harness adds to every tool's arguments, whatever the
// tool's schema: Gemini CLI's wait_for_previous. A tool whose schema does not declare one gets
// it dropped (additionalProperties: false would refuse every call), and the drop is logged
// and said in the result's _meta ("toolsd/droppedArgs").
var injectedArgs = []string{"wait_for_previous"}

// dropInjected returns args without the injected arguments that schema does not declare,
// and the names dropped.
func dropInjected(args json.RawMessage, schema json.RawMessage) (json.RawMessage, []string) {
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil {
		return args, nil
	}
	var declared struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	_ = json.Unmarshal(schema, &declared)
	var dropped []string
	for _, name := range injectedArgs {
		if _, ok := m[name]; !ok {
			continue
		}
		if _, ok := declared.Properties[name]; ok {
			continue
		}
		delete(m, name)
		dropped = append(dropped, name)
	}
	if len(dropped) == 0 {
		return args, nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return args, nil
	}
	return b, dropped
}

// listChangedMethod is the notification the SDK sends, 10 ms after tools are added or
// removed.
const listChangedMethod = "notifications/tools/list_changed"

// sendListChangedOnlyOnChange drops the list_changed notifications that no change of the
// catalogue asked for: the tools registered when the workspace opens are the list the client
// gets (its tools/list waits for them), so the notification the SDK sends for them only made
// clients list the tools again (Gemini CLI three times).
func (s *server) sendListChangedOnlyOnChange(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if method == listChangedMethod && !s.announce.Swap(false) {
			s.log.Debug("list_changed for the tools registered at open not sent")
			return nil, nil
		}
		return next(ctx, method, req)
	}
}

// noUIForMCP rewrites the refusal of a call that needed a person when neither an editor nor
// this client could ask (the no-ui refusal says so): the person is at an MCP client that
// cannot show asks, so say what they can do from there.
func noUIForMCP(text string) string {
	if !strings.Contains(text, "no one was there to approve") {
		return text
	}
	text = strings.ReplaceAll(text, "(the editor cannot show permission asks)", "(no editor with toolsd is attached to this workspace, and this MCP client cannot show asks)")
	return strings.ReplaceAll(text, "Ask the user to allow it in the editor or in toolsd config",
		"Ask the user to open this workspace in an editor with toolsd (the ask then shows there), or to allow it in toolsd config")
}

// faced is a call's result as this face sends it: a refusal for want of someone to ask says
// what the person can do from an MCP client, and the arguments dropped are named.
func faced(out *sdk.CallToolResult, dropped []string) *sdk.CallToolResult {
	if out == nil {
		return nil
	}
	if out.IsError {
		for _, c := range out.Content {
			if t, ok := c.(*sdk.TextContent); ok {
				t.Text = noUIForMCP(t.Text)
			}
		}
	}
	if len(dropped) > 0 {
		if out.Meta == nil {
			out.Meta = sdk.Meta{}
		}
		out.Meta["toolsd/droppedArgs"] = dropped
	}
	return out
}
