package store

import (
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// SchemaVersion is the layout version this package writes into the meta bucket. Open refuses a
// file with a newer version and migrates an older one (there is none yet).
const SchemaVersion = 1

// Every bucket of the store, declared here and nowhere else. Open creates them all in one
// transaction.
var (
	// bucketMeta holds keyMetaSchema (be32 version), keyMetaTrusted (be64 unix nanos of the
	// answer + one byte 0/1), keyMetaCollected (be64 unix nanos) and keyMetaNoCallLog (one
	// byte 1).
	bucketMeta = []byte("meta")

	// bucketCalls: be64(seq) -> a call (see encodeCall: its summary, then its record). seq is
	// a monotonic number that is at least the creation time in unix nanoseconds. Newest first
	// is a reverse cursor walk.
	bucketCalls = []byte("calls")
	// bucketCallIndex: callID \x00 sessionID -> be64(seq). Enforces one call per (session,
	// callID); a prefix scan finds the newest call with a callID in any session.
	bucketCallIndex = []byte("call_index")
	// bucketCallsBySession: sessionID \x00 be64(seq) -> nil. calls/list for one session.
	bucketCallsBySession = []byte("calls_by_session")
	// bucketUnfinished: be64(seq) -> nil for calls in pending or running. Open marks them
	// interrupted without scanning every call.
	bucketUnfinished = []byte("calls_unfinished")

	// bucketOutputs: outputID -> nested bucket holding keyOutMeta (JSON outputMeta), one
	// 'c'+be32(i) chunk per ChunkSize bytes and one 'n'+be32(i) line record per chunk
	// (be64 newlines before the chunk, be32 newlines in it).
	bucketOutputs = []byte("outputs")
	// bucketOutputsByTime: be64(createdAt unix nanos) outputID -> nil. Retention walks it.
	bucketOutputsByTime = []byte("outputs_by_time")
	// bucketOutputsOpen: outputID -> nil for outputs whose writer has not closed. Open
	// finalizes what a dead daemon left (as partial outputs).
	bucketOutputsOpen = []byte("outputs_open")
	// bucketOutputsExpired: outputID -> be64(unix nanos of the pruning). ReadOutput tells an
	// expired output from an unknown one.
	bucketOutputsExpired = []byte("outputs_expired")

	// bucketSessionValues: sessionID \x00 key -> be64(unix nanos written) value.
	bucketSessionValues = []byte("session_values")
	// bucketApprovals: permission \x00 pattern -> be64(unix nanos of the answer) followed by
	// who gave it (the client's name, UTF-8; absent in files written before it was kept).
	bucketApprovals = []byte("approvals")

	// Checkpoints (see checkpoints.go and content.go).
	//
	// bucketContent: sha256(content) -> a content manifest: be64(created unix nanos),
	// be64(size), then the sha256 of each chunk in order. Content-addressed: the same bytes
	// are stored once, whatever path or call they belong to.
	bucketContent = []byte("cp_content")
	// bucketChunks: sha256(chunk) -> one byte (0 raw, 1 deflate) and the chunk's bytes. A
	// chunk is written in the transaction of the first manifest that names it.
	bucketChunks = []byte("cp_chunks")
	// bucketCPIndex: workspace-relative path -> FileState (binary, see encodeIndexState;
	// JSON from earlier versions), what changed since the base of the index: the
	// workspace as toolsd last saw it (stat identity and content id), the pre-image of the
	// next change. A path gone is a state of kind absent (when a base names it).
	bucketCPIndex = []byte("cp_index")
	// bucketCPIndexBase: be32(i) -> the i-th piece (1 MiB) of the base of the index: every
	// path and its state at one time, in path order (see WriteCheckpointIndex).
	bucketCPIndexBase = []byte("cp_index_base")
	// bucketCPRecords: be64(call seq) -> JSON Checkpoint of a finished call.
	bucketCPRecords = []byte("cp_records")
	// bucketCPOpen: be64(call seq) -> JSON Checkpoint of a call still running (its files
	// carry the states before the call only). Open finds what a dead daemon left here.
	bucketCPOpen = []byte("cp_open")
	// bucketCPPaths: path \x00 be64(call seq) -> nil: which calls changed a path, in order.
	bucketCPPaths = []byte("cp_paths")

	allBuckets = [][]byte{
		bucketMeta,
		bucketCalls, bucketCallIndex, bucketCallsBySession, bucketUnfinished,
		bucketOutputs, bucketOutputsByTime, bucketOutputsOpen, bucketOutputsExpired,
		bucketSessionValues, bucketApprovals,
		bucketContent, bucketChunks, bucketCPIndex, bucketCPIndexBase, bucketCPRecords, bucketCPOpen, bucketCPPaths,
	}
)

var (
	keyMetaSchema  = []byte("schema")
	keyMetaTrusted = []byte("trusted")
	// keyMetaCollected: be64 unix nanos of the last content collection that marked.
	keyMetaCollected = []byte("contentCollected")
	// keyMetaNoCallLog: a call log beside the store is not read (see oldlog.go).
	keyMetaNoCallLog = []byte("noCallLog")
	keyOutMeta       = []byte("meta")
)

// schemaCurrent reports whether the file holds every bucket and the current schema version:
// initSchema would change nothing.
func schemaCurrent(tx *bolt.Tx) bool {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		return false
	}
	if v := meta.Get(keyMetaSchema); len(v) != 4 || binary.BigEndian.Uint32(v) != SchemaVersion {
		return false
	}
	for _, name := range allBuckets {
		if tx.Bucket(name) == nil {
			return false
		}
	}
	return true
}

