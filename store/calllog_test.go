package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/toolsd/toolsd/protocol"
)

// crashCopy copies the store's file and its call log into a fresh folder, as they would be
// if the process died now (kill -9 leaves the files as the kernel has them), and returns the
// copy's path. A cut above zero takes that many bytes off the end of the log's last entry,
// and what follows it.
func crashCopy(t *testing.T, s *Store, cut int) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "copy.db")
	for _, p := range [][2]string{{s.Path(), dst}, {LogPath(s.Path()), LogPath(dst)}, {OldLogPath(s.Path()), OldLogPath(dst)}} {
		b, err := os.ReadFile(p[0])
		if errors.Is(err, os.ErrNotExist) && p[0] == OldLogPath(s.Path()) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if p[0] == LogPath(s.Path()) && cut > 0 {
			b = b[:logEnd(t, p[0])-int64(cut)] // the last entry torn
		}
		if err := os.WriteFile(p[1], b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// openQuiet opens a store whose call log flushes only when told to (or by another write),
// once the pruner's first pass (which commits) is done.
func openQuiet(t *testing.T, opts *Options) *Store {
	t.Helper()
	first := make(chan struct{})
	var once sync.Once
	opts.logDelay = time.Hour
	opts.pruned = func(int, error) { once.Do(func() { close(first) }) }
	s := openTest(t, opts)
	select {
	case <-first:
	case <-time.After(10 * time.Second):
		t.Fatal("no pruning pass within 10 s of Open")
	}
	return s
}

// logSize is where the entries of the store's call log end (the file itself is larger:
// its size is its capacity).
func logSize(t *testing.T, s *Store) int64 {
	t.Helper()
	return logEnd(t, LogPath(s.Path()))
}

func logEnd(t *testing.T, path string) int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte(logMagic)) {
		t.Fatalf("%s is not a call log", path)
	}
	end := len(logMagic)
	for {
		_, n, err := parseEntry(b[end:])
		if err != nil {
			return int64(end)
		}
		end += n
	}
}

