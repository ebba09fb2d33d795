package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// Landlock grants rights only; a right on a folder holds for everything below it. So "read
// everything but ~/.ssh" is granted as the complement: read on every entry of / except
// /root (or /home), then on every entry of the home folder except .ssh, and on the folders
// on the way only the right to list them. plan computes those grants.

const (
	accessRead = ll.AccessFSReadFile | ll.AccessFSReadDir | ll.AccessFSExecute
	// accessFileOnly are the rights a rule on a file (not a folder) may carry.
	accessFileOnly = ll.AccessFSExecute | ll.AccessFSWriteFile | ll.AccessFSReadFile | ll.AccessFSTruncate | ll.AccessFSIoctlDev
)

// accessWrite is every filesystem right (of the ABI in use, once masked).
const accessWrite = landlock.AccessFSSet(1<<17 - 1)

// grant is one Landlock rule: rights on a path and everything below it.
type grant struct {
	path   string
	access landlock.AccessFSSet
}

// cut is a path that gets fewer rights than the folder it lies in: keep are the rights it
// keeps (nothing for a secret, reading for a protected path), onPath the rights the folders
// above it may have (those hold for it too).
type cut struct {
	path   string
	keep   landlock.AccessFSSet
	onPath landlock.AccessFSSet
}

// devices are the device files a confined process may use; the rest of /dev is hidden
// (a disk's device file would otherwise give root every file's bytes).
// (/dev/fd, /dev/stdin and the like lead through /proc, which is readable, to the process's
// own descriptors.)
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx", "/dev/pts"}

// plan returns the Landlock grants of p. With protectByLandlock, the protected paths are
// cut out of the writable folders (no mount namespace makes them read-only). A hidden path
// inside a writable folder is a mount of its own in a mount namespace (hiddenByMount); cut
// out by Landlock it would leave the folder around it without new entries, so without one
// it is cut out only outside the temp folder (which must take new files).
func plan(p *Policy, protectByLandlock bool) []grant {
	return planListing(p, protectByLandlock, nil)
}

// planListing is plan, which also adds to listed (when not nil) each folder whose entries
// it listed: the grants depend on what those folders hold.
func planListing(p *Policy, protectByLandlock bool, listed *[]string) []grant {
	var cuts []cut
	for _, d := range p.Deny {
		switch {
		case !protectByLandlock && hiddenByMount(p, d):
			continue
		case protectByLandlock && p.Temp != "" && within(d, []string{p.Temp}):
			continue
		}
		cuts = append(cuts, cut{path: d, keep: 0, onPath: ll.AccessFSReadDir})
	}
	if protectByLandlock {
		for _, d := range p.Protect {
			cuts = append(cuts, cut{path: d, keep: accessRead, onPath: accessRead})
		}
	}
	cuts = append(cuts, cut{path: "/dev", keep: ll.AccessFSReadDir, onPath: ll.AccessFSReadDir})
	var out []grant
	for _, r := range p.Read {
		out = appendGrants(out, r, accessRead, cuts, listed)
	}
	for _, w := range p.Write {
		out = appendGrants(out, w, accessWrite, cuts, listed)
	}
	for _, d := range devices {
		if within(d, p.Deny) {
			continue
		}
		out = append(out, grant{d, ll.AccessFSReadFile | ll.AccessFSWriteFile | ll.AccessFSReadDir | ll.AccessFSIoctlDev | ll.AccessFSTruncate})
	}
	return out
}

// appendGrants grants access on path, except what cuts below it take away.
func appendGrants(out []grant, path string, access landlock.AccessFSSet, cuts []cut, listed *[]string) []grant {
	path = filepath.Clean(path)
	if _, err := os.Stat(path); err != nil {
		return out // nothing there to grant
	}
	var below []cut
	for _, c := range cuts {
		if access&^c.keep == 0 && access&^c.onPath == 0 {
			// It takes nothing from this grant (a protected path keeps the reading a read
			// grant gives): no need to list the folders on its way for it.
			continue
		}
		if c.keep == 0 {
			// A hidden path that is not there has nothing to hide (only the protected ones
			// must stay uncreatable).
			if _, err := os.Lstat(c.path); err != nil {
				continue
			}
		}
		if c.path == path {
			access &= c.keep
			continue
		}
		if _, ok := withinStrict(path, c.path); ok {
			below = append(below, c)
		}
	}
	if access == 0 {
		return out
	}
	if len(below) == 0 {
		return append(out, grant{path, access})
	}
	// The folder itself keeps only what every cut below may have.
	here := access
	for _, c := range below {
		here &= c.onPath
	}
	if here != 0 {
		out = append(out, grant{path, here})
	}
	if listed != nil {
		*listed = append(*listed, path)
	}
	d, err := os.Open(path)
	if err != nil {
		return out
	}
	names, _ := d.Readdirnames(-1)
	_ = d.Close()
	sort.Strings(names)
	// A cut whose path does not exist yet has nothing to cut; a name that would create it
	// stays uncreatable because this folder keeps only `here`.
	for _, n := range names {
		out = appendGrants(out, filepath.Join(path, n), access, below, listed)
	}
	return out
}

// withinStrict reports whether p lies strictly below dir.
func withinStrict(dir, p string) (string, bool) {
	if dir == p {
		return "", false
	}
	if dir == "/" {
		return p[1:], len(p) > 1
	}
	if len(p) > len(dir) && p[:len(dir)] == dir && p[len(dir)] == '/' {
		return p[len(dir)+1:], true
	}
	return "", false
}

// rules turns grants into go-landlock rules for a config handling `handled`: rights the ABI
// lacks are dropped, and a rule on a file keeps only the rights a file can have.
func rules(gs []grant, handled landlock.AccessFSSet) []landlock.Rule {
	var out []landlock.Rule
	for _, g := range gs {
		a := g.access & handled
		if fi, err := os.Stat(g.path); err != nil {
			continue
		} else if !fi.IsDir() {
			a &= accessFileOnly
		}
		if a == 0 {
			continue
		}
		out = append(out, landlock.PathAccess(a, g.path).IgnoreIfMissing())
	}
	return out
}

// grantedPaths lists the paths of gs, for tests and `toolsd sandbox check`.
func grantedPaths(gs []grant) []string {
	var out []string
	for _, g := range gs {
		if !slices.Contains(out, g.path) {
			out = append(out, g.path)
		}
	}
	return out
}

// hiddenByMount reports whether the stage hides d with a mount (in a mount namespace): a
// hidden path inside a writable folder.
func hiddenByMount(p *Policy, d string) bool { return within(d, p.Write) }
