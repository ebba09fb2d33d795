package store

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Kinds of a FileState.
const (
	KindAbsent = ""
	KindFile   = "file"
	KindLink   = "link"
	KindDir    = "dir"
)

// FileState is one path of the workspace as toolsd saw it at one time: what it was (absent,
// a file, a symbolic link, a folder), its mode, and where its content is kept.
type FileState struct {
	Kind string `json:"kind,omitempty"`
	Mode uint32 `json:"mode,omitempty"` // permission bits
	Size int64  `json:"size,omitempty"`
	// Content is the ContentID of a file's bytes when the store keeps them.
	Content string `json:"content,omitempty"`
	// Git is the workspace's own git blob id of a file whose bytes are, so far, kept only
	// in the workspace's git object store (a clean tracked file).
	Git string `json:"git,omitempty"`
	// Link is a symbolic link's target.
	Link string `json:"link,omitempty"`
	// NotKept says why a file's bytes were not kept (over a size cap, unreadable).
	NotKept string `json:"notKept,omitempty"`
	// The stat identity that tells a change without reading the file (index only).
	Mtime int64  `json:"mtime,omitempty"`
	Ctime int64  `json:"ctime,omitempty"`
	Ino   uint64 `json:"ino,omitempty"`
}

// CallRef names a call.
type CallRef struct {
	SessionID string `json:"sessionID"`
	CallID    string `json:"callID"`
	Tool      string `json:"tool,omitempty"`
}

// FileChange is one path a call changed: its state before and after the call.
type FileChange struct {
	Path   string     `json:"path"` // workspace-relative, slash-separated
	Before FileState  `json:"before"`
	After  *FileState `json:"after,omitempty"` // nil while the call runs
	// Attribution: "call" (the tool reported the change itself), "during" (found changed
	// while the call ran), "interrupted" (found changed after the daemon died during it).
	Attribution   string    `json:"attribution"`
	AlsoTouchedBy []CallRef `json:"alsoTouchedBy,omitempty"`
}

// Checkpoint is what one call changed in the workspace.
type Checkpoint struct {
	SessionID string `json:"sessionID"`
	CallID    string `json:"callID"`
	Tool      string `json:"tool"`
	// Exact: the tool reported each change with its exact images (write, edit,
	// apply_patch, a revert); otherwise the changes were found by comparing the
	// workspace before and after.
	Exact       bool         `json:"exact,omitempty"`
	Interrupted bool         `json:"interrupted,omitempty"`
	StartedAt   time.Time    `json:"startedAt"`
	EndedAt     *time.Time   `json:"endedAt,omitempty"`
	Files       []FileChange `json:"files"`
	// Concurrent are the other changing calls whose time overlapped this one's.
	Concurrent []CallRef `json:"concurrent,omitempty"`
	// Reverts are, for a revert, the calls it reverted (newest first).
	Reverts []CallRef `json:"reverts,omitempty"`
	Notes   []string  `json:"notes,omitempty"`
}

// CheckpointUpdate is one transaction of checkpoint state: index entries put (nil: the path
// is gone), open checkpoints created or replaced, finished ones recorded (and removed from
// the open ones).
type CheckpointUpdate struct {
	Index map[string]*FileState
	Open  []*Checkpoint
	Done  []*Checkpoint
}

// The checkpoint index is stored in two parts. Its base (bucketCPIndexBase) is the whole
// index as it was at one time, in path order, written in one transaction by
// WriteCheckpointIndex: a first index of 100,000 paths is a few megabytes put at once, which
// costs a tenth of the same entries put one by one. Every change since is one entry of
// bucketCPIndex (a path that is gone: an entry of kind absent, when a base names it), until
// the next base replaces both.

// indexIncomplete is the key (no path has a NUL) that marks an index being made anew until
// its base is written (StartCheckpointIndex; earlier versions wrote it in several
// transactions): such an index never finished (the daemon died) and is made again.
var indexIncomplete = []byte("\x00incomplete")

