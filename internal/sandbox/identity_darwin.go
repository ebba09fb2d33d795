package sandbox

import "golang.org/x/sys/unix"

// fileIDOf is the identity of the entry at path (not followed), and whether it exists.
func fileIDOf(path string) (fileID, bool) {
	var st unix.Stat_t
	if unix.Lstat(path, &st) != nil {
		return fileID{}, false
	}
	return fileID{dev: uint64(st.Dev), ino: st.Ino, kind: uint32(st.Mode) & unix.S_IFMT, born: st.Btim.Nano()}, true
}
