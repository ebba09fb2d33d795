package attach

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// The runtime folder is created owned by us and private, and one opened to others is
// closed again; a file in its place is refused.
func TestWindowsRuntimeDir(t *testing.T) {
	t.Setenv("LOCALAPPDATA", t.TempDir())
	me, err := currentUser()
	if err != nil || !sidPattern.MatchString(me) {
		t.Fatalf("our user %q, %v", me, err)
	}
	dir, err := RuntimeDir()
	if err != nil {
		t.Fatal(err)
	}
	private := func() (bool, *windows.SECURITY_DESCRIPTOR) {
		sd, err := windows.GetNamedSecurityInfo(dir, windows.SE_FILE_OBJECT, windows.OWNER_SECURITY_INFORMATION|windows.DACL_SECURITY_INFORMATION)
		if err != nil {
			t.Fatal(err)
		}
		owner, _, err := sd.Owner()
		if err != nil || owner.String() != me {
			t.Fatalf("the runtime folder's owner: %v, %v", owner, err)
		}
		dacl, _, err := sd.DACL()
		return err == nil && onlyUser(dacl, me), sd
	}
	if ok, sd := private(); !ok {
		t.Fatalf("a new runtime folder admits others: %v", sd)
	}
	open, err := windows.SecurityDescriptorFromString("D:(A;OICI;FA;;;WD)(A;OICI;FA;;;" + me + ")")
	if err != nil {
		t.Fatal(err)
	}
	dacl, _, err := open.DACL()
	if err != nil {
		t.Fatal(err)
	}
	if err := windows.SetNamedSecurityInfo(dir, windows.SE_FILE_OBJECT, windows.DACL_SECURITY_INFORMATION|windows.PROTECTED_DACL_SECURITY_INFORMATION, nil, nil, dacl, nil); err != nil {
		t.Fatal(err)
	}
	if ok, sd := private(); ok {
		t.Fatalf("the test could not open the folder to Everyone: %v", sd)
	}
	if _, err := RuntimeDir(); err != nil {
		t.Fatal(err)
	}
	if ok, sd := private(); !ok {
		t.Fatalf("a runtime folder open to Everyone was left open: %v", sd)
	}

	t.Setenv("LOCALAPPDATA", t.TempDir())
	if err := os.WriteFile(filepath.Join(os.Getenv("LOCALAPPDATA"), "toolsd"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := RuntimeDir(); err == nil || !strings.Contains(err.Error(), "not a folder") {
		t.Fatalf("a file for a runtime folder: %v", err)
	}
}

// The lock is exclusive between handles, and free again once its holder closes.
func TestWindowsLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	a, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.OpenFile(path, os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if held, err := tryLock(a); err != nil || held {
		t.Fatalf("the first lock: held %v, %v", held, err)
	}
	if held, err := tryLock(b); err == nil || !held {
		t.Fatalf("the second lock while the first is held: held %v, %v", held, err)
	}
	// The holder writes its pid, as an owner does.
	if err := a.Truncate(0); err != nil {
		t.Fatal(err)
	}
	if _, err := a.WriteAt([]byte("123\n"), 0); err != nil {
		t.Fatal(err)
	}
	_ = a.Close()
	if held, err := tryLock(b); err != nil || held {
		t.Fatalf("the lock after its holder closed: held %v, %v", held, err)
	}
}

// handleConn is a bare pipe handle as a net.Conn with Fd, as go-winio's connections are.
type handleConn struct {
	net.Conn
	h windows.Handle
}

func (c handleConn) Fd() uintptr { return uintptr(c.h) }

// A pipe made with pipeSDDL: the client and the server each read the other's process and
// user, and they are this process and our user; the name, once taken, cannot be listened on
// (a squatter makes the owner refuse).
func TestWindowsPipe(t *testing.T) {
	me, err := currentUser()
	if err != nil {
		t.Fatal(err)
	}
	sddl, err := pipeSDDL(me)
	if err != nil {
		t.Fatal(err)
	}
	sd, err := windows.SecurityDescriptorFromString(sddl)
	if err != nil {
		t.Fatal(err)
	}
	name := pipeName(me, "test"+time.Now().Format("150405.000000000"))
	name16, _ := windows.UTF16PtrFromString(name)
	sa := windows.SecurityAttributes{Length: uint32(unsafe.Sizeof(windows.SecurityAttributes{})), SecurityDescriptor: sd}
	server, err := windows.CreateNamedPipe(name16, windows.PIPE_ACCESS_DUPLEX|windows.FILE_FLAG_FIRST_PIPE_INSTANCE, windows.PIPE_TYPE_BYTE|windows.PIPE_REJECT_REMOTE_CLIENTS, 2, 4096, 4096, 0, &sa)
	if err != nil {
		t.Fatal(err)
	}
	defer windows.CloseHandle(server)
	client, err := windows.CreateFile(name16, windows.GENERIC_READ|windows.GENERIC_WRITE, 0, nil, windows.OPEN_EXISTING, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer windows.CloseHandle(client)
	if err := windows.ConnectNamedPipe(server, nil); err != nil && !errors.Is(err, windows.ERROR_PIPE_CONNECTED) {
		t.Fatal(err)
	}
	user, pid, err := peerUser(handleConn{h: server})
	if err != nil || user != me || pid != os.Getpid() {
		t.Fatalf("the client: user %q pid %d, %v; want %q, %d", user, pid, err, me, os.Getpid())
	}
	if err := checkServer(handleConn{h: client}, name); err != nil {
		t.Fatal(err)
	}
	// Another first instance of the name is refused, and so is the owner's listener.
	if h, err := windows.CreateNamedPipe(name16, windows.PIPE_ACCESS_DUPLEX|windows.FILE_FLAG_FIRST_PIPE_INSTANCE, windows.PIPE_TYPE_BYTE, 2, 4096, 4096, 0, &sa); err == nil {
		windows.CloseHandle(h)
		t.Error("a second first instance of the pipe was created")
	}
	if ln, err := listen(Paths{Socket: name}); err == nil || !strings.Contains(err.Error(), "another process holds its name") {
		if ln != nil {
			_ = ln.Close()
		}
		t.Fatalf("listening on a taken pipe name: %v", err)
	}
}

// A child of this process descends from it; this process does not descend from its child.
func TestWindowsDescends(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^$")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(os.Environ(), "ATTACH_TEST_WAIT=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stdin.Close(); _ = cmd.Wait() }()
	if !descends(cmd.Process.Pid, os.Getpid()) {
		t.Fatal("a child does not descend from us")
	}
	if descends(os.Getpid(), cmd.Process.Pid) {
		t.Fatal("we descend from our child")
	}
}
