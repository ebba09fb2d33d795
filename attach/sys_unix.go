//go:build unix

package attach

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// openNoFollow makes the lock file's open refuse a symlink.
const openNoFollow = syscall.O_NOFOLLOW

// tryLock takes the exclusive flock of f without waiting; held reports that another process
// holds it.
func tryLock(f *os.File) (held bool, err error) {
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	return errors.Is(err, syscall.EWOULDBLOCK), err
}

// unixRights is the control message that passes in and out (SCM_RIGHTS).
func unixRights(in, out *os.File) []byte { return unix.UnixRights(int(in.Fd()), int(out.Fd())) }

// oobSpace is room for the control message of a hello: two descriptors.
var oobSpace = unix.CmsgSpace(2 * 4)

// detachAttr starts the owner in a session of its own.
func detachAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

// receivedFiles turns the descriptors of a control message into files (non-blocking, so
// that closing one interrupts a read).
func receivedFiles(oob []byte) []*os.File {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var files []*os.File
	for _, m := range msgs {
		fds, err := unix.ParseUnixRights(&m)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			_ = unix.SetNonblock(fd, true)
			files = append(files, os.NewFile(uintptr(fd), "client"))
		}
	}
	return files
}

// checkPrivate refuses a folder that another user could use to intercept or reach our
// sockets: it must be a real folder (not a symlink), owned by us, with no access for others.
func checkPrivate(dir string) error {
	var st syscall.Stat_t
	if err := syscall.Lstat(dir, &st); err != nil {
		return fmt.Errorf("attach: %s: %w", dir, err)
	}
	switch {
	case st.Mode&syscall.S_IFMT != syscall.S_IFDIR:
		return fmt.Errorf("attach: %s is not a folder (a symlink?): refusing to put sockets there", dir)
	case int(st.Uid) != os.Getuid():
		return fmt.Errorf("attach: %s belongs to uid %d, not to us (uid %d): refusing to put sockets there", dir, st.Uid, os.Getuid())
	case st.Mode&0o077 != 0:
		// Ours, but open to others: close it.
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("attach: %s is open to other users and cannot be closed: %w", dir, err)
		}
	}
	return nil
}
