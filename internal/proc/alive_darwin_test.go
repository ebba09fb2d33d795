package proc

import "syscall"

// alive reports whether the process pid exists (a zombie counts until it is reaped; Linux
// has its own, which tells zombies apart, in proc_linux_test.go).
func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }
