//go:build unix

package sandbox

import (
	"os"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// closeOnExecFrom marks an inherited descriptor (one without the flag) close-on-exec: the
// way before Linux 5.11, and macOS's.
func TestCloseOnExecFrom(t *testing.T) {
	fd, err := syscall.Open(os.DevNull, syscall.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil || flags&unix.FD_CLOEXEC != 0 {
		t.Fatalf("the descriptor's flags before: %v %v", flags, err)
	}
	if err := closeOnExecFrom(fd); err != nil {
		t.Fatal(err)
	}
	if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil || flags&unix.FD_CLOEXEC == 0 {
		t.Errorf("the descriptor is not close-on-exec: %v %v", flags, err)
	}
}
