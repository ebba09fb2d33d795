package attach

import (
	"fmt"
	"net"
	"unsafe"

	"golang.org/x/sys/windows"
)

// userKey names the user in the owner's log lines.
const userKey = "sid"

// currentUser is who this process runs as, as sameUser compares it: its token's user SID,
// as a string.
func currentUser() (string, error) {
	u, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return "", fmt.Errorf("attach: reading our own user: %w", err)
	}
	return u.User.Sid.String(), nil
}

// peerUser is who is at the other end of an accepted connection, read before a byte of it
// is read: the client's process (GetNamedPipeClientProcessId) and the user SID of that
// process's token, as currentUser names ours, and its pid.
func peerUser(c net.Conn) (user string, pid int, err error) {
	h, err := pipeHandle(c)
	if err != nil {
		return "", 0, err
	}
	var p uint32
	if err := windows.GetNamedPipeClientProcessId(h, &p); err != nil {
		return "", 0, err
	}
	user, err = userOf(p)
	return user, int(p), err
}

// userOf is the user SID of process pid's token.
func userOf(pid uint32) (string, error) {
	p, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, pid)
	if err != nil {
		return "", fmt.Errorf("opening process %d: %w", pid, err)
	}
	defer windows.CloseHandle(p)
	var t windows.Token
	if err := windows.OpenProcessToken(p, windows.TOKEN_QUERY, &t); err != nil {
		return "", fmt.Errorf("opening the token of process %d: %w", pid, err)
	}
	defer t.Close()
	u, err := t.GetTokenUser()
	if err != nil {
		return "", fmt.Errorf("reading the user of process %d: %w", pid, err)
	}
	return u.User.Sid.String(), nil
}

// pipeHandle is the handle of a go-winio pipe connection.
func pipeHandle(c net.Conn) (windows.Handle, error) {
	f, ok := c.(interface{ Fd() uintptr })
	if !ok {
		return 0, fmt.Errorf("attach: %T is not a named pipe", c)
	}
	return windows.Handle(f.Fd()), nil
}

// descends reports whether process pid is a descendant of ancestor (by the parent pids of
// a process snapshot, each link checked by the processes' creation times: walkParents).
func descends(pid, ancestor int) bool {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPPROCESS, 0)
	if err != nil {
		return false
	}
	defer windows.CloseHandle(snap)
	parents := map[uint32]uint32{}
	e := windows.ProcessEntry32{Size: uint32(unsafe.Sizeof(windows.ProcessEntry32{}))}
	for err = windows.Process32First(snap, &e); err == nil; err = windows.Process32Next(snap, &e) {
		parents[e.ProcessID] = e.ParentProcessID
	}
	return walkParents(parents, uint32(pid), uint32(ancestor), func(child, parent uint32) bool {
		c, okc := created(child)
		p, okp := created(parent)
		return okc && okp && p <= c
	})
}

// created is when process pid started, in nanoseconds since 1601.
func created(pid uint32) (int64, bool) {
	p, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, pid)
	if err != nil {
		return 0, false
	}
	defer windows.CloseHandle(p)
	var c, x, k, u windows.Filetime
	if windows.GetProcessTimes(p, &c, &x, &k, &u) != nil {
		return 0, false
	}
	return c.Nanoseconds(), true
}
