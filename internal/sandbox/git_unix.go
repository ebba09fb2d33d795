//go:build unix

package sandbox

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/toolsd/toolsd/internal/fspath"
	"golang.org/x/sys/unix"
)

// renameAside renames the entry at p to the first free name beside it (quarantineName) and
// returns its path. The folder p is in is opened without following a link at any component:
// the guard is unconfined, and a folder on the way that a confined process (another command,
// an MCP server) replaced by a link since the guard looked must not lead it to rename an
// entry elsewhere (another repository's .git).
func renameAside(p string) (string, error) {
	dir, base := filepath.Dir(p), filepath.Base(p)
	dfd, err := fspath.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC)
	if err != nil {
		return "", err
	}
	defer unix.Close(dfd)
	for n := 1; n < 100; n++ {
		c := quarantineName(base, n)
		var st unix.Stat_t
		if err := unix.Fstatat(dfd, c, &st, unix.AT_SYMLINK_NOFOLLOW); errors.Is(err, unix.ENOENT) {
			return filepath.Join(dir, c), unix.Renameat(dfd, base, dfd, c)
		}
	}
	return "", os.ErrExist
}