// basePiece is how many bytes of the base one value holds.
const basePiece = 1 << 20

// CheckpointIndexComplete reports whether the store holds a whole checkpoint index (one was
// written, and not left half written).
func (s *Store) CheckpointIndexComplete() (bool, error) {
	complete := false
	err := s.view(func(tx *bolt.Tx) error {
		ib := tx.Bucket(bucketCPIndex)
		k, _ := ib.Cursor().First()
		base, _ := tx.Bucket(bucketCPIndexBase).Cursor().First()
		complete = (k != nil || base != nil) && ib.Get(indexIncomplete) == nil
		return nil
	})
	return complete, err
}

// StartCheckpointIndex empties the checkpoint index and marks it incomplete until a base is
// written (WriteCheckpointIndex): the index is being made anew, and a daemon that dies
// before its base is stored leaves nothing that looks whole.
func (s *Store) StartCheckpointIndex() error {
	return s.update(func(tx *bolt.Tx) error {
		if err := emptyBuckets(tx, bucketCPIndexBase, bucketCPIndex); err != nil {
			return err
		}
		return tx.Bucket(bucketCPIndex).Put(indexIncomplete, []byte{})
	})
}

// emptyBuckets empties buckets (made anew: deleting every key would cost a write each).
func emptyBuckets(tx *bolt.Tx, names ...[]byte) error {
	for _, b := range names {
		if err := tx.DeleteBucket(b); err != nil {
			return err
		}
		if _, err := tx.CreateBucket(b); err != nil {
			return err
		}
	}
	return nil
}

// LoadCheckpointIndex calls fn for every path of the checkpoint index base, in path order,
// then for every change since (in path order too; a path gone comes with a state of kind
// absent). changes is how many changes there are: WriteCheckpointIndex folds them into a new
// base. An index left half written is not loaded (complete false).
func (s *Store) LoadCheckpointIndex(fn func(path string, st FileState)) (complete bool, changes int, err error) {
	err = s.view(func(tx *bolt.Tx) error {
		ib := tx.Bucket(bucketCPIndex)
		if ib.Get(indexIncomplete) != nil {
			return nil
		}
		complete = true
		if err := readIndexBase(tx, fn); err != nil {
			return err
		}
		return ib.ForEach(func(k, v []byte) error {
			st, err := decodeIndexState(v)
			if err != nil {
				return fmt.Errorf("%w: checkpoint index entry %q: %v", ErrCorrupt, k, err)
			}
			changes++
			fn(string(k), st)
			return nil
		})
	})
	return complete, changes, err
}

// WriteCheckpointIndex writes the paths that each yields (in path order; none of kind
// absent) as the checkpoint index's base, in one transaction. With fold, the changes written
// so far are in it and go; without, they are newer than it and stay.
func (s *Store) WriteCheckpointIndex(each func(yield func(path string, st *FileState) bool), fold bool) error {
	// The base is the entries one after the other: the length of the path's prefix shared
	// with the previous path and the rest of it (uvarints and bytes), then the length of the
	// state and the state (encodeIndexState).
	var pieces [][]byte // basePiece bytes each, the last one less
	put := func(b []byte) {
		for len(b) > 0 {
			if len(pieces) == 0 || len(pieces[len(pieces)-1]) == basePiece {
				pieces = append(pieces, make([]byte, 0, basePiece))
			}
			last := &pieces[len(pieces)-1]
			n := min(len(b), basePiece-len(*last))
			*last = append(*last, b[:n]...)
			b = b[n:]
		}
	}
	var e, v []byte
	prev := ""
	var err error
	each(func(p string, st *FileState) bool {
		if p == "" || p <= prev && pieces != nil || st.Kind == KindAbsent {
			err = fmt.Errorf("%w: checkpoint index base: path %q out of order, empty, or absent", ErrInvalid, p)
			return false
		}
		if v, err = appendIndexState(v[:0], st); err != nil {
			return false
		}
		n := 0
		for n < len(p) && n < len(prev) && p[n] == prev[n] {
			n++
		}
		e = binary.AppendUvarint(e[:0], uint64(n))
		e = binary.AppendUvarint(e, uint64(len(p)-n))
		e = append(e, p[n:]...)
		e = binary.AppendUvarint(e, uint64(len(v)))
		put(append(e, v...))
		prev = p
		return true
	})
	if err != nil {
		return err
	}
	return s.update(func(tx *bolt.Tx) error {
		clear := [][]byte{bucketCPIndexBase}
		if fold {
			clear = append(clear, bucketCPIndex)
		}
		if err := emptyBuckets(tx, clear...); err != nil {
			return err
		}
		if err := tx.Bucket(bucketCPIndex).Delete(indexIncomplete); err != nil {
			return err
		}
		bb := tx.Bucket(bucketCPIndexBase)
		for i, piece := range pieces {
			if err := bb.Put(be32(uint32(i)), piece); err != nil {
				return err
			}
		}
		return nil
	})
}

