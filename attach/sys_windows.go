package attach

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	"github.com/Microsoft/go-winio"
	"golang.org/x/sys/windows"
)

// RuntimeDir returns the private folder of locks and logs: %LOCALAPPDATA%\toolsd, created
// owned by the user and with a DACL that admits only the user (folderSDDL). It refuses a
// folder that is a reparse point (a symbolic link, a junction) or is not ours, and closes
// one whose DACL admits others.
func RuntimeDir() (string, error) {
	base, err := os.UserCacheDir() // %LOCALAPPDATA%
	if err != nil {
		return "", fmt.Errorf("attach: no runtime folder: %w", err)
	}
	dir := filepath.Join(base, "toolsd")
	me, err := currentUser()
	if err != nil {
		return "", err
	}
	sddl, err := folderSDDL(me)
	if err != nil {
		return "", err
	}
	sd, err := windows.SecurityDescriptorFromString(sddl)
	if err != nil {
		return "", fmt.Errorf("attach: the runtime folder's security descriptor: %w", err)
	}
	name, err := windows.UTF16PtrFromString(dir)
	if err != nil {
		return "", err
	}
	sa := windows.SecurityAttributes{Length: uint32(unsafe.Sizeof(windows.SecurityAttributes{})), SecurityDescriptor: sd}
	if err := windows.CreateDirectory(name, &sa); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("attach: creating the runtime folder: %w", err)
	}
	if err := checkPrivate(dir, me, sd); err != nil {
		return "", err
	}
	return dir, nil
}

// checkPrivate refuses a folder that another user could use to reach our locks and logs:
// it must be a real folder (not a reparse point), owned by us (me), with a DACL that admits
// no one else; when ours but open to others, its DACL is replaced by private's.
func checkPrivate(dir, me string, private *windows.SECURITY_DESCRIPTOR) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("attach: %s: %w", dir, err)
	}
	attrs, _ := fi.Sys().(*syscall.Win32FileAttributeData)
	if !fi.IsDir() || attrs == nil || attrs.FileAttributes&windows.FILE_ATTRIBUTE_REPARSE_POINT != 0 {
		return fmt.Errorf("attach: %s is not a folder (a symbolic link or junction?): refusing to keep locks there", dir)
	}
	sd, err := windows.GetNamedSecurityInfo(dir, windows.SE_FILE_OBJECT, windows.OWNER_SECURITY_INFORMATION|windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		return fmt.Errorf("attach: reading who may use %s: %w", dir, err)
	}
	owner, _, err := sd.Owner()
	if err != nil {
		return fmt.Errorf("attach: reading the owner of %s: %w", dir, err)
	}
	if owner.String() != me {
		return fmt.Errorf("attach: %s belongs to %s, not to us (%s): refusing to keep locks there", dir, owner, me)
	}
	if dacl, _, err := sd.DACL(); err == nil && onlyUser(dacl, me) {
		return nil
	}
	// Ours, but open to others (or with no DACL at all, open to all): close it.
	dacl, _, err := private.DACL()
	if err == nil {
		err = windows.SetNamedSecurityInfo(dir, windows.SE_FILE_OBJECT, windows.DACL_SECURITY_INFORMATION|windows.PROTECTED_DACL_SECURITY_INFORMATION, nil, nil, dacl, nil)
	}
	if err != nil {
		return fmt.Errorf("attach: %s is open to other users and cannot be closed: %w", dir, err)
	}
	return nil
}

