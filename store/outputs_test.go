package store

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toolsd/toolsd/protocol"
)

// refLines is the reference line split: on "\n", a final line without "\n" counts, no line
// for the empty string.
func refLines(s string) []string {
	if s == "" {
		return nil
	}
	l := strings.Split(s, "\n")
	if strings.HasSuffix(s, "\n") {
		l = l[:len(l)-1]
	}
	return l
}

func writeOutput(t testing.TB, s *Store, content string, writeSize int) string {
	t.Helper()
	w, err := s.NewOutput("s", "c")
	if err != nil {
		t.Fatal(err)
	}
	b := []byte(content)
	for len(b) > 0 {
		n := min(writeSize, len(b))
		if _, err := w.Write(b[:n]); err != nil {
			t.Fatal(err)
		}
		b = b[n:]
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return w.ID()
}

// TestReadOutputExhaustive checks every (offset, limit) page of many contents against the
// reference split, with tiny chunks so that lines span chunk boundaries in every way.
func TestReadOutputExhaustive(t *testing.T) {
	contents := map[string]string{
		"empty":              "",
		"one char":           "a",
		"one line":           "a\n",
		"no trailing nl":     "a\nb",
		"only newlines":      "\n\n\n",
		"leading nl":         "\nx",
		"empty lines":        "a\n\nb\n\n",
		"crlf":               "one\r\ntwo\r\nthree\r\n",
		"crlf no trailing":   "one\r\ntwo",
		"long line":          strings.Repeat("x", 100) + "\nshort\n" + strings.Repeat("y", 37),
		"utf8":               "héllo\nwörld\n日本語\n",
		"line per chunk":     "abcdef\nabcdef\nabcdef\n",
		"nl at chunk bounds": "abcdefg\nabcdef\nab\n\n\n",
	}
	for _, cs := range []int{1, 2, 3, 7, 64} {
		for name, content := range contents {
			t.Run(fmt.Sprintf("chunk=%d/%s", cs, name), func(t *testing.T) {
				s := openTest(t, nil)
				s.chunkSz = cs
				id := writeOutput(t, s, content, 5)
				want := refLines(content)
				for off := 0; off <= len(want)+1; off++ {
					for lim := 1; lim <= len(want)+1; lim++ {
						r, err := s.ReadOutput(id, off, lim)
						if err != nil {
							t.Fatalf("ReadOutput(%d, %d): %v", off, lim, err)
						}
						end := min(off+lim, len(want))
						var page []string
						if off < len(want) {
							page = want[off:end]
						}
						if r.Content != strings.Join(page, "\n") || r.Lines != len(page) || r.Offset != off {
							t.Fatalf("ReadOutput(%d, %d) = %q (%d lines, offset %d); want %q (%d lines)", off, lim, r.Content, r.Lines, r.Offset, strings.Join(page, "\n"), len(page))
						}
						if r.TotalLines != len(want) || r.TotalBytes != int64(len(content)) {
							t.Fatalf("totals %d lines %d bytes, want %d, %d", r.TotalLines, r.TotalBytes, len(want), len(content))
						}
					}
				}
				// Default limit.
				r, err := s.ReadOutput(id, 0, 0)
				if err != nil || r.Lines != len(want) {
					t.Fatalf("default limit: %+v, %v", r, err)
				}
			})
		}
	}
}

// TestReadOutputRealChunks pages through an output of several real-size chunks with lines
// crossing chunk boundaries, reading it back whole.
func TestReadOutputRealChunks(t *testing.T) {
	s := openTest(t, nil)
	var b strings.Builder
	var want []string
	for i := 0; b.Len() < 3*ChunkSize+1000; i++ {
		l := fmt.Sprintf("%d:%s", i, strings.Repeat("z", i%97))
		want = append(want, l)
		b.WriteString(l)
		b.WriteByte('\n')
	}
	id := writeOutput(t, s, b.String(), 10000)
	var got []string
	for off := 0; ; {
		r, err := s.ReadOutput(id, off, 777)
		if err != nil {
			t.Fatal(err)
		}
		if r.Lines == 0 {
			break
		}
		got = append(got, strings.Split(r.Content, "\n")...)
		off += r.Lines
	}
	if len(got) != len(want) {
		t.Fatalf("read %d lines, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("line %d: %q, want %q", i, got[i], want[i])
		}
	}
}

func TestReadOutputPageCap(t *testing.T) {
	s := openTest(t, &Options{MaxPageBytes: 100})
	s.chunkSz = 16
	long := strings.Repeat("é", 150) // 300 bytes, 2-byte runes
	content := "aaaa\nbbbb\n" + strings.Repeat("c", 95) + "\n" + long + "\nend"
	id := writeOutput(t, s, content, 7)

	tests := []struct {
		name        string
		offset      int
		wantLines   int
		wantContent string
		wantPrefix  string
	}{
		{"stops before a line that does not fit", 0, 2, "aaaa\nbbbb", ""},
		{"a line that fits alone", 2, 1, strings.Repeat("c", 95), ""},
		{"a line longer than the page is cut", 3, 1, "", strings.Repeat("é", 50) + " … [toolsd: line 3 is 300 bytes long; cut here, 200 bytes not shown]"},
		{"after the cut line", 4, 1, "end", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := s.ReadOutput(id, tt.offset, 100)
			if err != nil {
				t.Fatal(err)
			}
			if r.Lines != tt.wantLines {
				t.Fatalf("lines %d, want %d (%q)", r.Lines, tt.wantLines, r.Content)
			}
			if tt.wantPrefix != "" {
				if r.Content != tt.wantPrefix {
					t.Fatalf("content %q, want %q", r.Content, tt.wantPrefix)
				}
			} else if r.Content != tt.wantContent {
				t.Fatalf("content %q, want %q", r.Content, tt.wantContent)
			}
		})
	}

	// A cut at an odd byte count must not split a rune.
	s2 := openTest(t, &Options{MaxPageBytes: 101})
	id2 := writeOutput(t, s2, long, 1000)
	r, err := s2.ReadOutput(id2, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(r.Content, strings.Repeat("é", 50)+" … [") {
		t.Fatalf("odd cut: %q", r.Content)
	}
}

func TestOutputErrorsAndLifecycle(t *testing.T) {
	path := t.TempDir() + "/toolsd.db"
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.chunkSz = 8

	if _, err := s.ReadOutput("out_nope", 0, 10); !errors.Is(err, ErrNotFound) || errors.Is(err, ErrExpired) {
		t.Fatalf("unknown id: %v", err)
	}
	if _, _, _, err := s.ReadLines(t.Context(), "", 0, 10); !errors.Is(err, ErrNotFound) {
		t.Fatalf("empty id: %v", err)
	}

	id := writeOutput(t, s, "x\n", 1)
	if _, err := s.ReadOutput(id, -1, 10); !errors.Is(err, ErrInvalid) {
		t.Fatalf("negative offset: %v", err)
	}
	content, lines, size, err := s.ReadLines(t.Context(), id, 0, 10)
	if err != nil || content != "x" || lines != 1 || size != 2 {
		t.Fatalf("ReadLines = %q %d %d %v", content, lines, size, err)
	}

	// Abort drops the output.
	w, err := s.NewOutput("s", "c")
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("0123456789abcdef0123"))
	w.Abort()
	if _, err := s.ReadOutput(w.ID(), 0, 1); !errors.Is(err, ErrNotFound) {
		t.Fatalf("aborted output: %v", err)
	}
	if _, err := w.Write([]byte("x")); err == nil {
		t.Fatal("write after Abort must fail")
	}

	// Abort after Close does nothing.
	w, _ = s.NewOutput("s", "c")
	w.Write([]byte("kept\n"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w.Abort()
	if r, err := s.ReadOutput(w.ID(), 0, 1); err != nil || r.Content != "kept" {
		t.Fatalf("Abort after Close dropped the output: %+v %v", r, err)
	}

	// An output in progress is readable up to its last committed chunk.
	open, _ := s.NewOutput("s", "c")
	open.Write([]byte("line1\nline2\nline3\n")) // two chunks of 8 committed, 2 bytes buffered
	r, err := s.ReadOutput(open.ID(), 0, 10)
	if err != nil || r.TotalBytes != 16 || r.Content != "line1\nline2\nline" {
		t.Fatalf("in progress: %+v %v", r, err)
	}
	// The daemon dies with the writer open: the next Open finalizes what was committed.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := open.Write(bytes.Repeat([]byte("y"), 20)); !errors.Is(err, ErrClosed) {
		t.Fatalf("write after store Close: %v", err)
	}
	s = openAt(t, path, nil)
	r, err = s.ReadOutput(open.ID(), 0, 10)
	if err != nil || r.TotalBytes != 16 || r.TotalLines != 3 {
		t.Fatalf("partial output after reopen: %+v %v", r, err)
	}
}

func TestRetention(t *testing.T) {
	clock := newFakeClock()
	path := t.TempDir() + "/toolsd.db"
	// Wait for the background pass that runs right after Open, so that it cannot race with
	// the Prune calls below (the next one is an hour away).
	passed := make(chan struct{}, 1)
	s := openAt(t, path, &Options{Now: clock.Now, Retention: 24 * time.Hour, pruned: func(int, error) {
		select {
		case passed <- struct{}{}:
		default:
		}
	}})
	select {
	case <-passed:
	case <-time.After(10 * time.Second):
		t.Fatal("the background pruner did not run after Open")
	}
	old := writeOutput(t, s, "old\n", 10)
	if err := s.CreateCall(&protocol.CallRecord{SessionID: "s", CallID: "c", OutputID: old, Status: protocol.StatusCompleted}); err != nil {
		t.Fatal(err)
	}
	writing, err := s.NewOutput("s", "w") // still being written when pruning runs
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(20 * time.Hour)
	young := writeOutput(t, s, "young\n", 10)
	clock.Advance(5 * time.Hour)

	n, err := s.Prune()
	if err != nil || n != 1 {
		t.Fatalf("Prune = %d, %v; want 1", n, err)
	}
	_, err = s.ReadOutput(old, 0, 10)
	if !errors.Is(err, ErrExpired) || !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "retention") {
		t.Fatalf("expired output: %v", err)
	}
	if r, err := s.ReadOutput(young, 0, 10); err != nil || r.Content != "young" {
		t.Fatalf("young output: %+v %v", r, err)
	}
	rec, err := s.GetCall("s", "c")
	if err != nil || rec.OutputID != old {
		t.Fatalf("the call must keep its outputID: %+v %v", rec, err)
	}
	if _, err := writing.Write([]byte("still\n")); err != nil {
		t.Fatal(err)
	}
	if err := writing.Close(); err != nil {
		t.Fatalf("an output being written must not be pruned: %v", err)
	}

	// Many old outputs: pruned in several batches.
	for range pruneBatch*2 + 5 {
		writeOutput(t, s, "x\n", 10)
	}
	clock.Advance(48 * time.Hour)
	if n, err := s.Prune(); err != nil || n != pruneBatch*2+5+2 {
		t.Fatalf("Prune = %d, %v; want %d", n, err, pruneBatch*2+5+2)
	}
}

// TestRetentionBackground checks that the pruner goroutine runs by itself at Open.
func TestRetentionBackground(t *testing.T) {
	clock := newFakeClock()
	path := t.TempDir() + "/toolsd.db"
	s, err := Open(path, &Options{Now: clock.Now, Retention: -1})
	if err != nil {
		t.Fatal(err)
	}
	id := writeOutput(t, s, "old\n", 10)
	s.Close()
	clock.Advance(8 * 24 * time.Hour)

	passes := make(chan int, 16)
	s = openAt(t, path, &Options{Now: clock.Now, pruned: func(n int, err error) { passes <- n }})
	select {
	case n := <-passes:
		if n != 1 {
			t.Fatalf("first pass pruned %d, want 1", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the pruner did not run")
	}
	if _, err := s.ReadOutput(id, 0, 1); !errors.Is(err, ErrExpired) {
		t.Fatalf("after the background pass: %v", err)
	}
}
