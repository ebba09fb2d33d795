package rpc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// within waits for ch to be ready (closed or sent to), failing the test after a deadline.
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(20 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
	var zero T
	return zero
}

// gateWriter hands the data of each Write to the test and returns what the test sends.
type gateWriter struct {
	calls   chan []byte
	proceed chan error
}

func newGateWriter() *gateWriter {
	return &gateWriter{calls: make(chan []byte), proceed: make(chan error)}
}

func (w *gateWriter) Write(p []byte) (int, error) {
	w.calls <- bytes.Clone(p)
	if err := <-w.proceed; err != nil {
		return 0, err
	}
	return len(p), nil
}

// syncBuffer collects what is written to it and counts the writes.
type syncBuffer struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes int
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.writes++
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// closeWithin closes b, failing the test if that does not end in time.
func closeWithin(t *testing.T, b *outBuf) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- b.close() }()
	return within(t, done, "close")
}

func testFrame(w, i int) string {
	return fmt.Sprintf("%d:%d:%s\n", w, i, strings.Repeat("x", (i*7+w*13)%300))
}

// Frames from many concurrent writers come out whole, each writer's in its order, and in
// exactly the order of the Writes when they are serialised (as the library does).
func TestOutBufOrder(t *testing.T) {
	const writers, frames = 16, 400
	t.Run("concurrent", func(t *testing.T) {
		var out syncBuffer
		b := newOutBuf(&out, 4<<10, func() { t.Error("a write failed") })
		var wg sync.WaitGroup
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range frames {
					if _, err := b.Write([]byte(testFrame(w, i))); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		if err := closeWithin(t, b); err != nil {
			t.Fatal(err)
		}
		nextOf := make([]int, writers)
		lines := strings.SplitAfter(out.String(), "\n")
		lines = lines[:len(lines)-1] // after the last newline
		for _, line := range lines {
			var w, i int
			if _, err := fmt.Sscanf(line, "%d:%d:", &w, &i); err != nil || w < 0 || w >= writers {
				t.Fatalf("a frame split or mixed: %.60q", line)
			}
			if i != nextOf[w] || line != testFrame(w, i) {
				t.Fatalf("writer %d: got frame %d (%.60q), want frame %d whole", w, i, line, nextOf[w])
			}
			nextOf[w]++
		}
		if len(lines) != writers*frames {
			t.Fatalf("%d frames out, want %d", len(lines), writers*frames)
		}
		t.Logf("%d frames in %d writes", len(lines), out.writes)
	})
	t.Run("serialised", func(t *testing.T) {
		var out syncBuffer
		b := newOutBuf(&out, 4<<10, func() { t.Error("a write failed") })
		var mu sync.Mutex
		var order strings.Builder
		var wg sync.WaitGroup
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range frames {
					f := testFrame(w, i)
					mu.Lock()
					order.WriteString(f)
					_, err := b.Write([]byte(f))
					mu.Unlock()
					if err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		if err := closeWithin(t, b); err != nil {
			t.Fatal(err)
		}
		if out.String() != order.String() {
			t.Fatal("the output is not the frames in the order they were written")
		}
	})
}

// Frames written while a write is in flight go out together, in one Write.
func TestOutBufCoalesces(t *testing.T) {
	w := newGateWriter()
	b := newOutBuf(w, 1<<20, func() { t.Error("a write failed") })
	write := func(s string) {
		t.Helper()
		done := make(chan error, 1)
		go func() {
			_, err := b.Write([]byte(s))
			done <- err
		}()
		if err := within(t, done, "Write "+s); err != nil {
			t.Fatal(err)
		}
	}
	write("a")
	if got := string(within(t, w.calls, "the first write")); got != "a" {
		t.Fatalf("first write %q", got)
	}
	// The flusher is writing "a": these wait, and go out together.
	write("b")
	write("cc")
	write("ddd")
	w.proceed <- nil
	if got := string(within(t, w.calls, "the second write")); got != "bcc"+"ddd" {
		t.Fatalf("second write %q, want the three frames written during the first", got)
	}
	w.proceed <- nil
	// After the flusher parked: one frame, one write.
	write("e")
	if got := string(within(t, w.calls, "the third write")); got != "e" {
		t.Fatalf("third write %q", got)
	}
	w.proceed <- nil
	if err := closeWithin(t, b); err != nil {
		t.Fatal(err)
	}
}

// With an output that does not take what is written, Write blocks once the bound is
// reached, with never more than the bound and a frame waiting; a frame larger than the
// bound still goes through.
func TestOutBufBackPressure(t *testing.T) {
	const bound, frameLen, frames, big = 1000, 64, 100, 3 * 1000
	w := newGateWriter()
	b := newOutBuf(w, bound, func() { t.Error("a write failed") })
	var accepted atomic.Int64 // bytes Write took; the writer adds to it, and calls waits
	// A wait: what was taken by the flusher by then, and what was pending.
	type wait struct{ taken, pending int64 }
	waiting := make(chan wait, 16)
	b.waits = func() {
		select {
		case waiting <- wait{accepted.Load() - int64(len(b.pending)), int64(len(b.pending))}:
		default:
			t.Error("too many waits")
		}
	}
	var want bytes.Buffer
	for i := range frames {
		want.WriteString(fmt.Sprintf("%-*d\n", frameLen-1, i))
	}
	want.WriteString(strings.Repeat("B", big-1) + "\n")
	all := want.Bytes()

	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		for off := 0; off < len(all); {
			n := frameLen
			if off >= frames*frameLen {
				n = big
			}
			if _, err := b.Write(all[off : off+n]); err != nil {
				t.Error(err)
				return
			}
			accepted.Add(int64(n))
			off += n
		}
	}()

	var got bytes.Buffer
	blocked, writes := 0, 0
	for got.Len() < len(all) {
		c := within(t, w.calls, "a write to the output")
		got.Write(c)
		writes++
		// Hold the write until the writer waits for room, or has written everything.
	hold:
		for {
			select {
			case e := <-waiting:
				if e.taken < int64(got.Len()) {
					continue // a wait from before the flusher took c
				}
				blocked++
				if e.pending < bound || e.pending > bound+frameLen-1 {
					t.Errorf("a Write waits with %d bytes pending, want from %d to %d", e.pending, bound, bound+frameLen-1)
				}
				break hold
			case <-wrote:
				if pending := accepted.Load() - int64(got.Len()); pending > bound-1+big {
					t.Errorf("%d bytes pending, want at most %d", pending, bound-1+big)
				}
				break hold
			case <-time.After(20 * time.Second):
				t.Fatal("the writer neither waited nor ended")
			}
		}
		w.proceed <- nil
	}
	within(t, wrote, "the writer")
	if !bytes.Equal(got.Bytes(), all) {
		t.Fatal("the output is not what was written")
	}
	if blocked == 0 {
		t.Fatal("Write never waited")
	}
	t.Logf("%d bytes in %d writes to the output; Write waited %d times", len(all), writes, blocked)
	if err := closeWithin(t, b); err != nil {
		t.Fatal(err)
	}
}

// A failed write drops what is pending, closes the guard's writeFailed, and every later
// Write fails at once, including one that waited for room.
func TestOutBufWriteError(t *testing.T) {
	errBoom := errors.New("boom")
	t.Run("guard", func(t *testing.T) {
		g := newGuard(context.Background(), strings.NewReader(""), writerFunc(func([]byte) (int, error) { return 0, errBoom }), func() error { return nil }, 1024, slog.New(slog.DiscardHandler))
		if _, err := g.Write([]byte("a")); err != nil {
			t.Fatalf("the first Write: %v (it only buffers)", err)
		}
		within(t, g.writeFailed, "writeFailed")
		for range 2 {
			if _, err := g.Write([]byte("b")); !errors.Is(err, errBoom) {
				t.Fatalf("Write after the failure: %v, want %v", err, errBoom)
			}
		}
		if err := g.Close(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("waiting", func(t *testing.T) {
		w := newGateWriter()
		failed := make(chan struct{})
		b := newOutBuf(w, 10, func() { close(failed) })
		waiting := make(chan struct{}, 1)
		b.waits = func() {
			select {
			case waiting <- struct{}{}:
			default:
			}
		}
		if _, err := b.Write([]byte("0123456789")); err != nil {
			t.Fatal(err)
		}
		within(t, w.calls, "the first write")
		if _, err := b.Write([]byte("abcdefghij")); err != nil { // pending: at the bound
			t.Fatal(err)
		}
		third := make(chan error, 1)
		go func() {
			_, err := b.Write([]byte("third"))
			third <- err
		}()
		within(t, waiting, "the third Write to wait")
		w.proceed <- errBoom
		if err := within(t, third, "the waiting Write"); !errors.Is(err, errBoom) {
			t.Fatalf("the waiting Write: %v, want %v", err, errBoom)
		}
		within(t, failed, "failed")
		// The pending frame is dropped: close writes nothing (a write would block).
		if err := closeWithin(t, b); !errors.Is(err, errBoom) {
			t.Fatalf("close: %v", err)
		}
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// close writes everything pending before it returns, and stops the flusher; the guard closes
// its streams after that.
func TestOutBufCloseFlushes(t *testing.T) {
	w := newGateWriter()
	b := newOutBuf(w, 1<<20, func() { t.Error("a write failed") })
	for _, s := range []string{"a", "b", "c"} {
		if _, err := b.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	first := string(within(t, w.calls, "the first write"))
	closed := make(chan error, 1)
	go func() { closed <- b.close() }()
	w.proceed <- nil
	rest := ""
	if first != "abc" {
		rest = string(within(t, w.calls, "the second write"))
		select {
		case <-closed:
			t.Fatal("close returned before what was pending was written")
		default:
		}
		w.proceed <- nil
	}
	if err := within(t, closed, "close"); err != nil {
		t.Fatal(err)
	}
	if first+rest != "abc" {
		t.Fatalf("wrote %q then %q", first, rest)
	}
	if _, err := b.Write([]byte("d")); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Write after close: %v", err)
	}
	if err := b.close(); err != nil { // again
		t.Fatal(err)
	}
	// Never written to: no flusher to stop.
	if err := newOutBuf(io.Discard, 1, func() {}).close(); err != nil {
		t.Fatal(err)
	}

	t.Run("guard", func(t *testing.T) {
		var out syncBuffer
		var atClose string
		g := newGuard(context.Background(), strings.NewReader(""), &out, func() error { atClose = out.String(); return nil }, 1024, slog.New(slog.DiscardHandler))
		var want strings.Builder
		for i := range 100 {
			f := testFrame(0, i)
			want.WriteString(f)
			if _, err := g.Write([]byte(f)); err != nil {
				t.Fatal(err)
			}
		}
		if err := g.Close(); err != nil {
			t.Fatal(err)
		}
		if atClose != want.String() {
			t.Fatalf("the streams were closed with %d bytes written, want %d", len(atClose), want.Len())
		}
		if _, err := g.Write([]byte("late")); err == nil {
			t.Fatal("a Write after Close succeeded")
		}
	})
}

// In steady state a Write allocates nothing: the two buffers are reused.
func TestOutBufNoAllocs(t *testing.T) {
	b := newOutBuf(io.Discard, 1<<20, func() {})
	frame := []byte(testFrame(1, 1))
	for range 100 {
		_, _ = b.Write(frame)
	}
	if n := testing.AllocsPerRun(1000, func() { _, _ = b.Write(frame) }); n > 0.1 {
		t.Errorf("%.2f allocations per Write", n)
	}
	if err := closeWithin(t, b); err != nil {
		t.Fatal(err)
	}
}

// The answers written before exit reach the client before Serve returns: closing the
// connection flushes the output before it closes the streams.
func TestServeFlushesBeforeExit(t *testing.T) {
	fb := &fakeBackend{executing: make(chan struct{}, 1)}
	out, in, exit := serveRaw(t, fb, nil)
	answers := readResponses(out)
	go func() {
		for _, f := range []string{
			`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"workspaceFolder":"/w"}}`,
			`{"jsonrpc":"2.0","id":1,"method":"shutdown"}`,
			`{"jsonrpc":"2.0","method":"exit"}`,
		} {
			if writeFrame(in, f) != nil {
				return
			}
		}
	}()
	if c := within(t, exit, "Serve to return"); c != 0 {
		t.Fatalf("exit code %d", c)
	}
	var ids []string
	for r := range answers {
		ids = append(ids, string(r.ID))
	}
	if strings.Join(ids, " ") != "0 1" {
		t.Fatalf("answers %v, want 0 and 1 before the end of the output", ids)
	}
	_ = in.Close()
}

// A write that fails in the flusher is not returned to the library, which refuses new
// requests only once a Write has failed for it: the guard calls onWriteFailed (which in
// Serve makes the library see the failure) before it hands out a request past the bound.
func TestFlushFailureToldBeforeTheBoundIsLifted(t *testing.T) {
	errBoom := errors.New("boom")
	inR, inW := io.Pipe()
	g := newGuard(context.Background(), inR, writerFunc(func([]byte) (int, error) { return 0, errBoom }), func() error { return inR.Close() }, 1<<20, slog.New(slog.DiscardHandler))
	var told atomic.Bool
	g.onWriteFailed = func() { told.Store(true) }
	for g.slots.tryAcquire() {
	}
	call := `{"jsonrpc":"2.0","id":7,"method":"tools/execute"}`
	go func() { _ = writeFrame(inW, call) }()
	read := make(chan string, 1)
	go func() {
		p := make([]byte, 1024)
		n, err := g.Read(p)
		if err != nil {
			t.Error(err)
		}
		read <- string(p[:n])
	}()
	if _, err := g.Write([]byte("an answer")); err != nil { // taken; its write fails
		t.Fatal(err)
	}
	if got := within(t, read, "the held call to be handed out"); !strings.HasSuffix(got, call) {
		t.Fatalf("handed out %q", got)
	}
	if !told.Load() {
		t.Fatal("a request went past the bound before onWriteFailed was called")
	}
	_ = inW.Close()
	within(t, g.inputDone, "the reader to end")
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
}
