package session

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/toolsd/toolsd/registry"
)

// Limits bound what reaches the model.
type Limits struct {
	// Lines and Bytes bound the output a model sees; longer output keeps its head and its
	// tail, and the whole of it goes to the store. Defaults 2000 lines, 50 KiB.
	Lines int
	Bytes int
}

func (l Limits) withDefaults() Limits {
	if l.Lines <= 0 {
		l.Lines = 2000
	}
	if l.Bytes <= 0 {
		l.Bytes = 50 * 1024
	}
	return l
}

// sink is where a spilled output goes: the store.
type sink interface {
	ID() string
	Write(p []byte) (int, error)
	Close() error
	Abort()
}

// truncator receives a call's whole output as a stream and keeps, in bounded memory, what
// the model will see: everything while it fits the limits, else the head and the tail. Once
// the output outgrows the limits it spills the whole stream to the store. Not safe for
// concurrent use.
type truncator struct {
	limits Limits
	open   func() (sink, error) // opens the store sink on first spill

	all   []byte // everything so far, while not spilled
	head  []byte // once spilled: the head the model sees
	tail  ring   // once spilled: the last bytes
	lines int    // '\n' count so far
	total int64
	last  byte

	out      sink
	spillErr error
}

func newTruncator(l Limits, open func() (sink, error)) *truncator {
	l = l.withDefaults()
	return &truncator{limits: l, open: open}
}

func (t *truncator) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	t.total += int64(len(p))
	t.lines += bytes.Count(p, []byte{'\n'})
	t.last = p[len(p)-1]
	if t.out == nil && t.spillErr == nil {
		t.all = append(t.all, p...)
		if len(t.all) > t.limits.Bytes || t.lineCount() > t.limits.Lines {
			t.spill()
		}
		return len(p), nil
	}
	if t.out != nil {
		if _, err := t.out.Write(p); err != nil {
			t.spillErr = err
			t.out.Abort()
			t.out = nil
		}
	}
	t.tail.write(p)
	return len(p), nil
}

// fits reports whether s, written alone to this fresh truncator, would come back whole from
// finish.
func (t *truncator) fits(s string) bool {
	if t.total > 0 || t.out != nil || t.spillErr != nil || len(s) > t.limits.Bytes {
		return false
	}
	lines := strings.Count(s, "\n")
	if s != "" && s[len(s)-1] != '\n' {
		lines++
	}
	return lines <= t.limits.Lines
}

func (t *truncator) lineCount() int {
	if t.total > 0 && t.last != '\n' {
		return t.lines + 1
	}
	return t.lines
}

// spill moves to head+tail mode and starts the store sink.
func (t *truncator) spill() {
	t.head = cutHead(t.all, t.limits.Lines/2, t.limits.Bytes/2)
	t.tail = newRing(t.limits.Bytes / 2)
	t.tail.write(t.all)
	out, err := t.open()
	if err == nil {
		if _, err = out.Write(t.all); err != nil {
			out.Abort()
		}
	}
	if err != nil {
		t.spillErr = err
	} else {
		t.out = out
	}
	t.all = nil
}

// finish closes the sink and returns what the model sees, whether it was cut, and the id
// of the stored full output.
func (t *truncator) finish() (text string, truncated bool, outputID string, err error) {
	if t.out == nil && t.spillErr == nil {
		return string(t.all), false, "", nil
	}
	tail := cutTail(t.tail.bytes(), t.limits.Lines/2, t.limits.Bytes/2)
	if t.out != nil {
		if err := t.out.Close(); err != nil {
			t.spillErr = err
		} else {
			outputID = t.out.ID()
		}
		t.out = nil
	}
	totalLines := t.lineCount()
	headLines := countLines(t.head)
	tailLines := countLines(tail)
	cutLines := totalLines - headLines - tailLines
	cutBytes := t.total - int64(len(t.head)) - int64(len(tail))
	var b strings.Builder
	b.Write(t.head)
	if len(t.head) > 0 && t.head[len(t.head)-1] != '\n' {
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "\n[... %d lines (%d bytes) cut here; the whole output has %d lines, %d bytes.", max(cutLines, 0), max(cutBytes, 0), totalLines, t.total)
	if outputID != "" {
		fmt.Fprintf(&b, " To read the cut part, call the read tool with filePath %q, offset %d and limit up to 2000 (lines; offset counts from 1), or grep it with the grep tool and that path.", registry.OutputURIPrefix+outputID, headLines+1)
	} else {
		fmt.Fprintf(&b, " The full output could not be stored (%v); rerun the command with its output narrowed (head, tail, grep) to see the rest.", t.spillErr)
	}
	b.WriteString(" ...]\n\n")
	b.Write(tail)
	return b.String(), true, outputID, nil
}

func countLines(b []byte) int {
	n := bytes.Count(b, []byte{'\n'})
	if len(b) > 0 && b[len(b)-1] != '\n' {
		n++
	}
	return n
}

// cutHead returns the longest prefix of b with at most maxLines lines and maxBytes bytes,
// ending at a line end where one exists.
func cutHead(b []byte, maxLines, maxBytes int) []byte {
	if len(b) > maxBytes {
		b = b[:maxBytes]
	}
	n := 0
	for i, c := range b {
		if c == '\n' {
			n++
			if n == maxLines {
				return b[:i+1]
			}
		}
	}
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 && len(b) == maxBytes {
		return b[:i+1]
	}
	return b
}

// cutTail returns the longest suffix of b with at most maxLines lines and maxBytes bytes,
// starting at a line start where one exists.
func cutTail(b []byte, maxLines, maxBytes int) []byte {
	start := 0
	if len(b) > maxBytes {
		start = len(b) - maxBytes
		if i := bytes.IndexByte(b[start:], '\n'); i >= 0 && i < len(b)-start-1 {
			start += i + 1
		}
	}
	b = b[start:]
	n := 0
	end := len(b)
	if end > 0 && b[end-1] == '\n' {
		end--
	}
	for i := end - 1; i >= 0; i-- {
		if b[i] == '\n' {
			n++
			if n == maxLines {
				return b[i+1:]
			}
		}
	}
	return b
}

// ring keeps the last n bytes written.
type ring struct {
	buf  []byte
	pos  int
	full bool
}

func newRing(n int) ring { return ring{buf: make([]byte, max(n, 1))} }

func (r *ring) write(p []byte) {
	if len(r.buf) == 0 {
		return
	}
	if len(p) >= len(r.buf) {
		copy(r.buf, p[len(p)-len(r.buf):])
		r.pos, r.full = 0, true
		return
	}
	n := copy(r.buf[r.pos:], p)
	if n < len(p) {
		copy(r.buf, p[n:])
		r.full = true
	}
	r.pos = (r.pos + len(p)) % len(r.buf)
	if r.pos == 0 && len(p) > 0 {
		r.full = true
	}
}

func (r *ring) bytes() []byte {
	if !r.full {
		return append([]byte(nil), r.buf[:r.pos]...)
	}
	out := make([]byte, 0, len(r.buf))
	out = append(out, r.buf[r.pos:]...)
	return append(out, r.buf[:r.pos]...)
}
