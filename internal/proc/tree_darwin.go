package proc

import (
	"golang.org/x/sys/unix"
)

// procRef names a process: its pid, and its start time (in microseconds since 1970), which
// tells it apart from a later process given the same pid.
type procRef struct {
	pid   int
	start uint64
}

// descendants returns every process below the process root, found by parent pid in the
// kernel's process table (sysctl kern.proc.all), whatever their process group or session.
func descendants(root int) []procRef {
	procs, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil
	}
	children := map[int][]procRef{}
	for _, p := range procs {
		children[int(p.Eproc.Ppid)] = append(children[int(p.Eproc.Ppid)], procRef{int(p.Proc.P_pid), startOf(&p)})
	}
	return below(children, root)
}

func startOf(p *unix.KinfoProc) uint64 {
	t := p.Proc.P_starttime
	return uint64(t.Sec)*1e6 + uint64(t.Usec)
}

// signal sends sig to p if p is still the process that was found (the same start time).
// macOS has no pidfds: a pid reused between the check and the kill(2) could be signalled,
// a window of microseconds.
func (p procRef) signal(sig unix.Signal) {
	k, err := unix.SysctlKinfoProc("kern.proc.pid", p.pid)
	if err != nil || int(k.Proc.P_pid) != p.pid || startOf(k) != p.start {
		return
	}
	_ = unix.Kill(p.pid, sig)
}
