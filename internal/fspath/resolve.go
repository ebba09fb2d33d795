package fspath

import (
	"errors"
	"os"
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
	return host.resolve(dir, p, links)
}

// resolve is Resolve with the path syntax s (host's; the tests give Windows' on every system).
func (s syntax) resolve(dir, p string, links map[string]string) (string, error) {
	cur, rest := s.start(dir, p)
	todo := s.split(rest)
	hops := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = s.parent(cur)
			continue
		}
		next := s.join(cur, c)
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
		// A target is read from the link's folder, cur (on Windows it may name a volume).
		cur, rest = s.start(cur, target)
		todo = append(s.split(rest), todo...)
	}
	return cur, nil
}
