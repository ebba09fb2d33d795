// Package protocol holds the wire types of the toolsd JSON-RPC protocol and nothing else.
//
// The method and field names are fixed by the design's PROTOCOL.md; docs/protocol.md is the
// normative reference. Field names are camelCase. Slices that the wire shows as arrays are
// always non-nil when a result is built (see the constructors in this package), so that the
// encoder writes [] rather than null.
package protocol

import (
	"encoding/json"
	"time"
)

// Method names.
const (
	MethodInitialize      = "initialize"
	MethodInitialized     = "initialized"
	MethodShutdown        = "shutdown"
	MethodExit            = "exit"
	MethodCancelRequest   = "$/cancelRequest"
	MethodToolsResolve    = "tools/resolve"
	MethodToolsExecute    = "tools/execute"
	MethodToolsCancel     = "tools/cancel"
	MethodToolsProgress   = "tools/progress"
	MethodToolsChanged    = "tools/changed"
	MethodPermissionAsked = "permission/asked"
	MethodPermissionReply = "permission/reply"
	MethodPermissionList  = "permission/list"
	MethodPermissionTrust = "permission/trust"
	MethodCallsList       = "calls/list"
	MethodCallsGet        = "calls/get"
	MethodOutputsRead     = "outputs/read"
	MethodCallsOutput     = "calls/output"
	// Attach: several clients share one daemon per workspace (docs/protocol.md, "Attach").
	MethodPermissionAnswered = "permission/answered"
	MethodClientsList        = "clients/list"
	MethodClientsChanged     = "clients/changed"
	// Hooks: a request from the daemon to an editor that subscribed to a hook point
	// (docs/protocol.md, "Hooks").
	MethodHooksRun = "hooks/run"
)

// JSON-RPC error codes used by toolsd beyond the standard ones.
const (
	CodeServerNotInitialized = -32002
	CodeRequestCancelled     = -32800
	// CodeInvalidRequest is also used for frames over the message limit.
	CodeInvalidRequest = -32600
	// CodeMethodNotFound answers a method the receiver does not handle (the daemon, and the
	// editor for a request from the daemon it does not know).
	CodeMethodNotFound = -32601
	CodeNotFound       = -32004 // an unknown ask id, call id or output id
	CodeConflict       = -32005 // a duplicate callID in a session, an already answered ask
)

// Call states.
const (
	// StatusQueued is only in tools/progress: the connection holds the call back until
	// one of its calls in flight is answered (docs/protocol.md, Flow control).
	StatusQueued      = "queued"
	StatusPending     = "pending"
	StatusRunning     = "running"
	StatusCompleted   = "completed"
	StatusError       = "error"
	StatusCancelled   = "cancelled"
	StatusInterrupted = "interrupted"
)

// ClientInfo names the editor.
type ClientInfo struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

// ClientRef names the client that made a call: its connection id (unique among the clients
// the daemon has served, also across daemon restarts), and the name and version its
// initialize (toolsd's clientInfo or MCP's clientInfo) gave.
type ClientRef struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	// Kind is "editor" (the toolsd protocol) or "mcp" (an agent through toolsd mcp).
	Kind string `json:"kind,omitempty"`
}

// Client kinds.
const (
	ClientEditor = "editor"
	ClientMCP    = "mcp"
)

// ClientCapabilities says what the editor can show, and the hooks it runs.
type ClientCapabilities struct {
	Ask      bool `json:"ask"`
	Progress bool `json:"progress"`
	// Hooks are the hook points the editor subscribes to: the daemon sends it hooks/run
	// for every call of the workspace that one matches (docs/hooks.md).
	Hooks []HookSubscription `json:"hooks,omitempty"`
}

// Hook points.
const (
	HookPointDefinition = "definition" // a tool's description and parameters, before a round sees them
	HookPointBefore     = "before"     // a call's arguments, after validation and before it runs
	HookPointAfter      = "after"      // a call's result, before the model reads it
	HookPointPermission = "permission" // each permission decision of a call
)

