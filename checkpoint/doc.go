// Package checkpoint records what each changing call did to the workspace, and undoes it.
//
// This doc states the promise; docs/checkpoints.md is for users (what is tracked, limits).
//
// # What a checkpoint is
//
// Every call that can change the workspace opens a Window. A tool that knows what it
// changes (write, edit, apply_patch, a revert) reports each file with its exact bytes and
// mode before it writes it (Window.Before): its checkpoint holds exactly those files. Any
// other tool (bash, project tools, MCP tools not marked read-only) opens its window right
// before it starts what may change the workspace (Window.Begin) and closes it when it ends
// (Window.End): its checkpoint holds every path found changed in between — created,
// modified, deleted (renames are a deletion and a creation with the same content), mode
// changes, symbolic links, folders, binary files alike. Paths the workspace's .gitignore
// and .ignore files leave out, and .git itself, are not tracked.
//
// # The index and how changes are found without reading the workspace
//
// The Tracker keeps an index of the workspace: every tracked path with its stat identity
// (kind, mode, size, mtime, ctime, inode) and the id of its content. A look at the
// workspace (a sync) compares paths with the index and reads only those whose identity
// changed. Which paths it looks at comes from the change journal — inotify watches on every
// folder that is not ignored, drained behind a barrier so that no event before the drain is
// missed — or, when the journal cannot be trusted (it overflowed, a folder was renamed, an
// ignore file changed, a watch was refused) or there is none, from a walk of the whole
// workspace (stat calls only). When the kernel refuses the journal (inotify's watch or
// instance limit), Options.OnJournal hears it at once, with the cost and the fix; the refused
// journal is closed and tried again at the first walk after the limits change or a backoff.
// The journal also tells the sandbox what a confined command made without a walk
// (Tracker.Follow, follow.go): the git folders and git files there are, the folders it does
// not watch, and those created while the command ran. The folders it does not watch are
// looked into from listings kept while each folder's identity and ctime stay (ignored.go).
//
// The index is a B-tree in path order (what was below a path gone is one range). The store
// keeps it as a base (the whole index, written at once) and the changes since, folded into
// a new base when they are many.
//
// The first look after an open is one walk (stat calls; each folder watched before it is
// listed, which covers the time between the open and the watches), with the stored index
// loaded and git's index read beside it; Open returns at once. A window that looks at the
// workspace (Begin) waits for that look, and, the first time, for the base to be stored:
// the state before a shell command's change cannot be found afterwards, so no such call
// starts before every path's state is known and kept.
//
// The state before a change must be kept before the change happens: every version the index names is in the store, except files that are exactly
// what the workspace's git index says (same stat, not racy, no filter or line-ending
// conversion): their bytes are the blob git already keeps, so the first look at a git
// workspace reads none of them. When a call changes such a file, its blob is copied from
// git's object store (git cat-file --batch) into the store as the call's checkpoint is
// recorded. toolsd runs no git command that could run something the repository
// configures (no status, no hooks, no fsmonitor, no filters).
//
// # Honest attribution
//
// A file a tool reported is the tool's ("call"). A file found changed between Begin and End
// is "during": the call, or the person or another program at the same time — toolsd cannot
// tell them apart and says so. When other changing calls were open at the same time and the
// same path changed, each checkpoint names the others (AlsoTouchedBy), and every
// checkpoint lists the calls that overlapped it (Concurrent). Changes found while no call
// was open are the person's (or another program's): they are in no checkpoint, and a revert
// that would overwrite one reports a conflict "changed outside toolsd".
//
// # Storage and limits
//
// Contents are stored by the store, content-addressed and split into content-defined
// chunks, so an unchanged file costs nothing and a small edit of a large file stores a
// chunk or two. A file over Options.MaxFileBytes, and content beyond Options.MaxCallBytes
// in one look, is recorded as changed with its content not kept (it cannot be reverted).
// Checkpoints follow the store's retention: after retentionDays they are pruned with the
// content only they kept.
//
// # Revert and crashes
//
// Plan walks the reverted calls' checkpoints newest first, each path going back to its
// state before the earliest reverted call that changed it, and reports a conflict where the
// path is not what the last of them left (changed since by a later call, or outside
// toolsd). Apply restores each path atomically (a temporary file renamed over it) inside the
// revert's own exact window, so the revert is itself a checkpoint and can be reverted.
//
// Crash safety: a window's open checkpoint (with the states before the call that are known
// so far) is committed before the call changes anything it reports, and updated with every
// look; a window that looks at the workspace opens only once the index is stored; finished
// checkpoints are committed with the index's changes in one transaction. When the
// daemon is killed in the middle of a call or a revert, the next Open finds the open
// checkpoints, looks at the workspace, and records what changed since as the interrupted
// call's ("interrupted"): every file is then either as it was or as the call left it, and
// every change can still be reverted.
package checkpoint
