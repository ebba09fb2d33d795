package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/toolsd/toolsd/protocol"
)

// Batch sizes of a merge: each destination transaction copies at most this many calls, or
// this many chunks of one output, so a merge never holds a whole slot file in memory.
const (
	mergeCallBatch  = 256
	mergeChunkBatch = 16
)

// mergeSlots merges every slot file beside the primary file that no process holds into the
// primary file, then deletes it. It runs at Open, before recovery. A slot that fails to merge
// is left in place (and logged) for the next Open; merging is idempotent, so a crash in the
// middle only repeats work.
func (s *Store) mergeSlots() {
	for _, sp := range slotFiles(s.path) {
		src, err := openBolt(sp, time.Nanosecond, false)
		if err != nil {
			if !errors.Is(err, berrors.ErrTimeout) {
				s.log.Warn("cannot merge a slot file", "path", sp, "err", err)
			}
			continue // held by a live daemon, or damaged
		}
		n, err := s.mergeFrom(src, sp)
		if err != nil {
			if !errors.Is(err, ErrClosed) {
				s.log.Warn("merging a slot file failed; it is kept for the next start", "path", sp, "err", err)
			}
			src.Close()
			continue
		}
		// Unlink while we still hold the lock: a daemon that opened the file just before gets
		// the lock only after the unlink, sees that the path no longer names its file
		// (openBolt checks) and opens a fresh one.
		if err := os.Remove(sp); err != nil {
			s.log.Warn("merged a slot file but cannot delete it", "path", sp, "err", err)
		}
		src.Close()
		s.log.Info("merged a slot file left by another daemon", "path", sp, "calls", n)
	}
}

// mergeFrom copies src's records into s. It returns the number of calls copied.
func (s *Store) mergeFrom(src *bolt.DB, srcPath string) (int, error) {
	// The slot must be a toolsd store we understand.
	empty := false
	err := src.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta == nil {
			empty = tx.Bucket(bucketCalls) == nil
			if empty {
				return nil
			}
			return fmt.Errorf("%w: %s has no meta bucket", ErrCorrupt, srcPath)
		}
		if v := meta.Get(keyMetaSchema); len(v) == 4 && binary.BigEndian.Uint32(v) > SchemaVersion {
			return &SchemaError{Path: srcPath, Found: int(binary.BigEndian.Uint32(v)), Known: SchemaVersion}
		}
		for _, name := range mergedBuckets {
			if tx.Bucket(name) == nil {
				return fmt.Errorf("%w: %s lacks bucket %s", ErrCorrupt, srcPath, name)
			}
		}
		return nil
	})
	if err != nil || empty {
		return 0, err
	}
	if err := s.mergeOutputs(src); err != nil {
		return 0, err
	}
	n, err := s.mergeCalls(src)
	if err != nil {
		return n, err
	}
	return n, s.mergeSmall(src)
}

func (s *Store) mergeOutputs(src *bolt.DB) error {
	var ids [][]byte
	if err := src.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketOutputs).ForEachBucket(func(k []byte) error {
			ids = append(ids, bytes.Clone(k))
			return nil
		})
	}); err != nil {
		return err
	}
	for _, id := range ids {
		if err := s.mergeOutput(src, id); err != nil {
			return fmt.Errorf("output %s: %w", id, err)
		}
	}
	return nil
}

func (s *Store) mergeOutput(src *bolt.DB, id []byte) error {
	var m outputMeta
	open := false
	if err := src.View(func(tx *bolt.Tx) error {
		var err error
		m, err = getMeta(tx.Bucket(bucketOutputs).Bucket(id))
		open = tx.Bucket(bucketOutputsOpen).Get(id) != nil
		return err
	}); err != nil {
		return err
	}
	if open || !m.Complete {
		// Its writer died with the slot's daemon.
		m.Complete, m.Partial = true, true
	}
	skip := false
	if err := s.update(func(tx *bolt.Tx) error {
		skip = false
		outs := tx.Bucket(bucketOutputs)
		if tx.Bucket(bucketOutputsExpired).Get(id) != nil {
			skip = true
			return nil
		}
		if b := outs.Bucket(id); b != nil {
			if dm, err := getMeta(b); err == nil && !dm.Merging {
				skip = true // merged before
				return nil
			}
			// A merge that a crash cut short: start over.
			if err := outs.DeleteBucket(id); err != nil {
				return err
			}
		}
		b, err := outs.CreateBucket(id)
		if err != nil {
			return err
		}
		mm := m
		mm.Merging = true
		if err := putMeta(b, &mm); err != nil {
			return err
		}
		return tx.Bucket(bucketOutputsByTime).Put(timeKey(m.CreatedAt, string(id)), nil)
	}); err != nil || skip {
		return err
	}
	for first := 0; first < m.Chunks; first += mergeChunkBatch {
		var kvs [][2][]byte
		if err := src.View(func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketOutputs).Bucket(id)
			for i := first; i < min(first+mergeChunkBatch, m.Chunks); i++ {
				for _, k := range [][]byte{chunkKey(i), lineKey(i)} {
					v := b.Get(k)
					if v == nil {
						return fmt.Errorf("%w: %q missing", ErrCorrupt, k)
					}
					kvs = append(kvs, [2][]byte{k, bytes.Clone(v)})
				}
			}
			return nil
		}); err != nil {
			return err
		}
		if err := s.update(func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketOutputs).Bucket(id)
			for _, kv := range kvs {
				if err := b.Put(kv[0], kv[1]); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return err
		}
	}
	return s.update(func(tx *bolt.Tx) error {
		return putMeta(tx.Bucket(bucketOutputs).Bucket(id), &m)
	})
}

