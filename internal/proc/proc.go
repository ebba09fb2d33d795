// Package proc starts tool processes so that a whole process tree dies together: on
// cancellation, on time-out, after the command ends, and when the daemon itself dies.
//
// The daemon sets SetGuardPath to toolsd-guard (cmd/toolsd-guard) or to its own executable,
// and every command then starts through a guard: the hidden "__guard" mode of that binary
// (RunGuard). The guard is a child subreaper (PR_SET_CHILD_SUBREAPER): whatever the command
// starts and orphans — a double fork, `setsid`, `nohup … &`, a daemon that detaches — is
// reparented to the guard, not to init, so the command's tree never leaves it. The guard
// kills that whole tree, process groups and sessions notwithstanding, and reaps it before it
// exits: when the command ends, when the daemon cancels it (SIGTERM, then SIGKILL after the
// grace), and when the daemon dies (the kernel sends the guard SIGTERM: PR_SET_PDEATHSIG).
//
// With SetWarm (the daemon), the guard of the next command like one that ended is started
// ahead of it, with its stage set up, and Run hands the command to it (warm.go).
//
// Without a guard (the tests of packages that do not build the binary), each command leads
// its own process group: cancelling sends SIGTERM to the group and SIGKILL after the grace,
// and the group is killed when its leader exits; a process that leaves the group escapes.
//
// Run reads a command's output to its end. Once the tree is gone no writer of the output
// pipe is left, so the end comes; only when something outside the tree still holds the pipe
// (a process that escaped even the guard) does Run stop reading early, and it says so.
//
// That is Linux. On macOS the guard has no subreaper: it kills the command's process group
// and every process below it found by parent pid (sysctl), and a kqueue on the daemon's exit
// stands in for the parent-death signal (guard_darwin.go, tree_darwin.go). On Windows the
// guard runs the command in a Job Object that kills the whole tree when its handle closes:
// when the command ends, when the daemon kills the guard (cancel, time-out; no grace), and
// when the daemon exits (guard_windows.go).
package proc

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/toolsd/toolsd/internal/sandbox"
)

// GuardArg is the first argument that makes the toolsd binary run as a guard.
const GuardArg = "__guard"

// guardPath is the executable that runs guards; empty means processes start unguarded.
var guardPath atomic.Pointer[string]

// SetGuardPath makes every later Command start through the guard at path (toolsd-guard, or
// the toolsd binary). Called once by main; tests of packages that do not build the binary leave it
// unset.
func SetGuardPath(path string) { guardPath.Store(&path) }

// DefaultGrace is how long a process tree has between SIGTERM and SIGKILL.
const DefaultGrace = 2 * time.Second

// guardSlack is how long, beyond the grace, a cancelled guard has to kill and reap its tree
// before the daemon kills the guard itself (a guard that hangs; its tree would escape).
const guardSlack = 3 * time.Second

// launch is what Command and Confine knew of a guarded command, for Run.
type launch struct {
	ctx    context.Context
	grace  time.Duration
	ahead  bool            // a guard can start ahead for it: not confined with a proxy of its own
	policy *sandbox.Policy // what it is confined by (nil: unconfined)
}

// launches holds the launch of each guarded command from Command until Run or KillGroup.
var launches sync.Map // *exec.Cmd -> *launch

