package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// hotPipe returns a pipe whose read end is prepared as pollable prepares the daemon's stdin,
// read through a hotReader, and its write end.
func hotPipe(t *testing.T) (*hotReader, *os.File, *os.File) {
	t.Helper()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	rf := pollable(p[0], "stdin", nil)
	w := os.NewFile(uintptr(p[1]), "w")
	t.Cleanup(func() { rf.Close(); w.Close() })
	hr, ok := newHotReader(rf).(*hotReader)
	if !ok {
		t.Fatal("a non-blocking pipe is not read through a hotReader")
	}
	return hr, rf, w
}

type readResult struct {
	b   []byte
	err error
}

func readAsync(r io.Reader) <-chan readResult {
	ch := make(chan readResult, 1)
	go func() {
		b := make([]byte, 64)
		n, err := r.Read(b)
		ch <- readResult{b[:n], err}
	}()
	return ch
}

func await(t *testing.T, ch <-chan readResult) readResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("the read did not return")
	}
	return readResult{}
}

// TestHotReader: what is there is read at once; a read that finds nothing gets what is
// written later, whether it waits in poll(2) or in Go's poller by then; the end of the
// input is io.EOF.
func TestHotReader(t *testing.T) {
	hr, _, w := hotPipe(t)
	if _, err := w.Write([]byte("first")); err != nil {
		t.Fatal(err)
	}
	if r := await(t, readAsync(hr)); r.err != nil || string(r.b) != "first" {
		t.Fatalf("read %q, %v; want \"first\"", r.b, r.err)
	}
	for i, pause := range []time.Duration{0, hotWait / 2, 4 * hotWait} {
		ch := readAsync(hr)
		// Not a wait for the reader: the input arrives while it waits, in either place.
		time.Sleep(pause)
		if _, err := w.Write([]byte{'a' + byte(i)}); err != nil {
			t.Fatal(err)
		}
		if r := await(t, ch); r.err != nil || string(r.b) != string(rune('a'+i)) {
			t.Fatalf("after %v: read %q, %v", pause, r.b, r.err)
		}
	}
	ch := readAsync(hr)
	w.Close()
	if r := await(t, ch); r.err != io.EOF {
		t.Fatalf("after the writer closed: read %q, %v; want io.EOF", r.b, r.err)
	}
}

// TestHotReaderClose: closing the file ends a read that waits for input, and later reads
// fail, as they would on the *os.File.
func TestHotReaderClose(t *testing.T) {
	for _, pause := range []time.Duration{0, 4 * hotWait} {
		hr, rf, _ := hotPipe(t)
		ch := readAsync(hr)
		time.Sleep(pause) // the close comes while the read waits in poll(2), or in the poller
		if err := rf.Close(); err != nil {
			t.Fatal(err)
		}
		if r := await(t, ch); !errors.Is(r.err, os.ErrClosed) {
			t.Fatalf("close after %v: read %q, %v; want os.ErrClosed", pause, r.b, r.err)
		}
		if _, err := hr.Read(make([]byte, 1)); !errors.Is(err, os.ErrClosed) {
			t.Fatalf("a read after the close: %v; want os.ErrClosed", err)
		}
	}
}

// TestHotReaderOnlyNonBlocking: a file that pollable leaves blocking (a regular file, a
// terminal) is read as it is.
func TestHotReaderOnlyNonBlocking(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if r := newHotReader(f); r != io.Reader(f) {
		t.Fatalf("a regular file is read through %T", r)
	}
}
