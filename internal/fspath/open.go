package fspath

import (
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/toolsd/toolsd/internal/posix"
)

// ErrSymlink is the error of an open that met a symbolic link where the path allows none:
// something was replaced by a link since the path was resolved.
var ErrSymlink = errors.New("fspath: a symbolic link where the checked path has a file or folder")

// ErrNotBeneath is the error of a relative path that would leave its folder ("..", or an
// absolute path).
var ErrNotBeneath = errors.New("fspath: path leads out of its folder")

// Open opens the clean absolute path abs (flags as for open(2); O_CLOEXEC is added) without
// following a symbolic link at any of its components. abs is meant to be a real path (Real):
// then what opens is exactly what was checked, whatever is swapped in along the way since,
// and a link met fails the open with ErrSymlink. Where the system can refuse links in one
// call (Linux's openat2 with RESOLVE_NO_SYMLINKS, macOS's O_NOFOLLOW_ANY) this is one call;
// elsewhere (Windows, older Linux) each folder is opened from the one before it with
// O_NOFOLLOW.
func Open(abs string, flags int) (int, error) {
	if !filepath.IsAbs(abs) {
		return -1, &fs.PathError{Op: "open", Path: abs, Err: ErrNotBeneath}
	}
	if haveNoSymlinks() {
		fd, err := openNoSymlinks(posix.AT_FDCWD, abs, flags, false)
		if err != nil {
			return -1, &fs.PathError{Op: "open", Path: abs, Err: err}
		}
		return fd, nil
	}
	top, rel := splitRoot(abs)
	root, err := posix.Open(top, posix.O_PATH|posix.O_DIRECTORY|posix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: top, Err: err}
	}
	defer posix.Close(root)
	fd, err := openByComponents(root, rel, flags)
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: abs, Err: err}
	}
	return fd, nil
}

// OpenBeneath opens rel, a slash-separated relative path, below the open folder dirfd
// without following a symbolic link at any component and without leaving dirfd (a ".."
// is ErrNotBeneath, a link ErrSymlink). "." opens dirfd's folder again.
func OpenBeneath(dirfd int, rel string, flags int) (int, error) {
	if err := checkBeneath(rel); err != nil {
		return -1, &fs.PathError{Op: "open", Path: rel, Err: err}
	}
	var fd int
	var err error
	if haveNoSymlinks() {
		fd, err = openNoSymlinks(dirfd, rel, flags, true)
	} else {
		fd, err = openByComponents(dirfd, rel, flags)
	}
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: rel, Err: err}
	}
	return fd, nil
}

// MkdirAll opens the folder at the clean absolute path abs for reading (O_DIRECTORY),
// creating the folders missing on the way with mode perm (less the umask), and never
// follows a symbolic link: the deepest existing folder is opened with Open, then each
// missing folder is made with mkdirat in the folder opened before it and opened with
// O_NOFOLLOW, so a link swapped in for any of them fails the call with ErrSymlink and
// nothing is created where it leads.
func MkdirAll(abs string, perm uint32) (int, error) {
	var missing []string
	dir := abs
	for {
		fd, err := Open(dir, posix.O_RDONLY|posix.O_DIRECTORY)
		if err == nil {
			if len(missing) == 0 {
				return fd, nil
			}
			defer posix.Close(fd)
			slices.Reverse(missing)
			last, err := mkdirBeneath(fd, missing, perm)
			if err != nil {
				return -1, &fs.PathError{Op: "mkdir", Path: abs, Err: err}
			}
			return last, nil
		}
		parent := filepath.Dir(dir)
		if !errors.Is(err, posix.ENOENT) || parent == dir {
			return -1, err
		}
		missing = append(missing, filepath.Base(dir))
		dir = parent
	}
}

// afterMkdir, when set (by tests), runs after each folder MkdirAll creates and before it is
// opened: the window a swap would use.
var afterMkdir func(dirfd int, name string)

// mkdirBeneath creates the folders names one inside the other, starting in dirfd, and
// returns the last one opened for reading.
func mkdirBeneath(dirfd int, names []string, perm uint32) (int, error) {
	cur := dirfd
	for i, name := range names {
		if err := checkBeneath(name); err != nil || len(host.split(name)) > 1 {
			closeUnless(cur, dirfd)
			return -1, ErrNotBeneath
		}
		if err := posix.Mkdirat(cur, name, perm); err != nil && !errors.Is(err, posix.EEXIST) {
			closeUnless(cur, dirfd)
			return -1, err
		}
		if afterMkdir != nil {
			afterMkdir(cur, name)
		}
		flags := posix.O_PATH
		if i == len(names)-1 {
			flags = posix.O_RDONLY
		}
		next, err := openComponent(cur, name, flags|posix.O_DIRECTORY)
		closeUnless(cur, dirfd)
		if err != nil {
			return -1, err
		}
		cur = next
	}
	return cur, nil
}

func closeUnless(fd, keep int) {
	if fd != keep {
		posix.Close(fd)
	}
}

// checkBeneath refuses a path that is absolute, empty or has a ".." component.
func checkBeneath(rel string) error { return host.beneath(rel) }

// openByComponents opens rel from dirfd one component at a time, each with O_NOFOLLOW: the
// folders with O_PATH, the last with flags.
func openByComponents(dirfd int, rel string, flags int) (int, error) {
	parts := strings.Split(rel, "/")
	cur := dirfd
	for i, p := range parts {
		if p == "" || p == "." {
			if i < len(parts)-1 {
				continue
			}
			p = "."
		}
		f := posix.O_PATH | posix.O_DIRECTORY
		if i == len(parts)-1 {
			f = flags
		}
		next, err := openComponent(cur, p, f)
		closeUnless(cur, dirfd)
		if err != nil {
			return -1, err
		}
		cur = next
	}
	if cur == dirfd { // rel was "" or only slashes
		return posix.Openat(dirfd, ".", flags|posix.O_CLOEXEC, 0)
	}
	return cur, nil
}

// openComponent opens the single name in dirfd without following a symbolic link; a link
// is ErrSymlink.
func openComponent(dirfd int, name string, flags int) (int, error) {
	for {
		fd, err := posix.Openat(dirfd, name, flags|posix.O_NOFOLLOW|posix.O_CLOEXEC, 0)
		if err == nil {
			if flags&posix.O_PATH != 0 {
				// O_PATH|O_NOFOLLOW opens a link itself rather than failing.
				var st posix.Stat_t
				if err := posix.Fstat(fd, &st); err != nil {
					posix.Close(fd)
					return -1, err
				}
				if st.Mode&posix.S_IFMT == posix.S_IFLNK {
					posix.Close(fd)
					return -1, ErrSymlink
				}
			}
			return fd, nil
		}
		if errors.Is(err, posix.EINTR) {
			continue
		}
		if errors.Is(err, posix.ELOOP) || errors.Is(err, posix.ENOTDIR) {
			var st posix.Stat_t
			if serr := posix.Fstatat(dirfd, name, &st, posix.AT_SYMLINK_NOFOLLOW); serr == nil && st.Mode&posix.S_IFMT == posix.S_IFLNK {
				return -1, ErrSymlink
			}
		}
		return -1, err
	}
}
