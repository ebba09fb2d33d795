package builtin

import (
	"os"

	"github.com/toolsd/toolsd/internal/posix"
)

// fileID is the volume serial number, file index and last write time of the file fi
// describes, when fi is a stat made on a handle (fspath.Fstat); 0, 0, 0 otherwise (os.Stat's
// info carries none of them).
func fileID(fi os.FileInfo) (dev, ino uint64, changed int64) {
	if st, ok := fi.Sys().(*posix.Stat_t); ok {
		return st.Dev, st.Ino, st.Ctim.Nano()
	}
	return 0, 0, 0
}
