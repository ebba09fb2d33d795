package proc

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// fionread is the ioctl that reports the bytes waiting in a pipe (FIONREAD).
const fionread = unix.TIOCINQ

// groupAttr starts a command (or its guard) leading a process group of its own, and sends it
// SIGTERM when the daemon dies (PR_SET_PDEATHSIG).
func groupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
