package attach

import (
	"fmt"
	"regexp"
)

// The Windows owner's security descriptors and process-tree walk, kept here, apart from the
// system calls (sys_windows.go, peer_windows.go), so that they are built and tested on
// every system.

// sidPattern is a SID in its string form (S-1-5-21-…): nothing else may enter an SDDL string.
var sidPattern = regexp.MustCompile(`^S-1-[0-9]+(-[0-9]+)+$`)

// pipeSDDL is the security descriptor of the owner's named pipe: a protected DACL with one
// entry, all access for user (a SID), so that no other account — not SYSTEM, not the
// Administrators group, not Everyone — may open it or create an instance of it.
func pipeSDDL(user string) (string, error) {
	if !sidPattern.MatchString(user) {
		return "", fmt.Errorf("attach: %q is not a SID", user)
	}
	return "D:P(A;;GA;;;" + user + ")", nil
}

// folderSDDL is the security descriptor of the runtime folder: owned by user (a SID), with
// a protected DACL of one entry, full access for user, inherited by the files and folders
// in it.
func folderSDDL(user string) (string, error) {
	if !sidPattern.MatchString(user) {
		return "", fmt.Errorf("attach: %q is not a SID", user)
	}
	return "O:" + user + "D:P(A;OICI;FA;;;" + user + ")", nil
}

// walkParents reports whether pid descends from ancestor, going up parents (pid to parent
// pid, as a process snapshot lists them) at most 64 steps. Windows keeps a process's parent
// pid after the parent exits, and reuses pids, so a link may be stale (and the links may even
// loop): linked(child, parent) reports that a link is real (the parent was created before the
// child); the walk stops, false, at the first that is not.
func walkParents(parents map[uint32]uint32, pid, ancestor uint32, linked func(child, parent uint32) bool) bool {
	for range 64 {
		parent, ok := parents[pid]
		if !ok || parent == 0 || parent == pid || !linked(pid, parent) {
			return false
		}
		if parent == ancestor {
			return true
		}
		pid = parent
	}
	return false
}
