package posix

import "golang.org/x/sys/unix"

// O_PATH opens a file or folder only to name it (fstat, and as the folder of *at calls),
// without read permission.
const O_PATH = unix.O_PATH