// Command returns a command that runs name with args so that its whole tree dies with it,
// with stdin closed (reading it gives EOF). When ctx is done the tree gets SIGTERM and,
// grace later, SIGKILL; Wait returns soon after even if something outside the tree still
// holds an output pipe. The caller sets Dir, Env, Stdout and Stderr, then calls Start and
// Wait, and must call KillGroup after Wait (Run does all of this).
func Command(ctx context.Context, grace time.Duration, name string, args ...string) *exec.Cmd {
	if grace <= 0 {
		grace = DefaultGrace
	}
	var cmd *exec.Cmd
	if p := guardPath.Load(); p != nil && *p != "" {
		cmd = exec.CommandContext(ctx, *p, guardArgs(grace, name, args)...)
		launches.Store(cmd, &launch{ctx: ctx, grace: grace, ahead: true})
		// The guard stops the tree itself: SIGTERM, the grace, SIGKILL, reaping. The
		// signal goes through the process's pidfd, so it cannot reach a reused pid.
		cmd.Cancel = func() error { return stopGuard(cmd.Process) }
		cmd.WaitDelay = grace + guardSlack
	} else {
		cmd = exec.CommandContext(ctx, name, args...)
		cmd.Cancel = func() error {
			pid := cmd.Process.Pid
			signalGroup(pid, false)
			// KillGroup stops the timer once the command was waited for, so a late SIGKILL
			// can never reach a process group id the kernel has handed out again.
			escalations.Store(cmd, time.AfterFunc(grace, func() { signalGroup(pid, true) }))
			return nil
		}
		// After SIGKILL the pipes close; WaitDelay bounds Wait when a process that escaped
		// the group still holds them.
		cmd.WaitDelay = grace + time.Second
	}
	cmd.SysProcAttr = groupAttr()
	cmd.Stdin = nil // /dev/null
	return cmd
}

// ErrUnguarded is returned by Confine when commands start without a guard (no toolsd binary
// to confine them with).
var ErrUnguarded = errors.New("proc: commands start without a guard here, so they cannot be confined")

// GuardPath is the executable that runs guards ("" when commands start unguarded).
func GuardPath() string {
	if p := guardPath.Load(); p != nil {
		return *p
	}
	return ""
}

// Guarded reports whether commands start through a guard, and so can be confined.
func Guarded() bool {
	p := guardPath.Load()
	return p != nil && *p != ""
}

// Confine makes cmd (from Command, not started yet) run confined by p: the guard starts the
// command through internal/sandbox, and a command that cannot be confined does not run (its
// exit code is 126 and its stderr says why).
func Confine(cmd *exec.Cmd, p *sandbox.Policy) error {
	if !guarded(cmd) {
		return ErrUnguarded
	}
	args := append([]string{}, cmd.Args[:2]...)
	args = append(args, sandboxFlag+p.Encode())
	cmd.Args = append(args, cmd.Args[2:]...)
	if l, ok := launches.Load(cmd); ok {
		// A process with a proxy of its own is never started ahead (warm.go).
		l.(*launch).ahead = p.Net.Mode != sandbox.NetProxy
		l.(*launch).policy = p
	}
	return nil
}

// guarded reports whether cmd runs through a guard.
func guarded(cmd *exec.Cmd) bool { return len(cmd.Args) > 1 && cmd.Args[1] == GuardArg }

// escalations holds the pending SIGKILL timer of each cancelled unguarded command.
var escalations sync.Map // *exec.Cmd -> *time.Timer

// KillGroup kills at once what a started command left running: through its guard, the
// whole tree; unguarded, its process group. Call it once, after Wait (when the guard has
// already killed and reaped the tree, it does nothing).
func KillGroup(cmd *exec.Cmd) {
	launches.Delete(cmd)
	if t, ok := escalations.LoadAndDelete(cmd); ok {
		t.(*time.Timer).Stop()
	}
	if cmd.Process == nil {
		return
	}
	if guarded(cmd) {
		// A guard that was waited for is gone (the signal then fails with ErrProcessDone),
		// and its tree with it.
		killGuardNow(cmd.Process)
		return
	}
	signalGroup(cmd.Process.Pid, true)
}

