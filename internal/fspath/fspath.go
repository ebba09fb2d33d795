// Package fspath answers where a path really leads: its real location with every symlink
// resolved (also for a file that does not exist yet), whether it lies in a folder, and opens
// (or creates the folders of) a checked path without following a symlink swapped in since.
package fspath

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/toolsd/toolsd/internal/posix"
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
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, posix.ENOTDIR) {
			return "", err
		}
		if target, lerr := os.Readlink(cur); lerr == nil {
			from, rest := host.start(filepath.Dir(cur), target)
			cur = filepath.Join(from, rest)
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
// is nil when that lstat fails (nothing is there yet). A path with no symlink on it is
// answered by one open that refuses symlinks (realStatNoSymlinks: Linux's openat2, macOS's
// O_NOFOLLOW_ANY): its success proves abs is its own real path (which saves Real's kernel
// round trip), and so does its ENOENT or ENOTDIR (which saves Real's walk up to the deepest
// existing folder). Anything else (a symlink met, no such open) takes Real, so the answer is
// the same either way; only on a case-insensitive file system may Real spell a name as the
// kernel's cache holds it where RealStat keeps abs's.
func RealStat(abs string) (real string, info fs.FileInfo, err error) {
	if filepath.IsAbs(abs) && filepath.Clean(abs) == abs {
		if info, answered := realStatNoSymlinks(abs); answered {
			return abs, info, nil
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

// TypeMode is the type bits of a stat's mode (st_mode) as an fs.FileMode.
func TypeMode(m uint32) fs.FileMode {
	switch m & posix.S_IFMT {
	case posix.S_IFBLK:
		return fs.ModeDevice
	case posix.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case posix.S_IFDIR:
		return fs.ModeDir
	case posix.S_IFIFO:
		return fs.ModeNamedPipe
	case posix.S_IFLNK:
		return fs.ModeSymlink
	case posix.S_IFSOCK:
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
