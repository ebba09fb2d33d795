package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/toolsd/toolsd/protocol"
)

func newRec(session, call string) *protocol.CallRecord {
	return &protocol.CallRecord{
		SessionID: session, CallID: call, MessageID: "msg", Tool: "bash",
		Args: json.RawMessage(`{"command":"echo hi"}`),
	}
}

func TestOpenFileModes(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a", "b", "toolsd.db")
	s := openAt(t, path, nil)
	if s.Path() != path {
		t.Fatalf("Path() = %q, want %q", s.Path(), path)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v, want 0600", fi.Mode().Perm())
	}
	di, err := os.Stat(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if di.Mode().Perm() != 0o700 {
		t.Errorf("folder mode %v, want 0700", di.Mode().Perm())
	}
	if !s.db.NoSync || !s.db.NoGrowSync {
		t.Error("without Sync, commits must not fsync")
	}
	synced := openAt(t, filepath.Join(dir, "synced.db"), &Options{Sync: true})
	if synced.db.NoSync || synced.db.NoGrowSync {
		t.Error("with Sync, commits must fsync")
	}
	if err := synced.CreateCall(newRec("s", "c")); err != nil {
		t.Fatal(err)
	}
	if _, err := Open("", nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("Open(\"\"): %v", err)
	}
}

func TestCallsCRUD(t *testing.T) {
	clock := newFakeClock()
	s := openTest(t, &Options{Now: clock.Now})

	if err := s.CreateCall(newRec("s1", "c1")); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateCall(newRec("s2", "c1")); err != nil {
		t.Fatalf("same callID in another session must be fine: %v", err)
	}

	t.Run("errors", func(t *testing.T) {
		tests := []struct {
			name string
			err  error
			want error
		}{
			{"duplicate", s.CreateCall(newRec("s1", "c1")), ErrDuplicate},
			{"nil record", s.CreateCall(nil), ErrInvalid},
			{"empty session", s.CreateCall(newRec("", "c9")), ErrInvalid},
			{"empty call", s.CreateCall(newRec("s1", "")), ErrInvalid},
			{"NUL in session", s.CreateCall(newRec("s\x001", "c9")), ErrInvalid},
			{"update unknown call", s.UpdateCall("s1", "nope", func(*protocol.CallRecord) {}), ErrNotFound},
			{"update unknown session", s.UpdateCall("nope", "c1", func(*protocol.CallRecord) {}), ErrNotFound},
			{"update panics", s.UpdateCall("s1", "c1", func(*protocol.CallRecord) { panic("boom") }), nil},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				if tt.want == nil {
					if tt.err == nil {
						t.Fatal("want an error, got nil")
					}
					return
				}
				if !errors.Is(tt.err, tt.want) {
					t.Fatalf("err = %v, want %v", tt.err, tt.want)
				}
			})
		}
		for _, id := range []string{"nope", ""} {
			if _, err := s.GetCall("s1", id); err == nil {
				t.Errorf("GetCall(s1, %q): want an error", id)
			}
		}
	})

	t.Run("get", func(t *testing.T) {
		got, err := s.GetCall("s1", "c1")
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != protocol.StatusPending || got.StartedAt.IsZero() || string(got.Args) != `{"command":"echo hi"}` {
			t.Fatalf("GetCall = %+v", got)
		}
		// No session: the newest call with that id.
		got, err = s.GetCall("", "c1")
		if err != nil || got.SessionID != "s2" {
			t.Fatalf("GetCall(\"\", c1) = %+v, %v; want session s2", got, err)
		}
	})

	t.Run("update", func(t *testing.T) {
		end := clock.Now()
		err := s.UpdateCall("s1", "c1", func(r *protocol.CallRecord) {
			r.Status = protocol.StatusCompleted
			r.Title = "echo hi"
			r.Output = "hi\n"
			r.Metadata = json.RawMessage(`{"exit":0}`)
			r.EndedAt = &end
			r.SessionID = "hijack" // ignored
		})
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.GetCall("s1", "c1")
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != protocol.StatusCompleted || got.Output != "hi\n" || string(got.Metadata) != `{"exit":0}` || got.EndedAt == nil || !got.EndedAt.Equal(end) {
			t.Fatalf("after update: %+v", got)
		}
		if _, err := s.GetCall("hijack", "c1"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("identity must not change: %v", err)
		}
	})
}

