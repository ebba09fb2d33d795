//go:build !linux

package checkpoint

import (
	"fmt"
	"runtime"
	"strings"
)

// Check is `toolsd checkpoints check`: how much of the workspace the change journal watches.
// The inotify limits it checks on Linux do not exist here: on macOS the journal (fsnotify)
// holds an open file per watched folder and file (kqueue), within the process's limit of
// open files (ulimit -n); on Windows it watches each folder with ReadDirectoryChangesW.
func Check(ws string) (string, error) {
	folders, entries, err := journalWatches(ws)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "workspace: %s\n", ws)
	fmt.Fprintf(&b, "folders the change journal watches: %d (of %d files and folders not ignored)\n", folders, entries)
	switch runtime.GOOS {
	case "darwin":
		fmt.Fprintln(&b, "macOS: the journal holds an open file for each watched folder and file (kqueue); when the process's limit of open files (ulimit -n) refuses more, every changing call walks the whole workspace instead, and the status says so")
	default:
		fmt.Fprintln(&b, "the journal watches each folder with the system's change notifications; no per-user limit is checked here")
	}
	return b.String(), nil
}
