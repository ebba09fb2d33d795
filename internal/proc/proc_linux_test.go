package proc

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

// The test binary is also the guard (and the sandbox's stage): Command starts it with
// GuardArg when a test calls useGuard.
func TestMain(m *testing.M) {
	MaybeRunHelper()
	if os.Getenv(warmDaemonEnv) != "" {
		os.Exit(warmDaemon())
	}
	goleak.VerifyTestMain(m)
}

// useGuard makes the commands of this test start through the guard (this test binary).
func useGuard(t *testing.T) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// A race-enabled guard would sleep a second before it exits.
	t.Setenv("GORACE", "atexit_sleep_ms=0")
	SetGuardPath(exe)
	t.Cleanup(func() { SetGuardPath("") })
}

// bothWays runs f unguarded and guarded.
func bothWays(t *testing.T, f func(t *testing.T)) {
	t.Run("unguarded", f)
	t.Run("guarded", func(t *testing.T) {
		useGuard(t)
		f(t)
	})
}

// shortDrain makes Run give up on an escaped pipe holder quickly.
func shortDrain(t *testing.T, idle, max time.Duration) {
	oldIdle, oldMax, oldTick := drainIdle, drainMax, drainTick
	drainIdle, drainMax, drainTick = idle, max, 10*time.Millisecond
	t.Cleanup(func() { drainIdle, drainMax, drainTick = oldIdle, oldMax, oldTick })
}

// alive reports whether pid runs: it exists and is not a zombie waiting for a reaper.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses.
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

// waitExit returns once the process pid has exited (or is not there): its pidfd becomes
// readable then.
func waitExit(pid int) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return // gone already
	}
	defer unix.Close(fd)
	for {
		if _, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, -1); err != unix.EINTR {
			return
		}
	}
}

func waitDead(t *testing.T, pids []int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for _, pid := range pids {
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("process %d still alive", pid)
			}
			<-tick.C
		}
	}
}

