package fspath

import (
	"errors"
	"io/fs"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// realStatNoSymlinks answers RealStat for abs when an open with O_NOFOLLOW_ANY can: answered
// is true when abs is its own real path, and info is its lstat (nil when nothing is there
// yet). O_EVTONLY opens without needing read permission, O_NONBLOCK keeps a FIFO from
// blocking the open.
func realStatNoSymlinks(abs string) (info fs.FileInfo, answered bool) {
	fd, err := unix.Open(abs, unix.O_EVTONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW_ANY|unix.O_CLOEXEC, 0)
	switch {
	case err == nil:
		fi := &FileInfo{name: filepath.Base(abs)}
		serr := syscall.Fstat(fd, &fi.st)
		unix.Close(fd)
		if serr == nil {
			return fi, true
		}
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR):
		// The walk stopped at a missing part with no symlink before it (one would have
		// failed it with ELOOP first): abs is where a create would land.
		return nil, true
	}
	return nil, false
}

// kernelPath leaves Real to filepath.EvalSymlinks on macOS (ok is false): a walk of lstats,
// which needs no more than the standard library.
func kernelPath(abs string) (string, bool) { return "", false }

func mtime(st *syscall.Stat_t) *syscall.Timespec { return &st.Mtimespec }
