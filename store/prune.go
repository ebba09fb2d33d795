package store

import (
	"bytes"
	"errors"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// pruneBatch is how many outputs one pruning transaction deletes at most.
const pruneBatch = 32

// maintain is the Store's background goroutine: every PruneInterval (and once right after
// Open) it prunes old outputs.
func (s *Store) maintain() {
	defer s.wg.Done()
	t := time.NewTicker(s.opts.PruneInterval)
	defer t.Stop()
	for {
		n, err := s.Prune()
		if err != nil && err != ErrClosed {
			s.log.Warn("pruning old outputs failed", "err", err)
		} else if n > 0 {
			s.log.Info("pruned outputs older than the retention period", "count", n, "retention", s.opts.Retention)
		}
		if n, err := s.PruneCheckpoints(); err != nil && err != ErrClosed {
			s.log.Warn("pruning old checkpoints failed", "err", err)
		} else if n > 0 {
			s.log.Info("pruned checkpoints older than the retention period", "count", n, "retention", s.opts.Retention)
		}
		if h := s.opts.pruned; h != nil {
			h(n, err)
		}
		select {
		case <-s.done:
			return
		case <-t.C:
		}
	}
}

// Prune deletes every output created more than Options.Retention ago (except outputs still
// being written), in transactions of at most pruneBatch outputs, and returns how many it
// deleted. Calls keep their outputID; reading it then gives ErrExpired. The background pruner
// calls it every PruneInterval; it stops early when the store closes. With retention disabled
// it does nothing.
func (s *Store) Prune() (int, error) {
	if s.opts.Retention < 0 {
		return 0, nil
	}
	s.pruneMu.Lock()
	defer s.pruneMu.Unlock()
	now := s.now()
	cutoff := be64(uint64(now.Add(-s.opts.Retention).UnixNano()))
	old := false
	if err := s.view(func(tx *bolt.Tx) error {
		k, _ := tx.Bucket(bucketOutputsByTime).Cursor().First()
		old = k != nil && len(k) > 8 && bytes.Compare(k[:8], cutoff) < 0
		return nil
	}); err != nil || !old {
		// Nothing old enough (most passes, every start of a daemon): a write transaction
		// would commit pages for nothing.
		return 0, err
	}
	total := 0
	var from []byte
	for {
		select {
		case <-s.done:
			return total, ErrClosed
		default:
		}
		deleted, more := 0, false
		err := s.update(func(tx *bolt.Tx) error {
			deleted, more = 0, false
			byTime := tx.Bucket(bucketOutputsByTime)
			open := tx.Bucket(bucketOutputsOpen)
			outputs := tx.Bucket(bucketOutputs)
			expired := tx.Bucket(bucketOutputsExpired)
			c := byTime.Cursor()
			var k []byte
			if from == nil {
				k, _ = c.First()
			} else {
				k, _ = c.Seek(from)
			}
			var victims [][]byte
			for ; k != nil && len(k) > 8 && bytes.Compare(k[:8], cutoff) < 0; k, _ = c.Next() {
				if len(victims) == pruneBatch {
					more = true
					break
				}
				if open.Get(k[8:]) != nil {
					continue // still being written
				}
				victims = append(victims, bytes.Clone(k))
			}
			for _, v := range victims {
				id := v[8:]
				if err := outputs.DeleteBucket(id); err != nil && !errors.Is(err, berrors.ErrBucketNotFound) {
					return err
				}
				if err := byTime.Delete(v); err != nil {
					return err
				}
				if err := expired.Put(id, be64(uint64(now.UnixNano()))); err != nil {
					return err
				}
				deleted++
			}
			if more {
				from = bytes.Clone(k)
			}
			return nil
		})
		if err != nil {
			return total, err
		}
		total += deleted
		if !more {
			return total, nil
		}
	}
}