// Hook failure policies.
const (
	HookFailOpen   = "fail-open"   // a hook that fails is passed over (the default)
	HookFailClosed = "fail-closed" // a hook that fails blocks what it guards
)

// HookSubscription is one hook an editor runs: hooks/run requests with its name come for
// the calls it matches.
type HookSubscription struct {
	// Name identifies the hook; two editors subscribing with the same name run it once
	// (in the one that attached first).
	Name string `json:"name"`
	// Point is definition, before, after or permission.
	Point string `json:"point"`
	// Match is the tools it runs for: tool ids or Claude Code tool names with "*"
	// wildcards, separated by "|" ("edit|write", "Bash", "mcp__github__*"); empty is every
	// tool.
	Match string `json:"match,omitempty"`
	// Source keeps tools of a source: "builtin", "project", "mcp:*" (wildcards).
	Source string `json:"source,omitempty"`
	// If keeps calls that touch what a rule pattern names: `bash(git push *)`.
	If string `json:"if,omitempty"`
	// TimeoutMs bounds each request (default 10000).
	TimeoutMs int `json:"timeoutMs,omitempty"`
	// OnFailure is fail-open (default) or fail-closed.
	OnFailure string `json:"onFailure,omitempty"`
}

// InitializeParams are the params of initialize.
type InitializeParams struct {
	ProcessID             *int                `json:"processId,omitempty"`
	ClientInfo            *ClientInfo         `json:"clientInfo,omitempty"`
	WorkspaceFolder       string              `json:"workspaceFolder"`
	Capabilities          *ClientCapabilities `json:"capabilities,omitempty"`
	InitializationOptions json.RawMessage     `json:"initializationOptions,omitempty"`
}

// ServerInfo names the daemon.
type ServerInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// ServerCapabilities says what the daemon offers.
type ServerCapabilities struct {
	Cancel      bool     `json:"cancel"`
	Progress    bool     `json:"progress"`
	Ask         bool     `json:"ask"`
	HotReload   bool     `json:"hotReload"`
	MaxMessage  int64    `json:"maxMessageBytes"`
	Permissions []string `json:"permissions"`
	// Hooks: the daemon runs the hooks editors subscribe to (ClientCapabilities.Hooks).
	Hooks bool `json:"hooks"`
}

// InitializeResult is the result of initialize.
type InitializeResult struct {
	ServerInfo   ServerInfo         `json:"serverInfo"`
	Capabilities ServerCapabilities `json:"capabilities"`
	StorePath    string             `json:"storePath"`
}

// Model names the model a round is for.
type Model struct {
	ProviderID string `json:"providerID"`
	ModelID    string `json:"modelID"`
}

// ResolveParams are the params of tools/resolve.
type ResolveParams struct {
	SessionID string `json:"sessionID"`
	Agent     string `json:"agent,omitempty"`
	Model     *Model `json:"model,omitempty"`
}

