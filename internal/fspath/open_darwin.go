package fspath

import (
	"errors"

	"golang.org/x/sys/unix"
)

// forceComponents makes Open and OpenBeneath take the path without O_NOFOLLOW_ANY (for
// tests).
var forceComponents bool

// haveNoSymlinks reports whether Open and OpenBeneath can refuse links in one call: always
// on the macOS versions Go supports (O_NOFOLLOW_ANY came in macOS 11), unless a test forces
// the walk.
func haveNoSymlinks() bool { return !forceComponents }

// openNoSymlinks opens path from dirfd in one call that fails with ErrSymlink at a link on
// any component (O_NOFOLLOW_ANY). A path beneath dirfd has no ".." (checkBeneath refused
// it) and so, with no link followed, cannot leave it.
func openNoSymlinks(dirfd int, path string, flags int, beneath bool) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, path, flags|unix.O_NOFOLLOW_ANY|unix.O_CLOEXEC, 0)
		switch {
		case err == nil:
			return fd, nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.ELOOP):
			return -1, ErrSymlink
		}
		return -1, err
	}
}