// killAtEnd kills pids when the test ends (what an unguarded command let escape).
func killAtEnd(t *testing.T, pids []int) {
	t.Cleanup(func() {
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

// pids reads the whole numbers in text.
func pids(t *testing.T, text string) []int {
	t.Helper()
	var out []int
	for _, f := range strings.Fields(text) {
		if pid, err := strconv.Atoi(f); err == nil {
			out = append(out, pid)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no pids in %q", text)
	}
	return out
}

// lineWriter collects output and lets a test wait for a number of lines.
type lineWriter struct {
	mu      sync.Mutex // guards b and changed
	b       strings.Builder
	changed chan struct{}
}

func newLineWriter() *lineWriter { return &lineWriter{changed: make(chan struct{})} }

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	close(w.changed)
	w.changed = make(chan struct{})
	return len(p), nil
}

func (w *lineWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// waitLines waits until n lines have come, and returns the text.
func (w *lineWriter) waitLines(t *testing.T, n int) string {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		w.mu.Lock()
		text, ch := w.b.String(), w.changed
		w.mu.Unlock()
		if strings.Count(text, "\n") >= n {
			return text
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("waited for %d lines, have %q", n, text)
		}
	}
}

// The whole tree dies when the context is cancelled, grandchildren included.
func TestCancelKillsTree(t *testing.T) {
	bothWays(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		cmd := Command(ctx, 200*time.Millisecond, "sh", "-c", `sleep 120 & echo $!; sleep 120 & echo $!; wait`)
		out := newLineWriter()
		cmd.Stdout = out
		done := make(chan error, 1)
		go func() {
			_, err := Run(cmd)
			done <- err
		}()
		ps := pids(t, out.waitLines(t, 2))
		cancel()
		if err := <-done; err == nil {
			t.Fatal("cancelled command reported success")
		}
		waitDead(t, ps)
	})
}

// What a command leaves behind in its group is killed once it exits.
func TestRunReapsStragglers(t *testing.T) {
	bothWays(t, func(t *testing.T) {
		cmd := Command(context.Background(), 0, "sh", "-c", `sleep 120 >/dev/null 2>&1 & echo $!`)
		var sb strings.Builder
		cmd.Stdout = &sb
		if _, err := Run(cmd); err != nil {
			t.Fatal(err)
		}
		waitDead(t, pids(t, sb.String()))
	})
}

func TestExitCode(t *testing.T) {
	cases := []struct {
		script string
		want   int
	}{
		{"exit 0", 0},
		{"exit 3", 3},
		{"kill -TERM $$", 128 + int(syscall.SIGTERM)},
	}
	for _, c := range cases {
		err := exec.Command("sh", "-c", c.script).Run()
		if got := ExitCode(err); got != c.want {
			t.Errorf("%q: exit code %d, want %d", c.script, got, c.want)
		}
	}
	if got := ExitCode(errors.New("not an exit")); got != -1 {
		t.Errorf("non-exit error: %d", got)
	}
}

// Through the guard a command's exit code comes back as it is, a death by signal as 128+N,
// a program that does not exist as 127.
func TestGuardExitCode(t *testing.T) {
	useGuard(t)
	cases := []struct {
		argv []string
		want int
	}{
		{[]string{"sh", "-c", "exit 0"}, 0},
		{[]string{"sh", "-c", "exit 3"}, 3},
		{[]string{"sh", "-c", "kill -TERM $$"}, 128 + int(syscall.SIGTERM)},
		{[]string{"sh", "-c", "kill -KILL $$"}, 128 + int(syscall.SIGKILL)},
		{[]string{"/no/such/program"}, 127},
	}
	for _, c := range cases {
		cmd := Command(context.Background(), 0, c.argv[0], c.argv[1:]...)
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		_, err := Run(cmd)
		if got := ExitCode(err); got != c.want {
			t.Errorf("%q: exit code %d, want %d (output %q)", c.argv, got, c.want, out.String())
		}
	}
}

// A background process holding the output does not keep Run waiting: it dies with the
// tree when the command exits, and what it wrote before is kept.
func TestRunDoesNotWaitForBackgroundHolders(t *testing.T) {
	bothWays(t, func(t *testing.T) {
		var out strings.Builder
		cmd := Command(context.Background(), 0, "sh", "-c", `echo before; sleep 120 & echo $! ; echo after`)
		cmd.Stdout, cmd.Stderr = &out, &out
		done := make(chan error, 1)
		go func() {
			_, err := Run(cmd)
			done <- err
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("Run waited for a background process")
		}
		f := strings.Fields(out.String())
		if len(f) != 3 || f[0] != "before" || f[2] != "after" {
			t.Fatalf("output %q", out.String())
		}
		waitDead(t, pids(t, f[1]))
	})
}

// handshake runs child in the background, detached as the words before it say, and waits
// until it has printed its pid (a fifo tells the parent), so that the command does not
// end before its child has spoken.
func handshake(detach, child string) string {
	return `f=$(mktemp -u) && mkfifo "$f" || exit 1; ` + detach + ` sh -c 'echo $$; echo >"$1"; ` + child + `' sh "$f" & read x <"$f"; rm -f "$f"`
}

// The ways a command's descendant leaves its process group, its session or its parent.
// Each script prints the pids of what it leaves running, lines of them, then ends.
var escapes = []struct {
	name, script string
	lines        int
}{
	{"setsid", `setsid sleep 120 & echo $!`, 1},
	{"setsid holding the output", handshake("setsid", "exec sleep 120"), 1},
	{"double fork", `(sleep 120 >/dev/null 2>&1 & echo $!)`, 1},
	{"double fork holding the output", `(sleep 120 & echo $!)`, 1},
	{"nohup", `nohup sleep 120 >/dev/null 2>&1 & echo $!`, 1},
	{"daemon", `(setsid sh -c 'cd /; exec sleep 120' </dev/null >/dev/null 2>&1 & echo $!)`, 1},
	{"daemon that forks again", `setsid sh -c '(sleep 120 & echo $!); sleep 120 & echo $!' </dev/null`, 2},
	{"new process group", `sh -c 'set -m; sleep 120 & echo $!'`, 1},
}

// Through the guard, nothing a command starts outlives it, however it left the tree: when
// Run returns, every process is already dead and reaped, on normal completion, on
// cancellation, and on KillGroup.
func TestGuardKillsEscapees(t *testing.T) {
	useGuard(t)
	for _, e := range escapes {
		t.Run(e.name+"/completed", func(t *testing.T) {
			cmd := Command(context.Background(), 0, "sh", "-c", e.script)
			var out strings.Builder
			cmd.Stdout = &out
			cut, err := Run(cmd)
			if err != nil || cut {
				t.Fatalf("err %v, cut %v, output %q", err, cut, out.String())
			}
			for _, pid := range pids(t, out.String()) {
				if alive(pid) {
					t.Errorf("process %d outlived its command", pid)
				}
			}
		})
		t.Run(e.name+"/cancelled", func(t *testing.T) {
			cancelEscape(t, e.lines, e.script, func(ctx context.Context, script string, out *lineWriter) error {
				cmd := Command(ctx, 100*time.Millisecond, "sh", "-c", script)
				cmd.Stdout = out
				_, err := Run(cmd)
				return err
			})
		})
	}
}

// cancelEscape runs an escape's script through run, kept running (its escapees ignore
// SIGTERM, so only SIGKILL after the grace ends them), cancels it once it has said the pids
// of the lines escapees, and checks that run failed and that none of them outlived it.
func cancelEscape(t *testing.T, lines int, script string, run func(ctx context.Context, script string, out *lineWriter) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := newLineWriter()
	done := make(chan error, 1)
	go func() { done <- run(ctx, "trap '' TERM; "+script+"; echo end; sleep 120 & wait", out) }()
	text := out.waitLines(t, lines+1)
	cancel()
	if err := <-done; err == nil {
		t.Fatal("cancelled command reported success")
	}
	for _, pid := range pids(t, text) {
		if alive(pid) {
			t.Errorf("process %d outlived its cancelled command", pid)
		}
	}
}

// KillGroup on a running guarded command kills the whole tree at once, escapees included.
func TestGuardKillGroup(t *testing.T) {
	useGuard(t)
	cmd := Command(context.Background(), time.Hour, "sh", "-c", `trap '' TERM; setsid sleep 120 & echo $!; (sleep 120 & echo $!); sleep 120`)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := newLineWriter()
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		buf := make([]byte, 512)
		for {
			n, err := stdout.Read(buf)
			_, _ = out.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	ps := pids(t, out.waitLines(t, 2))
	KillGroup(cmd)
	err = cmd.Wait()
	<-copied
	if code := ExitCode(err); code != 128+int(syscall.SIGKILL) {
		t.Fatalf("exit code %d (%v), want %d", code, err, 128+int(syscall.SIGKILL))
	}
	for _, pid := range ps {
		if alive(pid) {
			t.Errorf("process %d outlived KillGroup", pid)
		}
	}
}

// A tree that keeps forking while the guard kills it (in a session of its own, so no
// group kill reaches it) still dies entirely before Run returns.
func TestGuardKillsForkingTree(t *testing.T) {
	useGuard(t)
	// A sleep of this test alone, which ends by itself if the guard fails.
	marker := fmt.Sprintf("60.%d", os.Getpid())
	// The forker reports its pid, then forks sleeps as fast as it can (at most 1000, so
	// that a broken guard cannot leave a fork loop behind); the command ends a moment later.
	script := handshake("setsid", `i=0; while [ $i -lt 1000 ]; do sleep `+marker+` & i=$((i+1)); done`) + `; sleep 0.2`
	cmd := Command(context.Background(), 0, "sh", "-c", script)
	var out strings.Builder
	cmd.Stdout = &out
	if _, err := Run(cmd); err != nil {
		t.Fatal(err)
	}
	forker := pids(t, out.String())
	if alive(forker[0]) {
		t.Errorf("the forking process %d outlived the command", forker[0])
	}
	if left := withArgv("sleep", marker); len(left) > 0 {
		t.Errorf("%d processes it forked outlived the command: %v", len(left), left)
	}
}

// withArgv returns the running processes whose command line is exactly argv.
func withArgv(argv ...string) []int {
	want := []byte(strings.Join(argv, "\x00") + "\x00")
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Equal(b, want) && alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// slowWriter is a reader that falls behind once the command has exited, as a loaded daemon
// does: its first write waits until the process whose pid is in pidFile has ended, and
// then takes delay more.
type slowWriter struct {
	mu      sync.Mutex // guards b and slow
	b       bytes.Buffer
	delay   time.Duration
	pidFile string
	slow    bool
}

func (w *slowWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.slow {
		w.slow = true
		// The script wrote its pid before the output that brings this first write.
		b, _ := os.ReadFile(w.pidFile)
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			waitExit(pid)
		}
		time.Sleep(w.delay) // the reader falling behind: what the test is about, not a wait
	}
	return w.b.Write(p)
}

func (w *slowWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// payload writes a file of n random printable bytes and returns its content.
func payload(t *testing.T, n int) (path, content string) {
	raw := make([]byte, n*3/4)
	_, _ = rand.Read(raw)
	content = base64.StdEncoding.EncodeToString(raw)
	path = filepath.Join(t.TempDir(), "payload")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, content
}

// Run reads the output to its end however slow its reader is: no writer is left once the
// command's tree is gone, so the end is certain. The reader here is busy for longer than
// any bound Run would apply to an escaped writer (and than the second after which Run used
// to close the pipe) while most of the output still waits in the pipe.
func TestRunReadsToTheEnd(t *testing.T) {
	bothWays(t, func(t *testing.T) {
		shortDrain(t, 20*time.Millisecond, 100*time.Millisecond)
		path, want := payload(t, 60<<10) // fits the pipe: all of it waits there at exit
		pidFile := filepath.Join(t.TempDir(), "pid")
		cmd := Command(context.Background(), 0, "sh", "-c", `echo $$ >"$1" && exec cat "$2"`, "sh", pidFile, path)
		w := &slowWriter{delay: 1200 * time.Millisecond, pidFile: pidFile}
		cmd.Stdout = w
		cut, err := Run(cmd)
		if err != nil || cut {
			t.Fatalf("err %v, cut %v", err, cut)
		}
		if got := w.String(); got != want {
			t.Fatalf("read %d bytes of %d", len(got), len(want))
		}
	})
}

// Without the guard, a process that leaves the group escapes, and may hold the output: Run
// reads what is in the pipe, however slowly, then stops once the pipe stays empty, and says
// so.
func TestRunCutsAfterAnEscapedHolder(t *testing.T) {
	shortDrain(t, 50*time.Millisecond, time.Minute)
	path, want := payload(t, 60<<10)
	pidFile := filepath.Join(t.TempDir(), "pid")
	script := handshake("setsid", "exec sleep 120") + `; echo $$ >"$1"; exec cat "$2"`
	cmd := Command(context.Background(), 0, "sh", "-c", script, "sh", pidFile, path)
	w := &slowWriter{delay: 100 * time.Millisecond, pidFile: pidFile}
	cmd.Stdout = w
	cut, err := Run(cmd)
	got := w.String()
	first, rest, _ := strings.Cut(got, "\n")
	if pid, err := strconv.Atoi(first); err == nil {
		killAtEnd(t, []int{pid})
	}
	if err != nil || !cut {
		t.Fatalf("err %v, cut %v", err, cut)
	}
	if rest != want {
		t.Fatalf("read %d bytes of %d: %.300q", len(rest), len(want), got)
	}
}

// countWriter counts what it is given.
type countWriter struct {
	mu sync.Mutex // guards n
	n  int
}

func (w *countWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n += len(p)
	return len(p), nil
}

// An escaped process that keeps writing is read for drainMax at most.
func TestRunStopsReadingAnEscapedWriter(t *testing.T) {
	shortDrain(t, time.Hour, 200*time.Millisecond)
	pidFile := filepath.Join(t.TempDir(), "pid")
	cmd := Command(context.Background(), 0, "sh", "-c", `setsid sh -c 'echo $$ >"$1"; exec yes' sh "$1" & while [ ! -s "$1" ]; do :; done`, "sh", pidFile)
	w := &countWriter{}
	cmd.Stdout = w
	cut, err := Run(cmd)
	if b, err := os.ReadFile(pidFile); err == nil {
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		killAtEnd(t, []int{pid})
	}
	if err != nil || !cut {
		t.Fatalf("err %v, cut %v", err, cut)
	}
}