// readIndexBase calls fn for every entry of the index's base.
func readIndexBase(tx *bolt.Tx, fn func(path string, st FileState)) error {
	var pieces [][]byte // valid until the transaction ends
	size := 0
	if err := tx.Bucket(bucketCPIndexBase).ForEach(func(_, v []byte) error {
		pieces, size = append(pieces, v), size+len(v)
		return nil
	}); err != nil {
		return err
	}
	b := make([]byte, 0, size)
	for _, v := range pieces {
		b = append(b, v...)
	}
	var prev []byte
	for len(b) > 0 {
		var f [3]uint64
		for i := range f {
			x, n := binary.Uvarint(b)
			if n <= 0 {
				return fmt.Errorf("%w: checkpoint index base: truncated", ErrCorrupt)
			}
			b = b[n:]
			f[i] = x
			if i == 1 {
				// The path: f[0] bytes of the previous one, then f[1] new bytes.
				if f[0] > uint64(len(prev)) || f[1] > uint64(len(b)) {
					return fmt.Errorf("%w: checkpoint index base: malformed path", ErrCorrupt)
				}
				prev = append(prev[:f[0]], b[:f[1]]...)
				b = b[f[1]:]
			}
		}
		if f[2] > uint64(len(b)) {
			return fmt.Errorf("%w: checkpoint index base: truncated state", ErrCorrupt)
		}
		st, err := decodeIndexState(b[:f[2]])
		if err != nil {
			return fmt.Errorf("%w: checkpoint index base entry %q: %v", ErrCorrupt, prev, err)
		}
		b = b[f[2]:]
		fn(string(prev), st)
	}
	return nil
}

// An index entry is written in a compact binary form (a large workspace has one per file:
// decoding JSON was most of a reopen), indexFormat then kind, mode, size, mtime, ctime and
// inode as varints, then content, git, link and notKept, each a uvarint length and its
// bytes. An entry that starts with '{' is JSON, as earlier versions wrote it.
const indexFormat = 1

var kinds = [...]string{KindAbsent, KindFile, KindLink, KindDir}

func encodeIndexState(st *FileState) ([]byte, error) {
	return appendIndexState(make([]byte, 0, 48+len(st.Content)+len(st.Git)+len(st.Link)+len(st.NotKept)), st)
}