// ToolInfo is one tool as a model sees it.
type ToolInfo struct {
	ID          string          `json:"id"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	Source      string          `json:"source"`
	// Annotations are hints about what the tool does (MCP's tool annotations).
	Annotations *ToolAnnotations `json:"annotations,omitempty"`
}

// ToolAnnotations are hints about what a tool does, with MCP's names and meanings: hints a
// client may show or filter by, never guarantees (permission rules decide what runs).
type ToolAnnotations struct {
	Title string `json:"title,omitempty"`
	// ReadOnlyHint: the tool does not change its environment.
	ReadOnlyHint bool `json:"readOnlyHint,omitempty"`
	// DestructiveHint: a tool that changes things may destroy (overwrite, delete) some;
	// meaningful only when ReadOnlyHint is false. nil means MCP's default (true).
	DestructiveHint *bool `json:"destructiveHint,omitempty"`
	// IdempotentHint: calling it again with the same arguments has no further effect.
	IdempotentHint bool `json:"idempotentHint,omitempty"`
	// OpenWorldHint: the tool reaches beyond the workspace (the web, the network). nil
	// means MCP's default (true).
	OpenWorldHint *bool `json:"openWorldHint,omitempty"`
}

// Diagnostic reports a tool definition or config file that failed to load, or (with a
// Path that names no file: DiagnosticCheckpoints, "audit", "hooks") a part of the daemon
// that does not work as it should.
type Diagnostic struct {
	Path     string `json:"path"`
	Line     int    `json:"line,omitempty"`
	Column   int    `json:"column,omitempty"`
	Message  string `json:"message"`
	Severity string `json:"severity"` // "error" or "warning"
	// Fix is a command the person can run to fix it (a sysctl, say), when one is known.
	Fix string `json:"fix,omitempty"`
}

// DiagnosticCheckpoints is the Path of the diagnostic that says checkpoints find changes the
// slow way: the kernel refused the change journal an inotify watch or instance, so every
// changing call walks the workspace until the limit is raised (Fix).
const DiagnosticCheckpoints = "checkpoints"

// ResolveResult is the result of tools/resolve.
type ResolveResult struct {
	Tools       []ToolInfo   `json:"tools"`
	Diagnostics []Diagnostic `json:"diagnostics"`
}

// ExecuteParams are the params of tools/execute.
type ExecuteParams struct {
	SessionID string          `json:"sessionID"`
	MessageID string          `json:"messageID"`
	CallID    string          `json:"callID"`
	Tool      string          `json:"tool"`
	Args      json.RawMessage `json:"args"`
	Agent     string          `json:"agent,omitempty"`
	Model     *Model          `json:"model,omitempty"`
}

// Attachment is a file a tool returns besides its text (an image, a PDF).
type Attachment struct {
	ID        string `json:"id"`
	SessionID string `json:"sessionID"`
	MessageID string `json:"messageID"`
	Mime      string `json:"mime"`
	Filename  string `json:"filename,omitempty"`
	// Data is base64 (standard encoding).
	Data string `json:"data"`
}

// ExecuteResult is the result of tools/execute.
type ExecuteResult struct {
	CallID      string          `json:"callID"`
	Status      string          `json:"status"`
	Title       string          `json:"title"`
	Output      string          `json:"output"`
	Metadata    json.RawMessage `json:"metadata"`
	Attachments []Attachment    `json:"attachments"`
	Truncated   bool            `json:"truncated"`
	OutputID    string          `json:"outputID,omitempty"`
	Error       string          `json:"error,omitempty"`
}

// CancelRequestParams are the params of $/cancelRequest.
type CancelRequestParams struct {
	ID json.RawMessage `json:"id"`
}

// CancelParams are the params of tools/cancel.
type CancelParams struct {
	CallID    string `json:"callID"`
	SessionID string `json:"sessionID,omitempty"`
}

// CancelResult is the result of tools/cancel.
type CancelResult struct {
	Cancelled bool `json:"cancelled"`
}

// ProgressParams are the params of the tools/progress notification.
type ProgressParams struct {
	SessionID string          `json:"sessionID"`
	MessageID string          `json:"messageID,omitempty"`
	CallID    string          `json:"callID"`
	Tool      string          `json:"tool"`
	Status    string          `json:"status"`
	Title     string          `json:"title,omitempty"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
	// Client is the client that made the call.
	Client *ClientRef `json:"client,omitempty"`
}

// ChangedParams are the params of the tools/changed notification.
type ChangedParams struct {
	Added       []string     `json:"added"`
	Removed     []string     `json:"removed"`
	Changed     []string     `json:"changed"`
	Diagnostics []Diagnostic `json:"diagnostics"`
}

