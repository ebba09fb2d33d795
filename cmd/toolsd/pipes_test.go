package main

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestPollableGrowsPipes: a pipe given to the daemon as stdin or stdout is made
// stdioPipeSize large where the kernel allows it, and is left as it was where it does not;
// either way it is served non-blocking, by the poller.
func TestPollableGrowsPipes(t *testing.T) {
	allowed := func() bool { // may this process make a pipe stdioPipeSize large?
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		defer unix.Close(p[0])
		defer unix.Close(p[1])
		_, err := unix.FcntlInt(uintptr(p[0]), unix.F_SETPIPE_SZ, stdioPipeSize)
		return err == nil
	}()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	before, err := unix.FcntlInt(uintptr(p[1]), unix.F_GETPIPE_SZ, 0)
	if err != nil {
		t.Fatal(err)
	}
	r := pollable(p[0], "r", nil) // owns p[0] now
	defer r.Close()
	defer unix.Close(p[1])
	if r == nil {
		t.Fatal("pollable returned no file for a pipe")
	}
	size, err := unix.FcntlInt(uintptr(p[1]), unix.F_GETPIPE_SZ, 0)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case allowed && size < stdioPipeSize:
		t.Fatalf("the pipe holds %d bytes, want %d", size, stdioPipeSize)
	case !allowed && size != before:
		t.Fatalf("the kernel refused %d bytes, yet the pipe went from %d to %d", stdioPipeSize, before, size)
	}
	flags, err := unix.FcntlInt(uintptr(p[0]), unix.F_GETFL, 0)
	if err != nil || flags&unix.O_NONBLOCK == 0 {
		t.Fatalf("the pipe is not non-blocking (flags %#x, %v)", flags, err)
	}
	if _, err := unix.Write(p[1], []byte("x")); err != nil {
		t.Fatal(err)
	}
	var b [1]byte
	if n, err := r.Read(b[:]); n != 1 || err != nil || b[0] != 'x' {
		t.Fatalf("read %d %q %v through the file", n, b[:n], err)
	}
	t.Logf("pipe capacity %d -> %d bytes (allowed: %v)", before, size, allowed)
}
