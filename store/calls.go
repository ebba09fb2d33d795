package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/toolsd/toolsd/protocol"
)

// Paging limits of ListCalls.
const (
	DefaultListLimit = 50
	MaxListLimit     = 500
)

func checkID(kind, id string) error {
	if id == "" {
		return fmt.Errorf("%w: empty %s", ErrInvalid, kind)
	}
	if strings.IndexByte(id, 0) >= 0 {
		return fmt.Errorf("%w: %s %q contains a NUL byte", ErrInvalid, kind, id)
	}
	return nil
}

// callKey is the call_index key of a call.
func callKey(sessionID, callID string) []byte { return join(callID, []byte(sessionID)) }

func unfinished(status string) bool {
	return status == protocol.StatusPending || status == protocol.StatusRunning || status == ""
}

// CreateCall records a new call. SessionID and CallID must be non-empty; a call with the same
// pair exists -> ErrDuplicate. An empty Status becomes pending and a zero StartedAt becomes
// now. The record is durable (against a crash of the process) when CreateCall returns.
func (s *Store) CreateCall(rec *protocol.CallRecord) error {
	if rec == nil {
		return fmt.Errorf("%w: nil call record", ErrInvalid)
	}
	if err := checkID("sessionID", rec.SessionID); err != nil {
		return err
	}
	if err := checkID("callID", rec.CallID); err != nil {
		return err
	}
	r := *rec
	if r.Status == "" {
		r.Status = protocol.StatusPending
	}
	if r.StartedAt.IsZero() {
		r.StartedAt = s.now()
	}
	val, err := encodeCall(&r)
	if err != nil {
		return fmt.Errorf("store: encode call %s: %w", r.CallID, err)
	}
	err = s.updateCall(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketCallIndex).Get(callKey(r.SessionID, r.CallID)) != nil {
			return fmt.Errorf("%w: call %q already exists in session %q", ErrDuplicate, r.CallID, r.SessionID)
		}
		_, err := putNewCall(tx, &r, val, s.nextSeq(tx))
		return err
	})
	if err == nil {
		rec.Status, rec.StartedAt = r.Status, r.StartedAt
	}
	return err
}

// nextSeq is the next call sequence: one more than the last, and at least now in unix nanos.
func (s *Store) nextSeq(tx *bolt.Tx) uint64 {
	seq := tx.Bucket(bucketCalls).Sequence() + 1
	if n := s.now().UnixNano(); n > 0 && uint64(n) > seq {
		seq = uint64(n)
	}
	return seq
}

// putNewCall writes a call under seq (or the next free seq above it) with all its indexes.
func putNewCall(tx *bolt.Tx, r *protocol.CallRecord, val []byte, seq uint64) (uint64, error) {
	calls := tx.Bucket(bucketCalls)
	for calls.Get(be64(seq)) != nil {
		seq++
	}
	k := be64(seq)
	if err := calls.Put(k, val); err != nil {
		return 0, err
	}
	if seq > calls.Sequence() {
		if err := calls.SetSequence(seq); err != nil {
			return 0, err
		}
	}
	if err := tx.Bucket(bucketCallIndex).Put(callKey(r.SessionID, r.CallID), k); err != nil {
		return 0, err
	}
	if err := tx.Bucket(bucketCallsBySession).Put(join(r.SessionID, k), nil); err != nil {
		return 0, err
	}
	if unfinished(r.Status) {
		if err := tx.Bucket(bucketUnfinished).Put(k, nil); err != nil {
			return 0, err
		}
	}
	return seq, nil
}

