package fspath

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// maxHops bounds the symlinks followed in one resolution, as the kernel's ELOOP does.
const maxHops = 40

// ErrLoop is returned when a path goes through more than 40 symlinks.
var ErrLoop = errors.New("fspath: too many levels of symbolic links")

// Resolve returns where p leads when it is opened from the folder dir (a real, absolute,
// clean path), the way the kernel resolves it: component by component, a symlink followed
// where it is met, and a ".." applied to where the path has really led so far — so
// "link/.." is the parent of the link's target, not the folder holding the link. Components
// that do not exist are kept as they are (that is where a create would land). links are
// symlinks that do not exist yet (a command line creates them before it uses them): real
// absolute location → target as written, a relative target being relative to the link's
// folder.
func Resolve(dir, p string, links map[string]string) (string, error) {
	cur := dir
	if filepath.IsAbs(p) {
		cur = string(filepath.Separator)
	}
	todo := split(p)
	hops := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		target, isLink := links[next]
		if !isLink {
			fi, err := os.Lstat(next)
			if err != nil || fi.Mode()&os.ModeSymlink == 0 {
				// A folder or file goes on from here; so does a name that does not exist
				// (the kernel would stop; a create would land here).
				cur = next
				continue
			}
			if target, err = os.Readlink(next); err != nil {
				cur = next
				continue
			}
		}
		if hops++; hops > maxHops {
			return "", ErrLoop
		}
		if filepath.IsAbs(target) {
			cur = string(filepath.Separator)
		}
		todo = append(split(target), todo...)
	}
	return cur, nil
}

func split(p string) []string {
	return strings.Split(filepath.ToSlash(p), "/")
}
