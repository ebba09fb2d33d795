package posix

import (
	"path/filepath"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// Stat_t is the result of Fstat and Fstatat: the fields of a Unix stat that toolsd reads,
// filled from the handle's information (see the package doc).
type Stat_t struct {
	Dev   uint64 // the volume's serial number
	Ino   uint64 // the file index, unique on its volume
	Mode  uint32 // S_IF* type bits and permission bits
	Nlink uint32
	Uid   uint32 // always 0
	Gid   uint32 // always 0
	Size  int64
	Atim  Timespec
	Mtim  Timespec
	Ctim  Timespec // the last write, as Windows keeps no change time in this information
}

// Timespec is a time as seconds and nanoseconds since 1970.
type Timespec struct{ Sec, Nsec int64 }

// Unix returns ts as seconds and nanoseconds, for time.Unix.
func (ts Timespec) Unix() (sec, nsec int64) { return ts.Sec, ts.Nsec }

// Nano returns ts as nanoseconds since 1970.
func (ts Timespec) Nano() int64 { return ts.Sec*1e9 + ts.Nsec }

// Flags of Open and Openat: Linux's values, which mean the same here.
const (
	O_RDONLY    = 0x0
	O_WRONLY    = 0x1
	O_RDWR      = 0x2
	O_CREAT     = 0x40
	O_EXCL      = 0x80
	O_NOCTTY    = 0x100 // no meaning on Windows
	O_TRUNC     = 0x200
	O_NONBLOCK  = 0x800 // no meaning on Windows: a file open never blocks on a FIFO here
	O_DIRECTORY = 0x10000
	O_NOFOLLOW  = 0x20000 // no reparse point anywhere in the name (see the package doc)
	O_CLOEXEC   = 0x80000 // handles are never inherited unless asked; always the case here
	O_PATH      = 0x200000

	AT_FDCWD            = -100
	AT_SYMLINK_NOFOLLOW = 0x100
	AT_REMOVEDIR        = 0x200
)

// The type bits of Stat_t.Mode.
const (
	S_IFMT   = 0xf000
	S_IFSOCK = 0xc000
	S_IFLNK  = 0xa000
	S_IFREG  = 0x8000
	S_IFBLK  = 0x6000
	S_IFDIR  = 0x4000
	S_IFCHR  = 0x2000
	S_IFIFO  = 0x1000
)

// The errors callers test for: the syscall package's, so that errors.Is(err, fs.ErrNotExist)
// and the like hold as on Unix.
const (
	EAGAIN    = syscall.EAGAIN
	EEXIST    = syscall.EEXIST
	EINTR     = syscall.EINTR
	EISDIR    = syscall.EISDIR
	ELOOP     = syscall.ELOOP
	EMFILE    = syscall.EMFILE
	ENOENT    = syscall.ENOENT
	ENOSPC    = syscall.ENOSPC
	ENOTDIR   = syscall.ENOTDIR
	ENOTEMPTY = syscall.ENOTEMPTY
	ENXIO     = syscall.ENXIO
)

// errno maps what NtCreateFile and the Win32 calls return to the errors above.
func errno(err error) error {
	switch err {
	case nil:
		return nil
	case windows.STATUS_OBJECT_NAME_NOT_FOUND, windows.STATUS_OBJECT_PATH_NOT_FOUND,
		windows.ERROR_FILE_NOT_FOUND, windows.ERROR_PATH_NOT_FOUND:
		return ENOENT
	case windows.STATUS_OBJECT_NAME_COLLISION, windows.ERROR_FILE_EXISTS, windows.ERROR_ALREADY_EXISTS:
		return EEXIST
	case windows.STATUS_REPARSE_POINT_ENCOUNTERED:
		return ELOOP
	case windows.STATUS_NOT_A_DIRECTORY, windows.ERROR_DIRECTORY:
		return ENOTDIR
	case windows.STATUS_FILE_IS_A_DIRECTORY:
		return EISDIR
	case windows.STATUS_DIRECTORY_NOT_EMPTY, windows.ERROR_DIR_NOT_EMPTY:
		return ENOTEMPTY
	case windows.STATUS_DISK_FULL, windows.ERROR_DISK_FULL:
		return ENOSPC
	case windows.STATUS_TOO_MANY_OPENED_FILES, windows.ERROR_TOO_MANY_OPEN_FILES:
		return EMFILE
	}
	if s, ok := err.(windows.NTStatus); ok {
		return s.Errno()
	}
	return err
}

// ntOpen opens name relative to the folder handle dir with NtCreateFile. With noReparse no
// reparse point may be met on the way (OBJ_DONT_REPARSE) and the last component is opened
// itself, not followed (FILE_OPEN_REPARSE_POINT).
func ntOpen(dir windows.Handle, name string, flags int, access, disposition, options uint32, noReparse bool) (windows.Handle, error) {
	name = strings.ReplaceAll(name, "/", `\`)
	if name == "." {
		name = "" // the folder itself
	}
	if strings.HasPrefix(name, `\`) || strings.Contains(`\`+name+`\`, `\..\`) {
		return windows.InvalidHandle, syscall.EINVAL
	}
	u, err := windows.NewNTUnicodeString(name)
	if err != nil {
		return windows.InvalidHandle, err
	}
	attrs := &windows.OBJECT_ATTRIBUTES{RootDirectory: dir, ObjectName: u, Attributes: windows.OBJ_CASE_INSENSITIVE}
	attrs.Length = uint32(unsafe.Sizeof(*attrs))
	if noReparse {
		attrs.Attributes |= windows.OBJ_DONT_REPARSE
		options |= windows.FILE_OPEN_REPARSE_POINT
	}
	if flags&O_DIRECTORY != 0 {
		options |= windows.FILE_DIRECTORY_FILE
	}
	fileAttrs := uint32(windows.FILE_ATTRIBUTE_NORMAL)
	var h windows.Handle
	err = windows.NtCreateFile(&h, access|windows.SYNCHRONIZE|windows.FILE_READ_ATTRIBUTES, attrs, &windows.IO_STATUS_BLOCK{}, nil,
		fileAttrs, windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE, disposition,
		options|windows.FILE_SYNCHRONOUS_IO_NONALERT|windows.FILE_OPEN_FOR_BACKUP_INTENT, 0, 0)
	if err != nil {
		return windows.InvalidHandle, errno(err)
	}
	return h, nil
}

// Openat opens name relative to the open folder dirfd (AT_FDCWD: name is a path, as for
// Open). With O_NOFOLLOW no reparse point may be met anywhere in name, the last component
// included (ELOOP).
func Openat(dirfd int, name string, flags int, perm uint32) (int, error) {
	if dirfd == AT_FDCWD {
		return Open(name, flags, perm)
	}
	var access, options uint32
	switch {
	case flags&O_PATH != 0:
		if flags&O_DIRECTORY != 0 {
			access = windows.FILE_TRAVERSE | windows.FILE_LIST_DIRECTORY
		}
	case flags&(O_WRONLY|O_RDWR) == O_WRONLY:
		access, options = windows.FILE_GENERIC_WRITE, windows.FILE_NON_DIRECTORY_FILE
	case flags&(O_WRONLY|O_RDWR) == O_RDWR:
		access, options = windows.FILE_GENERIC_READ|windows.FILE_GENERIC_WRITE, windows.FILE_NON_DIRECTORY_FILE
	default:
		access = windows.FILE_GENERIC_READ
	}
	disposition := uint32(windows.FILE_OPEN)
	switch {
	case flags&(O_CREAT|O_EXCL) == O_CREAT|O_EXCL:
		disposition = windows.FILE_CREATE
	case flags&(O_CREAT|O_TRUNC) == O_CREAT|O_TRUNC:
		disposition = windows.FILE_OVERWRITE_IF
	case flags&O_CREAT != 0:
		disposition = windows.FILE_OPEN_IF
	case flags&O_TRUNC != 0:
		disposition = windows.FILE_OVERWRITE
	}
	nofollow := flags&O_NOFOLLOW != 0
	h, err := ntOpen(windows.Handle(dirfd), name, flags, access, disposition, options, nofollow)
	if err != nil {
		return -1, err
	}
	if nofollow {
		// FILE_OPEN_REPARSE_POINT opened a link at the end as itself: refuse it, as
		// O_NOFOLLOW does on Unix.
		var st Stat_t
		if err := Fstat(int(h), &st); err != nil || st.Mode&S_IFMT == S_IFLNK {
			windows.CloseHandle(h)
			if err == nil {
				err = ELOOP
			}
			return -1, err
		}
	}
	return int(h), nil
}

// Open opens the path p (made absolute from the working folder). O_NOFOLLOW refuses a
// reparse point as the last component, as on Unix; the folders on the way are followed.
func Open(p string, flags int, perm uint32) (int, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return -1, err
	}
	dir, base := filepath.Split(abs)
	if base == "" { // a volume's root
		dir, base = abs, "."
	}
	d, err := openFolder(dir)
	if err != nil {
		return -1, err
	}
	defer windows.CloseHandle(d)
	return Openat(int(d), base, flags, perm)
}

// openFolder opens the folder at the absolute path dir, following links, to open names in it.
func openFolder(dir string) (windows.Handle, error) {
	p, err := windows.UTF16PtrFromString(dir)
	if err != nil {
		return windows.InvalidHandle, err
	}
	h, err := windows.CreateFile(p, windows.FILE_TRAVERSE|windows.FILE_LIST_DIRECTORY|windows.FILE_READ_ATTRIBUTES|windows.SYNCHRONIZE,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE, nil, windows.OPEN_EXISTING, windows.FILE_FLAG_BACKUP_SEMANTICS, 0)
	if err != nil {
		return windows.InvalidHandle, errno(err)
	}
	return h, nil
}

// Close closes the handle fd.
func Close(fd int) error { return windows.CloseHandle(windows.Handle(fd)) }

// Read reads from fd at its offset; the end of a file or a pipe is 0, nil.
func Read(fd int, p []byte) (int, error) {
	var n uint32
	err := windows.ReadFile(windows.Handle(fd), p, &n, nil)
	if err == windows.ERROR_HANDLE_EOF || err == windows.ERROR_BROKEN_PIPE {
		err = nil
	}
	return int(n), err
}

// Pread reads from fd at offset, leaving its offset alone only as far as Windows does (a
// synchronous handle's offset moves).
func Pread(fd int, p []byte, offset int64) (int, error) {
	var n uint32
	o := windows.Overlapped{Offset: uint32(offset), OffsetHigh: uint32(offset >> 32)}
	err := windows.ReadFile(windows.Handle(fd), p, &n, &o)
	if err == windows.ERROR_HANDLE_EOF {
		err = nil
	}
	return int(n), err
}

// Seek sets fd's offset, as lseek(2).
func Seek(fd int, offset int64, whence int) (int64, error) {
	return windows.Seek(windows.Handle(fd), offset, whence)
}

// fileAttributeTagInfo is FILE_ATTRIBUTE_TAG_INFO.
type fileAttributeTagInfo struct {
	FileAttributes uint32
	ReparseTag     uint32
}

// Fstat fills st from the open handle fd.
func Fstat(fd int, st *Stat_t) error {
	h := windows.Handle(fd)
	t, err := windows.GetFileType(h)
	if err != nil {
		return err
	}
	switch t {
	case windows.FILE_TYPE_PIPE:
		*st = Stat_t{Mode: S_IFIFO | 0o666}
		return nil
	case windows.FILE_TYPE_CHAR:
		*st = Stat_t{Mode: S_IFCHR | 0o666}
		return nil
	}
	var d windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(h, &d); err != nil {
		return err
	}
	perm := uint32(0o666)
	mode := uint32(S_IFREG)
	if d.FileAttributes&windows.FILE_ATTRIBUTE_DIRECTORY != 0 {
		mode, perm = S_IFDIR, 0o777
	}
	if d.FileAttributes&windows.FILE_ATTRIBUTE_READONLY != 0 {
		perm &^= 0o222
	}
	if d.FileAttributes&windows.FILE_ATTRIBUTE_REPARSE_POINT != 0 {
		var ti fileAttributeTagInfo
		if err := windows.GetFileInformationByHandleEx(h, windows.FileAttributeTagInfo, (*byte)(unsafe.Pointer(&ti)), uint32(unsafe.Sizeof(ti))); err != nil {
			return err
		}
		if ti.ReparseTag == windows.IO_REPARSE_TAG_SYMLINK || ti.ReparseTag == windows.IO_REPARSE_TAG_MOUNT_POINT {
			mode, perm = S_IFLNK, 0o777
		}
	}
	ts := func(ft windows.Filetime) Timespec {
		n := ft.Nanoseconds()
		return Timespec{Sec: n / 1e9, Nsec: n % 1e9}
	}
	*st = Stat_t{
		Dev:   uint64(d.VolumeSerialNumber),
		Ino:   uint64(d.FileIndexHigh)<<32 | uint64(d.FileIndexLow),
		Mode:  mode | perm,
		Nlink: d.NumberOfLinks,
		Size:  int64(d.FileSizeHigh)<<32 | int64(d.FileSizeLow),
		Atim:  ts(d.LastAccessTime),
		Mtim:  ts(d.LastWriteTime),
		Ctim:  ts(d.LastWriteTime),
	}
	return nil
}

// Fstatat fills st for name in the open folder dirfd; with AT_SYMLINK_NOFOLLOW a link at the
// end is described itself (lstat).
func Fstatat(dirfd int, name string, st *Stat_t, flags int) error {
	if dirfd == AT_FDCWD {
		dir, base := filepath.Split(name)
		d, err := openFolder(dir)
		if err != nil {
			return err
		}
		defer windows.CloseHandle(d)
		dirfd, name = int(d), base
	}
	var options uint32
	if flags&AT_SYMLINK_NOFOLLOW != 0 {
		options = windows.FILE_OPEN_REPARSE_POINT
	}
	h, err := ntOpen(windows.Handle(dirfd), name, 0, 0, windows.FILE_OPEN, options, false)
	if err != nil {
		return err
	}
	defer windows.CloseHandle(h)
	return Fstat(int(h), st)
}

// finalPath is where the open handle h is, as a Win32 path.
func finalPath(h windows.Handle) (string, error) {
	buf := make([]uint16, windows.MAX_PATH)
	for {
		n, err := windows.GetFinalPathNameByHandle(h, &buf[0], uint32(len(buf)), 0)
		if err != nil {
			return "", err
		}
		if int(n) < len(buf) {
			p := windows.UTF16ToString(buf[:n])
			if rest, ok := strings.CutPrefix(p, `\\?\UNC\`); ok {
				return `\\` + rest, nil
			}
			return strings.TrimPrefix(p, `\\?\`), nil
		}
		buf = make([]uint16, n)
	}
}

// FinalPath is where the open file or folder fd is, every link resolved: the Win32 path
// GetFinalPathNameByHandle gives.
func FinalPath(fd int) (string, error) { return finalPath(windows.Handle(fd)) }

// Readlinkat reads the target of the link name in the open folder dirfd.
func Readlinkat(dirfd int, name string, buf []byte) (int, error) {
	dir, err := finalPath(windows.Handle(dirfd))
	if err != nil {
		return -1, err
	}
	return windows.Readlink(filepath.Join(dir, name), buf)
}

// Mkdirat makes the folder name in the open folder dirfd (mode is not used).
func Mkdirat(dirfd int, name string, mode uint32) error {
	h, err := ntOpen(windows.Handle(dirfd), name, O_DIRECTORY, windows.FILE_LIST_DIRECTORY, windows.FILE_CREATE, 0, true)
	if err != nil {
		return err
	}
	return windows.CloseHandle(h)
}

// Unlinkat removes name from the open folder dirfd: a folder (empty) only with
// AT_REMOVEDIR, a link itself rather than what it leads to.
func Unlinkat(dirfd int, name string, flags int) error {
	h, err := ntOpen(windows.Handle(dirfd), name, 0, windows.DELETE, windows.FILE_OPEN, 0, true)
	if err != nil {
		return err
	}
	defer windows.CloseHandle(h)
	var st Stat_t
	if err := Fstat(int(h), &st); err != nil {
		return err
	}
	isDir := st.Mode&S_IFMT == S_IFDIR
	switch {
	case flags&AT_REMOVEDIR != 0 && !isDir:
		return ENOTDIR
	case flags&AT_REMOVEDIR == 0 && isDir:
		return EISDIR
	}
	// POSIX semantics: the name goes at once even if the file is open elsewhere (Windows
	// 10 1607 and later); older systems delete on the last close.
	ex := uint32(windows.FILE_DISPOSITION_DELETE | windows.FILE_DISPOSITION_POSIX_SEMANTICS | windows.FILE_DISPOSITION_IGNORE_READONLY_ATTRIBUTE)
	err = windows.NtSetInformationFile(h, &windows.IO_STATUS_BLOCK{}, (*byte)(unsafe.Pointer(&ex)), 4, windows.FileDispositionInformationEx)
	if err != nil {
		del := uint32(1) // FILE_DISPOSITION_INFORMATION{DeleteFile: TRUE}
		err = windows.NtSetInformationFile(h, &windows.IO_STATUS_BLOCK{}, (*byte)(unsafe.Pointer(&del)), 4, windows.FileDispositionInformation)
	}
	return errno(err)
}

// fileRenameInformation is FILE_RENAME_INFORMATION with room for a long name.
type fileRenameInformation struct {
	ReplaceIfExists uint32 // the BOOLEAN, padded as the union with Flags is
	RootDirectory   windows.Handle
	FileNameLength  uint32
	FileName        [windows.MAX_LONG_PATH]uint16
}

// Renameat renames from in the open folder fromfd to to in the open folder tofd, replacing
// what is there.
func Renameat(fromfd int, from string, tofd int, to string) error {
	h, err := ntOpen(windows.Handle(fromfd), from, 0, windows.DELETE, windows.FILE_OPEN, 0, true)
	if err != nil {
		return err
	}
	defer windows.CloseHandle(h)
	u, err := windows.UTF16FromString(strings.ReplaceAll(to, "/", `\`))
	if err != nil {
		return err
	}
	info := &fileRenameInformation{ReplaceIfExists: 1, RootDirectory: windows.Handle(tofd)}
	if len(u) > len(info.FileName) {
		return syscall.ENAMETOOLONG
	}
	info.FileNameLength = uint32(copy(info.FileName[:], u[:len(u)-1]) * 2)
	return errno(windows.NtSetInformationFile(h, &windows.IO_STATUS_BLOCK{}, (*byte)(unsafe.Pointer(info)), uint32(unsafe.Sizeof(*info)), windows.FileRenameInformation))
}

// symbolicLinkAllowUnprivileged lets a user without the privilege create a link where
// developer mode is on.
const symbolicLinkAllowUnprivileged = 0x2

// Symlinkat makes name in the open folder dirfd a symbolic link to target.
func Symlinkat(target string, dirfd int, name string) error {
	dir, err := finalPath(windows.Handle(dirfd))
	if err != nil {
		return err
	}
	link := filepath.Join(dir, name)
	flags := uint32(symbolicLinkAllowUnprivileged)
	t := target
	if !filepath.IsAbs(t) {
		t = filepath.Join(dir, t)
	}
	var st Stat_t
	if Fstatat(AT_FDCWD, t, &st, 0) == nil && st.Mode&S_IFMT == S_IFDIR {
		flags |= windows.SYMBOLIC_LINK_FLAG_DIRECTORY
	}
	l, err := windows.UTF16PtrFromString(link)
	if err != nil {
		return err
	}
	tp, err := windows.UTF16PtrFromString(strings.ReplaceAll(target, "/", `\`))
	if err != nil {
		return err
	}
	return errno(windows.CreateSymbolicLink(l, tp, flags))
}

// fileBasicInfo is FILE_BASIC_INFO: zero times are left as they are.
type fileBasicInfo struct {
	CreationTime, LastAccessTime, LastWriteTime, ChangeTime int64
	FileAttributes                                          uint32
	_                                                       uint32
}

// Fchmod sets the read-only attribute of fd when mode has no owner write bit, and clears it
// otherwise: the one mode bit Windows has.
func Fchmod(fd int, mode uint32) error {
	h := windows.Handle(fd)
	var d windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(h, &d); err != nil {
		return err
	}
	attrs := d.FileAttributes &^ windows.FILE_ATTRIBUTE_READONLY
	if mode&0o200 == 0 {
		attrs |= windows.FILE_ATTRIBUTE_READONLY
	}
	if attrs == d.FileAttributes {
		return nil
	}
	if attrs == 0 {
		attrs = windows.FILE_ATTRIBUTE_NORMAL
	}
	info := fileBasicInfo{FileAttributes: attrs}
	return windows.SetFileInformationByHandle(h, windows.FileBasicInfo, (*byte)(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info)))
}

// Fsync flushes fd's data to the disk.
func Fsync(fd int) error { return windows.FlushFileBuffers(windows.Handle(fd)) }

// SetNonblock does nothing: the handles here are synchronous.
func SetNonblock(fd int, nonblocking bool) error { return nil }
