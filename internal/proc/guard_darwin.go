package proc

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// becomeSubreaper does nothing: macOS has no subreapers, so an orphan of the tree goes to
// launchd. The guard still finds it while it stays in the command's process group, and by
// parent pid while its parent lives (descendants); one that leaves the group (setsid) and
// whose parent has ended is not found again.
func becomeSubreaper() {}

// toolAttr starts the command in a process group of its own.
func toolAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// watchParent stops the tree when the daemon (the guard's parent) dies, as Linux's parent-
// death signal does: a kqueue waits for the parent's exit (EVFILT_PROC, NOTE_EXIT), and then
// the guard gets SIGTERM on stop. A parent that died before the watch began is seen by the
// guard's parent pid having become launchd's.
func watchParent(stop chan<- os.Signal) {
	ppid := os.Getppid()
	kq, err := unix.Kqueue()
	if err != nil {
		return
	}
	ev := []unix.Kevent_t{{Ident: uint64(ppid), Filter: unix.EVFILT_PROC, Flags: unix.EV_ADD | unix.EV_ONESHOT, Fflags: unix.NOTE_EXIT}}
	if _, err := unix.Kevent(kq, ev, nil, nil); err != nil || os.Getppid() != ppid {
		unix.Close(kq)
		stop <- syscall.SIGTERM // gone already (ESRCH, or reparented)
		return
	}
	go func() {
		defer unix.Close(kq)
		out := make([]unix.Kevent_t, 1)
		for {
			n, err := unix.Kevent(kq, nil, out, nil)
			if err == unix.EINTR {
				continue
			}
			if err == nil && n > 0 {
				stop <- syscall.SIGTERM
			}
			return
		}
	}()
}

// countsProcs reports whether the guard counts a confined tree itself: always on macOS,
// where Seatbelt bounds no process count.
func countsProcs() bool { return true }
