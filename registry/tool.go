// Package registry defines the tool contract and keeps the catalogue of tools from every source.
//
// A Tool is what a source (the built-ins, the project's .toolsd/tool folder, an MCP server)
// contributes. The Registry holds one snapshot per source and hands out immutable Catalogs;
// a Catalog compiles each tool's JSON Schema once and validates the untrusted arguments a
// model sends back. Running a tool is the session package's job: it builds the Call that a
// tool's Execute receives.
package registry

import (
	"context"
	"encoding/json"
	"errors"
	"io"

	"github.com/toolsd/toolsd/protocol"
)

// Sources of tools, as they appear in protocol.ToolInfo.Source.
const (
	SourceBuiltin   = "builtin"
	SourceProject   = "project"
	SourceMCPPrefix = "mcp:"
)

// Tool is one tool of the catalogue. A Tool is immutable once handed to the Registry and is
// safe for concurrent use: Execute is called concurrently for different calls.
type Tool struct {
	// ID is the name the model calls the tool by: [A-Za-z0-9_-]{1,64}.
	ID string
	// Description is written for models: what the tool does, when to use it, its limits.
	Description string
	// Parameters is the JSON Schema (draft 2020-12) of the arguments, an object schema.
	Parameters json.RawMessage
	// Permission is the permission key its calls are checked under; empty means ID.
	Permission string
	// ReadOnly tools change nothing; the default policy lets them run without asking.
	ReadOnly bool
	// Changes says how the tool's calls change the workspace, for their checkpoints
	// (ChangesFound unless set; a ReadOnly tool changes nothing).
	Changes Changes
	// Source is "builtin", "project" or "mcp:<server>".
	Source string
	// Annotations are hints for clients (MCP's tool annotations); nil gives none.
	Annotations *protocol.ToolAnnotations
	// Path is the file a project tool was defined in, for diagnostics and the editor.
	Path string
	// Fingerprint changes whenever anything about the tool that a client could notice
	// changes (definition file content, say); tools/changed compares it. Empty means the
	// description and parameters are compared.
	Fingerprint string
	// Models, if set, reports whether the tool is offered to a model (apply_patch instead of
	// edit and write for GPT-family models, say). nil offers it to every model.
	Models func(m *protocol.Model) bool
	// Execute runs one call with arguments that already passed the schema. It must return
	// promptly once ctx is done, having stopped everything it started. An error is shown to
	// the model as the call's error text, so write it for the model: what was wrong and how
	// to fix the call.
	Execute func(ctx context.Context, call *Call, args json.RawMessage) (*Result, error)
}

// Changes says how a tool's calls change the workspace, so that each call's checkpoint
// records what it changed.
type Changes int

const (
	// ChangesFound: a call may change anything (a shell command, a project tool, an MCP
	// tool); what it changed is found by looking at the workspace when it begins
	// (Call.BeginChanges, right before it starts what may change files) and when it ends.
	ChangesFound Changes = iota
	// ChangesReported: a call changes only the files it reports, each with its exact bytes
	// before the change (Call.ReportBefore), before it writes it.
	ChangesReported
	// ChangesNone: a call changes no file of the workspace.
	ChangesNone
)

// PermissionKey is the key the tool's calls are checked under.
func (t *Tool) PermissionKey() string {
	if t.Permission != "" {
		return t.Permission
	}
	return t.ID
}

// Call is what a tool's Execute knows about the call it runs. The session package builds it;
// tools must not keep it after Execute returns.
type Call struct {
	SessionID string
	MessageID string
	CallID    string
	Agent     string
	Model     *protocol.Model
	Tool      string
	// Workspace is the real (symlink-resolved) absolute path of the workspace folder.
	Workspace string

	// Output receives output as it is produced, for tools whose output may be large (a
	// shell command). It never holds more than the truncation window in memory; the whole
	// stream goes to the store. The call's final output is what was written here followed
	// by Result.Output. Not safe for concurrent use: serialize writes.
	Output io.Writer

	// Progress publishes a live title and metadata of the running call (tools/progress).
	// It is safe for concurrent use, does not block, and may drop updates that come
	// faster than the editor can use them.
	Progress func(title string, metadata map[string]any)

	// Ask asks whether the call may do what req describes. It returns nil when allowed,
	// and otherwise an error whose text is for the model (a *PermissionError), or ctx's
	// error. Every built-in asks for what it touches before touching it.
	Ask func(ctx context.Context, req AskRequest) error

	// Outputs reads the full outputs of earlier calls (truncated ones, say).
	Outputs OutputReader

	// State keeps small per-session values that survive restarts (a todo list).
	State SessionState

	// Changes records what the call changes in the workspace (its checkpoint); nil when
	// nothing is recorded. Tools use it through BeginChanges and ReportBefore.
	Changes ChangeRecorder
}