// appendIndexState is encodeIndexState appending to b.
func appendIndexState(b []byte, st *FileState) ([]byte, error) {
	kind := -1
	for i, k := range kinds {
		if st.Kind == k {
			kind = i
		}
	}
	if kind < 0 {
		return nil, fmt.Errorf("%w: unknown kind %q in the checkpoint index", ErrInvalid, st.Kind)
	}
	b = append(b, indexFormat, byte(kind))
	b = binary.AppendUvarint(b, uint64(st.Mode))
	b = binary.AppendVarint(b, st.Size)
	b = binary.AppendVarint(b, st.Mtime)
	b = binary.AppendVarint(b, st.Ctime)
	b = binary.AppendUvarint(b, st.Ino)
	for _, f := range [...]string{st.Content, st.Git, st.Link, st.NotKept} {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	return b, nil
}

var errIndexEntry = errors.New("truncated or malformed entry")

// absentState is an index entry of kind absent: a path gone since the base.
var absentState, _ = encodeIndexState(&FileState{})

func decodeIndexState(v []byte) (FileState, error) {
	var st FileState
	if len(v) > 0 && v[0] == '{' {
		err := json.Unmarshal(v, &st)
		return st, err
	}
	if len(v) < 2 || v[0] != indexFormat || int(v[1]) >= len(kinds) {
		return st, errIndexEntry
	}
	st.Kind = kinds[v[1]]
	v = v[2:]
	uv := func() uint64 {
		x, n := binary.Uvarint(v)
		if n <= 0 {
			v = nil
			return 0
		}
		v = v[n:]
		return x
	}
	sv := func() int64 {
		x, n := binary.Varint(v)
		if n <= 0 {
			v = nil
			return 0
		}
		v = v[n:]
		return x
	}
	mode := uv()
	st.Mode = uint32(mode)
	st.Size, st.Mtime, st.Ctime = sv(), sv(), sv()
	st.Ino = uv()
	for _, f := range [...]*string{&st.Content, &st.Git, &st.Link, &st.NotKept} {
		n := uv()
		if v == nil || n > uint64(len(v)) {
			return st, errIndexEntry
		}
		*f = string(v[:n])
		v = v[n:]
	}
	if v == nil || len(v) != 0 || mode > 0o7777 {
		return st, errIndexEntry
	}
	return st, nil
}

// callSeq finds the sequence key of a call.
func callSeq(tx *bolt.Tx, sessionID, callID string) ([]byte, error) {
	k := tx.Bucket(bucketCallIndex).Get(callKey(sessionID, callID))
	if k == nil {
		return nil, fmt.Errorf("%w: no call %q in session %q", ErrNotFound, callID, sessionID)
	}
	return bytes.Clone(k), nil
}

// kv is a key and its value (nil: the path is gone).
type kv struct{ k, v []byte }

// UpdateCheckpoints commits u in one transaction. An open or finished checkpoint must belong
// to a recorded call (ErrNotFound otherwise).
func (s *Store) UpdateCheckpoints(u *CheckpointUpdate) error {
	type enc struct {
		cp  *Checkpoint
		val []byte
	}
	encode := func(cps []*Checkpoint) ([]enc, error) {
		out := make([]enc, 0, len(cps))
		for _, cp := range cps {
			if err := checkID("sessionID", cp.SessionID); err != nil {
				return nil, err
			}
			if err := checkID("callID", cp.CallID); err != nil {
				return nil, err
			}
			v, err := json.Marshal(cp)
			if err != nil {
				return nil, err
			}
			out = append(out, enc{cp, v})
		}
		return out, nil
	}
	open, err := encode(u.Open)
	if err != nil {
		return err
	}
	done, err := encode(u.Done)
	if err != nil {
		return err
	}
	// In key order: bbolt splits a leaf only when the transaction commits, so puts in
	// random order into one leaf each move half of it (the first index of a 100k-file
	// workspace: 16 s unsorted, well under a second sorted).
	index := make([]kv, 0, len(u.Index))
	for p, st := range u.Index {
		if p == "" {
			return fmt.Errorf("%w: empty path in the checkpoint index", ErrInvalid)
		}
		e := kv{k: []byte(p)}
		if st != nil {
			v, err := encodeIndexState(st)
			if err != nil {
				return err
			}
			e.v = v
		}
		index = append(index, e)
	}
	slices.SortFunc(index, func(a, b kv) int { return bytes.Compare(a.k, b.k) })
	return s.update(func(tx *bolt.Tx) error {
		ib := tx.Bucket(bucketCPIndex)
		for _, e := range index {
			v := e.v
			if v == nil {
				v = absentState // a base, now or to come, may name it
			}
			if err := ib.Put(e.k, v); err != nil {
				return err
			}
		}
		ob := tx.Bucket(bucketCPOpen)
		for _, e := range open {
			seq, err := callSeq(tx, e.cp.SessionID, e.cp.CallID)
			if err != nil {
				return err
			}
			if err := ob.Put(seq, e.val); err != nil {
				return err
			}
		}
		rb, pb := tx.Bucket(bucketCPRecords), tx.Bucket(bucketCPPaths)
		for _, e := range done {
			seq, err := callSeq(tx, e.cp.SessionID, e.cp.CallID)
			if err != nil {
				return err
			}
			if err := ob.Delete(seq); err != nil {
				return err
			}
			if err := rb.Put(seq, e.val); err != nil {
				return err
			}
			for _, f := range e.cp.Files {
				if err := pb.Put(join(f.Path, seq), nil); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// OpenCheckpoints returns the checkpoints of calls that were running when their daemon
// stopped (or are running now), oldest first.
func (s *Store) OpenCheckpoints() ([]*Checkpoint, error) {
	var out []*Checkpoint
	err := s.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketCPOpen).ForEach(func(k, v []byte) error {
			var cp Checkpoint
			if err := json.Unmarshal(v, &cp); err != nil {
				s.log.Warn("skipping a damaged open checkpoint", "seq", hex.EncodeToString(k), "err", err)
				return nil
			}
			out = append(out, &cp)
			return nil
		})
	})
	return out, err
}

// Checkpoint returns the checkpoint of a call (a finished one, or the open one of a call
// still running). A call without one -> ErrNotFound.
func (s *Store) Checkpoint(sessionID, callID string) (*Checkpoint, error) {
	var cp *Checkpoint
	err := s.view(func(tx *bolt.Tx) error {
		seq, err := callSeq(tx, sessionID, callID)
		if err != nil {
			return err
		}
		cp, err = getCheckpoint(tx, seq)
		if err == nil && cp == nil {
			err = fmt.Errorf("%w: call %q of session %q changed no files (or its checkpoint expired)", ErrNotFound, callID, sessionID)
		}
		return err
	})
	return cp, err
}

func getCheckpoint(tx *bolt.Tx, seq []byte) (*Checkpoint, error) {
	v := tx.Bucket(bucketCPRecords).Get(seq)
	if v == nil {
		v = tx.Bucket(bucketCPOpen).Get(seq)
	}
	if v == nil {
		return nil, nil
	}
	var cp Checkpoint
	if err := json.Unmarshal(v, &cp); err != nil {
		return nil, fmt.Errorf("%w: checkpoint: %v", ErrCorrupt, err)
	}
	return &cp, nil
}

// SessionCheckpoints returns the checkpoints of a session's calls from the call fromCallID
// on (inclusive; every call of the session when it is empty), newest first.
func (s *Store) SessionCheckpoints(sessionID, fromCallID string) ([]*Checkpoint, error) {
	if err := checkID("sessionID", sessionID); err != nil {
		return nil, err
	}
	var out []*Checkpoint
	err := s.view(func(tx *bolt.Tx) error {
		var from []byte
		if fromCallID != "" {
			var err error
			if from, err = callSeq(tx, sessionID, fromCallID); err != nil {
				return err
			}
		}
		prefix := join(sessionID, nil)
		c := tx.Bucket(bucketCallsBySession).Cursor()
		for k, _ := seekLastWithPrefix(c, prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Prev() {
			seq := k[len(prefix):]
			if from != nil && bytes.Compare(seq, from) < 0 {
				break
			}
			cp, err := getCheckpoint(tx, seq)
			if err != nil {
				return err
			}
			if cp != nil {
				out = append(out, cp)
			}
		}
		return nil
	})
	return out, err
}

// LaterChanges returns the calls recorded after the call (sessionID, callID) that changed
// path, oldest first.
func (s *Store) LaterChanges(path, sessionID, callID string) ([]CallRef, error) {
	var out []CallRef
	err := s.view(func(tx *bolt.Tx) error {
		seq, err := callSeq(tx, sessionID, callID)
		if err != nil {
			return err
		}
		prefix := join(path, nil)
		c := tx.Bucket(bucketCPPaths).Cursor()
		for k, _ := c.Seek(join(path, seq)); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			s2 := k[len(prefix):]
			if bytes.Equal(s2, seq) {
				continue
			}
			cp, err := getCheckpoint(tx, s2)
			if err != nil || cp == nil {
				continue
			}
			out = append(out, CallRef{SessionID: cp.SessionID, CallID: cp.CallID, Tool: cp.Tool})
		}
		return nil
	})
	return out, err
}

// PruneCheckpoints deletes the checkpoints of calls that ended more than Options.Retention
// ago, and the content only they kept (see pruneCheckpoints). The background pruner calls it
// with Prune.
func (s *Store) PruneCheckpoints() (int, error) {
	if s.opts.Retention < 0 {
		return 0, nil
	}
	s.pruneMu.Lock()
	defer s.pruneMu.Unlock()
	return s.pruneCheckpoints(s.now().Add(-s.opts.Retention))
}

// pruneCheckpoints deletes the checkpoints of calls that ended before cutoff, then every
// stored content that neither the index, an open checkpoint nor a kept checkpoint names
// (and that is older than cutoff, so content stored for a checkpoint not yet committed is
// never taken). It returns how many checkpoints it deleted.
func (s *Store) pruneCheckpoints(cutoff time.Time) (int, error) {
	deleted := 0
	// Look before writing: most passes (every start of a daemon) find nothing to delete.
	due := false
	if err := s.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketCPRecords).Cursor()
		for k, v := c.First(); k != nil && binary.BigEndian.Uint64(k) < uint64(cutoff.UnixNano()); k, v = c.Next() {
			var cp Checkpoint
			if err := json.Unmarshal(v, &cp); err != nil || cp.EndedAt == nil || !cp.EndedAt.After(cutoff) {
				due = true
				return nil
			}
		}
		return nil
	}); err != nil {
		return 0, err
	}
	for due {
		n, more := 0, false
		err := s.update(func(tx *bolt.Tx) error {
			n, more = 0, false
			rb, pb := tx.Bucket(bucketCPRecords), tx.Bucket(bucketCPPaths)
			type victim struct {
				seq   []byte
				paths []string
			}
			var victims []victim
			c := rb.Cursor()
			for k, v := c.First(); k != nil; k, v = c.Next() {
				if binary.BigEndian.Uint64(k) >= uint64(cutoff.UnixNano()) {
					break // seq is at least the call's creation time: the rest is newer
				}
				var cp Checkpoint
				if err := json.Unmarshal(v, &cp); err == nil && cp.EndedAt != nil && cp.EndedAt.After(cutoff) {
					continue
				}
				if len(victims) == pruneBatch {
					more = true
					break
				}
				vi := victim{seq: bytes.Clone(k)}
				for _, f := range cp.Files {
					vi.paths = append(vi.paths, f.Path)
				}
				victims = append(victims, vi)
			}
			for _, vi := range victims {
				if err := rb.Delete(vi.seq); err != nil {
					return err
				}
				for _, p := range vi.paths {
					if err := pb.Delete(join(p, vi.seq)); err != nil {
						return err
					}
				}
				n++
			}
			return nil
		})
		if err != nil {
			return deleted, err
		}
		deleted += n
		if !more {
			break
		}
	}
	return deleted, s.collectContent(cutoff)
}

