package store

import (
	"strings"
	"testing"
)

// FuzzReadOutput checks ReadOutput against the reference line split for any content, chunk
// size, write size, page and page cap.
func FuzzReadOutput(f *testing.F) {
	f.Add("a\nb\n", uint8(1), uint8(3), uint16(0), uint16(2), uint16(100))
	f.Add("one\r\ntwo", uint8(4), uint8(1), uint16(1), uint16(1), uint16(3))
	f.Add("\n\n\nxyz\n\n", uint8(2), uint8(5), uint16(2), uint16(9), uint16(2))
	f.Add(strings.Repeat("é", 40)+"\nz", uint8(7), uint8(9), uint16(0), uint16(5), uint16(11))
	s := openTest(f, nil)
	f.Fuzz(func(t *testing.T, content string, chunk, wsize uint8, offset, limit, pageCap uint16) {
		s.chunkSz = int(chunk%32) + 1
		s.opts.MaxPageBytes = int(pageCap%512) + 1
		id := writeOutput(t, s, content, int(wsize%64)+1)
		want := refLines(content)
		r, err := s.ReadOutput(id, int(offset%64), int(limit%64))
		if err != nil {
			t.Fatal(err)
		}
		if r.TotalLines != len(want) || r.TotalBytes != int64(len(content)) {
			t.Fatalf("totals %d/%d, want %d/%d", r.TotalLines, r.TotalBytes, len(want), len(content))
		}
		off := int(offset % 64)
		lim := int(limit % 64)
		if lim == 0 {
			lim = DefaultReadLimit
		}
		if off >= len(want) {
			if r.Content != "" || r.Lines != 0 {
				t.Fatalf("past the end: %q", r.Content)
			}
			return
		}
		if r.Lines < 1 || r.Lines > min(lim, len(want)-off) {
			t.Fatalf("%d lines returned", r.Lines)
		}
		page := strings.Join(want[off:off+r.Lines], "\n")
		if r.Content == page {
			if len(page) > s.opts.MaxPageBytes {
				t.Fatalf("page of %d bytes over the cap %d", len(page), s.opts.MaxPageBytes)
			}
			// Stopped early only if the next line would not fit.
			if r.Lines < min(lim, len(want)-off) && len(page)+1+len(want[off+r.Lines]) <= s.opts.MaxPageBytes {
				t.Fatalf("page stopped early: %d lines, %d bytes", r.Lines, len(page))
			}
			return
		}
		// Otherwise it must be one cut line.
		if r.Lines != 1 || len(want[off]) <= s.opts.MaxPageBytes {
			t.Fatalf("content %q, want %q", r.Content, page)
		}
		head, _, ok := strings.Cut(r.Content, " … [toolsd: line ")
		if !ok || !strings.HasPrefix(want[off], head) || len(head) > s.opts.MaxPageBytes {
			t.Fatalf("cut line %q of %q", r.Content, want[off])
		}
	})
}
