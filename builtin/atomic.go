package builtin

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/toolsd/toolsd/internal/fspath"
)

// openDir opens the folder dir (a real path) without following a symlink on the way, so
// that every step after works in the folder that was checked.
func openDir(dir string) (int, error) {
	fd, err := fspath.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return -1, pathErr(err)
	}
	return fd, nil
}

// writeAtomic replaces (or creates) the file at abs, a real path, with data: a temporary
// file in the same folder, fsync, rename, fsync of the folder. An existing file keeps its
// mode; a new one gets 0644 (less the umask). Missing parent folders are created now, one
// at a time inside the folder opened before (fspath.MkdirAll), so a folder swapped for a
// symlink since the check fails the write before anything is created where it leads.
func writeAtomic(abs string, data []byte) error {
	dir, base := filepath.Split(abs)
	dir = filepath.Clean(dir)
	dfd, err := fspath.MkdirAll(dir, 0o755)
	if err != nil {
		return pathErr(err)
	}
	defer unix.Close(dfd)

	mode := uint32(0o644)
	keepMode := false
	var st unix.Stat_t
	switch err := unix.Fstatat(dfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case err == nil:
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			mode, keepMode = st.Mode&0o7777, true
		case unix.S_IFLNK:
			return errPathChanged
		case unix.S_IFDIR:
			return fmt.Errorf("%s is a folder", abs)
		default:
			return fmt.Errorf("%s is not a regular file", abs)
		}
	case errors.Is(err, unix.ENOENT):
	default:
		return &fs.PathError{Op: "stat", Path: abs, Err: err}
	}

	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := "." + base + ".toolsd-" + hex.EncodeToString(rnd[:]) + ".tmp"
	if len(tmp) > 255 {
		tmp = ".toolsd-" + hex.EncodeToString(rnd[:]) + ".tmp"
	}
	fd, err := unix.Openat(dfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
	if err != nil {
		return &fs.PathError{Op: "create", Path: filepath.Join(dir, tmp), Err: err}
	}
	f := os.NewFile(uintptr(fd), filepath.Join(dir, tmp))
	ok := false
	defer func() {
		if !ok {
			f.Close()
			_ = unix.Unlinkat(dfd, tmp, 0)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return err
	}
	if keepMode {
		// The umask may have narrowed the mode at creation.
		if err := f.Chmod(fs.FileMode(mode & 0o777)); err != nil {
			return err
		}
		if mode&0o7000 != 0 {
			_ = unix.Fchmod(fd, mode)
		}
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := unix.Renameat(dfd, tmp, dfd, base); err != nil {
		return &fs.PathError{Op: "rename", Path: abs, Err: err}
	}
	ok = true
	_ = unix.Fsync(dfd)
	return nil
}

// removeFile removes the regular file at abs (a real path) through its checked folder.
func removeFile(abs string) error {
	dir, base := filepath.Split(abs)
	dfd, err := openDir(filepath.Clean(dir))
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &fs.PathError{Op: "stat", Path: abs, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("%s is not a regular file", abs)
	}
	if err := unix.Unlinkat(dfd, base, 0); err != nil {
		return &fs.PathError{Op: "remove", Path: abs, Err: err}
	}
	_ = unix.Fsync(dfd)
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
