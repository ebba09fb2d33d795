package harness

import (
	"os"

	"golang.org/x/sys/windows"
)

// lockedElsewhere reports whether another process holds the lock of the open file f.
func lockedElsewhere(f *os.File) bool {
	h := windows.Handle(f.Fd())
	ol := new(windows.Overlapped)
	if err := windows.LockFileEx(h, windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, ol); err != nil {
		return true
	}
	_ = windows.UnlockFileEx(h, 0, 1, 0, ol)
	return false
}

// killPID kills the process pid.
func killPID(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}