// AskedParams are the params of the permission/asked notification, and the items of
// permission/list.
type AskedParams struct {
	ID         string          `json:"id"`
	SessionID  string          `json:"sessionID"`
	MessageID  string          `json:"messageID,omitempty"`
	CallID     string          `json:"callID"`
	Tool       string          `json:"tool"`
	Permission string          `json:"permission"`
	Patterns   []string        `json:"patterns"`
	Always     []string        `json:"always"`
	Metadata   json.RawMessage `json:"metadata"`
	// Rule is the rule that made the call ask, if any ("no rule matched" otherwise).
	Rule *RuleInfo `json:"rule,omitempty"`
	// Provenance says why it asks: the rule and where it is written, or why no rule could
	// allow it.
	Provenance *Provenance `json:"provenance,omitempty"`
	// Destructive hints the editor to use a modal.
	Destructive bool `json:"destructive,omitempty"`
	// Client is the client whose call asks (the editor shows "<name> wants to …").
	Client *ClientRef `json:"client,omitempty"`
}

// AnsweredParams are the params of permission/answered: an ask that was shown to this
// client is no longer pending (answered by a person on any client, settled by an "always"
// answer, or withdrawn because its call ended). The editor drops it.
type AnsweredParams struct {
	ID string `json:"id"`
	// Reply is once, always or reject; empty when the ask was withdrawn.
	Reply string `json:"reply,omitempty"`
	// By is "person" (then Client names who answered), "rule" (an always answer released
	// it) or "cancel" (its call ended).
	By     string     `json:"by"`
	Client *ClientRef `json:"client,omitempty"`
}

// ClientsParams are the params of clients/changed and the result of clients/list: every
// client attached to the workspace's daemon, in the order they attached.
type ClientsParams struct {
	Clients []ClientRef `json:"clients"`
}

// RuleInfo describes a permission rule on the wire.
type RuleInfo struct {
	Permission string `json:"permission"`
	Pattern    string `json:"pattern"`
	Action     string `json:"action"`
	Source     string `json:"source,omitempty"`
}

// Provenance kinds.
const (
	ProvenanceRule       = "rule"       // a config rule decided (Layer, File, Line, Column say where)
	ProvenanceDefault    = "default"    // a built-in default rule decided
	ProvenanceNoRule     = "no-rule"    // no rule matched: ask
	ProvenanceRemembered = "remembered" // an "always" answer decided (RememberedAt, RememberedBy)
	ProvenanceOpaque     = "opaque"     // the shell analysis could not follow the line: ask (Reasons)
	ProvenanceExactOnly  = "exact-only" // a rule with a wildcard matched, but the command is outside its safe grammar: ask (Reason)
	ProvenanceHook       = "hook"       // a hook decided (Hook; Layer, File, Line and Column say where it is configured)
	ProvenanceSandbox    = "sandbox"    // reserved: allowed because the sandbox confines it
	ProvenanceProtected  = "protected"  // the call writes a protected path (Protected says why): it always asks
)

// Provenance says what decided a permission request, so that a person can tell which rule
// from which file, which remembered answer, or which part of the shell analysis made a
// call run, ask or be refused.
type Provenance struct {
	// Kind is one of the Provenance* constants.
	Kind string `json:"kind"`
	// Text says it in one line for a person.
	Text string `json:"text"`
	// Rule is the deciding rule as config writes it: bash "git push *": deny.
	Rule string `json:"rule,omitempty"`
	// Layer is the rule's layer: default, managed, user, editor, project, agent:<name>,
	// project-agent:<name>, session, workspace.
	Layer string `json:"layer,omitempty"`
	// File, Line and Column say where the rule is written (1-based).
	File   string `json:"file,omitempty"`
	Line   int    `json:"line,omitempty"`
	Column int    `json:"column,omitempty"`
	// Pattern is the request's pattern the decision is about (the strictest one).
	Pattern string `json:"pattern,omitempty"`
	// RememberedAt and RememberedBy say when and by whom a remembered answer was given.
	RememberedAt *time.Time `json:"rememberedAt,omitempty"`
	RememberedBy string     `json:"rememberedBy,omitempty"`
	// Hook names the hook that decided (kind "hook").
	Hook string `json:"hook,omitempty"`
	// Reason says why a rule that matched could not allow the command (exact-only).
	Reason string `json:"reason,omitempty"`
	// Reasons say why the shell line is not fully understood (opaque).
	Reasons []string `json:"reasons,omitempty"`
	// Untrusted is the project rule that would allow the call once the person trusts the
	// workspace, as config writes it.
	Untrusted string `json:"untrusted,omitempty"`
	// Protected says why a path the call writes is protected (kind "protected"): the
	// workspace's control over what runs unconfined later.
	Protected string `json:"protected,omitempty"`
}

