package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sort"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/toolsd/toolsd/internal/fsopen"
)

// SessionGet returns a small per-session value (a todo list), or nil, nil when absent.
func (s *Store) SessionGet(sessionID, key string) ([]byte, error) {
	if err := checkID("sessionID", sessionID); err != nil {
		return nil, err
	}
	var out []byte
	err := s.view(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketSessionValues).Get(join(sessionID, []byte(key)))
		if len(v) >= 8 {
			out = bytes.Clone(v[8:])
			if out == nil {
				out = []byte{}
			}
		}
		return nil
	})
	return out, err
}

// SessionPut stores a small per-session value; a nil value deletes it.
func (s *Store) SessionPut(sessionID, key string, value []byte) error {
	if err := checkID("sessionID", sessionID); err != nil {
		return err
	}
	v := append(be64(uint64(s.now().UnixNano())), value...)
	return s.update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSessionValues)
		if value == nil {
			return b.Delete(join(sessionID, []byte(key)))
		}
		return b.Put(join(sessionID, []byte(key)), v)
	})
}

// SessionValues are the small values of one session, shaped for registry.SessionState.
type SessionValues struct {
	s         *Store
	sessionID string
}

// Session returns the values of one session.
func (s *Store) Session(sessionID string) SessionValues {
	return SessionValues{s: s, sessionID: sessionID}
}

// Get is SessionGet for this session.
func (v SessionValues) Get(ctx context.Context, key string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return v.s.SessionGet(v.sessionID, key)
}

// Put is SessionPut for this session.
func (v SessionValues) Put(ctx context.Context, key string, value []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return v.s.SessionPut(v.sessionID, key, value)
}

// Approval is an "always" answer the person gave for the whole workspace.
type Approval struct {
	Permission string
	Pattern    string
	At         time.Time
	// By is who gave it: the name of the client the answer came through ("" when not known).
	By string
}

// Approvals returns the workspace's persisted approvals, oldest first.
func (s *Store) Approvals() ([]Approval, error) {
	var out []Approval
	err := s.view(func(tx *bolt.Tx) error {
		out = readApprovals(tx)
		return nil
	})
	return out, err
}

func readApprovals(tx *bolt.Tx) []Approval {
	var out []Approval
	_ = tx.Bucket(bucketApprovals).ForEach(func(k, v []byte) error {
		i := bytes.IndexByte(k, 0)
		if i < 0 || len(v) < 8 {
			return nil
		}
		out = append(out, Approval{
			Permission: string(k[:i]),
			Pattern:    string(k[i+1:]),
			At:         time.Unix(0, int64(binary.BigEndian.Uint64(v))),
			By:         string(v[8:]),
		})
		return nil
	})
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out
}

// Remembered is what ReadRemembered finds in a store file.
type Remembered struct {
	Approvals []Approval
	Trusted   bool
}

// ReadRemembered reads the workspace's approvals and trust from the store file at path
// without writing to it and without waiting: a file that a daemon holds open is
// ErrLocked, one that does not exist gives nothing. It is for tools that look at a
// workspace's policy while no daemon runs (toolsd policy check).
func ReadRemembered(path string) (*Remembered, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return &Remembered{}, nil
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{
		ReadOnly: true, Timeout: 50 * time.Millisecond,
		OpenFile: func(name string, flag int, perm os.FileMode) (*os.File, error) {
			return fsopen.OpenFile(name, flag, perm)
		},
	})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("%w: %s is held by a running toolsd", ErrLocked, path)
	}
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	defer db.Close()
	out := &Remembered{}
	err = db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketApprovals) == nil || tx.Bucket(bucketMeta) == nil {
			return fmt.Errorf("%w: %s", ErrCorrupt, path)
		}
		out.Approvals = readApprovals(tx)
		v := tx.Bucket(bucketMeta).Get(keyMetaTrusted)
		out.Trusted = len(v) == 9 && v[8] == 1
		return nil
	})
	return out, err
}

// AddApprovals persists approvals. An approval already stored (same permission and pattern)
// keeps its first time. A zero At becomes now.
func (s *Store) AddApprovals(a []Approval) error {
	for _, ap := range a {
		if err := checkID("permission", ap.Permission); err != nil {
			return err
		}
	}
	now := s.now()
	return s.update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketApprovals)
		for _, ap := range a {
			k := join(ap.Permission, []byte(ap.Pattern))
			if b.Get(k) != nil {
				continue
			}
			at := ap.At
			if at.IsZero() {
				at = now
			}
			if err := b.Put(k, append(be64(uint64(at.UnixNano())), ap.By...)); err != nil {
				return fmt.Errorf("store: approval %s %q: %w", ap.Permission, ap.Pattern, err)
			}
		}
		return nil
	})
}

// Trusted reports whether the person trusts the workspace's own config (false until set).
func (s *Store) Trusted() (bool, error) {
	var t bool
	err := s.view(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketMeta).Get(keyMetaTrusted)
		t = len(v) == 9 && v[8] == 1
		return nil
	})
	return t, err
}

// SetTrusted records whether the person trusts the workspace's own config.
func (s *Store) SetTrusted(trusted bool) error {
	v := be64(uint64(s.now().UnixNano()))
	if trusted {
		v = append(v, 1)
	} else {
		v = append(v, 0)
	}
	return s.update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(keyMetaTrusted, v)
	})
}
