package main_test

import "golang.org/x/sys/unix"

// growPipe makes the pipe at fd hold n bytes, where the system can.
func growPipe(fd, n int) { _, _ = unix.FcntlInt(uintptr(fd), unix.F_SETPIPE_SZ, n) }