// logCalls records what the crash tests check: c1 created running then completed, c2 left
// pending, c3 completed at once in another session.
func logCalls(t *testing.T, s *Store) {
	t.Helper()
	r := newRec("s1", "c1")
	r.Status = protocol.StatusRunning
	if err := s.CreateCall(r); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateCall("s1", "c1", func(r *protocol.CallRecord) {
		r.Status, r.Output = protocol.StatusCompleted, "hello\n"
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateCall(newRec("s1", "c2")); err != nil {
		t.Fatal(err)
	}
	r = newRec("s2", "c3")
	r.Status, r.Output = protocol.StatusCompleted, "done"
	if err := s.CreateCall(r); err != nil {
		t.Fatal(err)
	}
}

func wantStatus(t *testing.T, s *Store, session, call, status string) *protocol.CallRecord {
	t.Helper()
	r, err := s.GetCall(session, call)
	if err != nil {
		t.Fatalf("GetCall(%s, %s): %v", session, call, err)
	}
	if r.Status != status {
		t.Fatalf("%s/%s: status %q, want %q", session, call, r.Status, status)
	}
	return r
}

func listIDs(t *testing.T, s *Store, session string) string {
	t.Helper()
	calls, _, err := s.ListCalls(session, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range calls {
		ids = append(ids, c.CallID)
	}
	return strings.Join(ids, " ")
}

// TestCallLogSurvivesCrash: calls that were only in the call log when the process died are
// on record after the next Open, in their last state, indexed, with the ones left
// unfinished marked interrupted; new calls sort after them.
func TestCallLogSurvivesCrash(t *testing.T) {
	s := openQuiet(t, &Options{})
	logCalls(t, s)
	if n := logSize(t, s); n <= int64(len(logMagic)) {
		t.Fatalf("the call log holds %d bytes: the calls were committed, not logged", n)
	}
	c := openAt(t, crashCopy(t, s, 0), nil)
	// The replayed log is gone; the next one is made by the next entry.
	if _, err := os.Stat(LogPath(c.Path())); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the call log after its replay: %v, want none until a call is logged", err)
	}
	if got := wantStatus(t, c, "s1", "c1", protocol.StatusCompleted); got.Output != "hello\n" {
		t.Fatalf("c1's output %q", got.Output)
	}
	wantStatus(t, c, "s1", "c2", protocol.StatusInterrupted)
	wantStatus(t, c, "s2", "c3", protocol.StatusCompleted)
	if got := listIDs(t, c, "s1"); got != "c2 c1" {
		t.Fatalf("session s1 lists %q", got)
	}
	if err := c.CreateCall(newRec("s1", "c1")); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("CreateCall of a replayed call: %v, want ErrDuplicate", err)
	}
	if err := c.CreateCall(newRec("s1", "c4")); err != nil {
		t.Fatal(err)
	}
	if got := listIDs(t, c, ""); got != "c4 c3 c2 c1" {
		t.Fatalf("all calls list %q", got)
	}
}

// TestCallLogTornTail: a write the process did not finish (the end of the last entry
// missing) loses that entry only.
func TestCallLogTornTail(t *testing.T) {
	s := openQuiet(t, &Options{})
	logCalls(t, s)
	c := openAt(t, crashCopy(t, s, 3), nil)
	wantStatus(t, c, "s1", "c1", protocol.StatusCompleted)
	wantStatus(t, c, "s1", "c2", protocol.StatusInterrupted)
	if _, err := c.GetCall("s2", "c3"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the torn call: %v, want ErrNotFound", err)
	}
}

// TestCallLogCommitsBeforeOtherWrites: a write of another kind commits the logged calls
// first (a checkpoint names a call by its sequence), and reads of the calls see them.
func TestCallLogCommitsBeforeOtherWrites(t *testing.T) {
	s := openQuiet(t, &Options{})
	if err := s.CreateCall(newRec("s1", "c1")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Checkpoint("s1", "c1"); err == nil || !strings.Contains(err.Error(), "changed no files") {
		t.Fatalf("Checkpoint of a logged call: %v, want one saying it changed no files", err)
	}
	if err := s.CreateCall(newRec("s1", "c2")); err != nil {
		t.Fatal(err)
	}
	if err := s.SessionPut("s1", "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if n := logSize(t, s); n != int64(len(logMagic)) {
		t.Fatalf("the call log holds %d bytes after a commit, want it emptied", n)
	}
	if err := s.db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketCallIndex).Get(callKey("s1", "c2")) == nil {
			return errors.New("c2 is not in the call index")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestCallLogFlushesByItself: with nothing else to commit them, logged calls reach bbolt
// after the delay and the log is emptied.
func TestCallLogFlushesByItself(t *testing.T) {
	flushed := make(chan struct{}, 1)
	s := openTest(t, &Options{logDelay: time.Millisecond, logFlushed: func() {
		select {
		case flushed <- struct{}{}:
		default:
		}
	}})
	if err := s.CreateCall(newRec("s1", "c1")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-flushed:
	case <-time.After(10 * time.Second):
		t.Fatal("the call log was not flushed within 10 s")
	}
	if n := len(s.clog.waiting()); n != 0 {
		t.Fatalf("%d entries wait after the flush", n)
	}
	if n := logSize(t, s); n != int64(len(logMagic)) {
		t.Fatalf("the call log holds %d bytes after its flush", n)
	}
}

// TestCallLogRetire: when calls keep coming, a large log is retired at a commit and new
// entries go to a fresh one; a crash at any point loses nothing, and the retired file goes
// once its entries are committed.
func TestCallLogRetire(t *testing.T) {
	s := openQuiet(t, &Options{logMax: 1})
	for _, id := range []string{"a", "b"} {
		if err := s.CreateCall(newRec("s", id)); err != nil {
			t.Fatal(err)
		}
	}
	snap := s.clog.waiting() // a commit begins: the log is large, so it is retired
	if len(snap) != 2 {
		t.Fatalf("the commit takes %d entries, want 2", len(snap))
	}
	if err := s.CreateCall(newRec("s", "c")); err != nil { // while it runs
		t.Fatal(err)
	}
	wantLogged(t, OldLogPath(s.Path()), "a b")
	wantLogged(t, LogPath(s.Path()), "c")
	if got := listIDs(t, openAt(t, crashCopy(t, s, 0), nil), "s"); got != "c b a" {
		t.Fatalf("after a crash mid-commit: %q", got)
	}
	if err := s.db.Update(func(tx *bolt.Tx) error { return applyEntries(tx, snap) }); err != nil {
		t.Fatal(err)
	}
	if err := s.clog.committed(snap); err != nil {
		t.Fatal(err)
	}
	if n := logEnd(t, OldLogPath(s.Path())); n != int64(len(logMagic)) {
		t.Fatalf("the retired log holds %d bytes after its commit, want it emptied", n)
	}
	if got := listIDs(t, openAt(t, crashCopy(t, s, 0), nil), "s"); got != "c b a" {
		t.Fatalf("after a crash past the commit: %q", got)
	}

	// The next retirement swaps the emptied file back in: the same two files, written
	// again.
	spare, err := os.Stat(OldLogPath(s.Path()))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateCall(newRec("s", "d")); err != nil {
		t.Fatal(err)
	}
	snap = s.clog.waiting()
	if err := s.CreateCall(newRec("s", "e")); err != nil {
		t.Fatal(err)
	}
	if cur, err := os.Stat(LogPath(s.Path())); err != nil || !os.SameFile(cur, spare) {
		t.Fatalf("the log after the second retirement: %v, want the file emptied before", err)
	}
	wantLogged(t, OldLogPath(s.Path()), "c d")
	wantLogged(t, LogPath(s.Path()), "e")
	if got := listIDs(t, openAt(t, crashCopy(t, s, 0), nil), "s"); got != "e d c b a" {
		t.Fatalf("after a crash in the second retirement: %q", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{LogPath(s.Path()), OldLogPath(s.Path())} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s after Close: %v, want it removed", filepath.Base(p), err)
		}
	}
}

// wantLogged checks that the call log file at path holds entries of the calls want (ids
// separated by spaces), in that order, and nothing else but zeros after them.
func wantLogged(t *testing.T, path, want string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	entries, rest := parseLog(b)
	var got []string
	for _, e := range entries {
		got = append(got, e.call)
	}
	if strings.Join(got, " ") != want || rest != 0 {
		t.Fatalf("%s holds %v (%d bytes left over), want %v", filepath.Base(path), got, rest, want)
	}
}

// TestCallLogOverlappingCommits: two commits whose snapshots of the log overlap (a late write
// racing Close's last commit) each drop what they committed, in either order, and nothing
// else.
func TestCallLogOverlappingCommits(t *testing.T) {
	s := openQuiet(t, &Options{})
	create := func(ids ...string) {
		t.Helper()
		for _, id := range ids {
			if err := s.CreateCall(newRec("s", id)); err != nil {
				t.Fatal(err)
			}
		}
	}
	commit := func(snap []*logEntry) {
		t.Helper()
		if err := s.db.Update(func(tx *bolt.Tx) error { return applyEntries(tx, snap) }); err != nil {
			t.Fatal(err)
		}
		if err := s.clog.committed(snap); err != nil {
			t.Fatal(err)
		}
	}
	create("a", "b")
	small := s.clog.waiting()
	create("c")
	large := s.clog.waiting()
	commit(large)
	commit(small) // already dropped: nothing more to drop
	if n := len(s.clog.waiting()); n != 0 {
		t.Fatalf("%d entries wait, want none", n)
	}
	create("d", "e")
	small = s.clog.waiting()
	create("f")
	large = s.clog.waiting()
	commit(small)
	if w := s.clog.waiting(); len(w) != 1 || w[0].call != "f" {
		t.Fatalf("after the smaller commit %d entries wait, want f alone", len(w))
	}
	commit(large)
	if n := len(s.clog.waiting()); n != 0 {
		t.Fatalf("%d entries wait, want none", n)
	}
	if got := listIDs(t, openAt(t, crashCopy(t, s, 0), nil), "s"); got != "f e d c b a" {
		t.Fatalf("after a crash: %q", got)
	}
}

// TestCallLogConcurrent: many writers creating and finishing calls while the log flushes
// itself and is retired again and again: every call ends on record, finished, in its
// session.
func TestCallLogConcurrent(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "toolsd.db")
	s, err := Open(path, &Options{logDelay: 200 * time.Microsecond, logMax: 8 << 10})
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 16, 40
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				id := fmt.Sprintf("w%d-%d", w, i)
				r := newRec(fmt.Sprintf("s%d", w%4), id)
				r.Status = protocol.StatusRunning
				if err := s.CreateCall(r); err != nil {
					errs <- err
					return
				}
				if err := s.UpdateCall(r.SessionID, id, func(r *protocol.CallRecord) { r.Status = protocol.StatusCompleted }); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(LogPath(path)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the call log after Close: %v, want it removed", err)
	}
	s = openAt(t, path, nil)
	n := 0
	for sess := range 4 {
		calls, _, err := s.ListCalls(fmt.Sprintf("s%d", sess), MaxListLimit, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range calls {
			if c.Status != protocol.StatusCompleted {
				t.Fatalf("%s/%s is %s", c.SessionID, c.CallID, c.Status)
			}
		}
		n += len(calls)
	}
	if n != writers*each {
		t.Fatalf("%d calls on record, want %d", n, writers*each)
	}
}

// TestCallLogNotALog: a file at the log's path that is not a call log is ignored and
// replaced; one that is not a regular file makes Open fail saying so.
func TestCallLogNotALog(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "toolsd.db")
	if err := os.WriteFile(LogPath(path), []byte("not a log at all"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := openAt(t, path, nil)
	if err := s.CreateCall(newRec("s", "c")); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, s, "s", "c", protocol.StatusPending)

	path2 := filepath.Join(dir, "fifo.db")
	if err := syscall.Mkfifo(LogPath(path2), 0o600); err != nil {
		t.Fatal(err)
	}
	if s2, err := Open(path2, nil); err == nil {
		s2.Close()
		t.Fatal("Open with a FIFO for a call log succeeded")
	} else if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), LogPath(path2)) {
		t.Fatalf("Open with a FIFO for a call log: %v", err)
	}
}

// TestCallLogFailedWrite: an entry the log has no room for (a full disk) fails its call and
// leaves the log as it was, so the entries written after it are not lost at the next
// replay.
func TestCallLogFailedWrite(t *testing.T) {
	var fail atomic.Bool
	s := openQuiet(t, &Options{logAlloc: func(fd int, size int64) error {
		if fail.Load() {
			return syscall.ENOSPC
		}
		return allocate(fd, size)
	}})
	if err := s.CreateCall(newRec("s", "a")); err != nil {
		t.Fatal(err)
	}
	before := logSize(t, s)
	fail.Store(true)
	big := newRec("s", "b")
	big.Output = strings.Repeat("x", logInitialBytes)
	if err := s.CreateCall(big); err == nil || !strings.Contains(err.Error(), "call log") || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("CreateCall on a full disk: %v, want an error about the call log", err)
	}
	if n := logSize(t, s); n != before {
		t.Fatalf("the call log's entries end at %d after the failed write, want %d", n, before)
	}
	if err := s.CreateCall(newRec("s", "c")); err != nil { // room enough for this one
		t.Fatal(err)
	}
	fail.Store(false)
	if err := s.CreateCall(big); err != nil {
		t.Fatal(err)
	}
	c := openAt(t, crashCopy(t, s, 0), nil)
	if got := listIDs(t, c, "s"); got != "b c a" {
		t.Fatalf("after a crash: %q, want b, c and a", got)
	}
}

