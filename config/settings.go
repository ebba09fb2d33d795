package config

import (
	"encoding/json"
)

// Settings are the daemon's settings; settings.schema.json (next to this file) describes
// the same fields for editors, and the extension's contributes.configuration mirrors it.
// In a Layer, a zero field means "not set here".
type Settings struct {
	// Permission holds permission rules in the form permission.ParseConfig reads, e.g.
	// {"bash": {"git status*": "allow", "rm *": "deny"}, "edit": "ask"}. It is not merged:
	// Layers.Permissions hands each layer's rules to the engine separately.
	Permission json.RawMessage `json:"permission,omitempty"`
	// Permissions holds permission rules in OpenCode's second syntax, an ordered array of
	// {"action", "resource", "effect"} (permission.ParseV2). A layer uses one syntax: a file
	// with both is a diagnostic.
	Permissions json.RawMessage `json:"permissions,omitempty"`
	// Examples are calls with the decision the rules must give them: {"allow": [...],
	// "ask": [...], "deny": [...]}, each call a string (`bash git push -f`, `edit a.go`) or
	// an object {"tool": ..., "args": {...}}. They are checked when the settings load and by
	// `toolsd policy test`.
	Examples json.RawMessage `json:"examples,omitempty"`
	// Agents configure named agents (tools/resolve's agent).
	Agents map[string]Agent `json:"agents,omitempty"`
	// Limits bound output and time.
	Limits Limits `json:"limits"`
	// RetentionDays is how long full outputs are kept in the store (default 7).
	RetentionDays int `json:"retentionDays,omitempty"`
	// PatchModels are wildcard patterns of model ids ("gpt-5*") that get apply_patch
	// instead of edit and write. A layer that sets it replaces the list.
	PatchModels []string `json:"patchModels,omitempty"`
	// MCP names MCP servers to start (reserved: the daemon does not start them yet).
	MCP map[string]MCPServer `json:"mcp,omitempty"`
	// LogLevel is "debug", "info", "warn" or "error" (default "info").
	LogLevel string `json:"logLevel,omitempty"`
	// Audit exports every decision and call to an OpenTelemetry collector. The standard
	// environment (OTEL_TRACES_EXPORTER=otlp, OTEL_EXPORTER_OTLP_*) turns it on without it.
	// A workspace's own settings may not set it.
	Audit Audit `json:"audit"`
	// Sandbox confines the processes tools start (docs/sandbox.md). A workspace's own
	// config may set it only once the person trusts the workspace.
	Sandbox Sandbox `json:"sandbox"`
	// Hooks are commands run at the points of a call (docs/hooks.md). Like Permission they
	// are not merged: each layer's run (Layers.List), the workspace's own only once the
	// person trusts the workspace.
	Hooks Hooks `json:"hooks"`
}

// Hooks are the command hooks of one layer, by point, each point's in the order they run.
type Hooks struct {
	// Definition hooks may change a tool's description and parameters, or hide it.
	Definition []Hook `json:"definition,omitempty"`
	// Before hooks see a call's arguments before it runs: they may change them, block the
	// call, add context, or allow or ask.
	Before []Hook `json:"before,omitempty"`
	// After hooks see a call's result: they may change its title, output and metadata, and
	// add context.
	After []Hook `json:"after,omitempty"`
	// Permission hooks see each permission decision; they may turn an ask into a deny.
	Permission []Hook `json:"permission,omitempty"`
}

