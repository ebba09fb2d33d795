package proc

import (
	"bytes"
	"errors"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// procRef names a process: its pid, and its start time (in clock ticks since boot), which
// tells it apart from a later process given the same pid.
type procRef struct {
	pid   int
	start uint64
}

// descendants returns every process below the process root, found in /proc by parent pid,
// whatever their process group or session: a process that left its group (setsid) is still
// its parent's child, and an orphan is a child of the nearest subreaper, root itself.
func descendants(root int) []procRef {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	names, _ := d.Readdirnames(-1)
	_ = d.Close()
	children := map[int][]procRef{}
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		if ppid, start, ok := readStat(pid); ok {
			children[ppid] = append(children[ppid], procRef{pid, start})
		}
	}
	return below(children, root)
}

// readStat returns the parent pid and the start time of pid from /proc/<pid>/stat.
func readStat(pid int) (ppid int, start uint64, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// "pid (comm) state ppid …": comm may hold anything, parentheses included, so the
	// fields start after the last ')'. ppid is field 4 of the line, starttime field 22.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 20 {
		return 0, 0, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	start, err2 := strconv.ParseUint(string(f[19]), 10, 64)
	return ppid, start, err1 == nil && err2 == nil
}

// signal sends sig to p if p is still the process that was found: through a pidfd opened
// and then checked against the start time, so that a pid reused since cannot be signalled.
// Without pidfds (Linux before 5.3) it falls back to kill(2).
func (p procRef) signal(sig unix.Signal) {
	fd, err := unix.PidfdOpen(p.pid, 0)
	if errors.Is(err, unix.ENOSYS) {
		_ = unix.Kill(p.pid, sig)
		return
	}
	if err != nil {
		return // gone
	}
	defer unix.Close(fd)
	// The pidfd names whatever process had the pid when it was opened; if that process
	// still has it now, with the start time found, it is p.
	if _, start, ok := readStat(p.pid); !ok || start != p.start {
		return
	}
	_ = unix.PidfdSendSignal(fd, sig, nil, 0)
}