// TestCallLogFileCutShort: a log file cut short behind the daemon's back makes a write into
// the missing pages fault; the call fails with an error instead of the daemon crashing, and
// the store goes on serving.
func TestCallLogFileCutShort(t *testing.T) {
	s := openQuiet(t, &Options{})
	if err := s.CreateCall(newRec("s", "a")); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(LogPath(s.Path()), 4096); err != nil {
		t.Fatal(err)
	}
	big := newRec("s", "b")
	big.Output = strings.Repeat("x", 3*4096)
	if err := s.CreateCall(big); err == nil || !strings.Contains(err.Error(), "call log") || !strings.Contains(err.Error(), "could not be written") {
		t.Fatalf("CreateCall into pages cut off: %v, want an error about the call log", err)
	}
	if got := listIDs(t, s, "s"); got != "a" {
		t.Fatalf("the store lists %q, want a", got)
	}
	if err := os.Truncate(LogPath(s.Path()), logInitialBytes); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateCall(big); err != nil {
		t.Fatalf("CreateCall once the file has its pages again: %v", err)
	}
	wantStatus(t, s, "s", "b", protocol.StatusPending)
}

// TestSyncStoreHasNoLog: with Sync every write is its own fsynced commit; no log.
func TestSyncStoreHasNoLog(t *testing.T) {
	s := openTest(t, &Options{Sync: true})
	logCalls(t, s)
	if _, err := os.Stat(LogPath(s.Path())); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a Sync store's call log: %v, want none", err)
	}
	wantStatus(t, s, "s1", "c1", protocol.StatusCompleted)
}
