//go:build unix

package main

import (
	"os"
	"syscall"
)

// pollable returns the standard stream fd as a file in non-blocking mode when it is a pipe or
// a socket (as when an editor spawns the daemon), so that Go's poller serves it and closing
// it at shutdown interrupts a pending read instead of waiting for the editor. A terminal or
// a regular file is left as it is (its mode is shared with the shell that started us).
func pollable(fd int, name string, f *os.File) *os.File {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return f
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFIFO && st.Mode&syscall.S_IFMT != syscall.S_IFSOCK {
		return f
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		return f
	}
	return os.NewFile(uintptr(fd), name)
}
