package agenthook

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/toolsd/toolsd/protocol"
)

// Agent is an agent whose hooks toolsd serves.
type Agent struct {
	// ID is its id in records and rules (claude-code, codex, cursor); Name how asks name
	// it.
	ID, Name string
	// Key is the word the command line names it by (claude, codex, cursor).
	Key string
	// events are its hook events by kind.
	events map[string]string
	// allowSilently: the agent refuses an explicit allow (and ask) from PreToolUse (Codex:
	// it fails the hook and runs the tool); silence lets its own checks go on.
	allowSilently bool
	// cursor: Cursor's flat output ({"permission": ...}).
	cursor bool
}

// Kinds of events.
const (
	KindPre        = "pre"        // before the tool runs
	KindPermission = "permission" // the agent is about to show its permission prompt
	KindPost       = "post"       // the tool ran
	KindFailure    = "failure"    // the tool failed
)

// Agents are the agents toolsd serves, by Key.
var Agents = map[string]*Agent{
	"claude": {ID: "claude-code", Name: "Claude Code", Key: "claude", events: map[string]string{
		KindPre: "PreToolUse", KindPermission: "PermissionRequest", KindPost: "PostToolUse", KindFailure: "PostToolUseFailure"}},
	"codex": {ID: "codex", Name: "Codex", Key: "codex", allowSilently: true, events: map[string]string{
		KindPre: "PreToolUse", KindPermission: "PermissionRequest", KindPost: "PostToolUse"}},
	"cursor": {ID: "cursor", Name: "Cursor", Key: "cursor", cursor: true, events: map[string]string{
		KindPre: "preToolUse", KindPost: "postToolUse", KindFailure: "postToolUseFailure"}},
}

// Lookup returns the agent named key.
func Lookup(key string) (*Agent, error) {
	if a, ok := Agents[key]; ok {
		return a, nil
	}
	return nil, fmt.Errorf("unknown agent %q: say claude, codex or cursor", key)
}

// Kind returns the kind of the agent's event named name (its own spelling, or any case).
func (a *Agent) Kind(name string) (string, bool) {
	for k, n := range a.events {
		if strings.EqualFold(n, name) {
			return k, true
		}
	}
	return "", false
}

// Event is an agent's hook payload, read.
type Event struct {
	Kind      string
	SessionID string
	CallID    string
	Tool      string
	Input     json.RawMessage
	// Cwd is the agent's working folder; Roots the workspace folders it names (Cursor).
	Cwd   string
	Roots []string
	// Output and Error are what the tool returned (post, failure); Interrupted: the person
	// stopped it.
	Output      string
	Error       string
	Interrupted bool
}

type payload struct {
	HookEventName  string          `json:"hook_event_name"`
	SessionID      string          `json:"session_id"`
	ConversationID string          `json:"conversation_id"`
	Cwd            string          `json:"cwd"`
	WorkspaceRoots []string        `json:"workspace_roots"`
	ToolName       string          `json:"tool_name"`
	ToolInput      json.RawMessage `json:"tool_input"`
	ToolUseID      string          `json:"tool_use_id"`
	ToolResponse   json.RawMessage `json:"tool_response"`
	ToolOutput     json.RawMessage `json:"tool_output"`
	Error          json.RawMessage `json:"error"`
	ErrorMessage   string          `json:"error_message"`
	IsInterrupt    bool            `json:"is_interrupt"`
}