// Reply values.
const (
	ReplyOnce   = "once"
	ReplyAlways = "always"
	ReplyReject = "reject"
)

// Scopes of an "always" reply: how long the approval is remembered.
const (
	ScopeSession   = "session"
	ScopeWorkspace = "workspace"
)

// ReplyParams are the params of permission/reply.
type ReplyParams struct {
	ID      string   `json:"id"`
	Reply   string   `json:"reply"`
	Message string   `json:"message,omitempty"`
	Scope   string   `json:"scope,omitempty"`
	Always  []string `json:"always,omitempty"`
}

// ReplyResult is the result of permission/reply.
type ReplyResult struct {
	// Released lists the ids of other pending asks that this answer settled too.
	Released []string `json:"released"`
}

// ListAsksResult is the result of permission/list.
type ListAsksResult struct {
	Asks []AskedParams `json:"asks"`
}

// TrustParams are the params of permission/trust: the person trusts (or stops trusting) the
// workspace's own config.
type TrustParams struct {
	Trusted bool `json:"trusted"`
}

// TrustResult is the result of permission/trust.
type TrustResult struct {
	Trusted bool `json:"trusted"`
}

// CallsListParams are the params of calls/list.
type CallsListParams struct {
	SessionID string `json:"sessionID,omitempty"`
	// Client keeps only the calls of the clients with this name or connection id.
	Client string `json:"client,omitempty"`
	Limit  int    `json:"limit,omitempty"`
	Cursor string `json:"cursor,omitempty"`
}

// CallSummary is one row of calls/list.
type CallSummary struct {
	CallID    string     `json:"callID"`
	SessionID string     `json:"sessionID"`
	MessageID string     `json:"messageID"`
	Tool      string     `json:"tool"`
	Status    string     `json:"status"`
	Title     string     `json:"title"`
	StartedAt time.Time  `json:"startedAt"`
	EndedAt   *time.Time `json:"endedAt,omitempty"`
	Truncated bool       `json:"truncated"`
	OutputID  string     `json:"outputID,omitempty"`
	// Changes is how many paths of the workspace the call changed (calls/changes).
	Changes int `json:"changes,omitempty"`
	// Confined: the call's process ran in the OS sandbox (its metadata's sandbox.confined).
	Confined bool `json:"confined,omitempty"`
	// Client is the client that made the call (absent in records made before attach).
	Client *ClientRef `json:"client,omitempty"`
}

// CallsListResult is the result of calls/list.
type CallsListResult struct {
	Calls      []CallSummary `json:"calls"`
	NextCursor string        `json:"nextCursor,omitempty"`
}

// CallsGetParams are the params of calls/get.
type CallsGetParams struct {
	CallID    string `json:"callID"`
	SessionID string `json:"sessionID,omitempty"`
}

// Decision records who or what allowed or refused a call's permission request.
type Decision struct {
	Permission string    `json:"permission"`
	Patterns   []string  `json:"patterns"`
	Action     string    `json:"action"`            // allow, deny, ask
	By         string    `json:"by"`                // "rule", "person", "sandbox" (auto-allowed confined), "hook", "no-ui", "cancel"
	Rule       *RuleInfo `json:"rule,omitempty"`    // the rule that decided
	Reply      string    `json:"reply,omitempty"`   // once, always, reject
	Scope      string    `json:"scope,omitempty"`   // for always
	Message    string    `json:"message,omitempty"` // a rejection's message
	// Client is the client on which the person answered (by "person").
	Client *ClientRef `json:"client,omitempty"`
	At     time.Time  `json:"at"`
	// Provenance says what decided: the rule (or why none could) that allowed, denied or
	// made the call ask.
	Provenance *Provenance `json:"provenance,omitempty"`
	// AskedAt, WaitedMs and AnsweredBy are set when a person was asked: when, how long the
	// ask waited for the answer, and the client that answered ("" when not known).
	AskedAt    *time.Time `json:"askedAt,omitempty"`
	WaitedMs   int64      `json:"waitedMs,omitempty"`
	AnsweredBy string     `json:"answeredBy,omitempty"`
}

