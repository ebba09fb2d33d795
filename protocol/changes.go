package protocol

// Methods of checkpoints: what a call changed in the workspace, and undoing it.
const (
	MethodCallsChanges = "calls/changes"
	MethodCallsRevert  = "calls/revert"
)

// The tool name of the call record a revert leaves (it can itself be reverted). It is not a
// valid tool id, so no tool can take it.
const ToolRevert = "toolsd.revert"

// CallRef names a call.
type CallRef struct {
	SessionID string `json:"sessionID"`
	CallID    string `json:"callID"`
	Tool      string `json:"tool,omitempty"`
}

// CallsChangesParams are the params of calls/changes: one call's changes, or with an empty
// callID the net changes of every call of the session.
type CallsChangesParams struct {
	SessionID string `json:"sessionID"`
	CallID    string `json:"callID,omitempty"`
	// Path keeps only this file (workspace-relative).
	Path string `json:"path,omitempty"`
	// Contents adds each file's text before and after (files that are not UTF-8 text, or
	// whose content was not kept, have none).
	Contents bool `json:"contents,omitempty"`
}

// File change statuses.
const (
	ChangeAdded       = "added"
	ChangeModified    = "modified"
	ChangeDeleted     = "deleted"
	ChangeRenamed     = "renamed"
	ChangeTypeChanged = "typeChanged" // a file became a link or a folder, or the reverse
)

// FileChangeInfo is one changed path of calls/changes.
type FileChangeInfo struct {
	Path    string `json:"path"`
	OldPath string `json:"oldPath,omitempty"` // renamed: where it was
	Status  string `json:"status"`
	// Kind and OldKind: "file", "link", "dir", or "" (absent).
	Kind    string `json:"kind"`
	OldKind string `json:"oldKind"`
	Mode    uint32 `json:"mode,omitempty"`
	OldMode uint32 `json:"oldMode,omitempty"`
	// Binary: either side is not UTF-8 text; Diff then says so in one line.
	Binary    bool   `json:"binary,omitempty"`
	Diff      string `json:"diff"`
	Additions int    `json:"additions"`
	Deletions int    `json:"deletions"`
	// NotKept says why a side's content was not kept (over a size cap): the change is
	// known, its content is not, and it cannot be reverted.
	NotKept string `json:"notKept,omitempty"`
	// Attribution: "call" (the tool reported it), "during" (found changed while the call
	// ran: the call or someone else in that time), "interrupted" (the daemon died during the
	// call: changed during it or while toolsd was not running).
	Attribution   string    `json:"attribution"`
	AlsoTouchedBy []CallRef `json:"alsoTouchedBy"`
	// Calls are the calls that changed this path (a session's changes).
	Calls  []CallRef `json:"calls"`
	Before *string   `json:"before,omitempty"`
	After  *string   `json:"after,omitempty"`
}

// CallsChangesResult is the result of calls/changes.
type CallsChangesResult struct {
	Files []FileChangeInfo `json:"files"`
	// Calls are the calls whose changes these are, newest first.
	Calls []CallRef `json:"calls"`
	// Concurrent are other changing calls that ran at the same time.
	Concurrent []CallRef `json:"concurrent"`
	Notes      []string  `json:"notes"`
}

// Revert scopes.
const (
	RevertCall = "call" // the call alone
	RevertFrom = "from" // the call and every later call of its session, newest first
)

// CallsRevertParams are the params of calls/revert.
type CallsRevertParams struct {
	SessionID string `json:"sessionID"`
	CallID    string `json:"callID"`
	Scope     string `json:"scope,omitempty"`
	// Force restores files that changed since, overwriting those changes.
	Force bool `json:"force,omitempty"`
	// DryRun only says what the revert would do (for a confirmation).
	DryRun bool `json:"dryRun,omitempty"`
}

// Revert statuses.
const (
	RevertPlanned  = "planned"  // a dry run
	RevertDone     = "reverted" // the files are restored
	RevertConflict = "conflict" // refused: files changed since (see Files' conflicts)
	RevertNothing  = "nothing"  // the calls changed nothing that differs now
)

// RevertFile is one path of a revert.
type RevertFile struct {
	Path string `json:"path"`
	// Action: "restore" (write the content back), "delete" (the calls created it),
	// "create" (the calls deleted it).
	Action string `json:"action"`
	// Conflict says why restoring would lose a change made since; empty when none.
	Conflict string `json:"conflict,omitempty"`
	// ChangedBy are the later calls that changed the file (none: changed outside toolsd).
	ChangedBy     []CallRef `json:"changedBy"`
	AlsoTouchedBy []CallRef `json:"alsoTouchedBy"`
	// Skipped: left as it is (its earlier content was not kept, or it changed while the
	// revert ran).
	Skipped string `json:"skipped,omitempty"`
}

// CallsRevertResult is the result of calls/revert.
type CallsRevertResult struct {
	Status string `json:"status"`
	// RevertCallID is the call record the revert left (in the reverted calls' session).
	RevertCallID string       `json:"revertCallID,omitempty"`
	Calls        []CallRef    `json:"calls"`
	Files        []RevertFile `json:"files"`
	Concurrent   []CallRef    `json:"concurrent"`
	Message      string       `json:"message"`
}
