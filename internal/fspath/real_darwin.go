package fspath

import (
	"io/fs"
	"syscall"

	"golang.org/x/sys/unix"
)

// realStatNoSymlinks answers RealStat for abs when an open with O_NOFOLLOW_ANY can: answered
// is true when abs is its own real path, and info is its lstat (nil when nothing is there
// yet). O_EVTONLY opens without needing read permission, O_NONBLOCK keeps a FIFO from
// blocking the open.
func realStatNoSymlinks(abs string) (info fs.FileInfo, answered bool) {
	fd, err := unix.Open(abs, unix.O_EVTONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW_ANY|unix.O_CLOEXEC, 0)
	return statNoSymlinks(abs, fd, err)
}

// kernelPath leaves Real to filepath.EvalSymlinks on macOS (ok is false): a walk of lstats,
// which needs no more than the standard library.
func kernelPath(abs string) (string, bool) { return "", false }

func mtime(st *syscall.Stat_t) *syscall.Timespec { return &st.Mtimespec }