func (s *Store) mergeCalls(src *bolt.DB) (int, error) {
	now := s.now()
	copied := 0
	var from []byte
	for {
		var kvs [][2][]byte
		if err := src.View(func(tx *bolt.Tx) error {
			c := tx.Bucket(bucketCalls).Cursor()
			var k, v []byte
			if from == nil {
				k, v = c.First()
			} else {
				k, v = c.Seek(from)
			}
			for ; k != nil && len(kvs) < mergeCallBatch; k, v = c.Next() {
				kvs = append(kvs, [2][]byte{bytes.Clone(k), bytes.Clone(v)})
			}
			from = nil
			if k != nil {
				from = bytes.Clone(k)
			}
			return nil
		}); err != nil {
			return copied, err
		}
		n := 0
		if err := s.update(func(tx *bolt.Tx) error {
			n = 0
			idx := tx.Bucket(bucketCallIndex)
			for _, kv := range kvs {
				var rec protocol.CallRecord
				if err := decodeCall(kv[1], &rec); err != nil || checkID("sessionID", rec.SessionID) != nil || checkID("callID", rec.CallID) != nil {
					s.log.Warn("skipping a damaged call record in a slot file", "seq", fmt.Sprintf("%x", kv[0]), "err", err)
					continue
				}
				if idx.Get(callKey(rec.SessionID, rec.CallID)) != nil {
					continue // merged before, or the same call id used in both daemons
				}
				val := kv[1]
				if unfinished(rec.Status) {
					// The slot's daemon is gone (we hold its lock): the call never finished.
					interrupt(&rec, now)
					var err error
					if val, err = encodeCall(&rec); err != nil {
						return err
					}
				}
				if _, err := putNewCall(tx, &rec, val, binary.BigEndian.Uint64(kv[0])); err != nil {
					return err
				}
				n++
			}
			return nil
		}); err != nil {
			return copied, err
		}
		copied += n
		if from == nil {
			return copied, nil
		}
	}
}

// mergeSmall merges session values and trust (the newer write wins), approvals (the union)
// and expiry markers.
func (s *Store) mergeSmall(src *bolt.DB) error {
	type kv struct{ k, v []byte }
	var vals, apps, exp []kv
	var trusted []byte
	if err := src.View(func(tx *bolt.Tx) error {
		collect := func(name []byte, into *[]kv) error {
			return tx.Bucket(name).ForEach(func(k, v []byte) error {
				*into = append(*into, kv{bytes.Clone(k), bytes.Clone(v)})
				return nil
			})
		}
		if err := collect(bucketSessionValues, &vals); err != nil {
			return err
		}
		if err := collect(bucketApprovals, &apps); err != nil {
			return err
		}
		if err := collect(bucketOutputsExpired, &exp); err != nil {
			return err
		}
		trusted = bytes.Clone(tx.Bucket(bucketMeta).Get(keyMetaTrusted))
		return nil
	}); err != nil {
		return err
	}
	newer := func(a, b []byte) bool { // a written after b
		return len(a) >= 8 && (len(b) < 8 || binary.BigEndian.Uint64(a) > binary.BigEndian.Uint64(b))
	}
	return s.update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSessionValues)
		for _, e := range vals {
			if newer(e.v, b.Get(e.k)) {
				if err := b.Put(e.k, e.v); err != nil {
					return err
				}
			}
		}
		b = tx.Bucket(bucketApprovals)
		for _, e := range apps {
			if old := b.Get(e.k); old == nil || newer(old, e.v) {
				if err := b.Put(e.k, e.v); err != nil { // keep the first time
					return err
				}
			}
		}
		b = tx.Bucket(bucketOutputsExpired)
		for _, e := range exp {
			if b.Get(e.k) == nil {
				if err := b.Put(e.k, e.v); err != nil {
					return err
				}
			}
		}
		b = tx.Bucket(bucketMeta)
		if len(trusted) == 9 && newer(trusted, b.Get(keyMetaTrusted)) {
			return b.Put(keyMetaTrusted, trusted)
		}
		return nil
	})
}
