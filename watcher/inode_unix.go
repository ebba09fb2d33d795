//go:build unix

package watcher

import (
	"os"
	"syscall"
)

// inodeOf is the inode number of the file fi describes (0 when unknown).
func inodeOf(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}
