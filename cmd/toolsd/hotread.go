package main

import (
	"io"
	"os"
	"runtime"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// hotWait is how long a read of the editor's stream that finds nothing waits in poll(2)
// before it leaves the wait to Go's poller.
//
// Under a stream of calls the daemon catches up with its client hundreds of times a second
// and waits a fraction of a millisecond for the next request. Parked in the poller, each such
// wait leaves the process with nothing to run and its one P idle: the runtime's sysmon thread
// then sleeps deeply, the next system call wakes it, and it ticks every 20 µs for a while.
// Under 64 callers that was 12% of toolsd's CPU (sysmon's own time slices), against 1% for
// the echo floor, which reads its stdin with a blocking read. A wait in poll(2) keeps the P
// in a system call instead of idle, and the thread that returns from it carries on without a
// hand-off. Past hotWait (a client gone quiet) the read parks in the poller as before, so an
// idle daemon holds no P and wakes for nothing. What other threads make runnable meanwhile
// (a timer, a subprocess's output) waits at most hotWait, or until sysmon takes the P over.
const hotWait = 5 * time.Millisecond

// hotReader reads a non-blocking pipe or socket (the daemon's stdin): at once if input is
// there; else, once every other goroutine ready to run has run, in poll(2) for up to
// hotWait; else through Go's poller, as the *os.File would.
type hotReader struct {
	f  *os.File
	rc syscall.RawConn
}

// newHotReader returns a hotReader of f, or f itself when f is not in non-blocking mode (a
// terminal or a regular file, which pollable leaves as they are).
func newHotReader(f *os.File) io.Reader {
	rc, err := f.SyscallConn()
	if err != nil {
		return f
	}
	nonblock := false
	if err := rc.Control(func(fd uintptr) {
		fl, err := unix.FcntlInt(fd, unix.F_GETFL, 0)
		nonblock = err == nil && fl&unix.O_NONBLOCK != 0
	}); err != nil || !nonblock {
		return f
	}
	return &hotReader{f: f, rc: rc}
}

func (r *hotReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var rerr error
	tries := 0
	// The descriptor stays valid while the function runs: a Close meanwhile waits for it
	// (at most hotWait), and then fails the read.
	err := r.rc.Read(func(fd uintptr) bool {
		for {
			n, rerr = unix.Read(int(fd), p)
			if rerr == unix.EINTR {
				continue
			}
			if rerr != unix.EAGAIN {
				return true
			}
			tries++
			switch tries {
			case 1:
				// Whatever is ready to run goes first: Gosched queues this goroutine
				// behind it, so the wait below does not hold the P from it.
				runtime.Gosched()
			case 2:
				fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
				k, perr := unix.Poll(fds, int(hotWait/time.Millisecond))
				if perr != nil && perr != unix.EINTR || k == 0 {
					return false // quiet: wait in the poller
				}
			default:
				return false
			}
		}
	})
	switch {
	case err != nil:
		// The *os.File's own error (os.ErrClosed after a Close), not the poller's.
		if _, ferr := r.f.Read(p[:0]); ferr != nil {
			return 0, ferr
		}
		return 0, err
	case rerr != nil:
		return 0, &os.PathError{Op: "read", Path: r.f.Name(), Err: rerr}
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}
