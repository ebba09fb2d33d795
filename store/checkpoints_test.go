package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/toolsd/toolsd/protocol"
)

func TestContentRoundTripAndDedup(t *testing.T) {
	s := openTest(t, nil)
	rnd := rand.New(rand.NewSource(1))
	big := make([]byte, 1<<20)
	rnd.Read(big)
	var text bytes.Buffer
	for i := 0; text.Len() < 300<<10; i++ {
		fmt.Fprintf(&text, "line %d of some text that compresses well\n", i)
	}
	for _, data := range [][]byte{{}, []byte("x"), []byte("\x00\x01\xff"), big, text.Bytes()} {
		id, err := s.PutContent(data)
		if err != nil {
			t.Fatal(err)
		}
		if id != ContentID(data) || !s.HasContent(id) {
			t.Fatalf("id %s, has %v", id, s.HasContent(id))
		}
		got, err := s.Content(id)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("Content(%d bytes) = %d bytes, %v", len(data), len(got), err)
		}
	}
	chunks := func() int {
		n := 0
		_ = s.view(func(tx *bolt.Tx) error { n = tx.Bucket(bucketChunks).Stats().KeyN; return nil })
		return n
	}
	before := chunks()
	// The same bytes again, and a one-byte edit in the middle of the 1 MiB content: a chunk
	// or two more, not 128.
	if _, err := s.PutContent(append([]byte(nil), big...)); err != nil {
		t.Fatal(err)
	}
	edited := append([]byte(nil), big...)
	edited[len(edited)/2] ^= 0xff
	id, err := s.PutContent(edited)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Content(id); !bytes.Equal(got, edited) {
		t.Fatal("the edited content does not read back")
	}
	if added := chunks() - before; added < 1 || added > 3 {
		t.Fatalf("a one-byte edit of 1 MiB added %d chunks", added)
	}
	if _, err := s.Content(ContentID([]byte("never stored"))); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown content: %v", err)
	}
	if _, err := s.Content("nothex"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("bad id: %v", err)
	}
}

func TestContentDamagedChunkIsCorrupt(t *testing.T) {
	s := openTest(t, nil)
	id, err := s.PutContent([]byte("some content"))
	if err != nil {
		t.Fatal(err)
	}
	err = s.update(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketChunks).Cursor()
		k, _ := c.First()
		return tx.Bucket(bucketChunks).Put(bytes.Clone(k), []byte{0, 'X'})
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Content(id); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a damaged chunk: %v", err)
	}
}

func newCall(t *testing.T, s *Store, session, call string) {
	t.Helper()
	if err := s.CreateCall(&protocol.CallRecord{SessionID: session, CallID: call, Status: protocol.StatusRunning}); err != nil {
		t.Fatal(err)
	}
}

