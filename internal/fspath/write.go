package fspath

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	unix "github.com/toolsd/toolsd/internal/posix"
)

// WriteFile replaces (or creates) the file at the real path abs with data: a temporary file
// in the same folder, fsync, rename, fsync of the folder. With keep an existing file keeps
// its mode and a new one gets perm (less the umask); without keep the file gets exactly perm
// (its setuid, setgid and sticky bits too). Missing parent folders are created (MkdirAll),
// so a folder swapped for a symlink since the check fails the write with ErrSymlink before
// anything is created where it leads; an existing symlink at abs fails it with ErrSymlink
// too, and a folder there is an error.
func WriteFile(abs string, data []byte, perm uint32, keep bool) error {
	dir, base := filepath.Split(abs)
	dir = filepath.Clean(dir)
	dfd, err := MkdirAll(dir, 0o755)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)

	mode := perm & 0o7777
	keepMode := !keep
	var st unix.Stat_t
	switch err := unix.Fstatat(dfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case err == nil:
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			if keep {
				mode, keepMode = uint32(st.Mode)&0o7777, true
			}
		case unix.S_IFLNK:
			return &fs.PathError{Op: "write", Path: abs, Err: ErrSymlink}
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
