package proc

import (
	"cmp"
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/toolsd/toolsd/internal/sandbox"
	"golang.org/x/sys/unix"
)

// A command's guard takes a start of a Go program before the command's own start, and a
// confined command's stage another, then the namespaces, the mounts, Landlock and seccomp:
// most of what a short command costs. So, once warming is on (SetWarm), each command that
// Run starts through a guard has the guard of the next command like it started too, ahead:
// that guard (for a confined command) starts its stage, which confines itself as for a
// command and waits. The next Run with the same guard options hands its command to it
// (argv, environment, folder, and its output's descriptors over a socket), and the stage
// execs it at once (or the guard starts it, unconfined).
//
// What a stage sets up ahead depends on the files the policy names as they were when it did:
// which protected paths exist (and which file each is), which secrets exist, the entries of
// the folders Landlock's grants were cut from, the git folders in the workspace. The guard
// takes a stamp of all that before it starts its stage (sandbox.Stamp, sandbox.StartWatch),
// and takes it again when the command comes: if anything differs, it says "stale", and Run
// starts the command the usual way, with a stage set up then. A guard started ahead is
// otherwise the usual guard: the same process tree, the same signals, the same watch.

// ctlFD is, in a guard started ahead, its end of the socket its command comes on.
const ctlFD = 3

// What a guard started ahead says: that it is ready (its stage is confined and waits), and,
// once its command came, its answer.
const (
	warmReady = "ready"
	warmRun   = "run"   // it runs the command
	warmStale = "stale" // what its stage set up no longer holds: start the command the usual way
)

// warmMax is how many guards wait ahead at once, for as many kinds of commands.
const warmMax = 2

// warmOn reports whether Run starts guards ahead.
var warmOn atomic.Bool

// warmRuns counts the commands that ran through a guard started ahead.
var warmRuns atomic.Int64

// WarmRuns is how many commands ran through a guard started ahead of them, since the
// process started.
func WarmRuns() int64 { return warmRuns.Load() }

// SetWarm turns starting guards ahead of their commands on or off (off: the ones waiting are
// stopped). The daemon turns it on; tests of other packages leave it off.
func SetWarm(on bool) {
	warmOn.Store(on)
	if !on {
		DropWarm()
	}
}

// DropWarm stops the guards waiting ahead, and reaps them (after the starts under way).
func DropWarm() {
	warm.starting.Wait()
	warm.mu.Lock()
	gs := warm.guards
	warm.guards = nil
	warm.mu.Unlock()
	for _, g := range gs {
		g.discard()
	}
}

// warmGuard is a guard started ahead, waiting for its command.
type warmGuard struct {
	key string
	p   *os.Process
	ctl *os.File // the daemon's end of the guard's control socket
}

var warm struct {
	starting sync.WaitGroup // the refills under way
	mu       sync.Mutex     // guards guards
	guards   []*warmGuard
}

// warmKey is what a guard started ahead for cmd must have been started with: the guard's
// executable and options. "" when cmd is not one that a guard started ahead can run: not
// guarded, confined with a proxy of its own, with standard input, with descriptors or
// credentials of its own.
func warmKey(cmd *exec.Cmd, l any) string {
	if !warmOn.Load() || l == nil || !l.(*launch).ahead {
		return ""
	}
	if cmd.Stdin != nil || cmd.Stdout == nil || cmd.Stderr == nil || len(cmd.ExtraFiles) > 0 || cmd.SysProcAttr == nil ||
		cmd.SysProcAttr.Credential != nil || cmd.SysProcAttr.Cloneflags != 0 || cmd.SysProcAttr.Chroot != "" {
		return ""
	}
	i := slices.Index(cmd.Args, "--")
	if i < 0 || i == len(cmd.Args)-1 {
		return ""
	}
	return cmd.Path + "\x00" + strings.Join(cmd.Args[1:i], "\x00")
}

// takeWarm takes the guard waiting for commands of key, if there is one.
func takeWarm(key string) *warmGuard {
	warm.mu.Lock()
	defer warm.mu.Unlock()
	for i, g := range warm.guards {
		if g.key == key {
			warm.guards = slices.Delete(warm.guards, i, i+1)
			return g
		}
	}
	return nil
}

// refill starts a guard ahead for the next command like cmd, in the background: the
// command's result need not wait for that start.
func refill(key string, cmd *exec.Cmd) {
	path, args, env := cmd.Path, slices.Clone(cmd.Args), slices.Clone(cmd.Env)
	warm.starting.Add(1)
	go func() {
		defer warm.starting.Done()
		startWarm(key, path, args, env)
	}()
}

