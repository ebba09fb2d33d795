//go:build unix

package proc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/toolsd/toolsd/internal/sandbox"
	"golang.org/x/sys/unix"
)

// The guard's protocol. The daemon starts `toolsd __guard -grace=D [-sandbox=POLICY] -- name
// args...` with Setpgid and PR_SET_PDEATHSIG=SIGTERM, and signals the guard alone (never its
// tree):
//
//   - SIGTERM (also SIGINT, SIGHUP; SIGTERM is what the kernel sends when the daemon dies):
//     stop the tree: SIGTERM to every process in it, SIGKILL to what is left after D.
//   - sigKillNow: SIGKILL the tree at once (KillGroup).
//
// The guard's exit code is the command's: its exit status, or 128+N when signal N killed it.
const sigKillNow = syscall.SIGUSR1

const (
	// killBound bounds how long a guard tries to kill and reap its tree; what is left
	// then (a process stuck in the kernel, or one it may not signal) is reported on stderr.
	killBound = 5 * time.Second
	// killTick is how often a guard looks for what is left of its tree while killing it.
	killTick = 50 * time.Millisecond
)

// RunGuard is the guard's main: args are the guard's options and the command to run. It
// becomes a child subreaper, starts the command in a process group of its own, and
// supervises the command's whole tree: every process the command starts stays below the
// guard, because an orphan is reparented to it. When the command exits, everything left in
// its tree is killed. SIGTERM (from the daemon's cancellation, or from the kernel because
// the daemon died) gives the tree the grace, then kills it. Either way the guard reaps every
// process of the tree before it exits with the command's code, so when the daemon sees the
// guard exit, no process of the tree holds the output pipes any more.
func RunGuard(args []string) int {
	o, argv, err := parseGuardArgs(args)
	if err != nil {
		fmt.Fprintf(os.Stderr, "toolsd: %s: %v\n", GuardArg, err)
		if strings.HasPrefix(err.Error(), "sandbox:") {
			return 126 // a command that cannot be confined does not run
		}
		return 2
	}
	if o.warm != (len(argv) == 0) {
		if !o.warm {
			return 127
		}
		fmt.Fprintf(os.Stderr, "toolsd: %s: %s is for a command that comes later\n", GuardArg, warmFlag)
		return 2
	}
	// Before anything can be orphaned: orphans of the tree come to us, not to init. A
	// kernel without it (before 3.4) leaves escapes possible, as for an unguarded command.
	becomeSubreaper()
	// A stop that arrives before the command starts is handled right after it: the
	// command is then stopped at once. (One that arrives before this line kills the guard
	// with the default action, before the command exists.)
	stop := make(chan os.Signal, 4)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, sigKillNow)
	chld := make(chan os.Signal, 1)
	signal.Notify(chld, syscall.SIGCHLD)
	watchParent(stop)
	if o.warm {
		return runWarm(o, stop, chld)
	}

	// What the command may leave behind for an unconfined git to run (sandbox.Watch).
	policy, watch := sandbox.StartWatch(o.policy)
	tool, err := startTool(argv, policy)
	return guardTool(o, tool, err, stop, chld, watch)
}

// guardTool supervises the started command (or reports why it did not start) and returns
// the guard's exit code.
func guardTool(o guardOptions, tool int, err error, stop, chld <-chan os.Signal, watch *sandbox.Watch) int {
	if err != nil {
		fmt.Fprintf(os.Stderr, "toolsd: %v\n", err)
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return 127
		}
		return 126
	}
	g := &guard{self: os.Getpid(), tool: tool, grace: o.grace}
	if o.policy != nil && countsProcs() {
		// The guard counts the tree itself where nothing else bounds it (countsProcs): for
		// root on Linux, whom RLIMIT_NPROC does not hold; on macOS always.
		g.maxProcs = o.policy.MaxProcs
	}
	code := g.supervise(stop, chld)
	watch.Finish(os.Stderr)
	return code
}

