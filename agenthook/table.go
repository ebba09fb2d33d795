package agenthook

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/toolsd/toolsd/protocol"
)

// A mapping turns an agent tool's input into the toolsd calls it stands for. cwd is the
// agent's working folder (relative paths are taken from it).
type mapping func(in map[string]any, cwd string) ([]protocol.AgentCall, error)

// tools is the one table of agent tools: each agent's tool name → the toolsd calls whose
// permission requests it makes. Claude Code's names come first; Codex uses Bash and
// apply_patch (and Claude Code's MCP names), Cursor its Shell, StrReplace and Delete. An MCP
// tool (mcp__server__tool, Cursor's MCP:server:tool) is matched by MCPName, and a tool that
// is in no row asks under its own name.
var tools = map[string]mapping{
	// Shell commands: the shell analysis and the bash rules.
	"Bash":  bash,
	"Shell": bash, // Cursor
	// Edits: edit per file, with the diff.
	"Edit":         edit,
	"StrReplace":   edit, // Cursor
	"MultiEdit":    multiEdit,
	"Write":        write,
	"NotebookEdit": notebookEdit,
	"Delete":       deleteFile, // Cursor
	"apply_patch":  applyPatch, // Codex: the patch text in command, split per file
	// Reads: read and external_directory.
	"Read":     read,
	"LS":       list,
	"Glob":     glob,
	"Grep":     grep,
	"WebFetch": webfetch,
	// What only changes the agent's own state.
	"TodoWrite": todo,
}

