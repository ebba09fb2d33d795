package fspath

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/toolsd/toolsd/internal/posix"
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
	defer posix.Close(dfd)

	mode := perm & 0o7777
	keepMode := !keep
	var st posix.Stat_t
	switch err := posix.Fstatat(dfd, base, &st, posix.AT_SYMLINK_NOFOLLOW); {
	case err == nil:
		switch st.Mode & posix.S_IFMT {
		case posix.S_IFREG:
			if keep {
				mode, keepMode = uint32(st.Mode)&0o7777, true
			}
		case posix.S_IFLNK:
			return &fs.PathError{Op: "write", Path: abs, Err: ErrSymlink}
		case posix.S_IFDIR:
			return fmt.Errorf("%s is a folder", abs)
		default:
			return fmt.Errorf("%s is not a regular file", abs)
		}
	case errors.Is(err, posix.ENOENT):
	default:
		return &fs.PathError{Op: "stat", Path: abs, Err: err}
	}

	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := "." + base + ".toolsd-" + hex.EncodeToString(rnd[:]) + ".tmp"
	if len(tmp) > 255 {
		tmp = ".toolsd-" + hex.EncodeToString(rnd[:]) + ".tmp"
	}
	fd, err := posix.Openat(dfd, tmp, posix.O_WRONLY|posix.O_CREAT|posix.O_EXCL|posix.O_NOFOLLOW|posix.O_CLOEXEC, mode)
	if err != nil {
		return &fs.PathError{Op: "create", Path: filepath.Join(dir, tmp), Err: err}
	}
	f := os.NewFile(uintptr(fd), filepath.Join(dir, tmp))
	ok := false
	defer func() {
		if !ok {
			f.Close()
			_ = posix.Unlinkat(dfd, tmp, 0)
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
			_ = posix.Fchmod(fd, mode)
		}
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := posix.Renameat(dfd, tmp, dfd, base); err != nil {
		return &fs.PathError{Op: "rename", Path: abs, Err: err}
	}
	ok = true
	_ = posix.Fsync(dfd)
	return nil
}
