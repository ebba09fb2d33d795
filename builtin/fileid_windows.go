package builtin

import (
	"os"

	"github.com/toolsd/toolsd/internal/posix"
)

// fileID is the volume serial number and file index of the file fi describes, when fi is a
// stat made on a handle (fspath.Fstat); 0, 0 otherwise (os.Stat's info carries neither).
func fileID(fi os.FileInfo) (dev, ino uint64) {
	if st, ok := fi.Sys().(*posix.Stat_t); ok {
		return st.Dev, st.Ino
	}
	return 0, 0
}