// Run starts cmd (from Command), waits for it, kills what it left behind, and returns once
// its output is copied, with the command's error from Wait. Stdout and Stderr that are not
// files go through pipes Run owns rather than exec's, and Run reads them to their end: once
// the command's tree is gone, the pipes have no writer left and the end comes, however long
// Stdout and Stderr take to accept it. Only if something outside the tree still holds a pipe
// (a process that escaped the guard, or any process that left the group of an unguarded
// command) does Run stop reading before the end, once that pipe has stayed empty for
// drainIdle (or drainMax after the tree ended, if it keeps writing); then cut is true, and
// whatever the pipe got after that point was not read.
//
// A confined command whose policy has a journal (sandbox.Policy.Journal) is looked after by
// the daemon rather than its guard: Run takes the look before it starts (sandbox.StartWatch)
// and, once the guard has ended, moves aside what the command made (Watch.Finish), saying so
// on cmd.Stderr, before it returns.
func Run(cmd *exec.Cmd) (cut bool, err error) {
	l, _ := launches.LoadAndDelete(cmd)
	stderr := cmd.Stderr
	if watch := startWatch(cmd, l); watch != nil {
		defer func() {
			if stderr == nil {
				stderr = io.Discard
			}
			watch.Finish(stderr)
		}()
	}
	key := warmKey(cmd, l)
	if key != "" {
		if g := takeWarm(key); g != nil {
			if cut, err, ran := runWarmed(g, cmd, l.(*launch), key); ran {
				return cut, err
			}
		}
	}
	out, err := plumbOutputs(cmd)
	if err != nil {
		return false, err
	}
	err = cmd.Start()
	out.closeWriters() // the child has its copies
	if err != nil {
		out.abort()
		return false, err
	}
	err = cmd.Wait()
	if key != "" {
		refill(key, cmd)
	}
	KillGroup(cmd)
	return out.drain(), err
}

// startWatch takes, in the daemon, the look before a confined command whose policy has a
// journal (sandbox.StartWatch), and gives the guard the policy it returns, which says the
// daemon looks after the command. nil: the guard looks itself.
func startWatch(cmd *exec.Cmd, l any) *sandbox.Watch {
	if l == nil || l.(*launch).policy == nil || l.(*launch).policy.Journal == nil {
		return nil
	}
	i := slices.IndexFunc(cmd.Args, func(a string) bool { return strings.HasPrefix(a, sandboxFlag) })
	if i < 0 {
		return nil
	}
	p, w := sandbox.StartWatch(l.(*launch).policy)
	if w != nil {
		cmd.Args[i] = sandboxFlag + p.Encode()
	}
	return w
}

// outputs are the pipes through which Run reads a command's output.
type outputs struct {
	pipes   []*outPipe
	writers []*os.File    // the pipes' write ends, until the command has its copies
	ended   chan struct{} // one send per copy that ends
	stdout  io.Writer     // cmd.Stdout and cmd.Stderr as they were
	stderr  io.Writer
	shared  bool
	cmd     *exec.Cmd
}

// plumbOutputs gives cmd's Stdout and Stderr that are not files a pipe each (one, when
// they are the same writer), copied to them until the pipe ends.
func plumbOutputs(cmd *exec.Cmd) (*outputs, error) {
	o := &outputs{ended: make(chan struct{}, 2), stdout: cmd.Stdout, stderr: cmd.Stderr, cmd: cmd}
	plumb := func(w io.Writer) (io.Writer, error) {
		if w == nil {
			return nil, nil
		}
		if f, ok := w.(*os.File); ok {
			return f, nil
		}
		pr, pw, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		p := &outPipe{r: pr, done: make(chan struct{})}
		o.pipes, o.writers = append(o.pipes, p), append(o.writers, pw)
		go p.copy(w, o.ended)
		return pw, nil
	}
	o.shared = sameWriter(cmd.Stdout, cmd.Stderr)
	out, err := plumb(cmd.Stdout)
	if err == nil {
		if o.shared {
			cmd.Stderr = out
		} else {
			cmd.Stderr, err = plumb(cmd.Stderr)
		}
	}
	cmd.Stdout = out
	if err != nil {
		o.closeWriters()
		o.abort()
		return nil, err
	}
	return o, nil
}

// closeWriters closes Run's copies of the pipes' write ends.
func (o *outputs) closeWriters() {
	for _, f := range o.writers {
		_ = f.Close()
	}
	o.writers = nil
}

