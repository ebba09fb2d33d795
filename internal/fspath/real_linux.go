package fspath

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// realStatNoSymlinks answers RealStat for abs when an openat2 that refuses symlinks can:
// answered is true when abs is its own real path, and info is its lstat (nil when nothing is
// there yet).
func realStatNoSymlinks(abs string) (info fs.FileInfo, answered bool) {
	if !haveOpenat2() {
		return nil, false
	}
	fd, err := openat2(unix.AT_FDCWD, abs, unix.O_PATH, unix.RESOLVE_NO_SYMLINKS)
	return statNoSymlinks(abs, fd, err)
}

func mtime(st *syscall.Stat_t) *syscall.Timespec { return &st.Mtim }

// kernelPath asks the kernel where abs leads when it exists: a path-only open resolves every
// symlink as any open would, and its /proc/self/fd link names the result. Three system calls
// where filepath.EvalSymlinks takes one lstat per component. ok is false when abs does not
// exist or the answer is not a plain path (a magic link, a file deleted meanwhile): Real then
// walks it by hand.
func kernelPath(abs string) (string, bool) {
	fd, err := unix.Open(abs, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", false
	}
	defer unix.Close(fd)
	r, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil || !filepath.IsAbs(r) || strings.HasSuffix(r, " (deleted)") || filepath.Clean(r) != r {
		return "", false
	}
	return r, true
}