// Hook is one command hook.
type Hook struct {
	// Name names it in the call record (default: its script's file name).
	Name string `json:"name,omitempty"`
	// Match is the tools it runs for: ids or Claude Code names ("Bash") with "*"
	// wildcards, separated by "|"; empty is every tool.
	Match string `json:"match,omitempty"`
	// Source keeps tools of a source: "builtin", "project", "mcp:*".
	Source string `json:"source,omitempty"`
	// If keeps calls that touch what a rule pattern names: "bash(git push *)".
	If string `json:"if,omitempty"`
	// Command is the argv, run without a shell: a leading "~/" is the home folder,
	// $CLAUDE_PROJECT_DIR the workspace, and a relative program path is the workspace's.
	Command []string `json:"command"`
	// Env is added to its environment.
	Env map[string]string `json:"env,omitempty"`
	// Timeout is in seconds (default 60, at most 600).
	Timeout int `json:"timeout,omitempty"`
	// OnFailure is "fail-open" (default) or "fail-closed".
	OnFailure string `json:"onFailure,omitempty"`
	// Sandbox confines it (on by default, like bash: the workspace writable, no network).
	Sandbox *SandboxTool `json:"sandbox,omitempty"`
}

// HookPoints are the points of Hooks, in the order their settings are listed.
var HookPoints = []string{"definition", "before", "after", "permission"}

// Of returns the hooks of a point.
func (h *Hooks) Of(point string) []Hook {
	switch point {
	case "definition":
		return h.Definition
	case "before":
		return h.Before
	case "after":
		return h.After
	case "permission":
		return h.Permission
	}
	return nil
}

// HookAt is where a hook is written in its file.
type HookAt struct{ Line, Column int }

// Audit names the OpenTelemetry collector decisions and calls are exported to.
type Audit struct {
	// OTLPEndpoint is the collector's base URL (http://collector:4318); setting it turns
	// export on.
	OTLPEndpoint string `json:"otlpEndpoint,omitempty"`
	// OTLPProtocol is "grpc" or "http/protobuf"; empty takes OTEL_EXPORTER_OTLP_PROTOCOL,
	// else http/protobuf.
	OTLPProtocol string `json:"otlpProtocol,omitempty"`
}

// Sandbox are the sandbox's settings. In a Layer, a nil or empty field means "not set here";
// lists add to the layers below.
type Sandbox struct {
	// Enabled turns the sandbox off when false (default true, where the kernel has Landlock).
	Enabled *bool `json:"enabled,omitempty"`
	// AutoAllow lets a confined shell command that no rule denies and that is fully
	// understood run without an ask (default true).
	AutoAllow *bool `json:"autoAllow,omitempty"`
	// Mode is "auto" (namespaces where the kernel gives them, default) or "landlock".
	Mode string `json:"mode,omitempty"`
	// Write are more folders commands may write ("~/" is the home folder).
	Write []string `json:"write,omitempty"`
	// Deny are more paths commands may neither read nor write, besides the secrets toolsd
	// knows (~/.ssh, ~/.aws, ~/.gnupg, ~/.config/gh, …).
	Deny []string `json:"deny,omitempty"`
	// Network is the network of bash and project tools (default: none).
	Network *SandboxNetwork `json:"network,omitempty"`
	// UnixSockets lets commands create Unix sockets (default false).
	UnixSockets *bool `json:"unixSockets,omitempty"`
	// Tools are settings of one tool by id ("bash", a project tool's id).
	Tools map[string]SandboxTool `json:"tools,omitempty"`
}

// SandboxTool are the sandbox's settings for one tool or MCP server; unset fields follow the
// sandbox's.
type SandboxTool struct {
	// Enabled false runs the tool unconfined.
	Enabled *bool `json:"enabled,omitempty"`
	// Write are more folders it may write.
	Write []string `json:"write,omitempty"`
	// Network replaces the sandbox's network for this tool.
	Network *SandboxNetwork `json:"network,omitempty"`
	// UnixSockets lets it create Unix sockets.
	UnixSockets *bool `json:"unixSockets,omitempty"`
}

// SandboxNetwork is a confined process's network.
type SandboxNetwork struct {
	// Allow are the domains reachable over HTTP(S) through the sandbox's egress proxy:
	// "example.com", "*.example.com", or "*", optionally with ":port" (default ports 80 and
	// 443). Private addresses are never reachable.
	Allow []string `json:"allow,omitempty"`
	// Direct leaves the network unconfined (a server that needs a database, say).
	Direct bool `json:"direct,omitempty"`
}