// CallRecord is the whole record of a call (calls/get).
type CallRecord struct {
	CallID      string          `json:"callID"`
	SessionID   string          `json:"sessionID"`
	MessageID   string          `json:"messageID"`
	Tool        string          `json:"tool"`
	Agent       string          `json:"agent,omitempty"`
	Model       *Model          `json:"model,omitempty"`
	Status      string          `json:"status"`
	Title       string          `json:"title"`
	Args        json.RawMessage `json:"args"`
	Metadata    json.RawMessage `json:"metadata"`
	Output      string          `json:"output"`
	Error       string          `json:"error,omitempty"`
	Truncated   bool            `json:"truncated"`
	OutputID    string          `json:"outputID,omitempty"`
	Attachments []Attachment    `json:"attachments"`
	Decisions   []Decision      `json:"decisions"`
	StartedAt   time.Time       `json:"startedAt"`
	EndedAt     *time.Time      `json:"endedAt,omitempty"`
	// Changes is how many paths of the workspace the call changed (calls/changes).
	Changes int `json:"changes,omitempty"`
	// Client is the client that made the call (absent in records made before attach).
	Client *ClientRef `json:"client,omitempty"`
	// ModelArgs are the arguments the model sent, when a before hook changed them (Args
	// are then the arguments the tool ran with).
	ModelArgs json.RawMessage `json:"modelArgs,omitempty"`
	// Hooks are the hooks that ran for the call, in the order they ran.
	Hooks []HookRun `json:"hooks,omitempty"`
}

// Hook run outcomes.
const (
	HookOK      = "ok"      // it ran and answered (or had nothing to say)
	HookBlocked = "blocked" // it blocked the call (before), denied the request (permission) or hid the tool (definition)
	HookFailed  = "failed"  // it failed (its exit code, a time-out, bad output); OnFailure says what followed
)

// HookRun is one run of a hook for a call: who, how long, and what it decided or changed.
type HookRun struct {
	// Hook is its name; Point the point it ran at.
	Hook  string `json:"hook"`
	Point string `json:"point"`
	// Layer is where it is configured: user, editor, project, or client (an editor's
	// subscription; Client names the editor). File, Line and Column say where.
	Layer  string     `json:"layer"`
	File   string     `json:"file,omitempty"`
	Line   int        `json:"line,omitempty"`
	Column int        `json:"column,omitempty"`
	Client *ClientRef `json:"client,omitempty"`
	// StartedAt and DurationMs say when it ran and for how long.
	StartedAt  time.Time `json:"startedAt"`
	DurationMs int64     `json:"durationMs"`
	// Outcome is ok, blocked or failed.
	Outcome string `json:"outcome"`
	// Decision is the permission decision it gave (allow, ask, deny, defer), if any.
	Decision string `json:"decision,omitempty"`
	// Reason is its reason for a decision or a block, as the model or person reads it.
	Reason string `json:"reason,omitempty"`
	// Changed names what it changed: args, title, output, metadata, description,
	// parameters.
	Changed []string `json:"changed,omitempty"`
	// Context is what it added for the model to read.
	Context string `json:"context,omitempty"`
	// Error says why it failed; OnFailure is the policy that then applied.
	Error     string `json:"error,omitempty"`
	OnFailure string `json:"onFailure,omitempty"`
	// ExitCode is a command hook's exit code (absent when it did not exit by itself).
	ExitCode *int `json:"exitCode,omitempty"`
	// Note says what of its answer toolsd did not follow, and why.
	Note string `json:"note,omitempty"`
}

