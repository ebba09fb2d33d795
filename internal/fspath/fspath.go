// Package fspath answers where a path really leads: its real location with every symlink
// resolved (also for a file that does not exist yet), whether it lies in a folder, and opens
// (or creates the folders of) a checked path without following a symlink swapped in since.
package fspath

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Real resolves every symlink in abs (a clean absolute path). When abs does not exist, its
// deepest existing ancestor is resolved and the missing rest appended: that is where a create
// would land. A dangling symlink is followed by hand, so that a create through it is seen
// landing where it really would.
func Real(abs string) (string, error) {
	if r, ok := kernelPath(abs); ok {
		return r, nil
	}
	var rest []string
	cur := abs
	for range 256 {
		r, err := filepath.EvalSymlinks(cur)
		if err == nil {
			for i := len(rest) - 1; i >= 0; i-- {
				r = filepath.Join(r, rest[i])
			}
			return r, nil
		}
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, unix.ENOTDIR) {
			return "", err
		}
		if target, lerr := os.Readlink(cur); lerr == nil {
			if !filepath.IsAbs(target) {
				target = filepath.Join(filepath.Dir(cur), target)
			}
			cur = filepath.Clean(target)
			continue
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return "", err
		}
		rest = append(rest, filepath.Base(cur))
		cur = parent
	}
	return "", errors.New("too many levels of symbolic links")
}

// RealStat is Real(abs) with the os.Lstat of the result (or the same as a *FileInfo); info
// is nil when that lstat fails (nothing is there yet). A path with no symlink on it is answered by an openat2 that
// refuses symlinks: its success proves abs is its own real path (which saves Real's readlink
// of /proc/self/fd), and so does its ENOENT or ENOTDIR (which saves Real's walk up to the
// deepest existing folder). Anything else (a symlink or magic link met, no openat2) takes
// Real, so the answer is the same either way; only on a case-insensitive file system may
// Real spell a name as the kernel's cache holds it where RealStat keeps abs's.
func RealStat(abs string) (real string, info fs.FileInfo, err error) {
	if haveOpenat2() && filepath.IsAbs(abs) && filepath.Clean(abs) == abs {
		fd, err := openat2(unix.AT_FDCWD, abs, unix.O_PATH, unix.RESOLVE_NO_SYMLINKS)
		switch {
		case err == nil:
			// The info from the descriptor: a second walk of the path (an lstat) cost
			// more than the open under concurrent calls.
			fi := &FileInfo{name: filepath.Base(abs)}
			serr := syscall.Fstat(fd, &fi.st)
			unix.Close(fd)
			if serr == nil {
				return abs, fi, nil
			}
		case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR):
			// The walk stopped at a missing part (or a file where a folder should be) with
			// no symlink before it (one would have failed it with ELOOP first): Real would
			// append the missing rest to abs's own deepest existing folder, which is abs.
			return abs, nil, nil
		}
	}
	real, err = Real(abs)
	if err != nil {
		return "", nil, err
	}
	if fi, err := os.Lstat(real); err == nil {
		return real, fi, nil
	}
	return real, nil, nil
}

// FileInfo is the fs.FileInfo of a stat, built as os.Lstat builds its own (its Sys is the
// *syscall.Stat_t), for a stat made on a descriptor. os.SameFile does not take it.
type FileInfo struct {
	name string
	st   syscall.Stat_t
}

// NewFileInfo is the FileInfo of st, named name (a base name).
func NewFileInfo(name string, st *syscall.Stat_t) *FileInfo {
	return &FileInfo{name: name, st: *st}
}

func (fi *FileInfo) Name() string       { return fi.name }
func (fi *FileInfo) Size() int64        { return fi.st.Size }
func (fi *FileInfo) ModTime() time.Time { return time.Unix(fi.st.Mtim.Unix()) }
func (fi *FileInfo) IsDir() bool        { return fi.Mode().IsDir() }
func (fi *FileInfo) Sys() any           { return &fi.st }

// Mode is the mode as os makes it: the permission bits, the type, setuid, setgid, sticky.
func (fi *FileInfo) Mode() fs.FileMode {
	m := fs.FileMode(fi.st.Mode&0o777) | TypeMode(fi.st.Mode)
	if fi.st.Mode&syscall.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if fi.st.Mode&syscall.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if fi.st.Mode&syscall.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// TypeMode is the type bits of a stat's mode (st_mode) as an fs.FileMode.
func TypeMode(m uint32) fs.FileMode {
	switch m & syscall.S_IFMT {
	case syscall.S_IFBLK:
		return fs.ModeDevice
	case syscall.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFDIR:
		return fs.ModeDir
	case syscall.S_IFIFO:
		return fs.ModeNamedPipe
	case syscall.S_IFLNK:
		return fs.ModeSymlink
	case syscall.S_IFSOCK:
		return fs.ModeSocket
	}
	return 0
}

// Within reports whether p is dir or below it, and p relative to dir (slash-separated). Both
// are clean absolute paths; an empty dir contains nothing.
func Within(dir, p string) (string, bool) {
	if dir == "" {
		return "", false
	}
	// Most answers are dir itself, or dir, a slash and a plain relative path (no empty,
	// "." or ".." names): those need no filepath.Rel, which cleans both paths first.
	if p == dir {
		return ".", true
	}
	if rest, ok := strings.CutPrefix(p, dir); ok && (strings.HasSuffix(dir, "/") || strings.HasPrefix(rest, "/")) {
		rel := strings.TrimPrefix(rest, "/")
		if plainRel(rel) {
			return rel, true
		}
	}
	rel, err := filepath.Rel(dir, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// plainRel reports whether rel is a relative path that filepath.Clean leaves as it is and
// that does not leave its folder: names joined by single slashes, none of them "." or "..".
func plainRel(rel string) bool {
	if rel == "" {
		return false
	}
	for name := range strings.SplitSeq(rel, "/") {
		if name == "" || name == "." || name == ".." {
			return false
		}
	}
	return true
}

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