// initSchema creates every bucket and checks or writes the schema version. Open runs it, in
// one transaction, on a file that is not current.
func initSchema(tx *bolt.Tx, path string) error {
	meta := tx.Bucket(bucketMeta)
	fresh := meta == nil
	if fresh {
		// A fresh file has no buckets at all. A bbolt file with other buckets is someone
		// else's database: refuse it rather than write ours into it.
		foreign := ""
		_ = tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
			foreign = string(name)
			return fmt.Errorf("stop")
		})
		if foreign != "" {
			return fmt.Errorf("%w: %s is a bbolt file without a toolsd meta bucket (it has a bucket %q): it is not a toolsd store; pass another store path", ErrCorrupt, path, foreign)
		}
	} else if v := meta.Get(keyMetaSchema); v != nil {
		if len(v) != 4 {
			return fmt.Errorf("%w: %s has a malformed schema version (%d bytes)", ErrCorrupt, path, len(v))
		}
		got := binary.BigEndian.Uint32(v)
		if got > SchemaVersion {
			return &SchemaError{Path: path, Found: int(got), Known: SchemaVersion}
		}
		// got < SchemaVersion: migrations go here when version 2 exists.
	}
	for _, name := range allBuckets {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("store: create bucket %s: %w", name, err)
		}
	}
	if fresh {
		// No earlier toolsd wrote a call log for it.
		if err := tx.Bucket(bucketMeta).Put(keyMetaNoCallLog, []byte{1}); err != nil {
			return err
		}
	}
	return tx.Bucket(bucketMeta).Put(keyMetaSchema, be32(SchemaVersion))
}

// SchemaError is returned by Open for a file written by a newer toolsd.
type SchemaError struct {
	Path  string
	Found int
	Known int
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("store: %s has schema version %d but this toolsd knows versions up to %d: upgrade toolsd, or pass another store path", e.Path, e.Found, e.Known)
}

// Is makes errors.Is(err, ErrSchema) true.
func (e *SchemaError) Is(target error) bool { return target == ErrSchema }

func be32(v uint32) []byte {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	return b[:]
}

func be64(v uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	return b[:]
}

// join makes a composite key a \x00 b.
func join(a string, b []byte) []byte {
	k := make([]byte, 0, len(a)+1+len(b))
	k = append(k, a...)
	k = append(k, 0)
	return append(k, b...)
}
