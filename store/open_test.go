package store

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
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
// writes to it, with an error that says what it is; so is such a slot file, which is skipped.
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
		t.Run("slot/"+k.Name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "toolsd.db")
			openAt(t, path, &Options{Timeout: 50 * time.Millisecond}) // holds the primary file
			k.Make(t, SlotPath(path, 1))
			var b *Store
			var err error
			fsopentest.Promptly(t, 10*time.Second, "Open", func() { b, err = Open(path, &Options{Timeout: 50 * time.Millisecond}) })
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if b.Path() != SlotPath(path, 2) {
				t.Fatalf("the second daemon uses %s, want the second slot", b.Path())
			}
		})
	}
}

// TestTwoDaemons: a second Open of a locked file gets a slot file within the timeout, both
// work, and the next Open of the primary file merges the slot back, losing nothing.
func TestTwoDaemons(t *testing.T) {
	clock := newFakeClock()
	path := filepath.Join(t.TempDir(), "toolsd.db")
	opts := &Options{Timeout: 50 * time.Millisecond, Now: clock.Now}
	a, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(path, opts)
	if err != nil {
		t.Fatalf("second Open: %v", err)
	}
	if !a.Primary() || b.Primary() || b.Path() != SlotPath(path, 1) {
		t.Fatalf("a %s (primary %v), b %s (primary %v)", a.Path(), a.Primary(), b.Path(), b.Primary())
	}
	c, err := Open(path, opts)
	if err != nil || c.Path() != SlotPath(path, 2) {
		t.Fatalf("third Open: %v, %v", c, err)
	}

	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// Interleaved in time: a1, b1, a2, b2 (running when b "dies"), c1.
	must(a.CreateCall(newRec("sa", "a1")))
	must(a.SetTrusted(false))
	must(b.CreateCall(newRec("sb", "b1")))
	bw, err := b.NewOutput("sb", "b1")
	must(err)
	bw.Write([]byte(strings.Repeat("from b\n", 100000))) // 700 KB: several chunks
	must(bw.Close())
	must(b.UpdateCall("sb", "b1", func(r *protocol.CallRecord) {
		r.Status, r.OutputID = protocol.StatusCompleted, bw.ID()
	}))
	must(a.CreateCall(newRec("sa", "a2")))
	running := newRec("sb", "b2")
	running.Status = protocol.StatusRunning
	must(b.CreateCall(running))
	open, err := b.NewOutput("sb", "b2")
	must(err)
	open.Write([]byte(strings.Repeat("partial\n", 50000)))
	must(b.SessionPut("sb", "todo", []byte("b's list")))
	must(a.SessionPut("shared", "k", []byte("old")))
	must(b.SessionPut("shared", "k", []byte("new")))
	must(a.AddApprovals([]Approval{{Permission: "bash", Pattern: "ls"}}))
	must(b.AddApprovals([]Approval{{Permission: "bash", Pattern: "ls"}, {Permission: "edit", Pattern: "*.go"}}))
	must(b.SetTrusted(true))
	must(c.CreateCall(newRec("sc", "c1")))
	// Same (session, callID) in both: the primary's record is kept.
	must(a.CreateCall(newRec("dup", "x")))
	must(b.CreateCall(newRec("dup", "x")))

	// a restarts while b still runs: b's slot cannot be merged yet, c's can.
	must(c.Close())
	must(a.Close())
	a, err = Open(path, opts)
	must(err)
	if !a.Primary() {
		t.Fatal("reopen is not primary")
	}
	if _, err := os.Stat(SlotPath(path, 2)); !os.IsNotExist(err) {
		t.Fatalf("c's slot not merged and deleted: %v", err)
	}
	if _, err := os.Stat(SlotPath(path, 1)); err != nil {
		t.Fatalf("b's slot (in use) must stay: %v", err)
	}
	if _, err := a.GetCall("sc", "c1"); err != nil {
		t.Fatalf("c's call after merge: %v", err)
	}
	if _, err := a.GetCall("sb", "b1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("b's call must not be merged while b runs: %v", err)
	}

	// b dies (its file is simply closed, its writer left open); a restarts again.
	must(b.Close())
	must(a.Close())
	a = openAt(t, path, opts)
	if _, err := os.Stat(SlotPath(path, 1)); !os.IsNotExist(err) {
		t.Fatalf("b's slot not deleted after merge: %v", err)
	}

	page, _, err := a.ListCalls("", 0, "")
	must(err)
	var order []string
	for _, c := range page {
		order = append(order, c.SessionID+"/"+c.CallID)
	}
	want := "[dup/x sc/c1 sb/b2 sa/a2 sb/b1 sa/a1]"
	if got := strings.Join(strings.Fields(strings.Trim(strings.Join(order, " "), " ")), " "); "["+got+"]" != want {
		t.Fatalf("merged list %v, want %v", order, want)
	}
	if got, _ := a.GetCall("sb", "b2"); got.Status != protocol.StatusInterrupted {
		t.Fatalf("b's running call after merge: %s", got.Status)
	}
	rec, err := a.GetCall("sb", "b1")
	must(err)
	r, err := a.ReadOutput(rec.OutputID, 99999, 5)
	if err != nil || r.Content != "from b" || r.TotalLines != 100000 {
		t.Fatalf("b's output after merge: %+v, %v", r, err)
	}
	r, err = a.ReadOutput(open.ID(), 0, 1)
	if err != nil || r.Content != "partial" || r.TotalBytes != ChunkSize {
		t.Fatalf("b's open output after merge: %+v, %v", r, err)
	}
	if v, _ := a.SessionGet("sb", "todo"); string(v) != "b's list" {
		t.Fatalf("b's session value: %q", v)
	}
	if v, _ := a.SessionGet("shared", "k"); string(v) != "new" {
		t.Fatalf("newer write must win: %q", v)
	}
	ap, _ := a.Approvals()
	if len(ap) != 2 {
		t.Fatalf("approvals: %+v", ap)
	}
	if tr, _ := a.Trusted(); !tr {
		t.Fatal("b's newer trust answer lost")
	}
}

