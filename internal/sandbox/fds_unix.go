//go:build unix

package sandbox

import (
	"fmt"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// closeOnExecFrom marks every open descriptor from first on close-on-exec, so that a tool
// started next inherits none of them: Landlock and Seatbelt govern what a process opens, not
// what it holds, and a descriptor the daemon inherited without the flag (from the editor
// that started it, say) could be a file outside the writable folders.
func closeOnExecFrom(first int) error {
	dir := "/dev/fd"
	if runtime.GOOS == "linux" {
		dir = "/proc/self/fd"
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("listing the descriptors a tool must not inherit: %w", err)
	}
	names, err := d.Readdirnames(-1)
	_ = d.Close()
	if err != nil {
		return fmt.Errorf("listing the descriptors a tool must not inherit: %w", err)
	}
	for _, name := range names {
		fd, err := strconv.Atoi(name)
		if err != nil || fd < first {
			continue
		}
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil && err != unix.EBADF {
			return fmt.Errorf("descriptor %d, which a tool must not inherit: %w", fd, err)
		}
	}
	return nil
}
