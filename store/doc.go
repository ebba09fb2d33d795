// Package store is the durable record of toolsd: calls, full outputs, per-session values and
// the workspace's persisted permission answers, in one bbolt file per workspace.
//
// # Layout
//
// Every bucket is declared in schema.go and created in one transaction by Open; the meta
// bucket holds the schema version (SchemaVersion). Open refuses a file written by a newer
// toolsd (SchemaError, ErrSchema) and a file that is not a toolsd store or is damaged
// (ErrCorrupt, naming the file); it never panics on such a file. The file is opened through
// internal/fsopen: anything but a regular file (a FIFO, a device, a socket, a folder, or a
// symlink to one) is ErrCorrupt saying what it is, refused before bbolt writes a page to it.
//
// Calls are JSON protocol.CallRecord values (each preceded by its protocol.CallSummary, so
// that listing decodes only summaries) keyed by a big-endian uint64 sequence, so newest
// first is a reverse cursor walk and a ListCalls cursor is a position in that walk. The
// sequence is monotonic and at least the creation time in unix nanoseconds. Index buckets map
// (sessionID, callID) to the sequence (which makes duplicates an error), list a session's
// calls, find the newest call with a callID, and list unfinished (pending or running) calls.
//
// A full output lives in its own nested bucket: a meta record (totals, chunk size, creation
// time), fixed-size chunks of ChunkSize bytes, and for each chunk the number of newlines
// before it and in it. An OutputWriter buffers one chunk and commits each as it fills, so a
// 1 GiB output is never in one value nor in memory. ReadOutput finds the chunk where a line
// starts by a binary search over the per-chunk newline counts and reads only the chunks its
// page touches. Lines are split on "\n" only; a "\r" before it stays part of the line. A last
// line without "\n" is a line. A page is capped at Options.MaxPageBytes; a single longer line
// is cut with a marker saying how much was left out.
//
// Memory: bbolt reads values through a read-only shared mapping of the file, so a large
// output written or read back leaves its pages in the page cache, mapped into the daemon.
// They are clean file pages (the daemon's RssFile, not its RssAnon), which the kernel drops
// when it needs the room; the daemon's own memory for an output is a chunk or two.
//
// Checkpoints (checkpoints.go, content.go) keep what each changing call did to the workspace:
// an index of the workspace (path -> FileState: a base of every path, written in one
// transaction, and the changes since, one entry each), the open checkpoints of calls in flight,
// the finished checkpoints keyed by their call's sequence, and a path index (which calls
// changed a path, in order). Contents are content-addressed: a manifest per content (its
// SHA-256) lists content-defined chunks of about 8 KiB (restic's Rabin chunker, 2 to 64 KiB),
// each stored once, deflated when that makes it smaller, so a small edit of a large file
// costs a chunk or two. Content reads are checked against their id. Checkpoints are pruned
// with outputs (Options.Retention after their call ended), then content that neither the
// index, an open checkpoint nor a kept one names is collected (mark and sweep, never content
// younger than the retention, no content stored while it runs, and a marking pass at most
// once a day, only when some content is old enough to go).
//
// Retention: a background goroutine (owned by the Store, stopped and joined by Close) deletes whole
// outputs older than Options.Retention, at most a few dozen per transaction. Call records keep
// their outputID; reading it then gives ErrExpired (which also matches ErrNotFound). The
// expiry markers (a few dozen bytes per pruned output) are kept.
//
// # Durability
//
// Every write is on record before the method returns: it is in a committed bbolt
// transaction (CreateCall, UpdateCall, each chunk of an OutputWriter and its Close,
// SessionPut, AddApprovals, SetTrusted, checkpoints). bbolt runs one write transaction at a
// time; concurrent writers wait their turn. CreateCall and UpdateCall of concurrent callers
// share commits through DB.Batch (a lone writer commits at once, see updateCall), and each
// returns after the transaction holding its write has committed. A committed transaction is
// in the kernel's page cache, and survives the daemon crashing or being killed with SIGKILL.
// That is the promise: a call whose result the daemon delivered, and every outputID it
// handed out, survive kill -9. Without Options.Sync there is no fsync (neither per commit nor when the file
// grows), so a power loss or kernel crash can lose the last writes (bbolt's two meta pages
// keep the file consistent, never half written); with Sync every commit is fsynced. On Open,
// calls found pending or running are marked interrupted (with EndedAt and an error text) and
// outputs whose writer never closed are finalized with what was committed (partial). The
// crash test re-runs the test binary as a writer and kills it with SIGKILL mid-write, several
// times.
//
// Earlier toolsds wrote calls' records to a call log beside the store first and committed
// them to bbolt in batches; a daemon killed in between left records only in the log. The
// first Open of such a store imports what the log holds before anything reads the store,
// then removes it, and never reads a log again (oldlog.go).
//
// # One process per store
//
// bbolt locks its file exclusively, and toolsd keeps it that way: one daemon owns a
// workspace folder and its store (see the attach package), and every editor window and agent
// of that folder goes through it. Open waits up to Options.Timeout for the lock and then fails
// with ErrLocked, naming the file and what to do, rather than hanging or writing elsewhere.
// That happens only when a second process opens the same file: a daemon started with
// --standalone next to the folder's owner, or two folders' daemons given one --store.
package store
