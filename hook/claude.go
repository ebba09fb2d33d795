package hook

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/toolsd/toolsd/protocol"
	"github.com/toolsd/toolsd/registry"
)

// Claude Code's names of the built-in tools, by toolsd id. apply_patch, which GPT-family
// models get instead of edit and write, is matched as MultiEdit (several edits in one call).
var toClaude = map[string]string{
	"bash": "Bash", "read": "Read", "write": "Write", "edit": "Edit", "glob": "Glob", "grep": "Grep",
	"list": "LS", "webfetch": "WebFetch", "todowrite": "TodoWrite", "todoread": "TodoRead", "apply_patch": "MultiEdit",
}

var fromClaude = func() map[string]string {
	m := map[string]string{}
	for k, v := range toClaude {
		m[v] = k
	}
	return m
}()

// renames are the arguments whose names differ (toolsd's, Claude Code's), by tool.
var renames = map[string][][2]string{
	"read":  {{"filePath", "file_path"}},
	"write": {{"filePath", "file_path"}},
	"edit":  {{"filePath", "file_path"}, {"oldString", "old_string"}, {"newString", "new_string"}, {"replaceAll", "replace_all"}},
	"grep":  {{"include", "glob"}},
}

// ClaudeName is the tool's name as a Claude Code hook knows it: Bash for bash, …,
// mcp__<server>__<tool> for an MCP server's tool, the id itself for the rest.
func ClaudeName(tool, source string) string {
	if source == "builtin" || source == "" {
		if n, ok := toClaude[tool]; ok {
			return n
		}
		return tool
	}
	if server, ok := strings.CutPrefix(source, "mcp:"); ok {
		name := tool
		for _, p := range []string{server + "_", registry.SanitizeID(server) + "_"} {
			if n, ok := strings.CutPrefix(tool, p); ok {
				name = n
				break
			}
		}
		return "mcp__" + server + "__" + name
	}
	return tool
}

