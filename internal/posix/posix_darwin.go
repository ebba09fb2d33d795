package posix

import "golang.org/x/sys/unix"

// O_PATH opens a file or folder only to name it (fstat, and as the folder of *at calls).
// macOS has no such flag: it is O_RDONLY, so a folder without read permission cannot be
// opened on the way.
const O_PATH = unix.O_RDONLY