// UpdateCall changes a call in place: fn gets the stored record and changes it; the change is
// durable (against a crash of the process) when UpdateCall returns. Unknown call ->
// ErrNotFound. fn runs inside the write transaction, which concurrent callers' writes may
// share (updateCall): it must be quick, must not call the store, and must only set fields of
// the record it is given, since it may run again on a fresh copy. Its changes to SessionID
// and CallID are ignored.
func (s *Store) UpdateCall(sessionID, callID string, fn func(*protocol.CallRecord)) error {
	if err := checkID("sessionID", sessionID); err != nil {
		return err
	}
	if err := checkID("callID", callID); err != nil {
		return err
	}
	return s.updateCall(func(tx *bolt.Tx) error {
		k := tx.Bucket(bucketCallIndex).Get(callKey(sessionID, callID))
		if k == nil {
			return fmt.Errorf("%w: no call %q in session %q", ErrNotFound, callID, sessionID)
		}
		k = bytes.Clone(k)
		calls := tx.Bucket(bucketCalls)
		var rec protocol.CallRecord
		if err := decodeCall(calls.Get(k), &rec); err != nil {
			return fmt.Errorf("%w: call %q of session %q has a damaged record: %v", ErrCorrupt, callID, sessionID, err)
		}
		fn(&rec)
		rec.SessionID, rec.CallID = sessionID, callID
		val, err := encodeCall(&rec)
		if err != nil {
			return fmt.Errorf("store: encode call %s: %w", callID, err)
		}
		if err := calls.Put(k, val); err != nil {
			return err
		}
		// Touch the unfinished index only when the state crosses it: every page bbolt
		// materializes is written at commit.
		un := tx.Bucket(bucketUnfinished)
		was := un.Get(k) != nil
		switch now := unfinished(rec.Status); {
		case now && !was:
			return un.Put(k, nil)
		case !now && was:
			return un.Delete(k)
		}
		return nil
	})
}

// GetCall returns the whole record of a call. sessionID "" means the newest call with that
// callID in any session. Unknown call -> ErrNotFound.
func (s *Store) GetCall(sessionID, callID string) (*protocol.CallRecord, error) {
	if err := checkID("callID", callID); err != nil {
		return nil, err
	}
	if sessionID != "" {
		if err := checkID("sessionID", sessionID); err != nil {
			return nil, err
		}
	}
	var rec protocol.CallRecord
	err := s.view(func(tx *bolt.Tx) error {
		var k []byte
		if sessionID != "" {
			k = tx.Bucket(bucketCallIndex).Get(callKey(sessionID, callID))
		} else {
			// The newest call with this id in any session (almost always the only one).
			prefix := join(callID, nil)
			c := tx.Bucket(bucketCallIndex).Cursor()
			for ik, v := c.Seek(prefix); ik != nil && bytes.HasPrefix(ik, prefix); ik, v = c.Next() {
				if len(v) == 8 && (k == nil || bytes.Compare(v, k) > 0) {
					k = v
				}
			}
		}
		if k == nil {
			if sessionID == "" {
				return fmt.Errorf("%w: no call %q", ErrNotFound, callID)
			}
			return fmt.Errorf("%w: no call %q in session %q", ErrNotFound, callID, sessionID)
		}
		v := tx.Bucket(bucketCalls).Get(k)
		if v == nil {
			return fmt.Errorf("%w: call %q: index points at a missing record", ErrCorrupt, callID)
		}
		// Unmarshal copies everything out of v (RawMessage fields included).
		return decodeCall(v, &rec)
	})
	if err != nil {
		return nil, err
	}
	return &rec, nil
}

// seekLastWithPrefix positions c on the last key with prefix, or returns nil.
func seekLastWithPrefix(c *bolt.Cursor, prefix []byte) ([]byte, []byte) {
	// The smallest key greater than every key with prefix is prefix with its last byte
	// incremented; prefix always ends with \x00 here, so that is prefix[:n-1]+\x01.
	end := bytes.Clone(prefix)
	end[len(end)-1]++
	k, v := c.Seek(end)
	if k == nil {
		k, v = c.Last()
	} else {
		k, v = c.Prev()
	}
	if k != nil && bytes.HasPrefix(k, prefix) {
		return k, v
	}
	return nil, nil
}

