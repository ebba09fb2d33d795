package proc

import (
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// groupAttr has nothing to add on Windows: the guard puts the command's tree in a Job
// Object (RunGuard).
func groupAttr() *syscall.SysProcAttr { return nil }

// stopGuard stops a guard at once: Windows has no SIGTERM to give a tree its grace. The
// guard's Job Object closes with it and kills the tree.
func stopGuard(p *os.Process) error { return p.Kill() }

// killGuardNow kills a guard, and with its Job Object the tree.
func killGuardNow(p *os.Process) { _ = p.Kill() }

// signalGroup kills the process pid at its cancel (kill false): an unguarded command, whose
// handle exec still holds, so the pid cannot name another process yet. Windows has no
// process groups: what the command started escapes, as a process that leaves its group does
// on Unix. The later kill (the grace's end, KillGroup after Wait) does nothing: the process
// is gone by then, and its pid may name another process once Wait has closed its handle.
func signalGroup(pid int, kill bool) {
	if kill {
		return
	}
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}

var procPeekNamedPipe = windows.NewLazySystemDLL("kernel32.dll").NewProc("PeekNamedPipe")

// state reports how many bytes wait in the pipe, and whether any process still holds its
// write end (PeekNamedPipe fails with ERROR_BROKEN_PIPE once none does).
func (p *outPipe) state() (pending int, writers bool) {
	rc, err := p.r.SyscallConn()
	if err != nil {
		return 0, false
	}
	writers = true
	if rc.Control(func(fd uintptr) {
		var avail uint32
		r, _, err := procPeekNamedPipe.Call(fd, 0, 0, 0, uintptr(unsafe.Pointer(&avail)), 0)
		if r == 0 {
			writers = err != windows.ERROR_BROKEN_PIPE
			return
		}
		pending = int(avail)
	}) != nil {
		return 0, false
	}
	return pending, writers
}
