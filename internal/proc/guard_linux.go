package proc

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// becomeSubreaper makes orphans of the tree come to the guard, not to init
// (PR_SET_CHILD_SUBREAPER). A kernel without it (before 3.4) leaves escapes possible, as for
// an unguarded command.
func becomeSubreaper() { _ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) }

// toolAttr starts the command in a process group of its own, killed if the guard dies.
func toolAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// watchParent does nothing on Linux: the kernel sends the guard SIGTERM when the daemon dies
// (PR_SET_PDEATHSIG, set when the daemon starts it).
func watchParent(stop chan<- os.Signal) {}

// countsProcs reports whether the guard counts a confined tree itself: only for root, whom
// RLIMIT_NPROC (set by the stage) does not hold.
func countsProcs() bool { return os.Geteuid() == 0 }
