//go:build unix

package posix

import "golang.org/x/sys/unix"

// Stat_t is the result of Fstat and Fstatat.
type Stat_t = unix.Stat_t

// The calls, as golang.org/x/sys/unix has them.
var (
	Open        = unix.Open
	Openat      = unix.Openat
	Close       = unix.Close
	Read        = unix.Read
	Pread       = unix.Pread
	Seek        = unix.Seek
	Fstat       = unix.Fstat
	Fstatat     = unix.Fstatat
	Readlinkat  = unix.Readlinkat
	Mkdirat     = unix.Mkdirat
	Unlinkat    = unix.Unlinkat
	Renameat    = unix.Renameat
	Symlinkat   = unix.Symlinkat
	Fchmod      = unix.Fchmod
	Fsync       = unix.Fsync
	SetNonblock = unix.SetNonblock
)

// Flags of Open and Openat (O_PATH is per system: posix_linux.go, posix_darwin.go).
const (
	O_RDONLY    = unix.O_RDONLY
	O_WRONLY    = unix.O_WRONLY
	O_RDWR      = unix.O_RDWR
	O_CREAT     = unix.O_CREAT
	O_EXCL      = unix.O_EXCL
	O_TRUNC     = unix.O_TRUNC
	O_DIRECTORY = unix.O_DIRECTORY
	O_NOFOLLOW  = unix.O_NOFOLLOW
	O_NONBLOCK  = unix.O_NONBLOCK
	O_NOCTTY    = unix.O_NOCTTY
	O_CLOEXEC   = unix.O_CLOEXEC

	AT_FDCWD            = unix.AT_FDCWD
	AT_SYMLINK_NOFOLLOW = unix.AT_SYMLINK_NOFOLLOW
	AT_REMOVEDIR        = unix.AT_REMOVEDIR
)

// The type bits of Stat_t.Mode.
const (
	S_IFMT   = unix.S_IFMT
	S_IFREG  = unix.S_IFREG
	S_IFDIR  = unix.S_IFDIR
	S_IFLNK  = unix.S_IFLNK
	S_IFIFO  = unix.S_IFIFO
	S_IFSOCK = unix.S_IFSOCK
	S_IFCHR  = unix.S_IFCHR
	S_IFBLK  = unix.S_IFBLK
)

// The errors callers test for.
const (
	EAGAIN    = unix.EAGAIN
	EEXIST    = unix.EEXIST
	EINTR     = unix.EINTR
	EISDIR    = unix.EISDIR
	ELOOP     = unix.ELOOP
	EMFILE    = unix.EMFILE
	ENOENT    = unix.ENOENT
	ENOSPC    = unix.ENOSPC
	ENOTDIR   = unix.ENOTDIR
	ENOTEMPTY = unix.ENOTEMPTY
	ENXIO     = unix.ENXIO
)
