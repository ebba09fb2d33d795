// Package fsopen opens the files and folders that the daemon reads but does not control —
// settings, tool definitions, ignore files, the store — so that none of them can hang or
// exhaust it: only a regular file (or a folder, for the folder functions), opened without
// blocking and checked on the opened descriptor, within a size cap and read with one.
//
// The threat is a repository (or anything else that can put a file where the daemon looks)
// committing a FIFO, a symlink to /dev/zero, a device, a socket or a huge file in place of a
// small JSON file. Opening a FIFO for reading blocks until a writer appears; reading a
// character device never ends. So every open here is O_NONBLOCK (a FIFO opens at once, a
// serial line does not wait for a carrier), the type check is fstat on the descriptor that
// was opened (no window between a check and the open), and a size check on that descriptor
// comes before any read, which is itself limited (a file may grow between fstat and read).
// A stat of the path before the open refuses what is plainly not a regular file without
// opening it at all, since opening some devices has effects of its own.
//
// Symbolic links are followed: the file they lead to is what is checked, so a link to a
// regular file is fine and a link to a FIFO or a device is refused like the thing itself. A
// caller that wants no link at the last component passes O_NOFOLLOW to OpenFile.
package fsopen

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/toolsd/toolsd/internal/fspath"
	"github.com/toolsd/toolsd/internal/posix"
)

// TypeError says that a path names something other than what the caller reads: a FIFO, a
// device, a socket or a folder where a regular file was wanted, or a file where a folder was.
type TypeError struct {
	Path string
	// Is says what the path names, with an article: "a FIFO (named pipe)", "a folder", ...
	Is string
	// Want is "a regular file" or "a folder".
	Want string
}

func (e *TypeError) Error() string {
	return fmt.Sprintf("%s is %s, not %s", e.Path, e.Is, e.Want)
}

// TooLargeError says that a file is over the caller's cap, or that a folder has more entries
// than the caller reads.
type TooLargeError struct {
	Path string
	// Size is the size found (bytes or entries), or -1 when only "more than Max" is known.
	Size int64
	Max  int64
	// Unit is "bytes" or "entries".
	Unit string
}

func (e *TooLargeError) Error() string {
	if e.Size < 0 {
		return fmt.Sprintf("%s has more than %d %s, the limit", e.Path, e.Max, e.Unit)
	}
	return fmt.Sprintf("%s has %d %s; the limit is %d", e.Path, e.Size, e.Unit, e.Max)
}

const (
	wantFile   = "a regular file"
	wantFolder = "a folder"
)

// OpenFile opens the regular file at path as os.OpenFile does (flag and perm mean the same;
// O_CREATE creates a regular file), but never blocks on what it opens and refuses anything
// that is not a regular file with a *TypeError that names the path and what it is. The file
// it returns is an ordinary blocking *os.File. A missing file gives an error that
// errors.Is(err, fs.ErrNotExist) recognises.
func OpenFile(path string, flag int, perm fs.FileMode) (*os.File, error) {
	// Refuse plain non-files without opening them.
	stat := os.Stat
	if flag&posix.O_NOFOLLOW != 0 {
		stat = os.Lstat
	}
	if fi, err := stat(path); err == nil {
		if !fi.Mode().IsRegular() {
			return nil, &TypeError{Path: path, Is: Describe(fi.Mode()), Want: wantFile}
		}
	} else if !errors.Is(err, fs.ErrNotExist) || flag&os.O_CREATE == 0 {
		return nil, err
	}
	return openChecked(path, flag, perm)
}

// openChecked is OpenFile without the stat before the open: the open that never blocks and
// the check of what it opened, which alone make the promise (the stat may be outdated).
func openChecked(path string, flag int, perm fs.FileMode) (*os.File, error) {
	fd, err := open(path, flag|posix.O_NONBLOCK, perm)
	if err != nil {
		if errors.Is(err, posix.ELOOP) && flag&posix.O_NOFOLLOW != 0 {
			return nil, &TypeError{Path: path, Is: "a symbolic link", Want: wantFile}
		}
		if errors.Is(err, posix.ENXIO) || errors.Is(err, posix.EISDIR) {
			// A socket or a folder that took the file's place since the stat.
			if fi, serr := os.Stat(path); serr == nil && !fi.Mode().IsRegular() {
				return nil, &TypeError{Path: path, Is: Describe(fi.Mode()), Want: wantFile}
			}
		}
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	var st posix.Stat_t
	if err := posix.Fstat(fd, &st); err != nil {
		posix.Close(fd)
		return nil, &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Mode&posix.S_IFMT != posix.S_IFREG {
		posix.Close(fd)
		return nil, &TypeError{Path: path, Is: Describe(fspath.TypeMode(uint32(st.Mode))), Want: wantFile}
	}
	// A regular file ignores O_NONBLOCK, but the *os.File should not carry it.
	if err := posix.SetNonblock(fd, false); err != nil {
		posix.Close(fd)
		return nil, &os.PathError{Op: "fcntl", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// ReadFile reads the regular file at path, which must hold at most max bytes: a larger file
// gives a *TooLargeError before anything is read, and a file that grows past max while it is
// read gives one too, after max+1 bytes at most. Anything but a regular file gives a
// *TypeError; a missing file an error that errors.Is(err, fs.ErrNotExist) recognises.
func ReadFile(path string, max int64) ([]byte, error) {
	f, err := OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > max {
		return nil, &TooLargeError{Path: path, Size: fi.Size(), Max: max, Unit: "bytes"}
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, &TooLargeError{Path: path, Size: -1, Max: max, Unit: "bytes"}
	}
	return data, nil
}

// OpenDir opens the folder at path to read its entries, never blocking on what it opens:
// anything but a folder gives a *TypeError.
func OpenDir(path string) (*os.File, error) {
	fd, err := open(path, os.O_RDONLY|posix.O_DIRECTORY|posix.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, posix.ENOTDIR) {
			if fi, serr := os.Stat(path); serr == nil && !fi.IsDir() {
				return nil, &TypeError{Path: path, Is: Describe(fi.Mode()), Want: wantFolder}
			}
		}
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// ReadDir reads the entries of the folder at path, sorted by name, as os.ReadDir does, but
// never blocks on what it opens (anything but a folder gives a *TypeError) and, when max > 0,
// refuses a folder of more than max entries with a *TooLargeError.
func ReadDir(path string, max int) ([]fs.DirEntry, error) {
	f, err := OpenDir(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	n := -1
	if max > 0 {
		n = max + 1
	}
	ents, err := f.ReadDir(n)
	if err != nil && !(errors.Is(err, io.EOF) && n > 0) {
		return nil, err
	}
	if max > 0 && len(ents) > max {
		return nil, &TooLargeError{Path: path, Size: -1, Max: int64(max), Unit: "entries"}
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return ents, nil
}

// open is open(2) with O_CLOEXEC, retried on EINTR.
func open(path string, flag int, perm fs.FileMode) (int, error) {
	for {
		fd, err := posix.Open(path, flag|posix.O_CLOEXEC, uint32(perm.Perm()))
		if err != posix.EINTR {
			return fd, err
		}
	}
}

// Describe names what a file mode is, with an article ("a socket"), for a message.
func Describe(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO (named pipe)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsRegular():
		return "a regular file"
	}
	return "a special file"
}