// startWarm starts a guard ahead for the next command like the one of path and args, with
// that command's environment (as a guard started with its command has), unless one waits
// already.
func startWarm(key, path string, args, env []string) {
	warm.mu.Lock()
	waiting := slices.ContainsFunc(warm.guards, func(g *warmGuard) bool { return g.key == key })
	warm.mu.Unlock()
	if waiting {
		return
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return
	}
	// Ours is read through the runtime's poller, with a deadline (readWord).
	_ = unix.SetNonblock(fds[0], true)
	ours, theirs := os.NewFile(uintptr(fds[0]), "warm-guard"), os.NewFile(uintptr(fds[1]), "warm-guard")
	i := slices.Index(args, "--")
	c := exec.Command(path, append(slices.Clone(args[1:i]), warmFlag, "--")...)
	c.Env = env
	c.ExtraFiles = []*os.File{theirs}
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	err = c.Start()
	_ = theirs.Close()
	if err != nil {
		_ = ours.Close()
		return
	}
	g := &warmGuard{key: key, p: c.Process, ctl: ours}
	var out []*warmGuard
	warm.mu.Lock()
	if !warmOn.Load() || slices.ContainsFunc(warm.guards, func(w *warmGuard) bool { return w.key == key }) {
		out = append(out, g) // turned off, or another Run started one meanwhile
	} else {
		warm.guards = append(warm.guards, g)
		if n := len(warm.guards) - warmMax; n > 0 {
			out = append(out, warm.guards[:n]...)
			warm.guards = slices.Delete(warm.guards, 0, n)
		}
	}
	warm.mu.Unlock()
	for _, g := range out {
		g.discard()
	}
}

// discard stops a guard that waits for its command, and reaps it.
func (g *warmGuard) discard() {
	_ = g.ctl.Close()
	_ = g.p.Kill()
	_, _ = g.p.Wait()
}

// runWarmed runs cmd through the guard g, started ahead, as Run does, and starts the next
// one. ran is false when g did not run the command (what it set up no longer holds, or it
// is gone): cmd is then as it was, for Run to start the usual way. A command g may have
// started is never started again: then ran is true, whatever happened.
func runWarmed(g *warmGuard, cmd *exec.Cmd, l *launch, key string) (cut bool, err error, ran bool) {
	out, err := plumbOutputs(cmd)
	if err != nil {
		g.discard()
		return false, nil, false
	}
	stdout, serr := outFile(cmd.Stdout)
	stderr, eerr := outFile(cmd.Stderr)
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	i := slices.Index(cmd.Args, "--")
	sent := false
	if serr == nil && eerr == nil {
		// A SOCK_SEQPACKET message is queued whole or not at all: unsent, the guard never
		// saw the command.
		sent = sandbox.SendLaunch(int(g.ctl.Fd()), sandbox.Launch{Argv: cmd.Args[i+1:], Env: env, Dir: cmd.Dir}, stdout, stderr) == nil
	}
	closeIfOpened(cmd.Stdout, stdout)
	closeIfOpened(cmd.Stderr, stderr)
	word := ""
	if sent {
		handedOver()
		word = readWord(l.ctx, g.ctl)
	}
	out.closeWriters()
	var state *os.ProcessState
	var werr error
	switch {
	case !sent || word == warmStale:
		g.discard()
		out.abort()
		return false, nil, false
	case word == warmRun:
		state, werr = g.wait(l, false)
	default:
		// No answer: the guard ended first (it never runs a command it has not answered
		// for), or the call was cancelled, or the answer is late. Stopped as a cancelled
		// command is, and ended, it has said all it will say: it ran the command only if
		// it said so.
		state, werr = g.wait(l, true)
		if !saidRun(g.ctl) {
			_ = g.ctl.Close()
			out.abort()
			return false, nil, false
		}
	}
	warmRuns.Add(1)
	refill(key, cmd)
	_ = g.ctl.Close()
	cmd.ProcessState = state
	switch {
	case werr != nil:
		err = werr
	case !state.Success():
		err = &exec.ExitError{ProcessState: state}
	case l.ctx.Err() != nil:
		err = l.ctx.Err()
	}
	return out.drain(), err, true
}

// wait waits for the guard to end, and stops it as Command's Cancel and WaitDelay stop a
// guard Run started when the call's context ends (or at once, with stop): SIGTERM, and
// SIGKILL if it has not ended the grace and guardSlack later.
func (g *warmGuard) wait(l *launch, stop bool) (*os.ProcessState, error) {
	var state *os.ProcessState
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		state, err = g.p.Wait()
	}()
	stopping := l.ctx.Done()
	if stop {
		ch := make(chan struct{})
		close(ch)
		stopping = ch
	}
	select {
	case <-done:
	case <-stopping:
		_ = g.p.Signal(syscall.SIGTERM)
		t := time.NewTimer(l.grace + guardSlack)
		select {
		case <-done:
		case <-t.C:
			_ = g.p.Kill()
			<-done
		}
		t.Stop()
	}
	return state, err
}

