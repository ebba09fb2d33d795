package store

import (
	"errors"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestGroupCommitFailureIsItsOwn commits a group whose middle write fails: the others are on
// record, the failing one gets its own error and leaves nothing, and each writer is told once.
func TestGroupCommitFailureIsItsOwn(t *testing.T) {
	s := openTest(t, nil)
	errBad := errors.New("bad write")
	put := func(key string) func(*bolt.Tx) error {
		return func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put([]byte(key), []byte("v")) }
	}
	runs := 0
	group := []*groupWrite{
		{fn: put("a"), wake: make(chan bool, 1)},
		{fn: func(tx *bolt.Tx) error {
			runs++
			if err := put("bad")(tx); err != nil {
				return err
			}
			return errBad
		}, wake: make(chan bool, 1)},
		{fn: func(tx *bolt.Tx) error { panic("a broken write") }, wake: make(chan bool, 1)},
		{fn: put("c"), wake: make(chan bool, 1)},
	}
	s.commitGroup(group)
	for i, w := range group {
		if lead := <-w.wake; lead {
			t.Errorf("write %d was told to lead", i)
		}
		select {
		case <-w.wake:
			t.Errorf("write %d was told twice", i)
		default:
		}
	}
	if group[0].err != nil || group[3].err != nil {
		t.Errorf("good writes failed: %v, %v", group[0].err, group[3].err)
	}
	if !errors.Is(group[1].err, errBad) {
		t.Errorf("failing write: %v, want its own error", group[1].err)
	}
	if group[2].err == nil {
		t.Error("panicking write: no error")
	}
	if runs != 2 {
		t.Errorf("failing write ran %d times, want 2 (in the group, then alone)", runs)
	}
	_ = s.db.View(func(tx *bolt.Tx) error {
		m := tx.Bucket(bucketMeta)
		if m.Get([]byte("a")) == nil || m.Get([]byte("c")) == nil {
			t.Error("a good write is not on record")
		}
		if m.Get([]byte("bad")) != nil {
			t.Error("the failing write left its put on record")
		}
		return nil
	})
}
