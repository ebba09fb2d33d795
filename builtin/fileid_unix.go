//go:build unix

package builtin

import (
	"os"
	"syscall"
)

// fileID is the device, inode and change time of the file fi describes (0, 0, 0 when
// unknown).
func fileID(fi os.FileInfo) (dev, ino uint64, changed int64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev), st.Ino, ctime(st)
	}
	return 0, 0, 0
}
