package proc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolsd/toolsd/internal/sandbox"
	"golang.org/x/sys/unix"
)

// useWarm makes this test's commands start through the guard (this test binary), with
// guards started ahead of confined commands.
func useWarm(t *testing.T) {
	t.Helper()
	if !sandbox.Probe("").Available() {
		t.Skip("the kernel offers no Landlock")
	}
	useGuard(t)
	SetWarm(true)
	t.Cleanup(func() { SetWarm(false) })
}

// warmWorld is a workspace and the policy of its commands.
type warmWorld struct {
	ws, outside, tmp, home string
	policy                 *sandbox.Policy
}

// newWarmWorld makes a world. Its home folder has no secrets the policy hides, unless
// secrets: hidden paths make Landlock's grants list the folders on their way, here the temp
// folder, whose entries other tests keep changing, and a guard started ahead whose folders
// changed is not used.
func newWarmWorld(t *testing.T, landlockOnly, secrets bool) *warmWorld {
	t.Helper()
	w := &warmWorld{ws: t.TempDir(), outside: t.TempDir()}
	for _, d := range []string{".git/hooks", "src"} {
		if err := os.MkdirAll(filepath.Join(w.ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	w.tmp, w.home = t.TempDir(), t.TempDir()
	home := ""
	if secrets {
		home = w.home
	}
	w.policy = sandbox.Build(sandbox.Options{Workspace: w.ws, Home: home, TempDir: w.tmp, MaxProcs: 256})
	w.policy.LandlockOnly = landlockOnly
	return w
}

// readyAhead waits until the guards started ahead so far are ready: confined, their stamp
// taken.
func readyAhead(t *testing.T) {
	t.Helper()
	warm.starting.Wait()
	warm.mu.Lock()
	gs := slices.Clone(warm.guards)
	warm.mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for _, g := range gs {
		buf := make([]byte, 16)
		for {
			fds := []unix.PollFd{{Fd: int32(g.ctl.Fd()), Events: unix.POLLIN}}
			if _, err := unix.Poll(fds, int(time.Until(deadline).Milliseconds())); err == unix.EINTR {
				continue
			}
			n, _, err := unix.Recvfrom(int(g.ctl.Fd()), buf, unix.MSG_PEEK|unix.MSG_DONTWAIT)
			if err == nil && string(buf[:n]) == warmReady {
				break
			}
			t.Fatalf("the guard started ahead is not ready: %q %v", buf[:max(n, 0)], err)
		}
	}
}

// run runs script confined in the world's workspace and reports whether it ran through a
// guard started ahead.
func (w *warmWorld) run(t *testing.T, ctx context.Context, grace time.Duration, script string, out *lineWriter) (err error, ahead bool) {
	t.Helper()
	cmd := Command(ctx, grace, "sh", "-c", script)
	if w.policy != nil {
		if err := Confine(cmd, w.policy); err != nil {
			t.Fatal(err)
		}
	}
	cmd.Dir = w.ws
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "OUTSIDE=" + w.outside, "TMPDIR=" + w.tmp, "HOME=" + w.home, "GORACE=atexit_sleep_ms=0"}
	cmd.Stdout, cmd.Stderr = out, out
	warm.starting.Wait() // the start ahead of the last command, so that this one can use it
	before := WarmRuns()
	_, err = Run(cmd)
	return err, WarmRuns() > before
}

// A confined command run by a guard started ahead runs as one run the usual way: its
// output, its folder, its environment, its exit code, 127 for a program that is not there,
// and the sandbox's confinement.
func TestWarmRunsConfined(t *testing.T) {
	useWarm(t)
	for _, landlockOnly := range []bool{false, true} {
		t.Run(map[bool]string{false: "namespaces", true: "landlock"}[landlockOnly], func(t *testing.T) {
			w := newWarmWorld(t, landlockOnly, false)
			cases := []struct {
				script string
				code   int // -1: not 0
				out    string
			}{
				{`echo "$PWD $OUTSIDE"`, 0, w.ws + " " + w.outside},
				{`exit 3`, 3, ""},
				{`echo x > "$OUTSIDE/f"`, -1, ""},
				{`echo x > .git/hooks/pre-commit`, -1, ""},
				{`exec /no/such/program`, 127, ""},
				{`echo made > src/made.txt && cat src/made.txt`, 0, "made"},
			}
			warmed := 0
			for range 2 { // the first of all is started the usual way
				for _, c := range cases {
					out := newLineWriter()
					err, warm := w.run(t, context.Background(), 0, c.script, out)
					if warm {
						warmed++
					}
					got := ExitCode(err)
					if (c.code < 0 && got <= 0) || (c.code >= 0 && got != c.code) || !strings.Contains(out.String(), c.out) {
						t.Errorf("%q (warm %v): exit %d, output %q; want %d and %q", c.script, warm, got, out.String(), c.code, c.out)
					}
				}
			}
			if _, err := os.Stat(filepath.Join(w.outside, "f")); err == nil {
				t.Error("a confined command wrote outside its workspace")
			}
			if _, err := os.Stat(filepath.Join(w.ws, ".git", "hooks", "pre-commit")); err == nil {
				t.Error("a confined command wrote into .git")
			}
			if warmed < len(cases) {
				t.Errorf("%d of %d commands ran through a guard started ahead; want at least %d", warmed, 2*len(cases), len(cases))
			}
		})
	}
}

// An unconfined command run by a guard started ahead runs as one run the usual way: its
// output, its folder, its environment, its exit code, 127 for a program that is not there.
func TestWarmRunsUnconfined(t *testing.T) {
	useWarm(t)
	w := newWarmWorld(t, false, false)
	w.policy = nil
	warmed := 0
	for range 3 {
		for _, c := range []struct {
			script string
			code   int
			out    string
		}{
			{`echo "$PWD $OUTSIDE"; echo x > "$OUTSIDE/f"`, 0, w.ws + " " + w.outside},
			{`exit 3`, 3, ""},
			{`exec /no/such/program`, 127, ""},
		} {
			out := newLineWriter()
			err, warm := w.run(t, context.Background(), 0, c.script, out)
			if warm {
				warmed++
			}
			if got := ExitCode(err); got != c.code || !strings.Contains(out.String(), c.out) {
				t.Errorf("%q (warm %v): exit %d, output %q; want %d and %q", c.script, warm, got, out.String(), c.code, c.out)
			}
		}
	}
	if warmed < 6 {
		t.Errorf("%d of 9 commands ran through a guard started ahead; want at least 6", warmed)
	}
}

// Through a guard started ahead, nothing a command starts outlives it, on completion and on
// cancellation, confined or not.
func TestWarmKillsEscapees(t *testing.T) {
	useWarm(t)
	for _, confined := range []bool{true, false} {
		t.Run(map[bool]string{true: "confined", false: "unconfined"}[confined], func(t *testing.T) {
			testWarmKillsEscapees(t, confined)
		})
	}
}

func testWarmKillsEscapees(t *testing.T, confined bool) {
	w := newWarmWorld(t, false, false)
	if !confined {
		w.policy = nil
	}
	// One grace for all: it is one of the guard's options, which a guard started ahead
	// must have been started with.
	const grace = 100 * time.Millisecond
	if err, _ := w.run(t, context.Background(), grace, "true", newLineWriter()); err != nil {
		t.Fatal(err)
	}
	for _, e := range escapes {
		t.Run(e.name+"/completed", func(t *testing.T) {
			out := newLineWriter()
			err, warm := w.run(t, context.Background(), grace, e.script, out)
			if err != nil || !warm {
				t.Fatalf("err %v, warm %v, output %q", err, warm, out.String())
			}
			for _, pid := range pids(t, out.String()) {
				if alive(pid) {
					t.Errorf("process %d outlived its command", pid)
				}
			}
		})
		t.Run(e.name+"/cancelled", func(t *testing.T) {
			cancelEscape(t, e.lines, e.script, func(ctx context.Context, script string, out *lineWriter) error {
				err, warm := w.run(t, ctx, grace, script, out)
				if !warm {
					t.Error("not run by a guard started ahead")
				}
				return err
			})
		})
	}
}

// A guard started ahead whose stage was set up before a protected entry, a nested
// repository or a secret appeared, a protected entry was replaced by a link to a writable
// folder (a mount held the entry it replaced), or a folder Landlock granted writes was renamed
// to a protected name (the grant holds the folder, whatever its name), is not used: the
// command starts the usual way, and the entry is held read-only (or hidden) for it.
func TestWarmStaleIsNotUsed(t *testing.T) {
	useWarm(t)
	// made makes a folder with a file in it, as someone unconfined (the person, the editor)
	// does while the guard waits.
	made := func(dir string) func(w *warmWorld) error {
		return func(w *warmWorld) error {
			path := filepath.Join(w.ws, dir)
			if rest, ok := strings.CutPrefix(dir, "~/"); ok {
				path = filepath.Join(w.home, rest)
			}
			if err := os.MkdirAll(path, 0o755); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(path, "id"), []byte("secret\n"), 0o644)
		}
	}
	for _, c := range []struct {
		name     string
		landlock bool
		secrets  bool
		before   string // a folder in the workspace made before the first command
		change   func(w *warmWorld) error
		write    string
	}{
		{"protected entry", false, false, "", made(".vscode"), "echo x > .vscode/settings.json"},
		{"nested repository", false, false, "", made("sub/.git"), "echo x > sub/.git/config"},
		{"secret", false, true, "", made("~/.ssh"), `cat "$HOME/.ssh/id"`},
		{"protected entry replaced by a link", false, false, ".vscode", func(w *warmWorld) error {
			if err := os.RemoveAll(filepath.Join(w.ws, ".vscode")); err != nil {
				return err
			}
			if err := os.MkdirAll(filepath.Join(w.ws, "src", "vs"), 0o755); err != nil {
				return err
			}
			return os.Symlink(filepath.Join("src", "vs"), filepath.Join(w.ws, ".vscode"))
		}, "echo x > .vscode/settings.json"},
		{"granted folder renamed to a protected name", true, false, "", func(w *warmWorld) error {
			return os.Rename(filepath.Join(w.ws, "src"), filepath.Join(w.ws, ".vscode"))
		}, "echo x > .vscode/settings.json"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWarmWorld(t, c.landlock, c.secrets)
			if c.before != "" {
				if err := os.MkdirAll(filepath.Join(w.ws, c.before), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err, _ := w.run(t, context.Background(), 0, "true", newLineWriter()); err != nil {
				t.Fatal(err)
			}
			readyAhead(t)
			if err := c.change(w); err != nil {
				t.Fatal(err)
			}
			out := newLineWriter()
			err, warm := w.run(t, context.Background(), 0, c.write, out)
			if warm {
				t.Error("the guard started before the change was used")
			}
			if err == nil {
				t.Errorf("%s was let through: %q", c.write, out.String())
			}
			// The next ones run ahead again, and hold the entry too. (One started while a
			// folder Landlock's grants list changed is not used: the temp folder's entries,
			// which other tests change, for the secret.)
			warm = false
			for i := 0; i < 5 && !warm; i++ {
				out = newLineWriter()
				if err, warm = w.run(t, context.Background(), 0, c.write, out); err == nil {
					t.Errorf("err %v, warm %v, output %q: want it refused", err, warm, out.String())
				}
			}
			if !warm {
				t.Error("no later command ran through a guard started ahead")
			}
		})
	}
}

// A command is never run twice: not when the guard started ahead answers late (it is
// stopped, and the command starts the usual way only if it did not run), nor when the call
// is cancelled while the guard answers.
func TestWarmNeverRunsTwice(t *testing.T) {
	useWarm(t)
	oldAnswer, oldHanded := warmAnswer, handedOver
	t.Cleanup(func() { warmAnswer, handedOver = oldAnswer, oldHanded })
	w := newWarmWorld(t, false, false)
	count := filepath.Join(w.ws, "src", "count")
	lines := func() int {
		b, _ := os.ReadFile(count)
		return strings.Count(string(b), "\n")
	}
	for i := range 8 {
		before := lines()
		warmAnswer, handedOver = oldAnswer, oldHanded
		if i%2 == 0 {
			// The answer comes late, after the command has run.
			warmAnswer = time.Nanosecond
			handedOver = func() {
				deadline := time.Now().Add(10 * time.Second)
				for lines() == before && time.Now().Before(deadline) {
					time.Sleep(time.Millisecond)
				}
			}
		}
		readyAhead(t)
		ctx, cancel := context.WithCancel(context.Background())
		if i%4 == 1 {
			cancel() // cancelled as it is handed over
		}
		err, warm := w.run(t, ctx, 0, "echo x >> src/count", newLineWriter())
		cancel()
		if n := lines() - before; n > 1 {
			t.Fatalf("run %d (warm %v, err %v): the command ran %d times", i, warm, err, n)
		}
	}
}

// warmDaemonEnv makes the test binary a daemon for TestWarmDiesWithTheDaemon: the value is
// the workspace.
const warmDaemonEnv = "PROC_TEST_WARM_DAEMON"

// warmDaemon runs a command the usual way, then one through the guard started ahead after
// it, which prints the pids of what it leaves running and waits; the test kills this
// process meanwhile.
func warmDaemon() int {
	exe, _ := os.Executable()
	SetGuardPath(exe)
	SetWarm(true)
	ws := os.Getenv(warmDaemonEnv)
	p := sandbox.Build(sandbox.Options{Workspace: ws, TempDir: ws, MaxProcs: 256})
	run := func(script string) error {
		cmd := Command(context.Background(), time.Second, "sh", "-c", script)
		if err := Confine(cmd, p); err != nil {
			return err
		}
		cmd.Dir = ws
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		_, err := Run(cmd)
		return err
	}
	if err := run("true"); err != nil {
		return 1
	}
	warm.starting.Wait()
	_ = run(`trap '' TERM; setsid sleep 120 & echo $!; (sleep 120 & echo $!); echo guard $PPID; sleep 120`)
	return 0
}

// When the daemon dies, a command run by a guard started ahead dies with it, every process
// of its tree, as one started the usual way does.
func TestWarmDiesWithTheDaemon(t *testing.T) {
	if !sandbox.Probe("").Available() {
		t.Skip("the kernel offers no Landlock")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	d := exec.Command(exe, "-test.run=^$")
	d.Env = append(os.Environ(), warmDaemonEnv+"="+t.TempDir(), "GORACE=atexit_sleep_ms=0")
	out := newLineWriter()
	d.Stdout, d.Stderr = out, out
	d.WaitDelay = time.Second // what survives the daemon holds its output
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	text := out.waitLines(t, 3)
	ps := pids(t, text)
	killAtEnd(t, ps)
	if guard, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", ps[len(ps)-1])); !strings.Contains(string(guard), "\x00"+warmFlag+"\x00") {
		t.Fatalf("the command's guard was not started ahead: %q (output %q)", guard, text)
	}
	ps = ps[:len(ps)-1]
	_ = d.Process.Kill()
	_ = d.Wait()
	waitDead(t, ps)
}