// ChangeRecorder records what one call changes in the workspace. The session provides it.
type ChangeRecorder interface {
	// Begin says the call is about to change the workspace; calls after the first do
	// nothing. It returns only ctx's error.
	Begin(ctx context.Context) error
	// Before records the file at abs (a real path) as it is before the call changes it:
	// its exact bytes and permission bits, or that it does not exist yet (existed false).
	Before(ctx context.Context, abs string, data []byte, mode uint32, existed bool) error
}

// BeginChanges tells the call's checkpoint that the call starts changing the workspace now:
// a tool whose changes are found (ChangesFound) calls it right before it starts a process
// or a request that may change files. It returns only ctx's error.
func (c *Call) BeginChanges(ctx context.Context) error {
	if c == nil || c.Changes == nil {
		return nil
	}
	return c.Changes.Begin(ctx)
}

// ReportBefore records a file's exact state before the call writes it (ChangesReported).
func (c *Call) ReportBefore(ctx context.Context, abs string, data []byte, mode uint32, existed bool) error {
	if c == nil || c.Changes == nil {
		return nil
	}
	return c.Changes.Before(ctx, abs, data, mode, existed)
}

// AskRequest is what a call asks permission for.
type AskRequest struct {
	// Permission is the permission key: "read", "edit", "bash", "external_directory", ...
	Permission string
	// Patterns are what the call touches: paths, shell commands, URLs.
	Patterns []string
	// Always are the patterns an "always" answer would allow; empty means Patterns.
	Always []string
	// Metadata is shown to the person: a unified diff for edits, the command and working
	// directory for shell.
	Metadata map[string]any
	// Destructive asks the editor to use a modal.
	Destructive bool
	// Opaque marks patterns no analysis could see through (shell text under eval, an
	// unparseable line): no rule or remembered answer allows them, and an "always" answer
	// is not offered.
	Opaque bool
	// ExactOnly are patterns that a rule or remembered answer with a wildcard does not
	// allow (shell commands whose arguments do not fit their safe grammar), with why: see
	// permission.Query.ExactOnly.
	ExactOnly map[string]string
	// Reasons say why an Opaque request is opaque (the shell analysis's words): the
	// decision's provenance carries them.
	Reasons []string
	// Sandboxed marks a request of a call that runs in the OS sandbox, whose policy would
	// allow what the request covers, with the sandbox's auto-allow on: the pipeline allows
	// it without asking when nothing but the built-in defaults asks for it, as
	// permission.MayRelax decides (a deny rule still denies; a rule a person or the
	// workspace wrote that asks, an Opaque or exact-only request and a write to a protected
	// path still ask). The decision then says "sandbox".
	Sandboxed bool
}

// Result is what a tool returns.
type Result struct {
	Title       string
	Output      string
	Metadata    map[string]any
	Attachments []Attachment
	// NoTruncate marks output that is already bounded by the tool (read pages its file);
	// the pipeline still keeps it under a hard cap.
	NoTruncate bool
}

// Attachment is a file returned besides the text; the pipeline gives it an id and the
// session and message it belongs to.
type Attachment struct {
	Mime     string
	Filename string
	Data     []byte
}

// OutputReader reads stored full outputs by id, by lines.
type OutputReader interface {
	// ReadLines returns up to limit lines from line offset (0-based) of the output, joined
	// with "\n", and the output's total line and byte counts.
	ReadLines(ctx context.Context, outputID string, offset, limit int) (content string, totalLines int, totalBytes int64, err error)
}

// SessionState keeps small per-session values.
type SessionState interface {
	Get(ctx context.Context, key string) ([]byte, error) // nil, nil when absent
	Put(ctx context.Context, key string, value []byte) error
}

// PermissionError is the error Ask returns when a call may not proceed. Its text is written
// for the model.
type PermissionError struct {
	// Kind is "deny" (a rule), "reject" (a person), "no-ui" (no one to ask), "cancel".
	Kind    string
	Message string
}

func (e *PermissionError) Error() string { return e.Message }

// ErrOutputNotFound is returned by an OutputReader for an unknown output id.
var ErrOutputNotFound = errors.New("registry: output not found")

// OutputURIPrefix starts the pseudo path under which the model reads a stored full output
// with the read tool: "toolsd://output/<outputID>".
const OutputURIPrefix = "toolsd://output/"
