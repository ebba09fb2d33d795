//go:build unix

package attach

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// maxSocketPath is the longest path a Unix socket address holds (sun_path less its NUL).
const maxSocketPath = 107

// RuntimeDir returns the private folder of sockets and locks: $XDG_RUNTIME_DIR/toolsd, or
// /tmp/toolsd-<uid> when XDG_RUNTIME_DIR is unset, created with mode 0700. It refuses a
// folder that is a symlink, is not ours, or that others may enter.
func RuntimeDir() (string, error) {
	dir := ""
	if base := os.Getenv("XDG_RUNTIME_DIR"); base != "" && filepath.IsAbs(base) {
		dir = filepath.Join(base, "toolsd")
	} else {
		dir = filepath.Join(os.TempDir(), "toolsd-"+strconv.Itoa(os.Getuid()))
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("attach: creating the runtime folder: %w", err)
	}
	if err := checkPrivate(dir); err != nil {
		return "", err
	}
	return dir, nil
}

// endpoint is where the owner called name listens: the socket file NAME.sock in dir.
func endpoint(dir, name string) (string, error) {
	p := filepath.Join(dir, name+".sock")
	if len(p) > maxSocketPath {
		return p, fmt.Errorf("attach: the socket path %s is longer than a Unix socket address can be (%d bytes); set XDG_RUNTIME_DIR to a shorter folder", p, maxSocketPath)
	}
	return p, nil
}

// openNoFollow makes the lock file's open refuse a symlink.
const openNoFollow = syscall.O_NOFOLLOW

// tryLock takes the exclusive flock of f without waiting; held reports that another process
// holds it.
func tryLock(f *os.File) (held bool, err error) {
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	return errors.Is(err, syscall.EWOULDBLOCK), err
}

// listen binds the owner's socket, mode 0600, removing a stale socket file first: only the
// lock holder listens, so one left there lost its owner. Closing the listener removes it.
func listen(p Paths) (net.Listener, error) {
	if err := os.Remove(p.Socket); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: p.Socket, Net: "unix"})
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(p.Socket, 0o600); err != nil {
		_ = ln.Close()
		return nil, err
	}
	return ln, nil
}

// dialOwner connects to the owner's socket (the runtime folder being ours alone, whoever
// listens there is our user's).
func dialOwner(deadline time.Time, socket string) (net.Conn, error) {
	d := net.Dialer{Deadline: deadline}
	return d.Dial("unix", socket)
}

// userKey names the user in the owner's log lines.
const userKey = "uid"

// currentUser is who this process runs as, as sameUser compares it: its uid, in decimal.
func currentUser() (string, error) { return strconv.Itoa(os.Getuid()), nil }

// peerUser is who is at the other end of an accepted connection, read from the kernel
// (peerCred) before a byte of it is read: its user as currentUser names ours, and its pid.
func peerUser(c net.Conn) (user string, pid int, err error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return "", 0, fmt.Errorf("attach: %T is not a Unix socket", c)
	}
	uid, pid, err := peerCred(uc)
	if err != nil {
		return "", pid, err
	}
	return strconv.Itoa(uid), pid, nil
}

// canHandOver: a client's standard streams pass to the owner with the hello (SCM_RIGHTS).
const canHandOver = true

// handOver sends the hello line with the client's standard input and output (SCM_RIGHTS).
func handOver(c net.Conn, line []byte, in, out *os.File) error {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return fmt.Errorf("attach: %T is not a Unix socket", c)
	}
	_, _, err := uc.WriteMsgUnix(line, unix.UnixRights(int(in.Fd()), int(out.Fd())), nil)
	return err
}

// readFirst reads the first bytes a client sent into p, with the files a hello handed over
// (handOver).
func readFirst(c net.Conn, p []byte) (n int, files []*os.File, err error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return 0, nil, fmt.Errorf("attach: %T is not a Unix socket", c)
	}
	oob := make([]byte, oobSpace)
	n, oobn, _, _, err := uc.ReadMsgUnix(p, oob)
	return max(n, 0), receivedFiles(oob[:max(oobn, 0)]), err
}

// oobSpace is room for the control message of a hello: two descriptors.
var oobSpace = unix.CmsgSpace(2 * 4)

// detach makes cmd start an owner detached from its starter: a session of its own, and
// ready as its descriptor 3 (ReadyFDEnv).
func detach(cmd *exec.Cmd, ready *os.File) {
	cmd.ExtraFiles = []*os.File{ready}
	cmd.Env = append(cmd.Environ(), ReadyFDEnv+"=3")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
}

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
