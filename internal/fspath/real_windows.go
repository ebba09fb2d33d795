package fspath

import (
	"io/fs"
	"path/filepath"

	"github.com/toolsd/toolsd/internal/posix"
)

// realStatNoSymlinks leaves RealStat to Real on Windows (answered is false).
func realStatNoSymlinks(abs string) (info fs.FileInfo, answered bool) { return nil, false }

// kernelPath asks Windows where abs leads when it exists: a handle opened following every
// link, junction and mount point, and GetFinalPathNameByHandle of it. ok is false when abs
// does not exist: Real then walks it by hand.
func kernelPath(abs string) (string, bool) {
	fd, err := posix.Open(abs, posix.O_PATH, 0)
	if err != nil {
		return "", false
	}
	defer posix.Close(fd)
	r, err := posix.FinalPath(fd)
	if err != nil || !filepath.IsAbs(r) || filepath.Clean(r) != r {
		return "", false
	}
	return r, true
}