// startTool starts the command with the guard's stdin, stdout and stderr, leading a process
// group of its own (so that the guard can signal the group without signalling itself), and
// returns its pid. The guard reaps it (wait4), never exec's Wait. SIGKILL reaches the
// command if the guard itself dies.
//
// With a policy, the command is confined (internal/sandbox): the tool's process applies the
// policy to itself right before it execs the command, so that it holds for the whole tree;
// the guard itself stays unconfined, since it has to keep reading /proc, signalling and
// reaping. A command that cannot be confined does not run.
func startTool(argv []string, p *sandbox.Policy) (int, error) {
	if p != nil {
		pid, _, err := sandbox.Start(p, argv, os.Stdin, os.Stdout, os.Stderr)
		return pid, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = toolAttr()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	return cmd.Process.Pid, nil
}

// guard supervises one command's tree. Owned by RunGuard's goroutine.
type guard struct {
	self  int // the guard's pid: the tree is every process below it
	tool  int // the command's pid, and its process group id
	grace time.Duration

	// maxProcs, when positive, is how many processes the tree may hold at once: more, and
	// the tree is killed (a fork bomb).
	maxProcs int

	toolLive bool // the command is not reaped yet: its pid, and so its group id, cannot be reused
	status   unix.WaitStatus
}

// procsTick is how often the guard counts a tree whose size it bounds.
const procsTick = 20 * time.Millisecond

// supervise reaps the tree as it ends and stops it on the daemon's signals; it returns the
// guard's exit code once no process of the tree is left (or killBound after it started
// killing, with what is left reported on stderr).
func (g *guard) supervise(stop, chld <-chan os.Signal) int {
	g.toolLive = true
	var (
		stopping, killing bool
		graceEnd, giveUp  <-chan time.Time
		tick              <-chan time.Time
		count             <-chan time.Time
	)
	if g.maxProcs > 0 {
		t := time.NewTicker(procsTick)
		defer t.Stop()
		count = t.C
	}
	kill := func() {
		if killing {
			return
		}
		killing = true
		tick = time.NewTicker(killTick).C // the guard exits soon after; no need to stop it
		giveUp = time.After(killBound)
	}
	for {
		if g.reap() {
			return g.code()
		}
		if !g.toolLive {
			kill() // the command ended: nothing it left may outlive it
		}
		if killing {
			g.signalTree(syscall.SIGKILL)
		}
		select {
		case <-chld:
		case <-count:
			if n := len(descendants(g.self)); n > g.maxProcs && !killing {
				fmt.Fprintf(os.Stderr, "toolsd: the command had %d processes running at once, more than the sandbox allows (%d): it and every process it started were killed. A fork bomb or a runaway loop of background jobs does this; start fewer processes at a time\n", n, g.maxProcs)
				kill()
			}
		case <-tick:
		case s := <-stop:
			switch {
			case s == sigKillNow:
				kill()
			case !stopping && !killing:
				stopping = true
				g.signalTree(syscall.SIGTERM)
				graceEnd = time.After(g.grace)
			}
		case <-graceEnd:
			kill()
		case <-giveUp:
			left := descendants(g.self)
			pids := make([]string, len(left))
			for i, p := range left {
				pids[i] = fmt.Sprint(p.pid)
			}
			fmt.Fprintf(os.Stderr, "toolsd: %d processes this command started could not be killed and keep running: pids %s\n", len(left), strings.Join(pids, " "))
			return g.code()
		}
	}
}

// reap waits for every child that has ended, and reports whether none is left: then the
// whole tree is gone, because an orphan of the tree becomes our child before its parent's
// end is reported to us.
func (g *guard) reap() (gone bool) {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.ECHILD):
			return true
		case err != nil || pid <= 0:
			return false
		}
		if pid == g.tool {
			g.toolLive, g.status = false, ws
		}
	}
}

// code is the guard's exit code: the command's.
func (g *guard) code() int {
	switch {
	case g.toolLive:
		return 128 + int(syscall.SIGKILL)
	case g.status.Signaled():
		return 128 + int(g.status.Signal())
	default:
		return g.status.ExitStatus()
	}
}

// signalTree sends sig to every process of the tree: the command's process group while the
// command is not reaped, and every process below the guard, whatever its group or session.
// A process forked while this runs is found by the next call: its parent's death makes it
// our child and wakes us (SIGCHLD), and the kill loop looks again every killTick.
func (g *guard) signalTree(sig syscall.Signal) {
	if g.toolLive {
		_ = unix.Kill(-g.tool, sig)
	}
	for _, p := range descendants(g.self) {
		p.signal(sig)
	}
}
