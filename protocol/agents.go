package protocol

import "encoding/json"

// Methods of the calls that agents make with their own tools (Claude Code's Bash, Codex's
// apply_patch, ...), reported by `toolsd hook` as the agent runs it as its hook
// (docs/agents.md).
const (
	// MethodAgentsBefore decides an agent's tool call before the agent runs it, opens its
	// record and its checkpoint window.
	MethodAgentsBefore = "agents/before"
	// MethodAgentsAfter closes an agent's tool call with what it returned.
	MethodAgentsAfter = "agents/after"
)

// ClientAgent is the kind of the client an agent's own calls are recorded under: the agent,
// as its hook named it (it is not attached; the hook process that reports its calls is).
const ClientAgent = "agent"

// AgentCall is one of toolsd's permission-checked calls an agent's tool call stands for:
// the built-in tool whose requests it makes (bash, edit, read, ...), with toolsd's
// arguments; or an MCP server's tool (Tool "mcp", MCPServer and MCPTool set); or a tool
// toolsd does not know (Tool "", asked under the agent's own tool name).
type AgentCall struct {
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"args,omitempty"`
	// MCPServer and MCPTool name the MCP tool (Tool "mcp").
	MCPServer string `json:"mcpServer,omitempty"`
	MCPTool   string `json:"mcpTool,omitempty"`
	// Diff is what an edit changes, as a unified diff, shown with the ask.
	Diff string `json:"diff,omitempty"`
}

// AgentBeforeParams are the params of agents/before.
type AgentBeforeParams struct {
	// Agent is the agent's id (claude-code, codex, cursor): its record's agent, and the
	// agent whose rules in the settings ("agents") apply. AgentName is how asks name it.
	Agent     string `json:"agent"`
	AgentName string `json:"agentName,omitempty"`
	// SessionID is the agent's session id, CallID its tool use id.
	SessionID string `json:"sessionID"`
	CallID    string `json:"callID"`
	// Tool and Input are the agent's tool name and input as it sent them.
	Tool  string          `json:"tool"`
	Input json.RawMessage `json:"input,omitempty"`
	// Calls are what the call stands for (agenthook.Map); empty asks under Tool.
	Calls []AgentCall `json:"calls"`
	// Permission: the agent is about to show its own permission prompt for a call already
	// reported (Claude Code's PermissionRequest): decide again, but open nothing new.
	Permission bool `json:"permission,omitempty"`
	// NoEditor is what an ask becomes when no editor can show it: "ask" (the agent's own
	// prompt appears; the default) or "deny".
	NoEditor string `json:"noEditor,omitempty"`
	// Running: the call already runs without having asked (an ACP agent's tool_call it
	// requested no permission for): it is recorded running and nothing is decided (the
	// decision is allow, with none made).
	Running bool `json:"running,omitempty"`
	// Held: the caller reports the call's end on this connection (toolsd acp); when the
	// connection ends first, the call is recorded interrupted.
	Held bool `json:"held,omitempty"`
}

// Agent decisions.
const (
	AgentAllow = "allow"
	AgentDeny  = "deny"
	AgentAsk   = "ask" // the agent asks the person itself (no editor could)
)

// AgentBeforeResult is the result of agents/before.
type AgentBeforeResult struct {
	// Decision is allow, deny or ask; Reason says why, for the model (deny) or the person
	// (ask).
	Decision string `json:"decision"`
	Reason   string `json:"reason,omitempty"`
	// Decisions are the permission decisions made, as the call's record keeps them.
	Decisions []Decision `json:"decisions"`
}

// AgentAfterParams are the params of agents/after.
type AgentAfterParams struct {
	Agent     string          `json:"agent"`
	AgentName string          `json:"agentName,omitempty"`
	SessionID string          `json:"sessionID"`
	CallID    string          `json:"callID"`
	Tool      string          `json:"tool"`
	Input     json.RawMessage `json:"input,omitempty"`
	// Output is the tool's output as text; Error, when set, says the tool failed.
	Output string `json:"output,omitempty"`
	Error  string `json:"error,omitempty"`
	// Interrupted: the person stopped the tool.
	Interrupted bool `json:"interrupted,omitempty"`
}

// AgentAfterResult is the result of agents/after.
type AgentAfterResult struct {
	// Status is the call's final status; Changes the paths of the workspace it changed.
	Status  string `json:"status"`
	Changes int    `json:"changes,omitempty"`
	// Opened: agents/before had opened the call; false when toolsd first heard of it
	// now (its daemon was restarted meanwhile, or the hook was installed for after only).
	Opened bool `json:"opened"`
}
