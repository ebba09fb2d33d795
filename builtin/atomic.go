package builtin

import (
	"fmt"
	"io"
	"io/fs"
	"path/filepath"

	"github.com/toolsd/toolsd/internal/posix"

	"github.com/toolsd/toolsd/internal/fspath"
)

// openDir opens the folder dir (a real path) without following a symlink on the way, so
// that every step after works in the folder that was checked.
func openDir(dir string) (int, error) {
	fd, err := fspath.Open(dir, posix.O_RDONLY|posix.O_DIRECTORY)
	if err != nil {
		return -1, pathErr(err)
	}
	return fd, nil
}

// writeAtomic replaces (or creates) the file at abs, a real path, with data, keeping an
// existing file's mode (fspath.WriteFile). A folder swapped for a symlink since the check
// fails the write (errPathChanged) before anything is created where it leads.
func writeAtomic(abs string, data []byte) error {
	return pathErr(fspath.WriteFile(abs, data, 0o644, true))
}

// removeFile removes the regular file at abs (a real path) through its checked folder.
func removeFile(abs string) error {
	dir, base := filepath.Split(abs)
	dfd, err := openDir(filepath.Clean(dir))
	if err != nil {
		return err
	}
	defer posix.Close(dfd)
	var st posix.Stat_t
	if err := posix.Fstatat(dfd, base, &st, posix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &fs.PathError{Op: "stat", Path: abs, Err: err}
	}
	if st.Mode&posix.S_IFMT != posix.S_IFREG {
		return fmt.Errorf("%s is not a regular file", abs)
	}
	if err := posix.Unlinkat(dfd, base, 0); err != nil {
		return &fs.PathError{Op: "remove", Path: abs, Err: err}
	}
	_ = posix.Fsync(dfd)
	return nil
}

// readChecked reads the whole regular file t (at most limit bytes) through openChecked.
func readChecked(t *target, limit int64) ([]byte, fs.FileInfo, error) {
	f, fi, err := openChecked(t)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if fi.Size() > limit {
		return nil, nil, fmt.Errorf("%s is %d bytes, over the %d-byte limit for editing", t.Display(), fi.Size(), limit)
	}
	data := make([]byte, fi.Size())
	n, err := io.ReadFull(f, data)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil, nil, err
	}
	return data[:n], fi, nil
}