// TestMergeIdempotent: a merge cut short by a crash (slot still there, an output half
// copied) is simply done again.
func TestMergeIdempotent(t *testing.T) {
	dir := t.TempDir()
	dst := openAt(t, filepath.Join(dir, "toolsd.db"), nil)
	src, err := Open(filepath.Join(dir, "other.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	src.chunkSz = 64
	content := strings.Repeat("0123456789\n", 500)
	id := writeOutput(t, src, content, 100)
	if err := src.CreateCall(&protocol.CallRecord{SessionID: "s", CallID: "c", OutputID: id, Status: protocol.StatusCompleted}); err != nil {
		t.Fatal(err)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	srcDB, err := bolt.Open(filepath.Join(dir, "other.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srcDB.Close()

	// A first merge that died after copying a few chunks of the output.
	if err := dst.update(func(tx *bolt.Tx) error {
		b, err := tx.Bucket(bucketOutputs).CreateBucket([]byte(id))
		if err != nil {
			return err
		}
		if err := putMeta(b, &outputMeta{ChunkSize: 64, Chunks: 3, Merging: true}); err != nil {
			return err
		}
		return b.Put(chunkKey(0), []byte("garbage"))
	}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		n, err := dst.mergeFrom(srcDB, "other.db")
		if err != nil {
			t.Fatal(err)
		}
		_ = n
	}
	r, err := dst.ReadOutput(id, 0, 10000)
	if err != nil || r.Content+"\n" != content {
		t.Fatalf("output after re-merge: %v (%d bytes)", err, len(r.Content))
	}
	page, _, err := dst.ListCalls("", 0, "")
	if err != nil || len(page) != 1 {
		t.Fatalf("calls after merging twice: %v %v", page, err)
	}
}

// TestBackgroundMerge: the daemon holding the primary file merges a slot file soon after the
// other daemon leaves it, without a restart.
func TestBackgroundMerge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "toolsd.db")
	passes := make(chan struct{}, 100)
	a := openAt(t, path, &Options{Timeout: 50 * time.Millisecond, PruneInterval: 5 * time.Millisecond,
		pruned: func(int, error) { passes <- struct{}{} }})
	b, err := Open(path, &Options{Timeout: 50 * time.Millisecond, Retention: -1})
	if err != nil || b.Primary() {
		t.Fatalf("second Open: %v", err)
	}
	running := newRec("sb", "run")
	running.Status = protocol.StatusRunning
	if err := b.CreateCall(running); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	// A pass that began before the Close may have seen the slot locked: wait for two more.
	for drained := false; !drained; {
		select {
		case <-passes:
		default:
			drained = true
		}
	}
	for range 2 {
		select {
		case <-passes:
		case <-time.After(10 * time.Second):
			t.Fatal("no background pass")
		}
	}
	rec, err := a.GetCall("sb", "run")
	if err != nil {
		t.Fatalf("slot not merged in the background: %v", err)
	}
	if rec.Status != protocol.StatusInterrupted || rec.EndedAt == nil {
		t.Fatalf("merged running call: %+v", rec)
	}
	if _, err := os.Stat(b.Path()); !os.IsNotExist(err) {
		t.Fatalf("slot file still there: %v", err)
	}
}
