package store

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/toolsd/toolsd/internal/fsopen/fsopentest"
	"github.com/toolsd/toolsd/protocol"
)

func TestOpenBadFiles(t *testing.T) {
	rnd := make([]byte, 64<<10)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range rnd {
		rnd[i] = byte(r.Uint32())
	}
	tests := []struct {
		name  string
		setup func(path string) error
		want  error
	}{
		{"random bytes", func(p string) error { return os.WriteFile(p, rnd, 0o600) }, ErrCorrupt},
		{"short text", func(p string) error { return os.WriteFile(p, []byte("hello world\n"), 0o600) }, ErrCorrupt},
		{"zeros", func(p string) error { return os.WriteFile(p, make([]byte, 16<<10), 0o600) }, ErrCorrupt},
		{"foreign bbolt file", func(p string) error {
			db, err := bolt.Open(p, 0o600, nil)
			if err != nil {
				return err
			}
			defer db.Close()
			return db.Update(func(tx *bolt.Tx) error {
				_, err := tx.CreateBucket([]byte("someone-else"))
				return err
			})
		}, ErrCorrupt},
		{"newer schema", func(p string) error {
			s, err := Open(p, nil)
			if err != nil {
				return err
			}
			s.Close()
			db, err := bolt.Open(p, 0o600, nil)
			if err != nil {
				return err
			}
			defer db.Close()
			return db.Update(func(tx *bolt.Tx) error {
				return tx.Bucket(bucketMeta).Put(keyMetaSchema, be32(SchemaVersion+98))
			})
		}, ErrSchema},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "toolsd.db")
			if err := tt.setup(path); err != nil {
				t.Fatal(err)
			}
			s, err := Open(path, &Options{Timeout: 50 * time.Millisecond})
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error does not name the file: %v", err)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
			if errors.Is(err, ErrSchema) && !strings.Contains(err.Error(), "99") {
				t.Errorf("schema error does not say the version: %v", err)
			}
			t.Log(err)
		})
	}
}

// TestOpenSpecialFiles: what a hostile folder puts where the store file belongs (a FIFO, a
// link to /dev/zero, a folder, a socket, a link to a FIFO) is refused at once, before bbolt
// writes to it, with an error that says what it is.
func TestOpenSpecialFiles(t *testing.T) {
	for _, k := range fsopentest.Kinds(1 << 20) {
		if k.Name == "oversized" {
			continue // a store has no size cap
		}
		t.Run(k.Name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "toolsd.db")
			k.Make(t, path)
			var s *Store
			var err error
			fsopentest.Promptly(t, 10*time.Second, "Open", func() { s, err = Open(path, &Options{Timeout: 50 * time.Millisecond}) })
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path+" is "+k.Says) {
				t.Fatalf("err = %v, want ErrCorrupt naming %s as %s", err, path, k.Says)
			}
		})
	}
}

// TestSecondOpenFailsClearly: one process per store. A second Open of a held file fails
// within the timeout with ErrLocked and a message that says what to do, and touches nothing.
func TestSecondOpenFailsClearly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "toolsd.db")
	opts := &Options{Timeout: 50 * time.Millisecond}
	a, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.CreateCall(newRec("s", "c1")); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	b, err := Open(path, opts)
	if err == nil {
		b.Close()
		t.Fatal("a second Open of a held store succeeded")
	}
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "in use by another toolsd process") || !strings.Contains(err.Error(), "--store") {
		t.Fatalf("second Open: %v", err)
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Fatalf("second Open took %v", d)
	}
	// The holder's file, nothing the second Open made.
	if matches, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "*")); len(matches) != 1 || matches[0] != path {
		t.Fatalf("files beside the store: %v", matches)
	}
	if _, err := a.GetCall("s", "c1"); err != nil {
		t.Fatalf("the holder's record: %v", err)
	}
}

// TestOpenOfACleanStoreWritesNothing: a store of the current schema with nothing left
// unfinished is only read at open and close: no transaction commits (its txid stays). The
// pruner, which does write, is off (Retention -1).
func TestOpenOfACleanStoreWritesNothing(t *testing.T) {
	s := openTest(t, &Options{Retention: -1})
	path := s.Path()
	if err := s.CreateCall(newRec("s", "a")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s1 := openAt(t, path, &Options{Retention: -1})
	before := txid(s1.db)
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := openAt(t, path, &Options{Retention: -1})
	defer s2.Close()
	if after := txid(s2.db); after != before {
		t.Fatalf("an open of a clean store committed: txid %d -> %d", before, after)
	}
}

// txid is the id of db's last committed transaction.
func txid(db *bolt.DB) (id int) {
	_ = db.View(func(tx *bolt.Tx) error { id = tx.ID(); return nil })
	return id
}

// TestPruneOfNothingWritesNothing: the pruner's pass at open, which finds nothing old enough
// (young outputs, young content), commits nothing either.
func TestPruneOfNothingWritesNothing(t *testing.T) {
	s := openTest(t, &Options{Retention: -1})
	path := s.Path()
	for _, id := range []string{"a", "cp"} { // finished: recover has nothing to do either
		r := newRec("s", id)
		r.Status = protocol.StatusCompleted
		if err := s.CreateCall(r); err != nil {
			t.Fatal(err)
		}
	}
	writeOutput(t, s, "young\n", 10)
	st := fileState(s, t, "young content")
	end := time.Now()
	if err := s.UpdateCheckpoints(&CheckpointUpdate{Index: map[string]*FileState{"i": &st},
		Done: []*Checkpoint{{SessionID: "s", CallID: "cp", EndedAt: &end, Files: []FileChange{{Path: "p", Before: st, After: &FileState{}}}}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	before := txid(db)
	db.Close()
	passed := make(chan struct{})
	var once sync.Once
	s2 := openAt(t, path, &Options{Retention: 24 * time.Hour, pruned: func(int, error) { once.Do(func() { close(passed) }) }})
	defer s2.Close()
	select {
	case <-passed:
	case <-time.After(10 * time.Second):
		t.Fatal("the pruner did not run at open")
	}
	if after := txid(s2.db); after != before {
		t.Fatalf("a pruning pass with nothing to prune committed: txid %d -> %d", before, after)
	}
}