// Tools are the agent tool names the table maps, sorted: the matcher `toolsd hook install`
// writes (with MCP tools).
func Tools() []string {
	out := make([]string, 0, len(tools))
	for k := range tools {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Map returns the toolsd calls an agent's tool call stands for. A tool no row knows maps to
// no call: the daemon asks under its name. Input that does not fit the tool is an error.
func Map(tool string, input json.RawMessage, cwd string) ([]protocol.AgentCall, error) {
	if server, name, ok := MCPName(tool); ok {
		return []protocol.AgentCall{{Tool: "mcp", MCPServer: server, MCPTool: name, Args: input}}, nil
	}
	f, ok := tools[tool]
	if !ok {
		return nil, nil
	}
	var in map[string]any
	if len(input) > 0 && string(input) != "null" {
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, fmt.Errorf("the input of %s is not a JSON object: %v", tool, err)
		}
	}
	if in == nil {
		in = map[string]any{}
	}
	return f(in, cwd)
}

// MCPName splits an MCP tool's name as the agents write it: Claude Code's and Codex's
// mcp__<server>__<tool>, Cursor's MCP:<server>:<tool>.
func MCPName(tool string) (server, name string, ok bool) {
	if rest, found := strings.CutPrefix(tool, "mcp__"); found {
		server, name, ok = strings.Cut(rest, "__")
		return server, name, ok && server != "" && name != ""
	}
	if rest, found := strings.CutPrefix(tool, "MCP:"); found {
		server, name, ok = strings.Cut(rest, ":")
		return server, name, ok && server != "" && name != ""
	}
	return "", "", false
}

func call(tool string, args map[string]any) protocol.AgentCall {
	b, _ := json.Marshal(args)
	return protocol.AgentCall{Tool: tool, Args: b}
}

func str(in map[string]any, keys ...string) string {
	for _, k := range keys {
		if s, ok := in[k].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

// abs makes p absolute from cwd (the agents send absolute paths; a relative one is the
// agent's working folder's).
func abs(p, cwd string) string {
	if p == "" || filepath.IsAbs(p) || cwd == "" {
		return p
	}
	return filepath.Join(cwd, p)
}

func need(tool, field, v string) error {
	if v == "" {
		return fmt.Errorf("%s needs %s", tool, field)
	}
	return nil
}

func bash(in map[string]any, cwd string) ([]protocol.AgentCall, error) {
	cmd := str(in, "command", "cmd")
	if err := need("Bash", "command", cmd); err != nil {
		return nil, err
	}
	args := map[string]any{"command": cmd}
	if wd := abs(str(in, "cwd", "workdir"), cwd); wd != "" {
		args["workdir"] = wd
	} else if cwd != "" {
		args["workdir"] = cwd
	}
	return []protocol.AgentCall{call("bash", args)}, nil
}

func edit(in map[string]any, cwd string) ([]protocol.AgentCall, error) {
	p := abs(str(in, "file_path", "path", "filePath"), cwd)
	if err := need("Edit", "file_path", p); err != nil {
		return nil, err
	}
	args := map[string]any{"filePath": p, "oldString": str(in, "old_string", "oldString"), "newString": str(in, "new_string", "newString")}
	if all, _ := in["replace_all"].(bool); all {
		args["replaceAll"] = true
	}
	return []protocol.AgentCall{call("edit", args)}, nil
}

// multiEdit is several edits of one file: one edit request, the diff of them all (the
// daemon applies them in order).
func multiEdit(in map[string]any, cwd string) ([]protocol.AgentCall, error) {
	p := abs(str(in, "file_path"), cwd)
	if err := need("MultiEdit", "file_path", p); err != nil {
		return nil, err
	}
	edits, _ := in["edits"].([]any)
	var list []map[string]any
	for _, e := range edits {
		m, _ := e.(map[string]any)
		if m == nil {
			continue
		}
		list = append(list, map[string]any{"oldString": str(m, "old_string"), "newString": str(m, "new_string"), "replaceAll": m["replace_all"] == true})
	}
	return []protocol.AgentCall{call("edit", map[string]any{"filePath": p, "edits": list})}, nil
}

func write(in map[string]any, cwd string) ([]protocol.AgentCall, error) {
	p := abs(str(in, "file_path", "path", "filePath"), cwd)
	if err := need("Write", "file_path", p); err != nil {
		return nil, err
	}
	content, _ := in["content"].(string)
	if content == "" {
		content, _ = in["contents"].(string)
	}
	return []protocol.AgentCall{call("write", map[string]any{"filePath": p, "content": content})}, nil
}

func notebookEdit(in map[string]any, cwd string) ([]protocol.AgentCall, error) {
	p := abs(str(in, "notebook_path", "file_path"), cwd)
	if err := need("NotebookEdit", "notebook_path", p); err != nil {
		return nil, err
	}
	return []protocol.AgentCall{call("edit", map[string]any{"filePath": p})}, nil
}

func deleteFile(in map[string]any, cwd string) ([]protocol.AgentCall, error) {
	p := abs(str(in, "path", "file_path", "target_file"), cwd)
	if err := need("Delete", "path", p); err != nil {
		return nil, err
	}
	return []protocol.AgentCall{call("edit", map[string]any{"filePath": p})}, nil
}

// applyPatch splits Codex's patch (the whole text in command, or in patch/input) into one
// apply_patch call per file, each asking edit for its file with its part of the patch as
// the diff.
func applyPatch(in map[string]any, cwd string) ([]protocol.AgentCall, error) {
	text := str(in, "command", "patch", "input")
	if err := need("apply_patch", "the patch text", text); err != nil {
		return nil, err
	}
	parts, err := SplitPatch(text, cwd)
	if err != nil {
		return nil, err
	}
	var out []protocol.AgentCall
	for _, p := range parts {
		c := call("apply_patch", map[string]any{"patchText": p.Text})
		c.Diff = p.Text
		out = append(out, c)
	}
	return out, nil
}

func read(in map[string]any, cwd string) ([]protocol.AgentCall, error) {
	p := abs(str(in, "file_path", "path", "target_file"), cwd)
	if err := need("Read", "file_path", p); err != nil {
		return nil, err
	}
	return []protocol.AgentCall{call("read", map[string]any{"filePath": p})}, nil
}

func list(in map[string]any, cwd string) ([]protocol.AgentCall, error) {
	p := abs(str(in, "path"), cwd)
	if p == "" {
		p = cwd
	}
	return []protocol.AgentCall{call("list", map[string]any{"path": p})}, nil
}

func glob(in map[string]any, cwd string) ([]protocol.AgentCall, error) {
	pat := str(in, "pattern", "glob_pattern")
	if err := need("Glob", "pattern", pat); err != nil {
		return nil, err
	}
	args := map[string]any{"pattern": pat}
	if p := abs(str(in, "path", "target_directory"), cwd); p != "" {
		args["path"] = p
	} else if cwd != "" {
		args["path"] = cwd
	}
	return []protocol.AgentCall{call("glob", args)}, nil
}

func grep(in map[string]any, cwd string) ([]protocol.AgentCall, error) {
	pat := str(in, "pattern")
	if err := need("Grep", "pattern", pat); err != nil {
		return nil, err
	}
	args := map[string]any{"pattern": pat}
	if p := abs(str(in, "path"), cwd); p != "" {
		args["path"] = p
	} else if cwd != "" {
		args["path"] = cwd
	}
	return []protocol.AgentCall{call("grep", args)}, nil
}

func webfetch(in map[string]any, _ string) ([]protocol.AgentCall, error) {
	u := str(in, "url")
	if err := need("WebFetch", "url", u); err != nil {
		return nil, err
	}
	return []protocol.AgentCall{call("webfetch", map[string]any{"url": u})}, nil
}

func todo(map[string]any, string) ([]protocol.AgentCall, error) {
	return []protocol.AgentCall{call("todowrite", map[string]any{})}, nil
}