// Agent configures one agent.
type Agent struct {
	Description string `json:"description,omitempty"`
	// Tools enables (true) or disables (false) tools by id for this agent; keys may hold
	// "*" wildcards ("mcp_*"). An exact key wins over patterns, a longer pattern over a
	// shorter one, and at equal length false wins. Unlisted tools are enabled.
	Tools map[string]bool `json:"tools,omitempty"`
	// Permission holds the agent's own rules, in the same form as Settings.Permission,
	// layered after the global ones.
	Permission json.RawMessage `json:"permission,omitempty"`
	// Permissions holds them in OpenCode's second syntax, as Settings.Permissions.
	Permissions json.RawMessage `json:"permissions,omitempty"`
	// Examples are calls of this agent with the decision they must get, as
	// Settings.Examples.
	Examples json.RawMessage `json:"examples,omitempty"`
}

// Limits bound output and time. Zero means the default. Each is held within limitBounds;
// the project layer may only lower them, and may not set MaxMessageBytes.
type Limits struct {
	// TruncateLines is how many lines of output a model sees (default 2000).
	TruncateLines int `json:"truncateLines,omitempty"`
	// TruncateBytes is how many bytes of output a model sees (default 51200).
	TruncateBytes int `json:"truncateBytes,omitempty"`
	// BashTimeoutMs is the shell tool's default timeout (default 120000).
	BashTimeoutMs int `json:"bashTimeoutMs,omitempty"`
	// BashMaxTimeoutMs is the longest timeout a model may ask of the shell tool (default
	// 600000).
	BashMaxTimeoutMs int `json:"bashMaxTimeoutMs,omitempty"`
	// MaxMessageBytes is the largest JSON-RPC message the daemon accepts (default 8 MiB).
	MaxMessageBytes int64 `json:"maxMessageBytes,omitempty"`
}

// MCPServer is a server to start over stdio.
type MCPServer struct {
	Command []string          `json:"command"`
	Env     map[string]string `json:"env,omitempty"`
	// Sandbox confines the server (on by default, with no network).
	Sandbox *SandboxTool `json:"sandbox,omitempty"`
}

// Defaults returns the settings when nothing is configured.
func Defaults() Settings {
	return Settings{
		Limits: Limits{
			TruncateLines:    2000,
			TruncateBytes:    50 * 1024,
			BashTimeoutMs:    120000,
			BashMaxTimeoutMs: 600000,
			MaxMessageBytes:  8 << 20,
		},
		RetentionDays: 7,
		PatchModels:   []string{"gpt-5*", "*codex*"},
		LogLevel:      "info",
	}
}

// MaxFileBytes is the largest settings file read; a larger one is a diagnostic.
const MaxFileBytes = 1 << 20

// bound is the least and the greatest value a limit may take; a value outside is replaced
// by the nearest bound, with a warning.
type bound struct{ Min, Max int64 }

// limitBounds are the bounds of each limit, by its JSON name. The floors keep the daemon
// usable (the editor's messages fit, a tool's output is readable, a command has time to
// start); the ceilings keep it within its means (memory for a message or a model's view of
// an output, a day for a command).
var limitBounds = map[string]bound{
	"truncateLines":    {10, 100_000},
	"truncateBytes":    {1 << 10, 4 << 20},
	"bashTimeoutMs":    {1_000, 86_400_000},
	"bashMaxTimeoutMs": {1_000, 86_400_000},
	"maxMessageBytes":  {1 << 20, 256 << 20},
}

// projectMayNotSet are the limits the project layer cannot set at all: the message limit is
// a matter between the editor and the daemon, and a repository that lowered it would lock the
// editor out of the workspace.
var projectMayNotSet = map[string]bool{"maxMessageBytes": true}
