package acp

import (
	"encoding/json"
	"strings"

	"github.com/toolsd/toolsd/agenthook"
	"github.com/toolsd/toolsd/protocol"
)

// toolCall is what the proxy reads of an ACP ToolCall or ToolCallUpdate; the rest passes
// through.
type toolCall struct {
	ToolCallID string          `json:"toolCallId"`
	Title      string          `json:"title,omitempty"`
	Kind       string          `json:"kind,omitempty"`
	Status     string          `json:"status,omitempty"`
	RawInput   json.RawMessage `json:"rawInput,omitempty"`
	RawOutput  json.RawMessage `json:"rawOutput,omitempty"`
	Content    []struct {
		Type    string `json:"type"`
		Content *struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content,omitempty"`
		Path       string `json:"path,omitempty"`
		TerminalID string `json:"terminalId,omitempty"`
	} `json:"content,omitempty"`
	Locations []struct {
		Path string `json:"path"`
	} `json:"locations,omitempty"`
	Meta struct {
		ClaudeCode struct {
			ToolName string `json:"toolName"`
		} `json:"claudeCode"`
	} `json:"_meta"`
}

// subject is what toolsd's rules decide for a tool call the agent asks permission for: the
// tool name the record and the asks use, and the toolsd calls it stands for (none: toolsd
// asks under the tool name). An input shaped like Claude Code's Bash, Edit, Write or Read
// goes through agenthook's table, the one mapping `toolsd hook` uses; otherwise the ACP kind
// picks the permission, with the call's locations as its paths.
func subject(tc *toolCall, cwd string) (string, []protocol.AgentCall, error) {
	var in map[string]any
	_ = json.Unmarshal(tc.RawInput, &in)
	has := func(keys ...string) bool {
		for _, k := range keys {
			if s, ok := in[k].(string); ok && s != "" {
				return true
			}
		}
		return false
	}
	_, edits := in["edits"].([]any)
	name := tc.Meta.ClaudeCode.ToolName
	if name == "" || !known(name) {
		switch {
		case has("command", "cmd") && (tc.Kind == "execute" || tc.Kind == "" || tc.Kind == "other"):
			name = "Bash"
		case has("file_path", "path", "filePath") && edits:
			name = "MultiEdit"
		case has("file_path", "path", "filePath") && (has("old_string", "oldString", "new_string", "newString")):
			name = "Edit"
		case has("file_path", "path", "filePath") && has("content", "contents"):
			name = "Write"
		case has("file_path", "path", "filePath") && tc.Kind == "read":
			name = "Read"
		case has("pattern") && tc.Kind == "search":
			name = "Grep"
		case has("url") && tc.Kind == "fetch":
			name = "WebFetch"
		default:
			name = ""
		}
	}
	if name != "" {
		calls, err := agenthook.Map(name, tc.RawInput, cwd)
		return name, calls, err
	}
	paths := make([]string, 0, len(tc.Locations))
	for _, l := range tc.Locations {
		if l.Path != "" {
			paths = append(paths, l.Path)
		}
	}
	per := func(tool, field string) (string, []protocol.AgentCall, error) {
		var calls []protocol.AgentCall
		for _, p := range paths {
			raw, _ := json.Marshal(map[string]string{field: p})
			c, err := agenthook.Map(tool, raw, cwd)
			if err != nil {
				return "", nil, err
			}
			calls = append(calls, c...)
		}
		return permissionOf(tc.Kind), calls, nil
	}
	switch tc.Kind {
	case "execute":
		return "bash", nil, nil
	case "edit", "delete", "move":
		return per("Delete", "path") // edit, per file
	case "read", "search":
		return per("Read", "file_path")
	case "fetch":
		return "webfetch", nil, nil
	}
	title := strings.TrimSpace(tc.Title)
	if title == "" {
		title = "acp tool"
	}
	return title, nil, nil
}

func permissionOf(kind string) string {
	switch kind {
	case "edit", "delete", "move":
		return "edit"
	}
	return "read"
}

func known(tool string) bool {
	for _, t := range agenthook.Tools() {
		if t == tool {
			return true
		}
	}
	return false
}
