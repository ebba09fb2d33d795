//go:build unix

package config

import (
	"os"
	"syscall"
)

// fileOwner is the owner and group of the file fi describes.
func fileOwner(fi os.FileInfo) (uid, gid uint32, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return st.Uid, st.Gid, true
}
