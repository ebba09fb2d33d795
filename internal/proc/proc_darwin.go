package proc

import "syscall"

// fionread is the ioctl that reports the bytes waiting in a pipe.
const fionread = 0x4004667f // _IOR('f', 127, int): x/sys/unix does not name it for macOS

// groupAttr starts a command (or its guard) leading a process group of its own. macOS has no
// parent-death signal: the guard watches the daemon instead (watchParent).
func groupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