// collectEvery is how often, at most, collectContent marks what is live.
const collectEvery = 24 * time.Hour

// errFound ends a scan that found what it looked for.
var errFound = errors.New("found")

// collectContent deletes content nothing names any more (mark and sweep), and the chunks
// only such content used.
func (s *Store) collectContent(cutoff time.Time) error {
	// No content is stored meanwhile: a new manifest could name a chunk about to go.
	s.contentMu.Lock()
	defer s.contentMu.Unlock()
	// Marking decodes every checkpoint and the whole index: only when some content is old
	// enough to go (its stored time, the value's first 8 bytes), which a young workspace's
	// passes never find, and at most once a day (collectEvery), since on a workspace older
	// than the retention the index names old content at every pass.
	now := s.now()
	old := false
	err := s.view(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketMeta).Get(keyMetaCollected); len(v) == 8 && now.Sub(time.Unix(0, int64(binary.BigEndian.Uint64(v)))) < collectEvery {
			return nil
		}
		return tx.Bucket(bucketContent).ForEach(func(_, v []byte) error {
			if len(v) >= 16 && int64(binary.BigEndian.Uint64(v)) < cutoff.UnixNano() {
				old = true
				return errFound
			}
			return nil
		})
	})
	if errors.Is(err, errFound) {
		err = nil
	}
	if err != nil || !old {
		return err
	}
	live := map[string]bool{}
	mark := func(st *FileState) {
		if st != nil && st.Content != "" {
			live[st.Content] = true
		}
	}
	err = s.view(func(tx *bolt.Tx) error {
		// The index's base and its changes alike.
		if err := readIndexBase(tx, func(_ string, st FileState) { mark(&st) }); err != nil {
			return err
		}
		if err := tx.Bucket(bucketCPIndex).ForEach(func(_, v []byte) error {
			if st, err := decodeIndexState(v); err == nil {
				mark(&st)
			}
			return nil
		}); err != nil {
			return err
		}
		for _, b := range [][]byte{bucketCPRecords, bucketCPOpen} {
			if err := tx.Bucket(b).ForEach(func(_, v []byte) error {
				var cp Checkpoint
				if err := json.Unmarshal(v, &cp); err != nil {
					return fmt.Errorf("%w: checkpoint: %v (content is not collected while one is unreadable)", ErrCorrupt, err)
				}
				for i := range cp.Files {
					mark(&cp.Files[i].Before)
					mark(cp.Files[i].After)
				}
				return nil
			}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	var dead [][]byte
	chunkLive := map[[32]byte]bool{}
	err = s.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketContent).ForEach(func(k, v []byte) error {
			old := len(v) >= 16 && int64(binary.BigEndian.Uint64(v)) < cutoff.UnixNano()
			if !live[hex.EncodeToString(k)] && old {
				dead = append(dead, bytes.Clone(k))
				return nil
			}
			for i := 16; i+32 <= len(v); i += 32 {
				chunkLive[[32]byte(v[i:i+32])] = true
			}
			return nil
		})
	})
	if err == nil {
		err = s.update(func(tx *bolt.Tx) error {
			return tx.Bucket(bucketMeta).Put(keyMetaCollected, be64(uint64(now.UnixNano())))
		})
	}
	if err != nil || len(dead) == 0 {
		return err
	}
	for len(dead) > 0 {
		batch := dead[:min(len(dead), 256)]
		dead = dead[len(batch):]
		err := s.update(func(tx *bolt.Tx) error {
			cb, chb := tx.Bucket(bucketContent), tx.Bucket(bucketChunks)
			for _, k := range batch {
				m := cb.Get(k)
				for i := 16; i+32 <= len(m); i += 32 {
					if sum := [32]byte(m[i : i+32]); !chunkLive[sum] {
						if err := chb.Delete(sum[:]); err != nil {
							return err
						}
					}
				}
				if err := cb.Delete(k); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
