package session

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

type memSink struct {
	buf     bytes.Buffer
	closed  bool
	aborted bool
}

func (m *memSink) ID() string                  { return "out_test" }
func (m *memSink) Write(p []byte) (int, error) { return m.buf.Write(p) }
func (m *memSink) Close() error                { m.closed = true; return nil }
func (m *memSink) Abort()                      { m.aborted = true }

func TestTruncator(t *testing.T) {
	lines := func(n int) string {
		var b strings.Builder
		for i := 1; i <= n; i++ {
			fmt.Fprintf(&b, "line %d\n", i)
		}
		return b.String()
	}
	cases := []struct {
		name      string
		limits    Limits
		input     string
		chunk     int
		truncated bool
		head      string
		tail      string
	}{
		{"small output passes whole", Limits{Lines: 10, Bytes: 1000}, lines(10), 3, false, "line 1\n", "line 10\n"},
		{"too many lines keeps head and tail", Limits{Lines: 10, Bytes: 100000}, lines(100), 7, true, "line 1\nline 2\nline 3\nline 4\nline 5\n\n[...", "line 96\nline 97\nline 98\nline 99\nline 100\n"},
		{"too many bytes", Limits{Lines: 100000, Bytes: 64}, lines(100), 1, true, "line 1\n", "line 100\n"},
		{"one huge line", Limits{Lines: 10, Bytes: 100}, strings.Repeat("x", 10000), 333, true, strings.Repeat("x", 50), strings.Repeat("x", 50)},
		{"no trailing newline", Limits{Lines: 4, Bytes: 1000}, "a\nb\nc\nd\ne", 1, true, "a\nb\n\n[...", "\nd\ne"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &memSink{}
			tr := newTruncator(c.limits, func() (sink, error) { return s, nil })
			in := []byte(c.input)
			for len(in) > 0 {
				n := min(c.chunk, len(in))
				if _, err := tr.Write(in[:n]); err != nil {
					t.Fatal(err)
				}
				in = in[n:]
			}
			text, truncated, id, err := tr.finish()
			if err != nil {
				t.Fatal(err)
			}
			if truncated != c.truncated {
				t.Fatalf("truncated = %v, want %v; text:\n%s", truncated, c.truncated, text)
			}
			if !strings.HasPrefix(text, c.head) || !strings.HasSuffix(text, c.tail) {
				t.Fatalf("text does not keep head %q and tail %q:\n%s", c.head, c.tail, text)
			}
			if !truncated {
				if text != c.input || s.buf.Len() != 0 {
					t.Fatalf("small output changed or stored: %q", text)
				}
				return
			}
			if id != "out_test" || !s.closed || s.buf.String() != c.input {
				t.Fatalf("the store did not get the whole output: id %q closed %v stored %d of %d bytes", id, s.closed, s.buf.Len(), len(c.input))
			}
			if !strings.Contains(text, "toolsd://output/out_test") {
				t.Fatalf("hint does not name the stored output:\n%s", text)
			}
			if len(text) > c.limits.Bytes+600 {
				t.Fatalf("model sees %d bytes, limit %d", len(text), c.limits.Bytes)
			}
		})
	}
}

func TestTruncatorStoreFailure(t *testing.T) {
	tr := newTruncator(Limits{Lines: 2, Bytes: 100}, func() (sink, error) { return nil, fmt.Errorf("disk full") })
	_, _ = tr.Write([]byte("a\nb\nc\nd\n"))
	text, truncated, id, _ := tr.finish()
	if !truncated || id != "" || !strings.Contains(text, "disk full") {
		t.Fatalf("store failure not explained: %v %q %s", truncated, id, text)
	}
}

func TestRing(t *testing.T) {
	r := newRing(5)
	for _, s := range []string{"ab", "cd", "efg", "h"} {
		r.write([]byte(s))
	}
	if got := string(r.bytes()); got != "defgh" {
		t.Fatalf("ring = %q", got)
	}
	r.write([]byte("0123456789"))
	if got := string(r.bytes()); got != "56789" {
		t.Fatalf("ring = %q", got)
	}
}

// TestTruncatorFits: fits says yes exactly when writing the text alone gives it back whole.
func TestTruncatorFits(t *testing.T) {
	texts := []string{"", "a", "a\n", "a\nb", "a\nb\n", "\n\n\n", "abcd\nefgh\n", "abcd\nefghi", strings.Repeat("x\n", 5)}
	for _, s := range texts {
		for lines := 1; lines <= 6; lines++ {
			for bytes := 0; bytes <= 12; bytes++ {
				l := Limits{Lines: lines, Bytes: bytes}
				tr := newTruncator(l, func() (sink, error) { return &memSink{}, nil })
				fits := tr.fits(s)
				_, _ = tr.Write([]byte(s))
				got, truncated, _, err := tr.finish()
				whole := err == nil && !truncated && got == s
				if fits != whole {
					t.Errorf("fits(%q) with %+v = %v, but Write and finish gave it back whole: %v", s, l, fits, whole)
				}
			}
		}
	}
	tr := newTruncator(Limits{Lines: 10, Bytes: 100}, nil)
	_, _ = tr.Write([]byte("x"))
	if tr.fits("y") {
		t.Error("fits is true for a truncator that was written to")
	}
}