// ListCalls lists calls newest first, sessionID "" meaning every session. limit <= 0 means
// DefaultListLimit and is capped at MaxListLimit. cursor is "" for the first page or the
// nextCursor of the previous page; nextCursor is "" on the last page. A cursor this store did
// not hand out -> ErrBadCursor.
//
// keep, when given, filters the calls (by client, say): a page then holds up to limit calls
// that pass it, and the cursor still resumes after the last call looked at.
func (s *Store) ListCalls(sessionID string, limit int, cursor string, keep ...func(*protocol.CallSummary) bool) ([]protocol.CallSummary, string, error) {
	if limit <= 0 {
		limit = DefaultListLimit
	}
	if limit > MaxListLimit {
		limit = MaxListLimit
	}
	if sessionID != "" {
		if err := checkID("sessionID", sessionID); err != nil {
			return nil, "", err
		}
	}
	before := uint64(0) // exclusive upper bound; 0 = none
	if cursor != "" {
		v, err := strconv.ParseUint(cursor, 36, 64)
		if err != nil || v == 0 {
			return nil, "", fmt.Errorf("%w: %q: pass the nextCursor of an earlier answer, or no cursor for the first page", ErrBadCursor, cursor)
		}
		before = v
	}
	calls := make([]protocol.CallSummary, 0, min(limit, 64))
	next := ""
	err := s.view(func(tx *bolt.Tx) error {
		cb := tx.Bucket(bucketCalls)
		add := func(seqKey []byte) (bool, error) {
			if len(calls) == limit {
				// seqKey is the first call of the next page; the cursor is an exclusive
				// upper bound.
				next = strconv.FormatUint(binary.BigEndian.Uint64(seqKey)+1, 36)
				return false, nil
			}
			v := cb.Get(seqKey)
			if v == nil {
				return true, nil
			}
			var sum protocol.CallSummary
			if err := decodeSummary(v, &sum); err != nil {
				// One damaged record must not hide the others.
				s.log.Warn("skipping a damaged call record", "seq", fmt.Sprintf("%x", seqKey), "err", err)
				return true, nil
			}
			for _, k := range keep {
				if !k(&sum) {
					return true, nil
				}
			}
			calls = append(calls, sum)
			return true, nil
		}
		if sessionID == "" {
			c := cb.Cursor()
			var k []byte
			if before == 0 {
				k, _ = c.Last()
			} else if k, _ = c.Seek(be64(before)); k == nil {
				k, _ = c.Last()
			} else {
				k, _ = c.Prev()
			}
			for ; k != nil; k, _ = c.Prev() {
				more, err := add(k)
				if err != nil || !more {
					return err
				}
			}
			return nil
		}
		prefix := join(sessionID, nil)
		c := tx.Bucket(bucketCallsBySession).Cursor()
		var k []byte
		if before == 0 {
			k, _ = seekLastWithPrefix(c, prefix)
		} else if k, _ = c.Seek(join(sessionID, be64(before))); k == nil {
			k, _ = c.Last()
		} else {
			k, _ = c.Prev()
		}
		for ; k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Prev() {
			more, err := add(k[len(prefix):])
			if err != nil || !more {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	return calls, next, nil
}

// recover runs at Open: it finalizes outputs a dead daemon left open and marks its unfinished
// calls interrupted.
func (s *Store) recover() error {
	// Most starts find nothing left open: only look, since a write transaction would
	// commit (and write pages) even with nothing to change.
	left := true
	_ = s.db.View(func(tx *bolt.Tx) error {
		k, _ := tx.Bucket(bucketUnfinished).Cursor().First()
		o, _ := tx.Bucket(bucketOutputsOpen).Cursor().First()
		left = k != nil || o != nil
		return nil
	})
	if !left {
		return nil
	}
	now := s.now()
	var n int
	err := s.update(func(tx *bolt.Tx) error {
		n = 0
		if err := finalizeOpenOutputs(tx); err != nil {
			return err
		}
		un := tx.Bucket(bucketUnfinished)
		calls := tx.Bucket(bucketCalls)
		var keys [][]byte
		_ = un.ForEach(func(k, _ []byte) error {
			keys = append(keys, bytes.Clone(k))
			return nil
		})
		for _, k := range keys {
			if err := un.Delete(k); err != nil {
				return err
			}
			v := calls.Get(k)
			if v == nil {
				continue
			}
			var rec protocol.CallRecord
			if err := decodeCall(v, &rec); err != nil {
				s.log.Warn("damaged call record left unfinished", "seq", fmt.Sprintf("%x", k), "err", err)
				continue
			}
			if !unfinished(rec.Status) {
				continue
			}
			interrupt(&rec, now)
			val, err := encodeCall(&rec)
			if err != nil {
				return err
			}
			if err := calls.Put(k, val); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: recover %s: %w", s.path, err)
	}
	if n > 0 {
		s.log.Info("marked calls left unfinished by a previous daemon as interrupted", "count", n)
	}
	return nil
}

// interrupt marks a call that a dead daemon left unfinished.
func interrupt(rec *protocol.CallRecord, now time.Time) {
	rec.Status = protocol.StatusInterrupted
	rec.EndedAt = &now
	if rec.Error == "" {
		rec.Error = "interrupted: the toolsd daemon stopped before the call finished"
	}
}

// encodeCall is a call's value: uvarint(len(summary)) summary record, the JSON
// protocol.CallSummary first, so that ListCalls decodes a few hundred bytes per row instead of
// whole records with their arguments and output, then the JSON protocol.CallRecord.
func encodeCall(rec *protocol.CallRecord) ([]byte, error) {
	sum, err := json.Marshal(summaryOf(rec))
	if err != nil {
		return nil, err
	}
	full, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	v := binary.AppendUvarint(make([]byte, 0, binary.MaxVarintLen64+len(sum)+len(full)), uint64(len(sum)))
	return append(append(v, sum...), full...), nil
}

func splitCall(v []byte) (sum, full []byte, err error) {
	n, w := binary.Uvarint(v)
	if w <= 0 || n > uint64(len(v)-w) {
		return nil, nil, fmt.Errorf("%w: malformed call value", ErrCorrupt)
	}
	return v[w : w+int(n)], v[w+int(n):], nil
}

func decodeCall(v []byte, rec *protocol.CallRecord) error {
	_, full, err := splitCall(v)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(full, rec); err != nil {
		return fmt.Errorf("%w: call record: %v", ErrCorrupt, err)
	}
	return nil
}

func decodeSummary(v []byte, sum *protocol.CallSummary) error {
	s, _, err := splitCall(v)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(s, sum); err != nil {
		return fmt.Errorf("%w: call summary: %v", ErrCorrupt, err)
	}
	return nil
}

func summaryOf(r *protocol.CallRecord) protocol.CallSummary {
	var md struct {
		Sandbox struct {
			Confined bool `json:"confined"`
		} `json:"sandbox"`
	}
	// Metadata that is not an object confines nothing. The daemon's metadata is written by
	// encoding/json, which escapes no letter of a key: without the word there is no key.
	if bytes.Contains(r.Metadata, []byte(`"sandbox"`)) {
		_ = json.Unmarshal(r.Metadata, &md)
	}
	return protocol.CallSummary{
		CallID: r.CallID, SessionID: r.SessionID, MessageID: r.MessageID, Tool: r.Tool,
		Status: r.Status, Title: r.Title, StartedAt: r.StartedAt, EndedAt: r.EndedAt,
		Truncated: r.Truncated, OutputID: r.OutputID, Changes: r.Changes, Confined: md.Sandbox.Confined, Client: r.Client,
	}
}
