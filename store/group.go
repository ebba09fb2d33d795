package store

import bolt "go.etcd.io/bbolt"

// A group commit for call records. bbolt runs one write transaction at a time, and most of a
// small transaction's cost is per transaction, not per write: the nodes from each touched
// bucket's root to its leaf are read into memory, copied and written back, with the meta
// page, at every commit. So CreateCall and UpdateCall of concurrent callers share
// transactions: a writer that finds a commit running queues its write, and when that commit
// ends the first queued writer commits everything queued (LevelDB's writer queue). A lone
// writer commits at once, never waiting for company; each returns after the transaction that
// holds its write has committed, as a write of its own would.
//
// bbolt's DB.Batch does the same with a timer: a batch waits DB.MaxBatchDelay (10 ms by
// default) for company before it commits, which a caller alone pays on every write.

// groupWrite is one queued write.
type groupWrite struct {
	fn  func(*bolt.Tx) error
	err error
	// wake gets true when this writer is to commit the queue, false when its write is done
	// (err is set). Buffered 1: each writer gets at most one of each, the leader's own false
	// is never read.
	wake chan bool
}

// updateGrouped runs fn in a write transaction that may hold other callers' writes, and
// returns when that transaction has committed, or with fn's own error. fn may run more than
// once (when another write in its group fails, the others run again without it), each time
// in a fresh transaction: it must only write what it computes from tx.
func (s *Store) updateGrouped(fn func(*bolt.Tx) error) error {
	w := &groupWrite{fn: fn, wake: make(chan bool, 1)}
	s.groupMu.Lock()
	s.queue = append(s.queue, w)
	if s.committing {
		s.groupMu.Unlock()
		if lead := <-w.wake; !lead {
			return w.err
		}
		s.groupMu.Lock()
	}
	s.committing = true
	group := s.queue
	s.queue = nil
	s.groupMu.Unlock()

	s.commitGroup(group)

	s.groupMu.Lock()
	if len(s.queue) > 0 {
		s.queue[0].wake <- true
	} else {
		s.committing = false
	}
	s.groupMu.Unlock()
	return w.err
}

// commitGroup commits the writes of group in one transaction and tells each its result. A
// write that fails is taken out and run alone after the others have committed, so that its
// error is its own and no other write is lost or refused with it.
func (s *Store) commitGroup(group []*groupWrite) {
	var failed []*groupWrite
	for len(group) > 0 {
		bad := -1
		err := s.update(func(tx *bolt.Tx) error {
			for i, w := range group {
				if err := safeCall(w.fn, tx); err != nil {
					bad = i
					return err
				}
			}
			return nil
		})
		if bad < 0 || len(group) == 1 {
			for _, w := range group {
				w.done(err)
			}
			break
		}
		failed = append(failed, group[bad])
		group = append(group[:bad:bad], group[bad+1:]...)
	}
	for _, w := range failed {
		w.done(s.update(w.fn))
	}
}

func (w *groupWrite) done(err error) {
	w.err = err
	w.wake <- false
}