func TestInterruptedOnReopen(t *testing.T) {
	path := t.TempDir() + "/toolsd.db"
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, st := range []string{protocol.StatusPending, protocol.StatusRunning, protocol.StatusCompleted, protocol.StatusError, protocol.StatusCancelled} {
		r := newRec("s", fmt.Sprint("c", i))
		r.Status = st
		if err := s.CreateCall(r); err != nil {
			t.Fatal(err)
		}
	}
	// A running call that completes is no longer unfinished.
	if err := s.UpdateCall("s", "c1", func(r *protocol.CallRecord) { r.Status = protocol.StatusCompleted }); err != nil {
		t.Fatal(err)
	}
	// A completed call set back to running is unfinished again.
	if err := s.UpdateCall("s", "c2", func(r *protocol.CallRecord) { r.Status = protocol.StatusRunning }); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openAt(t, path, nil)
	want := []string{protocol.StatusInterrupted, protocol.StatusCompleted, protocol.StatusInterrupted, protocol.StatusError, protocol.StatusCancelled}
	for i, w := range want {
		got, err := s.GetCall("s", fmt.Sprint("c", i))
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != w {
			t.Errorf("c%d: status %q, want %q", i, got.Status, w)
		}
		if w == protocol.StatusInterrupted && (got.EndedAt == nil || got.Error == "") {
			t.Errorf("c%d: interrupted without EndedAt or error: %+v", i, got)
		}
	}
}

func TestListCallsPaging(t *testing.T) {
	s := openTest(t, &Options{Now: newFakeClock().Now})
	var all, s1 []string // newest first
	for i := range 23 {
		sess := "s1"
		if i%3 == 0 {
			sess = "s2"
		}
		id := fmt.Sprintf("c%02d", i)
		if err := s.CreateCall(newRec(sess, id)); err != nil {
			t.Fatal(err)
		}
		all = append([]string{id}, all...)
		if sess == "s1" {
			s1 = append([]string{id}, s1...)
		}
	}
	// A session whose id is a prefix of another's must not see the other's calls.
	if err := s.CreateCall(newRec("s10", "other")); err != nil {
		t.Fatal(err)
	}
	all = append([]string{"other"}, all...)

	tests := []struct {
		session string
		limit   int
		want    []string
	}{
		{"", 1, all},
		{"", 5, all},
		{"", 24, all},
		{"", 0, all},
		{"", 1000, all},
		{"s1", 1, s1},
		{"s1", 4, s1},
		{"s1", 15, s1},
		{"s1", 16, s1},
		{"s10", 0, []string{"other"}},
		{"nobody", 3, nil},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("session=%q/limit=%d", tt.session, tt.limit), func(t *testing.T) {
			var got []string
			cursor := ""
			pages := 0
			for {
				page, next, err := s.ListCalls(tt.session, tt.limit, cursor)
				if err != nil {
					t.Fatal(err)
				}
				pages++
				eff := tt.limit
				if eff <= 0 {
					eff = DefaultListLimit
				}
				if len(page) > eff {
					t.Fatalf("page of %d > limit %d", len(page), eff)
				}
				for _, c := range page {
					if tt.session != "" && c.SessionID != tt.session {
						t.Fatalf("call of session %q in list of %q", c.SessionID, tt.session)
					}
					got = append(got, c.CallID)
				}
				if next == "" {
					break
				}
				if len(page) != eff {
					t.Fatalf("short page (%d) with a next cursor", len(page))
				}
				cursor = next
				if pages > 100 {
					t.Fatal("paging does not end")
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("got  %v\nwant %v", got, tt.want)
			}
		})
	}

	for _, bad := range []string{"!!", "0", "-1", "zzzzzzzzzzzzzzzzzzzzzzzz"} {
		if _, _, err := s.ListCalls("", 5, bad); !errors.Is(err, ErrBadCursor) {
			t.Errorf("cursor %q: err = %v, want ErrBadCursor", bad, err)
		}
	}
}

// TestConcurrentWrites: many writers at once, some failing, each
// gets its own answer.
func TestConcurrentWrites(t *testing.T) {
	s := openTest(t, nil)
	const workers, per = 16, 40
	var wg sync.WaitGroup
	errs := make(chan error, workers*per*4)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				id := fmt.Sprintf("w%d-c%d", w, i)
				if err := s.CreateCall(newRec("s", id)); err != nil {
					errs <- err
					continue
				}
				if err := s.CreateCall(newRec("s", id)); !errors.Is(err, ErrDuplicate) {
					errs <- fmt.Errorf("second create of %s: %v, want ErrDuplicate", id, err)
				}
				if err := s.UpdateCall("s", id, func(r *protocol.CallRecord) { r.Status = protocol.StatusRunning }); err != nil {
					errs <- err
				}
				if err := s.UpdateCall("s", id, func(r *protocol.CallRecord) { r.Status = protocol.StatusCompleted }); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	n := 0
	cursor := ""
	for {
		page, next, err := s.ListCalls("s", MaxListLimit, cursor)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range page {
			if c.Status != protocol.StatusCompleted {
				t.Errorf("%s: status %s", c.CallID, c.Status)
			}
		}
		n += len(page)
		if next == "" {
			break
		}
		cursor = next
	}
	if n != workers*per {
		t.Fatalf("listed %d calls, want %d", n, workers*per)
	}
}