// onlyUser reports whether dacl (not nil: a nil DACL admits everyone) allows no one but me:
// every entry is a plain allow for me or a deny.
func onlyUser(dacl *windows.ACL, me string) bool {
	if dacl == nil {
		return false
	}
	for i := range uint32(dacl.AceCount) {
		var ace *windows.ACCESS_ALLOWED_ACE
		if err := windows.GetAce(dacl, i, &ace); err != nil {
			return false
		}
		switch ace.Header.AceType {
		case windows.ACCESS_DENIED_ACE_TYPE:
		case windows.ACCESS_ALLOWED_ACE_TYPE:
			if (*windows.SID)(unsafe.Pointer(&ace.SidStart)).String() != me {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// endpoint is where the owner called name listens: the named pipe pipeName(user, name).
func endpoint(dir, name string) (string, error) {
	me, err := currentUser()
	return pipeName(me, name), err
}

// openNoFollow is 0: Windows has no O_NOFOLLOW, and the lock file lies in a folder that
// only we may write to (checkPrivate), so no one else can plant a link there.
const openNoFollow = 0

// tryLock takes the exclusive lock of f (LockFileEx on all of it, as Go's own lockedfile
// does) without waiting; held reports that another process holds it. The system releases it
// when the process that holds it exits, however it exits.
func tryLock(f *os.File) (held bool, err error) {
	var whole windows.Overlapped // from offset 0
	err = windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, ^uint32(0), ^uint32(0), &whole)
	return errors.Is(err, windows.ERROR_LOCK_VIOLATION), err
}

// listen creates the owner's named pipe (go-winio) with a DACL that admits only our user
// (pipeSDDL). Its first instance is created with FILE_CREATE (what
// FILE_FLAG_FIRST_PIPE_INSTANCE asks for), so a pipe of that name made first by anyone else
// fails it: only the lock holder listens, so such a pipe is not this folder's owner's — a
// squatter's, or for a moment that of a predecessor killed just now whose handles the system
// is still closing, which is why it tries for a while (pipeWait). Remote clients are
// rejected (FILE_PIPE_REJECT_REMOTE_CLIENTS). The pipe goes when the listener closes.
func listen(p Paths) (net.Listener, error) {
	me, err := currentUser()
	if err != nil {
		return nil, err
	}
	sddl, err := pipeSDDL(me)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(pipeWait)
	for {
		ln, err := winio.ListenPipe(p.Socket, &winio.PipeConfig{SecurityDescriptor: sddl})
		if err == nil {
			return ln, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("attach: creating the pipe %s: %w (another process holds its name: refusing to share it)", p.Socket, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// pipeWait bounds how long listen tries to create a pipe whose name is taken.
const pipeWait = 2 * time.Second

// dialOwner connects to the owner's pipe, and before a byte is written checks that the
// process serving it runs as our user: the pipe namespace is the machine's, so whoever
// created the name first serves it, and another user's pipe of that name (a squatter) gets
// nothing from us. The connection allows the server no impersonation of us (go-winio dials
// with SECURITY_ANONYMOUS).
func dialOwner(deadline time.Time, pipe string) (net.Conn, error) {
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	c, err := winio.DialPipeContext(ctx, pipe)
	if err != nil {
		return nil, err
	}
	if err := checkServer(c, pipe); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// checkServer refuses a pipe whose server process (GetNamedPipeServerProcessId) does not
// run as our user.
func checkServer(c net.Conn, pipe string) error {
	me, err := currentUser()
	if err != nil {
		return err
	}
	var pid uint32
	user := ""
	h, err := pipeHandle(c)
	if err == nil {
		err = windows.GetNamedPipeServerProcessId(h, &pid)
	}
	if err == nil {
		user, err = userOf(pid)
	}
	if err != nil || !sameUser(me, user) {
		return fmt.Errorf("attach: the pipe %s is served by process %d of user %q, not by ours (%s): refusing to talk to it (%v)", pipe, pid, user, me, err)
	}
	return nil
}

// canHandOver is false: Windows has no SCM_RIGHTS; a client's streams are relayed.
const canHandOver = false

// handOver is never called on Windows (canHandOver).
func handOver(c net.Conn, line []byte, in, out *os.File) error {
	return errors.New("attach: Windows cannot hand streams over; they are relayed")
}

// readFirst reads the first bytes a client sent into p (no files come with a hello on
// Windows).
func readFirst(c net.Conn, p []byte) (n int, files []*os.File, err error) {
	n, err = c.Read(p)
	return n, nil, err
}

// detach makes cmd start an owner detached from its starter: a process group of its own
// (no Ctrl+C of the starter's console), a console without a window (inherited by its tool
// processes, so none of them opens one), out of the starter's job when the job allows it
// (mayBreakAway), and ready as an inherited handle whose value ReadyFDEnv holds.
func detach(cmd *exec.Cmd, ready *os.File) {
	flags := uint32(windows.CREATE_NEW_PROCESS_GROUP | windows.CREATE_NO_WINDOW)
	if mayBreakAway() {
		flags |= windows.CREATE_BREAKAWAY_FROM_JOB
	}
	cmd.Env = append(cmd.Environ(), ReadyFDEnv+"="+strconv.FormatUint(uint64(ready.Fd()), 10))
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: flags, AdditionalInheritedHandles: []syscall.Handle{syscall.Handle(ready.Fd())}}
}

// mayBreakAway reports whether this process is in a job that lets a child leave it. Node.js
// (libuv) keeps the processes it starts — an editor's toolsd — in such a job, which kills
// every process still in it when the editor's process exits: an owner that stayed would die
// with the first window that started it, under the others.
func mayBreakAway() bool {
	var info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	err := windows.QueryInformationJobObject(0, windows.JobObjectExtendedLimitInformation, uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info)), nil)
	return err == nil && info.BasicLimitInformation.LimitFlags&windows.JOB_OBJECT_LIMIT_BREAKAWAY_OK != 0
}
