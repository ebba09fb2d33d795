//go:build unix

package fspath

import (
	"errors"
	"io/fs"
	"path/filepath"
	"syscall"
	"time"
)

// FileInfo is the fs.FileInfo of a stat, built as os.Lstat builds its own (its Sys is the
// *syscall.Stat_t), for a stat made on a descriptor. os.SameFile does not take it.
type FileInfo struct {
	name string
	st   syscall.Stat_t
}

// NewFileInfo is the FileInfo of st, named name (a base name).
func NewFileInfo(name string, st *syscall.Stat_t) *FileInfo {
	return &FileInfo{name: name, st: *st}
}

// Fstat is the FileInfo of the open descriptor fd, named name (a base name).
func Fstat(fd int, name string) (*FileInfo, error) {
	fi := &FileInfo{name: name}
	if err := syscall.Fstat(fd, &fi.st); err != nil {
		return nil, err
	}
	return fi, nil
}

func (fi *FileInfo) Name() string       { return fi.name }
func (fi *FileInfo) Size() int64        { return fi.st.Size }
func (fi *FileInfo) ModTime() time.Time { return time.Unix(mtime(&fi.st).Unix()) }
func (fi *FileInfo) IsDir() bool        { return fi.Mode().IsDir() }
func (fi *FileInfo) Sys() any           { return &fi.st }

// Mode is the mode as os makes it: the permission bits, the type, setuid, setgid, sticky.
func (fi *FileInfo) Mode() fs.FileMode {
	mode := uint32(fi.st.Mode)
	m := fs.FileMode(mode&0o777) | TypeMode(mode)
	if mode&syscall.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if mode&syscall.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if mode&syscall.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// statNoSymlinks answers RealStat from an open of abs that refuses symlinks (fd, err): its
// success proves abs is its own real path, and its lstat is the descriptor's fstat (a second
// walk of the path cost more than the open under concurrent calls); its ENOENT or ENOTDIR
// proves it too, with nothing there (the walk stopped at a missing part, or a file where a
// folder should be, with no symlink before it: one would have failed it with ELOOP first).
// Anything else is no answer.
func statNoSymlinks(abs string, fd int, err error) (info fs.FileInfo, answered bool) {
	switch {
	case err == nil:
		fi := &FileInfo{name: filepath.Base(abs)}
		serr := syscall.Fstat(fd, &fi.st)
		syscall.Close(fd)
		if serr == nil {
			return fi, true
		}
	case errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.ENOTDIR):
		return nil, true
	}
	return nil, false
}
