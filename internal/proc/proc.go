// Package proc starts tool processes so that a whole process tree dies together: on
// cancellation, on time-out, after the leader exits, and when the daemon itself dies.
//
// Every tool process leads its own process group. Cancelling sends SIGTERM to the group and,
// after a grace period, SIGKILL; when the leader exits, anything it left in the group is
// killed. So that a tree does not outlive a daemon killed with SIGKILL, the daemon can set
// GuardPath to its own executable: the process is then started through a small guard (the
// hidden "__guard" mode of the toolsd binary, see RunGuard) that leads the group, receives
// SIGTERM from the kernel when the daemon dies (PR_SET_PDEATHSIG), and kills the group.
package proc

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// GuardArg is the first argument that makes the toolsd binary run as a guard.
const GuardArg = "__guard"

// guardPath is the executable that runs guards; empty means processes start unguarded.
var guardPath atomic.Pointer[string]

// SetGuardPath makes every later Command start through the guard at path (the toolsd
// binary). Called once by main; tests of packages that do not build the binary leave it
// unset.
func SetGuardPath(path string) { guardPath.Store(&path) }

// DefaultGrace is how long a process group has between SIGTERM and SIGKILL.
const DefaultGrace = 2 * time.Second

// Command returns a command that runs name with args in its own process group, with stdin
// closed (reading it gives EOF). When ctx is done the group gets SIGTERM and, grace later,
// SIGKILL; Wait returns soon after even if a grandchild still holds an output pipe.
// The caller sets Dir, Env, Stdout and Stderr, then calls Start and Wait, and must call
// KillGroup after Wait to reap what the leader left behind (Run does all of this).
func Command(ctx context.Context, grace time.Duration, name string, args ...string) *exec.Cmd {
	if grace <= 0 {
		grace = DefaultGrace
	}
	var cmd *exec.Cmd
	if p := guardPath.Load(); p != nil && *p != "" {
		cmd = exec.CommandContext(ctx, *p, append([]string{GuardArg, name}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, name, args...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	cmd.Stdin = nil // /dev/null
	cmd.Cancel = func() error {
		pid := cmd.Process.Pid
		_ = syscall.Kill(-pid, syscall.SIGTERM)
		// KillGroup stops the timer once the command was waited for, so a late SIGKILL can
		// never reach a process group id the kernel has handed out again.
		escalations.Store(cmd, time.AfterFunc(grace, func() { _ = syscall.Kill(-pid, syscall.SIGKILL) }))
		return nil
	}
	// After SIGKILL the pipes close; WaitDelay bounds Wait when a grandchild that escaped
	// the group still holds them.
	cmd.WaitDelay = grace + time.Second
	return cmd
}

// escalations holds the pending SIGKILL timer of each cancelled command.
var escalations sync.Map // *exec.Cmd -> *time.Timer

// KillGroup sends SIGKILL to the process group a started command leads, and drops its
// pending escalation. Call it once, after Wait.
func KillGroup(cmd *exec.Cmd) {
	if t, ok := escalations.LoadAndDelete(cmd); ok {
		t.(*time.Timer).Stop()
	}
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// drainTimeout bounds how long Run reads what is left in the output pipes after the group
// was killed (a process that left the group may still hold them).
const drainTimeout = time.Second

// Run starts cmd (from Command), waits for its leader, kills what the leader left behind in
// its group, and returns once the output is copied. Stdout and Stderr that are not files go
// through pipes Run owns rather than exec's, so that a background process still holding
// them (`server &`) does not keep Run waiting: it is killed with the group as soon as the
// leader exits.
func Run(cmd *exec.Cmd) error {
	var copies sync.WaitGroup
	var readers, writers []*os.File
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
		readers, writers = append(readers, pr), append(writers, pw)
		copies.Add(1)
		go func() {
			defer copies.Done()
			_, _ = io.Copy(w, pr)
		}()
		return pw, nil
	}
	closeAll := func(fs []*os.File) {
		for _, f := range fs {
			_ = f.Close()
		}
	}
	shared := sameWriter(cmd.Stdout, cmd.Stderr)
	out, err := plumb(cmd.Stdout)
	if err == nil {
		if shared {
			cmd.Stderr = out
		} else {
			cmd.Stderr, err = plumb(cmd.Stderr)
		}
	}
	cmd.Stdout = out
	if err != nil {
		closeAll(writers)
		closeAll(readers)
		copies.Wait()
		return err
	}
	err = cmd.Start()
	closeAll(writers) // the child has its copies
	if err != nil {
		closeAll(readers)
		copies.Wait()
		return err
	}
	err = cmd.Wait()
	KillGroup(cmd)
	drained := make(chan struct{})
	go func() {
		copies.Wait()
		close(drained)
	}()
	select {
	case <-drained:
	case <-time.After(drainTimeout):
		closeAll(readers) // unblocks the copies
		<-drained
	}
	closeAll(readers)
	return err
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

// RunGuard is the guard's main: args are the command to run. It leads the process group
// (the daemon started it with Setpgid), runs the command in the same group and exits with
// its code. When it gets SIGTERM or SIGINT (from the daemon's cancellation, or from the
// kernel because the daemon died), it kills the whole group.
func RunGuard(args []string) int {
	if len(args) == 0 {
		return 127
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	// The daemon may have died between fork and here; then our parent is no longer it.
	ppid := os.Getppid()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		os.Stderr.WriteString("toolsd: " + err.Error() + "\n")
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return 127
		}
		return 126
	}
	if ppid == 1 {
		_ = syscall.Kill(0, syscall.SIGKILL)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return ExitCode(err)
	case <-sigs:
		// Give the tree the same chance to stop cleanly that an unguarded group gets,
		// then kill it, ourselves included.
		_ = syscall.Kill(-os.Getpid(), syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(DefaultGrace):
		}
		_ = syscall.Kill(-os.Getpid(), syscall.SIGKILL)
		return 143
	}
}