// Parse reads the payload of event (the hook's argument) that the agent sent on stdin.
func (a *Agent) Parse(event string, data []byte) (*Event, error) {
	kind, ok := a.Kind(event)
	if !ok {
		return nil, fmt.Errorf("%s has no hook event %q toolsd serves (it serves %s)", a.Name, event, strings.Join(a.eventNames(), ", "))
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // Cursor's byte order mark
	var p payload
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("the %s payload is not JSON: %v", a.Name, err)
	}
	if p.ToolName == "" {
		return nil, fmt.Errorf("the %s payload has no tool_name", a.Name)
	}
	if p.HookEventName != "" {
		if k, ok := a.Kind(p.HookEventName); ok && k != kind {
			return nil, fmt.Errorf("the hook was run for %s but the payload is of %s", event, p.HookEventName)
		}
	}
	e := &Event{Kind: kind, SessionID: p.SessionID, CallID: p.ToolUseID, Tool: p.ToolName, Input: p.ToolInput, Cwd: p.Cwd, Roots: p.WorkspaceRoots, Interrupted: p.IsInterrupt}
	if e.SessionID == "" {
		e.SessionID = p.ConversationID
	}
	if e.SessionID == "" {
		e.SessionID = a.ID
	}
	// Cursor sends an MCP tool's input as a JSON string.
	var s string
	if json.Unmarshal(e.Input, &s) == nil && strings.HasPrefix(strings.TrimSpace(s), "{") {
		e.Input = json.RawMessage(s)
	}
	if e.CallID == "" {
		// Without a tool use id, the call is named by what it is: its before and after
		// carry the same session, tool and input.
		sum := sha256.Sum256([]byte(e.SessionID + "\x00" + e.Tool + "\x00" + string(e.Input)))
		e.CallID = "hook_" + hex.EncodeToString(sum[:8])
	}
	resp := p.ToolResponse
	if len(resp) == 0 {
		resp = p.ToolOutput
	}
	e.Output = responseText(resp)
	e.Error = p.ErrorMessage
	if e.Error == "" {
		e.Error = responseText(p.Error)
	}
	if kind == KindFailure && e.Error == "" {
		e.Error = "the tool failed"
	}
	return e, nil
}

func (a *Agent) eventNames() []string {
	var out []string
	for _, k := range []string{KindPre, KindPermission, KindPost, KindFailure} {
		if n, ok := a.events[k]; ok {
			out = append(out, n)
		}
	}
	return out
}

// responseText is a tool's response as text: a string as it is, Claude Code's Bash result
// as its stdout and stderr, anything else as its JSON.
func responseText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var sh struct {
		Stdout *string `json:"stdout"`
		Stderr string  `json:"stderr"`
	}
	if json.Unmarshal(raw, &sh) == nil && sh.Stdout != nil {
		out := *sh.Stdout
		if sh.Stderr != "" {
			if out != "" && !strings.HasSuffix(out, "\n") {
				out += "\n"
			}
			out += sh.Stderr
		}
		return out
	}
	return string(raw)
}

// Reply is what the hook answers the agent: its standard output and exit code. Stderr, when
// set, is written to the hook's standard error.
type Reply struct {
	Stdout []byte
	Stderr string
	Exit   int
}

// Answer writes the decision of a before event (pre or permission) for the agent.
func (a *Agent) Answer(kind, decision, reason string) Reply {
	if a.cursor {
		out := map[string]any{"permission": decision}
		if reason != "" {
			out["agent_message"] = reason
			out["user_message"] = reason
		}
		return jsonReply(out)
	}
	if kind == KindPermission {
		// The agent is about to show its own prompt: answer it, or let it show.
		switch decision {
		case protocol.AgentAllow:
			return jsonReply(map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": a.events[KindPermission], "decision": map[string]any{"behavior": "allow"}}})
		case protocol.AgentDeny:
			return jsonReply(map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": a.events[KindPermission], "decision": map[string]any{"behavior": "deny", "message": reason}}})
		}
		return Reply{}
	}
	if decision != protocol.AgentDeny && a.allowSilently {
		return Reply{}
	}
	out := map[string]any{"hookEventName": a.events[KindPre], "permissionDecision": decision}
	if reason != "" {
		out["permissionDecisionReason"] = reason
	}
	return jsonReply(map[string]any{"hookSpecificOutput": out})
}

// Refuse is the fail-closed answer: deny, with the reason on the standard error too, and the
// exit code every agent reads as "blocked" (2).
func (a *Agent) Refuse(kind, reason string) Reply {
	r := a.Answer(kind, protocol.AgentDeny, reason)
	r.Stderr, r.Exit = reason, 2
	return r
}

func jsonReply(v any) Reply {
	b, _ := json.Marshal(v)
	return Reply{Stdout: append(b, '\n')}
}
