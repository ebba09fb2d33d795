package attach

import (
	"net"

	"golang.org/x/sys/unix"
)

// peerCred is the process at the other end: its effective uid (LOCAL_PEERCRED, the xucred
// getpeereid reads) and its pid (LOCAL_PEERPID) when it connected.
func peerCred(c *net.UnixConn) (uid, pid int, err error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1, 0, err
	}
	var cred *unix.Xucred
	var cerr, perr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptXucred(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
		pid, perr = unix.GetsockoptInt(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERPID)
	}); err != nil {
		return -1, 0, err
	}
	if cerr != nil {
		return -1, 0, cerr
	}
	if perr != nil {
		pid = 0 // the uid is what admits a client; an unknown pid only counts it as external
	}
	return int(cred.Uid), pid, nil
}

// descends reports whether process pid is a descendant of ancestor (by the parent links in
// the kernel's process table).
func descends(pid, ancestor int) bool {
	for i := 0; i < 64 && pid > 1; i++ {
		k, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
		if err != nil || int(k.Proc.P_pid) != pid {
			return false
		}
		if pid = int(k.Eproc.Ppid); pid == ancestor {
			return true
		}
	}
	return false
}
