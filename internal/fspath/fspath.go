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

	"golang.org/x/sys/unix"
)

// Real resolves every symlink in abs (a clean absolute path). When abs does not exist, its
// deepest existing ancestor is resolved and the missing rest appended: that is where a create
// would land. A dangling symlink is followed by hand, so that a create through it is seen
// landing where it really would.
func Real(abs string) (string, error) {
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

// Within reports whether p is dir or below it, and p relative to dir (slash-separated). Both
// are clean absolute paths; an empty dir contains nothing.
func Within(dir, p string) (string, bool) {
	if dir == "" {
		return "", false
	}
	rel, err := filepath.Rel(dir, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}
