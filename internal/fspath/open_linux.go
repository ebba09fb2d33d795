package fspath

import (
	"errors"
	"sync"

	"golang.org/x/sys/unix"
)

// haveNoSymlinks reports whether Open and OpenBeneath can refuse links in one call: the
// kernel has openat2.
func haveNoSymlinks() bool { return haveOpenat2() }

// openNoSymlinks opens path from dirfd in one call that fails with ErrSymlink at a link on
// any component; with beneath, also ErrNotBeneath for a path that leaves dirfd.
func openNoSymlinks(dirfd int, path string, flags int, beneath bool) (int, error) {
	resolve := uint64(unix.RESOLVE_NO_SYMLINKS)
	if beneath {
		resolve |= unix.RESOLVE_BENEATH
	}
	return openat2(dirfd, path, flags, resolve)
}

// openat2 opens path from dirfd with the resolve flags, retrying when the kernel asks to
// (EAGAIN: a rename raced the lookup) or a signal interrupted it.
func openat2(dirfd int, path string, flags int, resolve uint64) (int, error) {
	how := &unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Resolve: resolve}
	for range 64 {
		fd, err := unix.Openat2(dirfd, path, how)
		switch {
		case err == nil:
			return fd, nil
		case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.ELOOP):
			return -1, ErrSymlink
		case errors.Is(err, unix.EXDEV):
			return -1, ErrNotBeneath
		}
		return -1, err
	}
	return -1, unix.EAGAIN
}

// forceComponents makes Open and OpenBeneath take the path without openat2 (for tests).
var forceComponents bool

var openat2Works = sync.OnceValue(func() bool {
	fd, err := unix.Openat2(unix.AT_FDCWD, "/", &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS})
	if err != nil {
		return false // ENOSYS before Linux 5.6, EPERM under some seccomp filters
	}
	unix.Close(fd)
	return true
})

func haveOpenat2() bool { return !forceComponents && openat2Works() }
