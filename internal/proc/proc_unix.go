//go:build unix

package proc

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// stopGuard asks a guard to stop its tree: SIGTERM, the grace, SIGKILL.
func stopGuard(p *os.Process) error { return p.Signal(syscall.SIGTERM) }

// killGuardNow asks a guard to kill its tree at once.
func killGuardNow(p *os.Process) { _ = p.Signal(sigKillNow) }

// signalGroup sends SIGTERM (SIGKILL with kill) to the process group led by pid.
func signalGroup(pid int, kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-pid, sig)
}

// state reports how many bytes wait in the pipe, and whether any process still holds its
// write end (a pipe without writers reports POLLHUP; its reader then gets EOF after the
// data).
func (p *outPipe) state() (pending int, writers bool) {
	rc, err := p.r.SyscallConn()
	if err != nil {
		return 0, false
	}
	writers = true
	if rc.Control(func(fd uintptr) {
		// FIONREAD: the bytes waiting in the pipe.
		pending, _ = unix.IoctlGetInt(int(fd), fionread)
		// No events asked for: only POLLHUP and POLLERR come back.
		pfd := []unix.PollFd{{Fd: int32(fd)}}
		if n, err := unix.Poll(pfd, 0); err == nil && n > 0 && pfd[0].Revents&(unix.POLLHUP|unix.POLLERR) != 0 {
			writers = false
		}
	}) != nil {
		return 0, false
	}
	return pending, writers
}
