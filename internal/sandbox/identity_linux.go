package sandbox

import "golang.org/x/sys/unix"

// statIdentity is the identity of the entry at path (not followed), its change time in
// nanoseconds, and whether it exists. The birth time comes from statx; it is 0 where the
// file system keeps none.
func statIdentity(path string) (id fileID, changed int64, ok bool) {
	var st unix.Statx_t
	if unix.Statx(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BASIC_STATS|unix.STATX_BTIME, &st) != nil {
		return fileID{}, 0, false
	}
	nanos := func(t unix.StatxTimestamp) int64 { return t.Sec*1e9 + int64(t.Nsec) }
	id = fileID{dev: unix.Mkdev(st.Dev_major, st.Dev_minor), ino: st.Ino, kind: uint32(st.Mode) & unix.S_IFMT}
	if st.Mask&unix.STATX_BTIME != 0 {
		id.born = nanos(st.Btime)
	}
	return id, nanos(st.Ctime), true
}

// fileIDOf is the identity of the entry at path (not followed), and whether it exists.
func fileIDOf(path string) (fileID, bool) {
	id, _, ok := statIdentity(path)
	return id, ok
}
