package checkpoint

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// inotifyUse is what this user's processes hold of inotify: instances and watches.
type inotifyUse struct{ instances, watches int }

// userInotify counts the inotify instances and watches of the processes this user can see
// (/proc/*/fdinfo: one "inotify wd:" line per watch). The kernel's limits are per user.
func userInotify() inotifyUse {
	var u inotifyUse
	procs, _ := os.ReadDir("/proc")
	uid := os.Getuid()
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		if fi, err := os.Stat(filepath.Join("/proc", p.Name())); err != nil || statUID(fi) != uid {
			continue
		}
		fds, _ := os.ReadDir(filepath.Join("/proc", p.Name(), "fd"))
		for _, fd := range fds {
			if l, err := os.Readlink(filepath.Join("/proc", p.Name(), "fd", fd.Name())); err != nil || l != "anon_inode:inotify" {
				continue
			}
			u.instances++
			if info, err := os.ReadFile(filepath.Join("/proc", p.Name(), "fdinfo", fd.Name())); err == nil {
				u.watches += strings.Count(string(info), "inotify wd:")
			}
		}
	}
	return u
}

// Check is `toolsd checkpoints check`: whether the change journal can watch the workspace
// (its folders that are not ignored, one watch each) within the kernel's inotify limits and
// what this user's programs hold now, what it costs when not, and the fix.
func Check(ws string) (string, error) {
	folders, entries, err := journalWatches(ws)
	if err != nil {
		return "", err
	}
	return checkReport(ws, folders, entries, [2]int{readSysctl("max_user_watches"), readSysctl("max_user_instances")}, userInotify()), nil
}

func checkReport(ws string, folders, entries int, lim [2]int, use inotifyUse) string {
	var b strings.Builder
	fmt.Fprintf(&b, "workspace: %s\n", ws)
	fmt.Fprintf(&b, "folders the change journal watches: %d (of %d files and folders not ignored)\n", folders, entries)
	fmt.Fprintf(&b, "inotify watches: %d in use by this user's programs, limit %d (fs.inotify.max_user_watches)\n", use.watches, lim[0])
	fmt.Fprintf(&b, "inotify instances: %d in use by this user's programs, limit %d (fs.inotify.max_user_instances)\n", use.instances, lim[1])
	fmt.Fprintln(&b, "(a toolsd that already watches this workspace counts among them)")
	var fixes []string
	if use.watches+folders > lim[0] {
		want := max(524288, 2*lim[0])
		fmt.Fprintf(&b, "change journal: does NOT fit: %d watches more would pass the limit of %d\n", folders, lim[0])
		fixes = append(fixes, fmt.Sprintf("fs.inotify.max_user_watches=%d", want))
	}
	if use.instances+1 > lim[1] {
		fmt.Fprintf(&b, "change journal: no inotify instance is left (%d of %d in use)\n", use.instances, lim[1])
		fixes = append(fixes, fmt.Sprintf("fs.inotify.max_user_instances=%d", max(1024, 2*lim[1])))
	}
	if len(fixes) == 0 {
		fmt.Fprintln(&b, "change journal: fits: a changing call looks only at what changed")
		return b.String()
	}
	fmt.Fprintf(&b, "cost: every changing call walks the whole workspace (%d files and folders) to find what it changed\n", entries)
	for _, f := range fixes {
		fmt.Fprintf(&b, "fix: sudo sysctl %s (and put %s in a file in /etc/sysctl.d/ to keep it); a running toolsd uses the journal again at its next changing call\n", f, f)
	}
	return b.String()
}

func statUID(fi os.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}
