package proc

import "unicode/utf8"

// Tail keeps the last Max bytes written to it and counts them all: a process's stderr, for
// an error text that shows its end. Not safe for concurrent writes (exec copies a stream
// with one goroutine).
type Tail struct {
	Max   int
	buf   []byte
	total int64
}

func (t *Tail) Write(p []byte) (int, error) {
	t.total += int64(len(p))
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.Max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// String is what is kept, from its first whole UTF-8 character (the cut may fall inside one).
func (t *Tail) String() string {
	s := string(t.buf)
	for !utf8.ValidString(s) && len(s) > 0 {
		s = s[1:]
	}
	return s
}

// Cut reports whether more was written than is kept, with the counts: kept, then written.
func (t *Tail) Cut() (cut bool, kept int, total int64) {
	return t.total > int64(len(t.buf)), len(t.buf), t.total
}