// outFile is the file a command's output goes to: w itself, or /dev/null for nil.
func outFile(w any) (*os.File, error) {
	if f, ok := w.(*os.File); ok && f != nil {
		return f, nil
	}
	return os.OpenFile(os.DevNull, os.O_WRONLY, 0)
}

// closeIfOpened closes f when outFile opened it for w.
func closeIfOpened(w any, f *os.File) {
	if f == nil {
		return
	}
	if g, ok := w.(*os.File); !ok || g != f {
		_ = f.Close()
	}
}

// saidRun reports whether a guard that has ended said it ran its command: what it said is
// queued on f.
func saidRun(f *os.File) bool {
	buf := make([]byte, 256)
	for {
		n, _, err := unix.Recvfrom(int(f.Fd()), buf, unix.MSG_DONTWAIT)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n <= 0 {
			return false
		}
		if string(buf[:n]) == warmRun {
			return true
		}
	}
}

// warmAnswer bounds how long a guard started ahead may take to answer, its stage's start
// included: one that takes longer is stopped, and unless it said it ran the command, the
// command starts the usual way. (A variable for the tests.)
var warmAnswer = 10 * time.Second

// handedOver is called once a command was handed to a guard started ahead (for the tests).
var handedOver = func() {}

// readWord reads the guard's answer on the SOCK_SEQPACKET socket f: "" when it ended, did
// not come within warmAnswer, or ctx ended first.
func readWord(ctx context.Context, f *os.File) string {
	_ = f.SetReadDeadline(time.Now().Add(warmAnswer))
	stop := context.AfterFunc(ctx, func() { _ = f.SetReadDeadline(time.Now()) })
	defer stop()
	buf := make([]byte, 256)
	for {
		n, err := f.Read(buf)
		if err != nil || ctx.Err() != nil {
			return ""
		}
		if w := string(buf[:n]); w != warmReady {
			return w
		}
	}
}

// runWarm is the main of a guard started ahead of its command: it starts its stage (for a
// confined command), waits for the command on ctlFD (or for a stop), checks that what the
// stage set up still holds, and then guards the command as RunGuard does; or it says
// "stale" and exits.
func runWarm(o guardOptions, stop, chld <-chan os.Signal) int {
	unix.CloseOnExec(ctlFD)
	policy, watch := sandbox.StartWatch(o.policy)
	var stamp sandbox.Stamp
	var stage *sandbox.Warm
	if policy != nil {
		stamp = sandbox.TakeStamp(policy)
		var err error
		if stage, err = sandbox.StartWarm(policy); err != nil {
			return 0 // the daemon finds no one to take its command, and starts it the usual way
		}
	}
	drop := func() int {
		if stage != nil {
			stage.Close()
		}
		return 0
	}
	say := func(word string) { _ = unix.Sendmsg(ctlFD, []byte(word), nil, nil, 0) }
	say(warmReady)
	type command struct {
		l     sandbox.Launch
		files []*os.File
		err   error
	}
	came := make(chan command, 1)
	go func() {
		l, files, err := sandbox.RecvLaunch(ctlFD, 2)
		came <- command{l, files, err}
	}()
	var c command
	select {
	case <-stop:
		return drop()
	case c = <-came:
	}
	if c.err != nil {
		return drop()
	}
	if stage != nil {
		if _, now := sandbox.StartWatch(o.policy); !now.Same(watch) || !stamp.Holds(stage.Mode()) {
			say(warmStale)
			return drop()
		}
	}
	// The guard's own words (what it moved aside, what it could not kill) go where the
	// command's output goes, as for a guard started with its command.
	for i, f := range c.files {
		if err := unix.Dup3(int(f.Fd()), 1+i, 0); err != nil {
			say(warmStale)
			return drop()
		}
		_ = f.Close()
	}
	say(warmRun)
	var tool int
	var err error
	if stage != nil {
		tool, err = stage.Run(c.l, os.Stdout, os.Stderr)
	} else {
		// Started as by a guard started with its command, which has the command's folder
		// and environment as its own.
		if err = os.Chdir(cmp.Or(c.l.Dir, ".")); err == nil {
			os.Clearenv()
			for _, kv := range c.l.Env {
				if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
					_ = os.Setenv(k, v)
				}
			}
			tool, err = startTool(c.l.Argv, nil)
		}
	}
	return guardTool(o, tool, err, stop, chld, watch)
}