// HookParams are the params of hooks/run, the request an editor gets for a hook it
// subscribed to. Which fields are set depends on Point.
type HookParams struct {
	// Name is the subscription's name; Point its point.
	Name  string `json:"name"`
	Point string `json:"point"`
	// The call (not for definition).
	SessionID string `json:"sessionID,omitempty"`
	MessageID string `json:"messageID,omitempty"`
	CallID    string `json:"callID,omitempty"`
	// Tool is the tool's id, Source its source.
	Tool   string `json:"tool"`
	Source string `json:"source"`
	Agent  string `json:"agent,omitempty"`
	Model  *Model `json:"model,omitempty"`
	// Args are the call's arguments as the hooks before this one left them (before,
	// after, permission).
	Args json.RawMessage `json:"args,omitempty"`
	// Result is the call's result (after).
	Result *HookCallResult `json:"result,omitempty"`
	// Decision is the decision made (permission): an ask is not yet shown to a person.
	Decision *Decision `json:"decision,omitempty"`
	// Definition is the tool as the hooks before this one left it (definition).
	Definition *HookDefinition `json:"definition,omitempty"`
	// Client is the client that made the call.
	Client *ClientRef `json:"client,omitempty"`
}

// HookCallResult is a call's result as an after hook sees it.
type HookCallResult struct {
	Status   string          `json:"status"`
	Title    string          `json:"title"`
	Output   string          `json:"output"`
	Metadata json.RawMessage `json:"metadata"`
	Error    string          `json:"error,omitempty"`
}

// HookDefinition is a tool as a definition hook sees it.
type HookDefinition struct {
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// HookResult is an editor's answer to hooks/run. Every field is optional; what a point does
// not use is ignored (and noted in the call record).
type HookResult struct {
	// Decision: before: allow, ask or deny (deny blocks the call); permission: deny turns
	// an ask into a deny.
	Decision string `json:"decision,omitempty"`
	// Reason is why, for the model (a block) or the person (an ask).
	Reason string `json:"reason,omitempty"`
	// Args replace the call's arguments (before); they are validated again.
	Args json.RawMessage `json:"args,omitempty"`
	// Context is added to what the model reads (before, after).
	Context string `json:"context,omitempty"`
	// Title, Output and Metadata change the result (after); Metadata is merged key by key.
	Title    *string         `json:"title,omitempty"`
	Output   *string         `json:"output,omitempty"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
	// Description and InputSchema change the tool (definition); Hidden hides it.
	Description *string         `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
	Hidden      bool            `json:"hidden,omitempty"`
}

// OutputsReadParams are the params of outputs/read. Offset is a 0-based line number.
type OutputsReadParams struct {
	OutputID string `json:"outputID"`
	Offset   int    `json:"offset,omitempty"`
	Limit    int    `json:"limit,omitempty"`
}

// OutputsReadResult is the result of outputs/read.
type OutputsReadResult struct {
	Content    string `json:"content"`
	Offset     int    `json:"offset"`
	Lines      int    `json:"lines"`
	TotalLines int    `json:"totalLines"`
	TotalBytes int64  `json:"totalBytes"`
}

// CallsOutputParams are the params of calls/output: the output so far of a call in flight.
type CallsOutputParams struct {
	CallID    string `json:"callID"`
	SessionID string `json:"sessionID"`
	// MaxBytes keeps the last MaxBytes bytes (cut forward to a character boundary); 0: all
	// the daemon holds.
	MaxBytes int `json:"maxBytes,omitempty"`
}

// CallsOutputResult is the result of calls/output.
type CallsOutputResult struct {
	// Output is the end of what the call's tool printed so far: all of it while it is within
	// the output limits, else at least its last half output limit (truncateBytes / 2).
	Output string `json:"output"`
	// Bytes is how many bytes the tool printed so far.
	Bytes int64 `json:"bytes"`
	// Truncated: Output is not all of it (it starts later than the output's start).
	Truncated bool `json:"truncated"`
}