// abort stops the copies of a command that did not run, and gives cmd its writers back.
func (o *outputs) abort() {
	o.closeWriters()
	for _, p := range o.pipes {
		_ = p.r.Close()
		<-p.done
	}
	o.cmd.Stdout, o.cmd.Stderr = o.stdout, o.stderr
}

// drain reads the pipes to their end (see drain) and reports whether the output was cut.
func (o *outputs) drain() bool { return drain(o.pipes, o.ended) }

// Variables for the tests; nothing else sets them.
var (
	// drainIdle is how long Run keeps reading an output pipe that has stayed empty, after
	// the command's tree is gone, while something outside the tree still holds it open.
	drainIdle = time.Second
	// drainMax bounds how long Run keeps reading, after the tree is gone, a pipe that
	// something outside the tree keeps writing to.
	drainMax = 5 * time.Second
	// drainTick is how often Run looks at such a pipe.
	drainTick = 50 * time.Millisecond
)

// outPipe is the read end of an output pipe Run owns and the goroutine that copies it.
type outPipe struct {
	r    *os.File
	n    atomic.Int64  // bytes read so far
	done chan struct{} // closed when the copy has ended
}

// copy copies the pipe to w until the pipe ends or is closed, then closes done and sends on
// ended. After an error from w it keeps reading and drops what it reads, so that the writers
// never block on a full pipe.
func (p *outPipe) copy(w io.Writer, ended chan<- struct{}) {
	defer func() {
		close(p.done)
		ended <- struct{}{}
	}()
	buf := make([]byte, 32<<10)
	var werr error
	for {
		n, err := p.r.Read(buf)
		if n > 0 {
			p.n.Add(int64(n))
			if werr == nil {
				_, werr = w.Write(buf[:n])
			}
		}
		if err != nil {
			return
		}
	}
}

// drain waits until every pipe is read to its end, after the command's tree is gone, and
// closes them. A pipe without writers is read to the end however long that takes (the
// copy's writer may be slow under load): the end is certain. A pipe that something outside
// the tree still holds is closed once it has stayed empty for drainIdle, or drainMax after
// the tree ended; drain then reports the output as cut.
func drain(pipes []*outPipe, ended <-chan struct{}) (cut bool) {
	start := time.Now()
	type watch struct {
		p          *outPipe
		last       int64     // bytes read at the last look
		lastChange time.Time // when the pipe last had data or gave some
		certain    bool      // no writer is left: the end will come
	}
	var open []*watch
	for _, p := range pipes {
		open = append(open, &watch{p: p, last: p.n.Load(), lastChange: start})
	}
	var tick *time.Ticker
	for {
		rest := open[:0]
		for _, w := range open {
			select {
			case <-w.p.done:
				continue
			default:
			}
			if tick != nil && !w.certain { // a look at the pipe, once per tick
				now := time.Now()
				pending, writers := w.p.state()
				if n := w.p.n.Load(); pending > 0 || n != w.last {
					w.last, w.lastChange = n, now
				}
				switch {
				case !writers:
					w.certain = true
				case now.Sub(w.lastChange) >= drainIdle || now.Sub(start) >= drainMax:
					_ = w.p.r.Close() // the copy's pending Read fails; what it read is kept
					<-w.p.done
					cut = true
					continue
				}
			}
			rest = append(rest, w)
		}
		open = rest
		if len(open) == 0 {
			break
		}
		if tick == nil {
			tick = time.NewTicker(drainTick)
			defer tick.Stop()
		}
		select {
		case <-ended:
		case <-tick.C:
		}
	}
	for _, p := range pipes {
		_ = p.r.Close()
	}
	return cut
}

// sameWriter reports whether a and b are the same writer (false for writers that cannot be
// compared).
func sameWriter(a, b io.Writer) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a != nil && a == b
}

// ExitCode returns the exit code in err from Wait (0 for nil, -1 when it is not an exit).
// A process killed by signal N gives 128+N, as a shell reports it.
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return -1
}
