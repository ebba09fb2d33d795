//go:build unix

package harness

import (
	"os"
	"syscall"
)

// lockedElsewhere reports whether another process holds the flock of the open file f.
func lockedElsewhere(f *os.File) bool {
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return true
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}

// killPID sends SIGKILL to pid.
func killPID(pid int) { _ = syscall.Kill(pid, syscall.SIGKILL) }
