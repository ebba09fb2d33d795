package fspath

import (
	"io/fs"
	"time"

	"github.com/toolsd/toolsd/internal/posix"
)

// FileInfo is the fs.FileInfo of a stat made on a descriptor (its Sys is the
// *posix.Stat_t). os.SameFile does not take it.
type FileInfo struct {
	name string
	st   posix.Stat_t
}

// NewFileInfo is the FileInfo of st, named name (a base name).
func NewFileInfo(name string, st *posix.Stat_t) *FileInfo {
	return &FileInfo{name: name, st: *st}
}

// Fstat is the FileInfo of the open descriptor fd, named name (a base name).
func Fstat(fd int, name string) (*FileInfo, error) {
	fi := &FileInfo{name: name}
	if err := posix.Fstat(fd, &fi.st); err != nil {
		return nil, err
	}
	return fi, nil
}

func (fi *FileInfo) Name() string       { return fi.name }
func (fi *FileInfo) Size() int64        { return fi.st.Size }
func (fi *FileInfo) ModTime() time.Time { return time.Unix(fi.st.Mtim.Unix()) }
func (fi *FileInfo) IsDir() bool        { return fi.Mode().IsDir() }
func (fi *FileInfo) Sys() any           { return &fi.st }

// Mode is the mode as os makes it: the permission bits and the type.
func (fi *FileInfo) Mode() fs.FileMode {
	return fs.FileMode(fi.st.Mode&0o777) | TypeMode(fi.st.Mode)
}
