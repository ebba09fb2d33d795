package checkpoint

import "syscall"

// steadyCtime reports whether the file system of the folder abs keeps ctime by the kernel's
// clock, so that a listing may be kept while a folder's ctime stays (ignored.go): ext2/3/4,
// XFS, Btrfs and tmpfs.
func steadyCtime(abs string) bool {
	var fs syscall.Statfs_t
	if syscall.Statfs(abs, &fs) != nil {
		return false
	}
	switch fs.Type {
	case 0xef53, 0x58465342, 0x9123683e, 0x01021994:
		return true
	}
	return false
}