// claudeInput is a call's arguments as Claude Code's tool_input: its argument names
// (file_path, old_string, …), file paths absolute; the other arguments as they are. For
// apply_patch it adds file_paths, every file the patch touches, and file_path when that is
// one.
func claudeInput(workspace string, c *Call, args json.RawMessage) json.RawMessage {
	rn, patch := renames[c.Tool], c.Tool == "apply_patch"
	if c.Source != "builtin" || (rn == nil && !patch) {
		return args
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil || m == nil {
		return args
	}
	for _, r := range rn {
		v, ok := m[r[0]]
		if !ok {
			continue
		}
		delete(m, r[0])
		if r[0] == "filePath" {
			var p string
			if json.Unmarshal(v, &p) == nil && p != "" && !filepath.IsAbs(p) {
				v, _ = json.Marshal(filepath.Join(workspace, p))
			}
		}
		m[r[1]] = v
	}
	if patch && c.Requests != nil {
		paths := []string{}
		for _, q := range c.Requests(args) {
			if q.Permission != "edit" {
				continue
			}
			for _, p := range q.Patterns {
				p = unescape(p)
				if !filepath.IsAbs(p) {
					p = filepath.Join(workspace, p)
				}
				paths = append(paths, p)
			}
		}
		m["file_paths"], _ = json.Marshal(paths)
		if len(paths) == 1 {
			m["file_path"], _ = json.Marshal(paths[0])
		}
	}
	out, err := json.Marshal(m)
	if err != nil {
		return args
	}
	return out
}

// fromClaudeInput maps a Claude Code updatedInput back to the tool's argument names.
// Arguments under toolsd's own names pass as they are; file_paths (which apply_patch's
// tool_input adds) is dropped.
func fromClaudeInput(c *Call, in json.RawMessage) json.RawMessage {
	rn, patch := renames[c.Tool], c.Tool == "apply_patch"
	if c.Source != "builtin" || (rn == nil && !patch) {
		return in
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(in, &m) != nil || m == nil {
		return in
	}
	for _, r := range rn {
		if v, ok := m[r[1]]; ok {
			delete(m, r[1])
			m[r[0]] = v
		}
	}
	if patch {
		delete(m, "file_paths")
		delete(m, "file_path")
	}
	out, err := json.Marshal(m)
	if err != nil {
		return in
	}
	return out
}

// unescape turns a path pattern (permission.Escape's) back into the path.
func unescape(p string) string {
	if !strings.ContainsRune(p, '\\') {
		return p
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] == '\\' && i+1 < len(p) && strings.IndexByte(`*?\`, p[i+1]) >= 0 {
			i++
		}
		b.WriteByte(p[i])
	}
	return b.String()
}

// claudeResponse is a result as Claude Code's tool_response: a shell command's stdout, a
// file tool's filePath and success; the other tools' output, title and metadata.
func claudeResponse(workspace string, c *Call, args json.RawMessage, res *Result) any {
	if c.Source == "builtin" {
		switch c.Tool {
		case "bash":
			exit, _ := res.Metadata["exit"]
			return map[string]any{"stdout": res.Output, "stderr": "", "interrupted": res.Status == protocol.StatusCancelled, "isImage": false, "exitCode": exit}
		case "write", "edit", "read":
			var a struct {
				FilePath string `json:"filePath"`
			}
			_ = json.Unmarshal(args, &a)
			p := a.FilePath
			if p != "" && !filepath.IsAbs(p) {
				p = filepath.Join(workspace, p)
			}
			if c.Tool == "read" {
				return map[string]any{"type": "text", "file": map[string]any{"filePath": p, "content": res.Output}}
			}
			return map[string]any{"filePath": p, "success": res.Status == protocol.StatusCompleted}
		}
	}
	return map[string]any{"output": res.Output, "title": res.Title, "metadata": res.Metadata}
}

// eventName is the hook_event_name a Claude Code hook reads.
func eventName(point string, res *Result) string {
	switch point {
	case protocol.HookPointBefore:
		return "PreToolUse"
	case protocol.HookPointAfter:
		if res != nil && res.Status != protocol.StatusCompleted {
			return "PostToolUseFailure"
		}
		return "PostToolUse"
	case protocol.HookPointPermission:
		return "PermissionRequest"
	}
	return "ToolDefinition"
}

// input is what a command hook reads on stdin: Claude Code's fields, then toolsd's own
// under "toolsd".
type input struct {
	SessionID      string              `json:"session_id"`
	TranscriptPath string              `json:"transcript_path"`
	Cwd            string              `json:"cwd"`
	PermissionMode string              `json:"permission_mode"`
	HookEventName  string              `json:"hook_event_name"`
	ToolName       string              `json:"tool_name"`
	ToolInput      json.RawMessage     `json:"tool_input,omitempty"`
	ToolUseID      string              `json:"tool_use_id,omitempty"`
	ToolResponse   any                 `json:"tool_response,omitempty"`
	Error          string              `json:"error,omitempty"`
	Toolsd         protocol.HookParams `json:"toolsd"`
}

// commandInput encodes the event for a command hook.
func (r *Runner) commandInput(e *entry, ev *event) []byte {
	p := ev.params(e)
	in := input{
		SessionID: p.SessionID, Cwd: r.opts.Workspace, PermissionMode: "default",
		HookEventName: eventName(e.spec.Point, ev.result), ToolName: ClaudeName(p.Tool, p.Source), ToolUseID: p.CallID, Toolsd: p,
	}
	if ev.call != nil && e.spec.Point != protocol.HookPointDefinition {
		in.ToolInput = claudeInput(r.opts.Workspace, ev.call, ev.args)
	}
	if ev.result != nil {
		in.ToolResponse = claudeResponse(r.opts.Workspace, ev.call, ev.args, ev.result)
		in.Error = ev.result.Error
	}
	b, err := json.Marshal(in)
	if err != nil {
		// Arguments are valid JSON by now; a result's metadata is the tool's own map.
		b, _ = json.Marshal(input{HookEventName: in.HookEventName, ToolName: in.ToolName, Cwd: in.Cwd})
	}
	return b
}

// output is what a command hook may write on stdout (exit code 0): Claude Code's fields,
// and toolsd's under "toolsd".
type output struct {
	Continue       *bool  `json:"continue"`
	StopReason     string `json:"stopReason"`
	SuppressOutput bool   `json:"suppressOutput"`
	SystemMessage  string `json:"systemMessage"`
	// Decision is Claude Code's older top-level decision: approve or block (PreToolUse),
	// block (PostToolUse).
	Decision string `json:"decision"`
	Reason   string `json:"reason"`
	Specific *struct {
		PermissionDecision       string          `json:"permissionDecision"`
		PermissionDecisionReason string          `json:"permissionDecisionReason"`
		UpdatedInput             json.RawMessage `json:"updatedInput"`
		AdditionalContext        string          `json:"additionalContext"`
		UpdatedMCPToolOutput     json.RawMessage `json:"updatedMCPToolOutput"`
		// Decision is PermissionRequest's.
		Decision *struct {
			Behavior string `json:"behavior"`
			Message  string `json:"message"`
		} `json:"decision"`
	} `json:"hookSpecificOutput"`
	Toolsd *protocol.HookResult `json:"toolsd"`
}

// parseOutput reads a command hook's stdout into its reply. Non-JSON stdout is no answer.
func parseOutput(e *entry, c *Call, stdout []byte) reply {
	var rep reply
	b := bytes.TrimSpace(stdout)
	if len(b) == 0 {
		return rep
	}
	if b[0] != '{' {
		rep.notes = append(rep.notes, "its stdout is not JSON, so it was not read as an answer")
		return rep
	}
	var o output
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&o); err != nil {
		rep.failed = errorf("its stdout starts like JSON but is not a JSON object of its answer (%v); write one object, like {\"hookSpecificOutput\": {\"permissionDecision\": \"deny\", \"permissionDecisionReason\": \"...\"}}", err)
		return rep
	}
	if o.Continue != nil && !*o.Continue {
		rep.stop = o.StopReason
		if rep.stop == "" {
			rep.stop = "(no reason given)"
		}
	}
	rep.systemMessage = o.SystemMessage
	switch o.Decision {
	case "approve":
		rep.decision = "allow"
	case "block":
		rep.decision = "deny"
	case "":
	default:
		rep.notes = append(rep.notes, "its decision "+strconv.Quote(o.Decision)+" is not approve or block, so it was ignored")
	}
	rep.reason = o.Reason
	if s := o.Specific; s != nil {
		if s.PermissionDecision != "" {
			rep.decision = s.PermissionDecision
			rep.reason = s.PermissionDecisionReason
		}
		if s.Decision != nil && s.Decision.Behavior != "" {
			rep.decision = s.Decision.Behavior
			rep.reason = s.Decision.Message
		}
		if given(s.UpdatedInput) {
			rep.args = fromClaudeInput(c, s.UpdatedInput)
		}
		rep.context = s.AdditionalContext
		if given(s.UpdatedMCPToolOutput) {
			if out, ok := mcpText(s.UpdatedMCPToolOutput); ok {
				rep.output = &out
			} else {
				rep.notes = append(rep.notes, "its updatedMCPToolOutput is neither a string nor MCP content, so it was ignored")
			}
		}
	}
	if t := o.Toolsd; t != nil {
		rep.fromResult(t)
	}
	return rep
}

// mcpText reads an MCP tool output a hook gives: a string, or content blocks whose text is
// joined.
func mcpText(raw json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		var res struct {
			Content *[]struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		}
		if json.Unmarshal(raw, &res) != nil || res.Content == nil {
			return "", false
		}
		blocks = *res.Content
	}
	var parts []string
	for _, bl := range blocks {
		if bl.Type == "text" {
			parts = append(parts, bl.Text)
		}
	}
	return strings.Join(parts, "\n"), true
}