func TestClosed(t *testing.T) {
	s, err := Open(t.TempDir()+"/x.db", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := s.CreateCall(newRec("s", "c")); !errors.Is(err, ErrClosed) {
		t.Errorf("CreateCall after Close: %v", err)
	}
	if _, err := s.GetCall("s", "c"); !errors.Is(err, ErrClosed) {
		t.Errorf("GetCall after Close: %v", err)
	}
	if _, err := s.NewOutput("s", "c"); !errors.Is(err, ErrClosed) {
		t.Errorf("NewOutput after Close: %v", err)
	}
}

func TestSessionValuesApprovalsTrust(t *testing.T) {
	clock := newFakeClock()
	s := openTest(t, &Options{Now: clock.Now})
	if v, err := s.SessionGet("s", "todo"); v != nil || err != nil {
		t.Fatalf("absent: %q, %v", v, err)
	}
	if err := s.SessionPut("s", "todo", []byte(`[1]`)); err != nil {
		t.Fatal(err)
	}
	if err := s.SessionPut("s", "todo", []byte(`[1,2]`)); err != nil {
		t.Fatal(err)
	}
	if v, _ := s.SessionGet("s", "todo"); string(v) != `[1,2]` {
		t.Fatalf("got %q", v)
	}
	if v, err := s.Session("s").Get(t.Context(), "todo"); string(v) != `[1,2]` || err != nil {
		t.Fatalf("Session(s).Get = %q, %v", v, err)
	}
	if err := s.Session("s3").Put(t.Context(), "k", []byte("v3")); err != nil {
		t.Fatal(err)
	}
	if v, _ := s.SessionGet("s3", "k"); string(v) != "v3" {
		t.Fatalf("Session(s3).Put stored %q", v)
	}
	if v, _ := s.SessionGet("s2", "todo"); v != nil {
		t.Fatalf("other session sees %q", v)
	}
	if err := s.SessionPut("s", "empty", []byte{}); err != nil {
		t.Fatal(err)
	}
	if v, _ := s.SessionGet("s", "empty"); v == nil || len(v) != 0 {
		t.Fatalf("empty value: %q (nil=%v)", v, v == nil)
	}
	if err := s.SessionPut("s", "todo", nil); err != nil {
		t.Fatal(err)
	}
	if v, _ := s.SessionGet("s", "todo"); v != nil {
		t.Fatalf("deleted value: %q", v)
	}

	t0 := time.Date(2025, 5, 5, 0, 0, 0, 0, time.UTC)
	if err := s.AddApprovals([]Approval{{Permission: "bash", Pattern: "git *", At: t0}, {Permission: "edit", Pattern: "src/**"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddApprovals([]Approval{{Permission: "bash", Pattern: "git *"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddApprovals([]Approval{{Permission: "", Pattern: "x"}}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("empty permission: %v", err)
	}
	ap, err := s.Approvals()
	if err != nil {
		t.Fatal(err)
	}
	if len(ap) != 2 || ap[0].Permission != "bash" || ap[0].Pattern != "git *" || !ap[0].At.Equal(t0) || ap[1].Pattern != "src/**" {
		t.Fatalf("approvals: %+v", ap)
	}

	if tr, _ := s.Trusted(); tr {
		t.Fatal("trusted by default")
	}
	for _, want := range []bool{true, false, true} {
		if err := s.SetTrusted(want); err != nil {
			t.Fatal(err)
		}
		if tr, _ := s.Trusted(); tr != want {
			t.Fatalf("Trusted = %v, want %v", tr, want)
		}
	}
}

// TestDamagedRecord: one damaged call value fails only that call; the list skips it.
func TestDamagedRecord(t *testing.T) {
	s := openTest(t, nil)
	for _, id := range []string{"a", "b", "c"} {
		if err := s.CreateCall(newRec("s", id)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.update(func(tx *bolt.Tx) error {
		k := tx.Bucket(bucketCallIndex).Get(callKey("s", "b"))
		return tx.Bucket(bucketCalls).Put(k, []byte{0xff, 0xff, 0xff})
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetCall("s", "b"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("GetCall of the damaged call: %v", err)
	}
	if err := s.UpdateCall("s", "b", func(*protocol.CallRecord) {}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("UpdateCall of the damaged call: %v", err)
	}
	page, _, err := s.ListCalls("s", 0, "")
	if err != nil || len(page) != 2 || page[0].CallID != "c" || page[1].CallID != "a" {
		t.Fatalf("ListCalls = %+v, %v", page, err)
	}
}

// TestSummaryConfined checks the summary's confined flag, read from the record's metadata.
func TestSummaryConfined(t *testing.T) {
	s := openTest(t, nil)
	want := map[string]bool{}
	for _, tc := range []struct {
		call, metadata string
		confined       bool
	}{
		{"confined", `{"exitCode":0,"sandbox":{"confined":true,"mode":"landlock"}}`, true},
		{"unconfined", `{"sandbox":{"confined":false,"why":"off"}}`, false},
		{"no-sandbox", `{"filePath":"/a/b.txt","sandboxed":true}`, false},
		{"not-an-object", `"sandbox"`, false},
		{"none", `{}`, false},
	} {
		r := newRec("s", tc.call)
		r.Metadata = json.RawMessage(tc.metadata)
		if err := s.CreateCall(r); err != nil {
			t.Fatal(err)
		}
		want[tc.call] = tc.confined
	}
	sums, _, err := s.ListCalls("s", 0, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(sums) != len(want) {
		t.Fatalf("%d summaries, want %d", len(sums), len(want))
	}
	for _, c := range sums {
		if c.Confined != want[c.CallID] {
			t.Errorf("call %q: confined %v, want %v", c.CallID, c.Confined, want[c.CallID])
		}
	}
}

// TestCreateCallRefusesInvalidJSON: a record whose raw JSON fields do not parse, or whose
// time cannot be written, is refused rather than stored damaged.
func TestCreateCallRefusesInvalidJSON(t *testing.T) {
	s := openTest(t, nil)
	bad := []func(*protocol.CallRecord){
		func(r *protocol.CallRecord) { r.Args = json.RawMessage(`{"a":`) },
		func(r *protocol.CallRecord) { r.Metadata = json.RawMessage(`nope`) },
		func(r *protocol.CallRecord) { r.StartedAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) },
	}
	for i, change := range bad {
		r := newRec("s", fmt.Sprint("c", i))
		change(r)
		if err := s.CreateCall(r); err == nil {
			t.Errorf("CreateCall(%+v) gave no error", r)
		}
	}
	if got := listIDs(t, s, "s"); got != "" {
		t.Errorf("calls on record: %q, want none", got)
	}
}

// TestBatchedCallWritesFailAlone makes call writes while another is under way, so that they
// share DB.Batch's commits: each write that fails (a duplicate, an unknown call, a panicking
// fn) gets its own error and leaves nothing, and every other write is on record.
func TestBatchedCallWritesFailAlone(t *testing.T) {
	s := openTest(t, nil)
	if err := s.CreateCall(newRec("s", "old")); err != nil {
		t.Fatal(err)
	}
	s.callWriters.Add(1) // as if a write were under way: the writes below join batches
	defer s.callWriters.Add(-1)

	writes := map[string]func() error{
		"duplicate": func() error { return s.CreateCall(newRec("s", "old")) },
		"unknown":   func() error { return s.UpdateCall("s", "nope", func(r *protocol.CallRecord) { r.Title = "x" }) },
		"panicking": func() error {
			return s.UpdateCall("s", "old", func(r *protocol.CallRecord) { r.Title = "bad"; panic("a broken fn") })
		},
		"update": func() error {
			return s.UpdateCall("s", "old", func(r *protocol.CallRecord) { r.Status = protocol.StatusCompleted })
		},
	}
	for i := range 8 {
		id := fmt.Sprintf("new-%d", i)
		writes[id] = func() error { return s.CreateCall(newRec("s", id)) }
	}
	errs := make(map[string]error)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, w := range writes {
		wg.Go(func() {
			err := w()
			mu.Lock()
			errs[name] = err
			mu.Unlock()
		})
	}
	wg.Wait()

	if !errors.Is(errs["duplicate"], ErrDuplicate) {
		t.Errorf("duplicate: %v, want ErrDuplicate", errs["duplicate"])
	}
	if !errors.Is(errs["unknown"], ErrNotFound) {
		t.Errorf("unknown call: %v, want ErrNotFound", errs["unknown"])
	}
	if errs["panicking"] == nil {
		t.Error("panicking fn: no error")
	}
	for name, err := range errs {
		if name != "duplicate" && name != "unknown" && name != "panicking" && err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for i := range 8 {
		if _, err := s.GetCall("s", fmt.Sprintf("new-%d", i)); err != nil {
			t.Errorf("new-%d is not on record: %v", i, err)
		}
	}
	old, err := s.GetCall("s", "old")
	if err != nil {
		t.Fatal(err)
	}
	if old.Status != protocol.StatusCompleted || old.Title != "" {
		t.Errorf("old: status %q, title %q; want the update's status and no title from the failed writes", old.Status, old.Title)
	}
}