func fileState(s *Store, t *testing.T, body string) FileState {
	t.Helper()
	id, err := s.PutContent([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return FileState{Kind: KindFile, Mode: 0o644, Size: int64(len(body)), Content: id}
}

func TestCheckpointRecords(t *testing.T) {
	s := openTest(t, nil)
	for _, c := range []string{"c1", "c2", "c3"} {
		newCall(t, s, "s1", c)
	}
	newCall(t, s, "s2", "x")
	a0, a1, a2 := fileState(s, t, "a0"), fileState(s, t, "a1"), fileState(s, t, "a2")
	now := time.Now()
	open := &Checkpoint{SessionID: "s1", CallID: "c3", Tool: "bash", StartedAt: now, Files: []FileChange{{Path: "a", Before: a2}}}
	err := s.UpdateCheckpoints(&CheckpointUpdate{
		Index: map[string]*FileState{"a": &a2, "gone": nil},
		Open:  []*Checkpoint{open},
		Done: []*Checkpoint{
			{SessionID: "s1", CallID: "c1", Tool: "bash", StartedAt: now, EndedAt: &now, Files: []FileChange{{Path: "a", Before: a0, After: &a1, Attribution: "during"}}},
			{SessionID: "s1", CallID: "c2", Tool: "edit", StartedAt: now, EndedAt: &now, Files: []FileChange{{Path: "a", Before: a1, After: &a2, Attribution: "call"}}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	idx := map[string]FileState{}
	if _, _, err := s.LoadCheckpointIndex(func(p string, st FileState) { idx[p] = st }); err != nil || len(idx) != 2 || idx["a"].Content != a2.Content || idx["gone"].Kind != KindAbsent {
		t.Fatalf("index %v, %v", idx, err)
	}
	cps, err := s.SessionCheckpoints("s1", "c2")
	if err != nil || len(cps) != 2 || cps[0].CallID != "c3" || cps[1].CallID != "c2" {
		t.Fatalf("SessionCheckpoints from c2: %+v, %v", cps, err)
	}
	if cp, err := s.Checkpoint("s1", "c3"); err != nil || cp.EndedAt != nil {
		t.Fatalf("the open checkpoint: %+v, %v", cp, err)
	}
	if _, err := s.Checkpoint("s2", "x"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a call without a checkpoint: %v", err)
	}
	later, err := s.LaterChanges("a", "s1", "c1")
	if err != nil || len(later) != 1 || later[0].CallID != "c2" {
		t.Fatalf("LaterChanges: %+v, %v", later, err)
	}
	if op, err := s.OpenCheckpoints(); err != nil || len(op) != 1 || op[0].CallID != "c3" {
		t.Fatalf("OpenCheckpoints: %+v, %v", op, err)
	}
	// A checkpoint of an unknown call is refused, and nothing of its transaction is kept.
	err = s.UpdateCheckpoints(&CheckpointUpdate{Index: map[string]*FileState{"b": &a0}, Done: []*Checkpoint{{SessionID: "s9", CallID: "nope"}}})
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown call: %v", err)
	}
	idx = map[string]FileState{}
	_, _, _ = s.LoadCheckpointIndex(func(p string, st FileState) { idx[p] = st })
	if _, ok := idx["b"]; ok {
		t.Fatal("a refused update left its index entry")
	}
}

// TestPruneCheckpoints: checkpoints older than the retention go, with the content only they
// kept; content the index or a kept checkpoint names stays.
// openPruned opens a store with a day's retention on clock, once the background pruner's
// first pass (at open) is over: otherwise it could prune before the test does, once the
// clock moves.
func openPruned(t *testing.T, clock *fakeClock) *Store {
	t.Helper()
	first := make(chan struct{})
	var once sync.Once
	s := openTest(t, &Options{Now: clock.Now, Retention: 24 * time.Hour, PruneInterval: time.Hour,
		pruned: func(int, error) { once.Do(func() { close(first) }) }})
	<-first
	return s
}

func TestPruneCheckpoints(t *testing.T) {
	clock := newFakeClock()
	s := openPruned(t, clock)
	newCall(t, s, "s", "old")
	oldOnly, shared, inIndex := fileState(s, t, "only the old checkpoint"), fileState(s, t, "shared"), fileState(s, t, "index")
	end := clock.Now()
	if err := s.UpdateCheckpoints(&CheckpointUpdate{Index: map[string]*FileState{"i": &inIndex}, Done: []*Checkpoint{{SessionID: "s", CallID: "old", EndedAt: &end,
		Files: []FileChange{{Path: "p", Before: oldOnly, After: &shared}}}}}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(48 * time.Hour)
	newCall(t, s, "s", "new")
	end2 := clock.Now()
	if err := s.UpdateCheckpoints(&CheckpointUpdate{Done: []*Checkpoint{{SessionID: "s", CallID: "new", EndedAt: &end2,
		Files: []FileChange{{Path: "p", Before: shared, After: &FileState{}}}}}}); err != nil {
		t.Fatal(err)
	}
	n, err := s.PruneCheckpoints()
	if err != nil || n != 1 {
		t.Fatalf("pruned %d, %v", n, err)
	}
	if _, err := s.Checkpoint("s", "old"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the old checkpoint: %v", err)
	}
	if s.HasContent(oldOnly.Content) || !s.HasContent(shared.Content) || !s.HasContent(inIndex.Content) {
		t.Fatalf("content after pruning: old-only %v shared %v index %v", s.HasContent(oldOnly.Content), s.HasContent(shared.Content), s.HasContent(inIndex.Content))
	}
	if got, err := s.Content(shared.Content); err != nil || string(got) != "shared" {
		t.Fatalf("shared content: %q %v", got, err)
	}
	if later, _ := s.LaterChanges("p", "s", "new"); len(later) != 0 {
		t.Fatalf("path rows of the pruned checkpoint are left: %v", later)
	}
}

// TestCollectContentDaily: content nothing names is collected once it is older than the
// retention, by a marking pass that runs at most once a day (collectEvery): on an old
// workspace the index names old content at every pass.
func TestCollectContentDaily(t *testing.T) {
	clock := newFakeClock()
	s := openPruned(t, clock)
	index := func(st FileState) {
		if err := s.UpdateCheckpoints(&CheckpointUpdate{Index: map[string]*FileState{"i": &st}}); err != nil {
			t.Fatal(err)
		}
	}
	prune := func() {
		if _, err := s.PruneCheckpoints(); err != nil {
			t.Fatal(err)
		}
	}
	a, err := s.PutContent([]byte("nothing names a"))
	if err != nil {
		t.Fatal(err)
	}
	b := fileState(s, t, "the index names b")
	index(b)
	clock.Advance(48 * time.Hour)
	prune()
	if s.HasContent(a) || !s.HasContent(b.Content) {
		t.Fatalf("after the first pass: a kept %v (want false), b kept %v (want true)", s.HasContent(a), s.HasContent(b.Content))
	}
	index(fileState(s, t, "the index names c now")) // b, 48 h old, is named by nothing
	clock.Advance(time.Hour)
	prune()
	if !s.HasContent(b.Content) {
		t.Fatal("content was collected by a second marking pass within a day")
	}
	clock.Advance(collectEvery)
	prune()
	if s.HasContent(b.Content) {
		t.Fatal("old content nothing names was not collected a day later")
	}
}

// TestCheckpointIndexEncoding: every field of an index entry survives the binary form, an
// entry an earlier version wrote as JSON still reads, and a damaged one is ErrCorrupt.
func TestCheckpointIndexEncoding(t *testing.T) {
	s := openTest(t, nil)
	states := map[string]*FileState{
		"f":     {Kind: KindFile, Mode: 0o755, Size: 1234, Content: "ab12", Git: "cd34", Mtime: -5, Ctime: 1 << 62, Ino: 1<<64 - 1},
		"l":     {Kind: KindLink, Size: 3, Link: "../x"},
		"d":     {Kind: KindDir, Mode: 0o700},
		"big":   {Kind: KindFile, Size: 5 << 20, NotKept: "larger than 4 MiB", Mtime: 7},
		"a/é b": {Kind: KindFile},
	}
	if err := s.UpdateCheckpoints(&CheckpointUpdate{Index: states}); err != nil {
		t.Fatal(err)
	}
	// An entry as toolsd wrote it before the binary form.
	old := FileState{Kind: KindFile, Mode: 0o644, Size: 9, Content: "ee", Mtime: 11, Ctime: 12, Ino: 13}
	oldJSON, _ := json.Marshal(old)
	if err := s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketCPIndex).Put([]byte("old"), oldJSON) }); err != nil {
		t.Fatal(err)
	}
	got := map[string]FileState{}
	var order []string
	if complete, _, err := s.LoadCheckpointIndex(func(p string, st FileState) { got[p] = st; order = append(order, p) }); err != nil || !complete {
		t.Fatal(complete, err)
	}
	for p, want := range states {
		if got[p] != *want {
			t.Errorf("%s: read back %+v, wrote %+v", p, got[p], *want)
		}
	}
	if got["old"] != old {
		t.Errorf("a JSON entry read back as %+v, want %+v", got["old"], old)
	}
	if !slices.IsSorted(order) {
		t.Errorf("not in path order: %v", order)
	}
	if err := s.UpdateCheckpoints(&CheckpointUpdate{Index: map[string]*FileState{"x": {Kind: "fifo"}}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("an unknown kind: %v, want ErrInvalid", err)
	}
	good, _ := encodeIndexState(states["f"])
	for _, bad := range [][]byte{good[:len(good)-1], append(bytes.Clone(good), 0), {indexFormat}, {9, 1}, {indexFormat, 7}} {
		if err := s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketCPIndex).Put([]byte("bad"), bad) }); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.LoadCheckpointIndex(func(string, FileState) {}); !errors.Is(err, ErrCorrupt) {
			t.Errorf("entry %x: %v, want ErrCorrupt", bad, err)
		}
	}
}

// TestCheckpointIndexBase: an index being made anew reads as incomplete until its first base
// is written (in several pieces), and the changes written meanwhile stay; base and changes
// read back as one index; a path gone after the base stays gone; a new base folds the
// changes in; content only the base names is not collected; a damaged base is ErrCorrupt.
func TestCheckpointIndexBase(t *testing.T) {
	s := openTest(t, nil)
	kept := fileState(s, t, "named by the base only")
	load := func() (map[string]FileState, bool, int) {
		t.Helper()
		got := map[string]FileState{}
		complete, changes, err := s.LoadCheckpointIndex(func(p string, st FileState) {
			if st.Kind == KindAbsent {
				delete(got, p)
			} else {
				got[p] = st
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		return got, complete, changes
	}
	if complete, err := s.CheckpointIndexComplete(); err != nil || complete {
		t.Fatalf("an empty store: complete %v, %v", complete, err)
	}
	// An index of an earlier run, then one made anew: nothing of the first is left, and
	// nothing looks whole until the new base is written.
	f := FileState{Kind: KindFile, Size: 7}
	if err := s.UpdateCheckpoints(&CheckpointUpdate{Index: map[string]*FileState{"stale": &f}}); err != nil {
		t.Fatal(err)
	}
	if err := s.StartCheckpointIndex(); err != nil {
		t.Fatal(err)
	}
	early := FileState{Kind: KindFile, Size: 2}
	if err := s.UpdateCheckpoints(&CheckpointUpdate{Index: map[string]*FileState{"early": &early}}); err != nil {
		t.Fatal(err)
	}
	if complete, err := s.CheckpointIndexComplete(); err != nil || complete {
		t.Fatalf("being made: CheckpointIndexComplete %v, %v", complete, err)
	}
	if got, complete, _ := load(); complete || len(got) != 0 {
		t.Fatalf("being made: complete %v, %v", complete, got)
	}
	// Enough long paths for several pieces of a MiB.
	want := map[string]FileState{"a/kept": kept}
	var paths []string
	for i := range 20000 {
		p := fmt.Sprintf("%s/f%05d.c", strings.Repeat("deep/", 20), i)
		paths = append(paths, p)
		want[p] = FileState{Kind: KindFile, Mode: 0o644, Size: int64(i), Git: "0123456789abcdef0123456789abcdef01234567", Mtime: int64(i), Ino: uint64(i)}
	}
	paths = append(paths, "a/kept")
	slices.Sort(paths)
	write := func(paths []string, fold bool) error {
		return s.WriteCheckpointIndex(func(yield func(string, *FileState) bool) {
			for _, p := range paths {
				st := want[p]
				if !yield(p, &st) {
					return
				}
			}
		}, fold)
	}
	if err := write(paths, false); err != nil {
		t.Fatal(err)
	}
	want["early"] = early // written after the base's entries were taken: it stays
	if err := s.db.View(func(tx *bolt.Tx) error {
		if n := tx.Bucket(bucketCPIndexBase).Stats().KeyN; n < 2 {
			t.Errorf("the base is in %d pieces, want several", n)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// Changes after the base: one path changed, one new, one gone.
	changed := FileState{Kind: KindFile, Size: 1}
	if err := s.UpdateCheckpoints(&CheckpointUpdate{Index: map[string]*FileState{paths[0]: &changed, "new": &changed, paths[1]: nil}}); err != nil {
		t.Fatal(err)
	}
	want[paths[0]], want["new"] = changed, changed
	delete(want, paths[1])
	got, complete, changes := load()
	if !complete || changes != 4 || !maps.Equal(got, want) {
		t.Fatalf("base and changes: complete %v, %d changes, %d paths (want %d)", complete, changes, len(got), len(want))
	}
	if s.pruneCheckpoints(time.Now().Add(time.Hour)); !s.HasContent(kept.Content) {
		t.Fatal("content the base names was collected")
	}
	// A new base folds the changes in.
	paths = slices.Sorted(maps.Keys(want))
	if err := write(paths, true); err != nil {
		t.Fatal(err)
	}
	if got, complete, changes = load(); !complete || changes != 0 || !maps.Equal(got, want) {
		t.Fatalf("a new base: complete %v, %d changes, %d paths (want %d)", complete, changes, len(got), len(want))
	}
	if err := write([]string{"b", "a"}, true); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a base out of order: %v, want ErrInvalid", err)
	}
	if err := s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketCPIndexBase).Put(be32(0), []byte{3, 200}) }); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.LoadCheckpointIndex(func(string, FileState) {}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a damaged base: %v, want ErrCorrupt", err)
	}
}
