package store

import (
	"bytes"
	"compress/gzip"
	"errors"
	"github.com/toolsd/toolsd/internal/fsopen/fsopentest"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolsd/toolsd/protocol"
)

// testdata/calllog-v1 is a store and both its call logs as the toolsd before this one left
// them when it was killed (SIGKILL) with records in the logs only. It had written, in order:
// s1/a pending and s1/b running, both committed to bbolt; b completed and s1/c running,
// then the log retired (toolsd.db.log.old); a completed, c completed, and s2/d running (in
// toolsd.db.log).

// leftover copies testdata/calllog-v1 into a fresh folder and returns the store's path there.
func leftover(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"toolsd.db", "toolsd.db.log", "toolsd.db.log.old"} {
		if err := os.WriteFile(filepath.Join(dir, name), testdata(t, name), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "toolsd.db")
}

// testdata is the contents of a file of testdata/calllog-v1.
func testdata(t *testing.T, name string) []byte {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "calllog-v1", name+".gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return b
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

// TestOpenImportsLeftoverCallLog: the records an earlier toolsd had only in its call logs
// when it died are on record after Open, in their last state (the retired log first),
// indexed, with the one left running marked interrupted; the logs are gone, and new calls
// sort after the imported ones.
func TestOpenImportsLeftoverCallLog(t *testing.T) {
	path := leftover(t)
	s := openAt(t, path, nil)
	for _, id := range []string{"a", "b", "c"} {
		if got := wantStatus(t, s, "s1", id, protocol.StatusCompleted); got.Output != id+" done\n" {
			t.Errorf("s1/%s: output %q", id, got.Output)
		}
	}
	wantStatus(t, s, "s2", "d", protocol.StatusInterrupted)
	if got := listIDs(t, s, "s1"); got != "c b a" {
		t.Errorf("session s1 lists %q", got)
	}
	if err := s.CreateCall(newRec("s2", "d")); !errors.Is(err, ErrDuplicate) {
		t.Errorf("CreateCall of an imported call: %v, want ErrDuplicate", err)
	}
	if err := s.CreateCall(newRec("s2", "e")); err != nil {
		t.Fatal(err)
	}
	if got := listIDs(t, s, ""); got != "e d c b a" {
		t.Errorf("all calls list %q", got)
	}
	if v, err := s.SessionGet("s1", "k"); err != nil || string(v) != "v" {
		t.Errorf("the session value committed before the crash: %q, %v", v, err)
	}
	for _, p := range []string{path + ".log", path + ".log.old"} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after the import: %v, want none", p, err)
		}
	}
}

// TestOpenReadsACallLogOnce: a store this toolsd made, or whose call log it imported, never
// reads a file at a call log's path (one a tool process planted, say): it adds no records
// and changes none, and Open warns about it.
func TestOpenReadsACallLogOnce(t *testing.T) {
	var logged bytes.Buffer
	quiet := &Options{Logger: slog.New(slog.NewTextHandler(&logged, nil))}
	fresh := filepath.Join(t.TempDir(), "toolsd.db")
	s := openAt(t, fresh, nil)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fresh+".log", testdata(t, "toolsd.db.log"), 0o600); err != nil {
		t.Fatal(err)
	}
	s = openAt(t, fresh, quiet)
	if _, err := s.GetCall("s1", "a"); !errors.Is(err, ErrNotFound) {
		t.Errorf("a call in a log planted beside a new store: %v, want ErrNotFound", err)
	}
	if _, err := os.Lstat(fresh + ".log"); err != nil {
		t.Errorf("the planted log: %v, want it left alone", err)
	}
	if !strings.Contains(logged.String(), "is not read") {
		t.Errorf("no warning about the planted log in %q", logged.String())
	}

	path := leftover(t)
	s = openAt(t, path, nil)
	if err := s.UpdateCall("s1", "a", func(r *protocol.CallRecord) { r.Output = "changed" }); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".log", testdata(t, "toolsd.db.log"), 0o600); err != nil {
		t.Fatal(err)
	}
	s = openAt(t, path, nil)
	if got := wantStatus(t, s, "s1", "a", protocol.StatusCompleted); got.Output != "changed" {
		t.Errorf("s1/a after a second log was planted: output %q, want %q", got.Output, "changed")
	}
}

// TestOpenImportsTornCallLog: a last entry the process did not finish writing is left out,
// and everything before it is imported.
func TestOpenImportsTornCallLog(t *testing.T) {
	var logged bytes.Buffer
	path := leftover(t)
	b := bytes.TrimRight(testdata(t, "toolsd.db.log"), "\x00")
	if err := os.WriteFile(path+".log", b[:len(b)-3], 0o600); err != nil { // the end of d's creation missing
		t.Fatal(err)
	}
	s := openAt(t, path, &Options{Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	wantStatus(t, s, "s1", "a", protocol.StatusCompleted)
	wantStatus(t, s, "s1", "c", protocol.StatusCompleted)
	if _, err := s.GetCall("s2", "d"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the torn call: %v, want ErrNotFound", err)
	}
	if !strings.Contains(logged.String(), "ignored the end of a call log") {
		t.Errorf("no warning about the torn entry in %q", logged.String())
	}
}

// TestOpenLeftoverNotACallLog: a file at a call log's path that is not one is left alone
// (the other log is imported); one that is not a regular file makes Open fail saying so
// (reading a FIFO would hang).
func TestOpenLeftoverNotACallLog(t *testing.T) {
	path := leftover(t)
	if err := os.WriteFile(path+".log", []byte("not a log at all"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := openAt(t, path, nil)
	wantStatus(t, s, "s1", "b", protocol.StatusCompleted)
	if b, err := os.ReadFile(path + ".log"); err != nil || string(b) != "not a log at all" {
		t.Errorf("the file that is not a call log: %q, %v", b, err)
	}

	path2 := leftover(t)
	if err := os.Remove(path2 + ".log"); err != nil {
		t.Fatal(err)
	}
	fsopentest.MakeFIFO(t, path2+".log")
	if s2, err := Open(path2, nil); err == nil {
		s2.Close()
		t.Fatal("Open with a FIFO for a call log succeeded")
	} else if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path2+".log") {
		t.Fatalf("Open with a FIFO for a call log: %v", err)
	}
}
