package permission

import (
	"path/filepath"
	"strings"

	"github.com/toolsd/toolsd/internal/protect"
)

// Protected reports whether a pattern of a request under permission names a protected path
// (package protect: the paths through which the workspace controls what runs unconfined
// later), and why. Only writes are protected, and only inside the workspace: the patterns of
// "edit" that are workspace-relative paths, which every writer (write, edit, apply_patch, a
// shell line's redirections and output files, checkpoint revert) builds from the path
// resolved as it will write it (symlinks followed, internal/fspath).
func Protected(permission, pattern string) (why string, ok bool) {
	if permission != KeyEdit || pattern == "" || filepath.IsAbs(pattern) || strings.HasPrefix(pattern, "/") {
		return "", false
	}
	return protect.Rel(pattern)
}

// MayRelax answers the one question every layer that would allow without asking — the
// sandbox's auto-allow, a hook's allow — puts to the rules: may this ask be settled
// without a person? Only when the decision is the built-in defaults' ask and nothing else:
// no rule of any layer (trusted or not, at any strictness) asks or denies any pattern of
// the query, nothing in it is outside what toolsd understands (an Opaque query, a
// pattern whose arguments are outside its command's safe grammar, a reason of any kind),
// and it writes no protected path. A deny is never relaxed.
func MayRelax(q Query, d Decision) bool {
	if d.Action != Ask || q.Opaque || d.Opaque || len(q.Reasons) > 0 || d.Reason != "" || d.Protected != "" || d.Tightening {
		return false
	}
	if d.Rule != nil && d.Rule.Source != SourceDefault {
		return false // a rule someone wrote asks (Decide names it whenever one does)
	}
	asks := d.Asks
	if len(asks) == 0 {
		asks = q.Patterns
	}
	for _, p := range asks {
		if _, exact := q.ExactOnly[p]; exact {
			return false
		}
	}
	for _, p := range q.Patterns {
		if _, ok := Protected(q.Permission, p); ok {
			return false
		}
	}
	return true
}
