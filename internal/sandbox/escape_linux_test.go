package sandbox_test

import (
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/toolsd/toolsd/internal/proc"
	"github.com/toolsd/toolsd/internal/sandbox"
	"go.uber.org/goleak"
)

// The test binary is the guard, the stage, and a small client the confined scripts run
// ("__dial"), so that the suite needs no program the machine may lack.
func TestMain(m *testing.M) {
	proc.MaybeRunHelper()
	if len(os.Args) > 3 && os.Args[1] == "__dial" {
		os.Exit(dial(os.Args[2], os.Args[3]))
	}
	os.Exit(runSuite(m))
}

// runSuite runs the tests with TMPDIR a folder of their own, made as the system's temp folder
// is (1777), and fails the suite when its mode, or the system temp folder's, changed: tests
// change only what they created (a suite that once opened every folder up to os.TempDir()
// to 0755 took /tmp's sticky bit away on every machine that ran it as root).
func runSuite(m *testing.M) int {
	sys := os.TempDir()
	sysMode, err := modeOf(sys)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	tmp, err := os.MkdirTemp(sys, "toolsd-sandbox-test-")
	if err == nil {
		err = os.Chmod(tmp, 0o777|os.ModeSticky)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	if err := os.Setenv("TMPDIR", tmp); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	if got, err := modeOf(tmp); err != nil || got != 0o777|os.ModeSticky {
		fmt.Fprintf(os.Stderr, "FAIL: the tests changed the mode of their temp folder %s: %v, was %v (%v)\n", tmp, got, 0o777|os.ModeSticky, err)
		code = 1
	}
	if got, err := modeOf(sys); err != nil || got != sysMode {
		// Only these tests use their temp folder; the system's, another process may change.
		fmt.Fprintf(os.Stderr, "FAIL: the mode of the system temp folder %s changed while the tests ran (by them, or by another process): %v, was %v (%v)\n", sys, got, sysMode, err)
		code = 1
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "FAIL: goroutines left: %v\n", err)
			code = 1
		}
	}
	return code
}

// modeOf is a folder's permission bits with its sticky, setuid and setgid bits.
func modeOf(dir string) (os.FileMode, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return 0, err
	}
	return fi.Mode() & (os.ModePerm | os.ModeSticky | os.ModeSetuid | os.ModeSetgid), nil
}

// dial connects to addr over network and writes a line: the "escape" a test's listener
// would see.
func dial(network, addr string) int {
	c, err := net.DialTimeout(network, addr, 2*time.Second)
	if err != nil {
		fmt.Println("dial:", err)
		return 1
	}
	defer c.Close()
	_, _ = c.Write([]byte("escaped\n"))
	if network == "udp" {
		fmt.Println("sent a datagram to", addr) // whether it arrived, the listener knows
		return 0
	}
	fmt.Println("ESCAPED: connected to", addr)
	return 0
}

const secret = "SECRET-7f3a91"

// world is what one run of the suite confines a tool in, and the things outside it.
type world struct {
	exe      string // the test binary, where every user may run it (escapes dial with it)
	guard    string // the guard and the stage: exe, or a toolsd binary beside it
	ws       string // the workspace
	out      string // a folder outside every writable one, writable by anyone
	home     string // a home folder with secrets
	tmp      string // the tool's temp folder
	private  string // the daemon's folder, with its socket
	uid      int
	policy   *sandbox.Policy
	mode     string
	tcp      net.Listener
	tcpSeen  atomic.Int32
	udp      net.PacketConn
	unix     net.Listener
	unixSeen atomic.Int32
	wg       sync.WaitGroup
}

// newWorld makes a world whose guard and stage are a copy of the binary at guard, or the test
// binary when guard is "".
func newWorld(t *testing.T, uid int, landlockOnly bool, guard string) *world {
	t.Helper()
	// Every user must be able to reach what the tool needs: the checks are the sandbox's,
	// not the file modes'. t.TempDir's folders are the user's alone (0700), and the folders
	// above them are not the test's to open up: the world lives in a folder the test makes
	// in the temp folder (which every user may enter) and opens up itself.
	root, err := os.MkdirTemp("", "toolsd-world-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	w := &world{uid: uid}
	mk := func(rel string, mode os.FileMode) string {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(p, mode); err != nil {
			t.Fatal(err)
		}
		_ = os.Chmod(p, mode)
		_ = os.Chown(p, uid, uid)
		return p
	}
	write := func(p, content string, mode os.FileMode) {
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		_ = os.Chmod(p, mode)
	}
	w.ws = mk("ws", 0o755)
	mk("ws/.git/hooks", 0o755)
	mk("ws/.toolsd", 0o755) // as the daemon makes it when the workspace opens
	write(filepath.Join(w.ws, ".git", "config"), "[core]\n", 0o666)
	write(filepath.Join(w.ws, ".git", "hooks", "pre-commit.sample"), "#!/bin/sh\n", 0o777)
	mk("ws/src", 0o755)
	write(filepath.Join(w.ws, "src", "main.go"), "package main\n", 0o666)
	w.out = mk("out", 0o777)
	write(filepath.Join(w.out, "victim"), "original\n", 0o666)
	w.home = mk("home", 0o755)
	mk("home/.ssh", 0o755)
	write(filepath.Join(w.home, ".ssh", "id_rsa"), secret+"\n", 0o644)
	w.tmp = mk("tmp", 0o777)
	w.private = mk("private", 0o777)
	bin := mk("bin", 0o755)
	w.exe = filepath.Join(bin, "toolsd.test")
	copyFile(t, "", w.exe)
	w.guard = w.exe
	if guard != "" {
		w.guard = filepath.Join(bin, "toolsd")
		copyFile(t, guard, w.guard)
	}

	if w.tcp, err = net.Listen("tcp4", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	if w.udp, err = net.ListenPacket("udp4", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	if w.unix, err = net.Listen("unix", filepath.Join(w.private, "toolsd.sock")); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(filepath.Join(w.private, "toolsd.sock"), 0o777)
	accept := func(l net.Listener, seen *atomic.Int32) {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				seen.Add(1)
				_ = c.Close()
			}
		}()
	}
	accept(w.tcp, &w.tcpSeen)
	accept(w.unix, &w.unixSeen)
	t.Cleanup(func() {
		_ = w.tcp.Close()
		_ = w.unix.Close()
		_ = w.udp.Close()
		w.wg.Wait()
	})

	w.policy = sandbox.Build(sandbox.Options{Workspace: w.ws, Home: w.home, TempDir: w.tmp, Private: []string{w.private}, MaxProcs: 64})
	w.policy.LandlockOnly = landlockOnly
	w.mode = sandbox.ModeNamespaces
	if landlockOnly {
		w.mode = sandbox.ModeLandlock
	}
	return w
}

// copyFile copies the executable src (the test binary when "") to dst.
func copyFile(t *testing.T, src, dst string) {
	if src == "" {
		var err error
		if src, err = os.Executable(); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// run runs script with bash in the workspace, confined, as the world's user.
func (w *world) run(t *testing.T, script string) (string, int) {
	t.Helper()
	return w.runIn(t, w.ws, w.policy, script)
}

// runIn runs script with bash in the folder ws, confined by p, as the world's user, with
// env added to its environment.
func (w *world) runIn(t *testing.T, ws string, p *sandbox.Policy, script string, env ...string) (string, int) {
	t.Helper()
	proc.SetGuardPath(w.guard)
	defer proc.SetGuardPath("")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := proc.Command(ctx, time.Second, "bash", "-c", script)
	if err := proc.Confine(cmd, p); err != nil {
		t.Fatal(err)
	}
	cmd.Dir = ws
	cmd.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + w.home, "TMPDIR=" + w.tmp, "GORACE=atexit_sleep_ms=0",
		"OUT=" + w.out, "SECRETS=" + filepath.Join(w.home, ".ssh"), "DAEMON=" + strconv.Itoa(os.Getpid()),
		"TCP=" + w.tcp.Addr().String(), "UDP=" + w.udp.LocalAddr().String(), "SOCK=" + w.unix.Addr().String(), "EXE=" + w.exe,
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com"}, env...)
	if w.uid != os.Getuid() {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(w.uid), Gid: uint32(w.uid)}
	}
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	_, err := proc.Run(cmd)
	return buf.String(), proc.ExitCode(err)
}

// escape is one attempt to get out: a script, and a check of the world after it that names
// what escaped ("" when nothing did).
type escape struct {
	name   string
	script string
	check  func(w *world, out string) string
	// explain: the output must carry an error that sandbox.Explain turns into words for
	// the model.
	explain bool
}

func fileAbsent(rel string) func(w *world, out string) string {
	return func(w *world, out string) string {
		if _, err := os.Lstat(filepath.Join(w.out, rel)); err == nil {
			return "created " + filepath.Join(w.out, rel)
		}
		return ""
	}
}

func victimIntact(w *world, out string) string {
	b, err := os.ReadFile(filepath.Join(w.out, "victim"))
	if err != nil || string(b) != "original\n" {
		return fmt.Sprintf("the file outside was changed (%q, %v)", b, err)
	}
	return ""
}

func noSecret(w *world, out string) string {
	if strings.Contains(out, secret) {
		return "the secret was read"
	}
	found := ""
	_ = filepath.Walk(w.ws, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(secret)) {
				found = "the secret was copied to " + p
			}
		}
		return nil
	})
	return found
}

func notInOutput(marker string) func(w *world, out string) string {
	return func(w *world, out string) string {
		if strings.Contains(out, marker) {
			return "the output says " + marker
		}
		return ""
	}
}

func gitIntact(w *world, out string) string {
	if b, _ := os.ReadFile(filepath.Join(w.ws, ".git", "config")); string(b) != "[core]\n" {
		return fmt.Sprintf(".git/config was changed: %q", b)
	}
	names, _ := os.ReadDir(filepath.Join(w.ws, ".git", "hooks"))
	if len(names) != 1 || names[0].Name() != "pre-commit.sample" {
		return fmt.Sprintf(".git/hooks was changed: %v", names)
	}
	if _, err := os.Stat(filepath.Join(w.ws, ".toolsd", "config.json")); err == nil {
		return ".toolsd/config.json was written"
	}
	if _, err := os.Stat(filepath.Join(w.ws, ".toolsd", "tool")); err == nil {
		return ".toolsd/tool was made"
	}
	return ""
}

var escapes = []escape{
	{"absolute path", `echo x > "$OUT/abs"`, fileAbsent("abs"), true},
	{"dot dot", `echo x > ../out/dotdot`, fileAbsent("dotdot"), true},
	{"symlink made by the command", `ln -s "$OUT" link && echo x > link/sym`, fileAbsent("sym"), true},
	{"symlink to a folder outside, then cd", `ln -sf "$OUT" l2 && cd l2 && echo x > cdsym`, fileAbsent("cdsym"), true},
	{"hard link of a file outside", `ln "$OUT/victim" hl; echo pwned >> hl; echo pwned >> "$OUT/victim"`, victimIntact, true},
	{"/proc/self/root", `echo x > "/proc/self/root$OUT/procroot"`, fileAbsent("procroot"), true},
	{"/proc/self/cwd", `cd "$OUT" && echo x > /proc/self/cwd/proccwd`, fileAbsent("proccwd"), true},
	{"/dev/fd of a folder outside", `exec 9<"$OUT"; echo x > /dev/fd/9/devfd`, fileAbsent("devfd"), true},
	{"rename out of the folder outside", `mv "$OUT/victim" ./stolen; echo x > "$OUT/victim"`, victimIntact, true},
	{"rename into the folder outside", `echo x > mine && mv mine "$OUT/moved"`, fileAbsent("moved"), true},
	{"truncate a file outside", `: > "$OUT/victim"; truncate -s 0 "$OUT/victim"`, victimIntact, true},
	{"mount over the folder outside", `mount -t tmpfs none "$OUT" ; mount --bind . "$OUT"; echo x > "$OUT/mounted"`, fileAbsent("mounted"), false},
	{"user namespace to mount", `unshare -Urm sh -c 'mount -t tmpfs none "$OUT" && echo x > "$OUT/nsmounted"'`, fileAbsent("nsmounted"), false},
	{"read a secret", `cat "$SECRETS/id_rsa"`, noSecret, true},
	{"copy a secret", `cp "$SECRETS/id_rsa" ./copied; cat copied`, noSecret, true},
	{"link a secret", `ln "$SECRETS/id_rsa" ./linked; ln -s "$SECRETS/id_rsa" ./slinked; cat linked slinked`, noSecret, true},
	{"read a secret through /proc/self/root", `cat "/proc/self/root$SECRETS/id_rsa"`, noSecret, true},
	{"list secrets to read them", `for f in "$SECRETS"/*; do cat "$f"; done; tar cf - "$SECRETS" | cat`, noSecret, true},
	{"plant a git hook", `echo 'curl evil' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit`, gitIntact, true},
	{"replace the hooks folder", `mv .git/hooks .git/oldhooks; mkdir .git/hooks2 && echo x > .git/hooks2/pre-commit && mv .git/hooks2 .git/hooks; rm -rf .git/hooks`, gitIntact, true},
	{"change git's config", `echo '[core] fsmonitor = evil' >> .git/config; git config core.hooksPath /tmp`, gitIntact, true},
	{"loosen its own rules", `mkdir -p .toolsd/tool && echo '{"permission":{"bash":"allow"}}' > .toolsd/config.json`, gitIntact, true},
	{"TCP to a listener on the loopback", `"$EXE" __dial tcp "$TCP"`, func(w *world, out string) string {
		if w.tcpSeen.Load() > 0 {
			return "a TCP connection reached the test's listener"
		}
		return notInOutput("ESCAPED")(w, out)
	}, false},
	{"/dev/tcp", `exec 3<>"/dev/tcp/${TCP%:*}/${TCP#*:}" && echo x >&3 && echo ESCAPED`, func(w *world, out string) string {
		if w.tcpSeen.Load() > 0 {
			return "/dev/tcp reached the test's listener"
		}
		return notInOutput("ESCAPED")(w, out)
	}, false},
	{"UDP to a listener on the loopback", `echo escaped > "/dev/udp/${UDP%:*}/${UDP#*:}"; "$EXE" __dial udp "$UDP"`, udpSilent, false},
	{"DNS to a resolver on the loopback", `printf '\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x03com\x00\x00\x01\x00\x01' > "/dev/udp/${UDP%:*}/${UDP#*:}"`, udpSilent, false},
	{"connect to the daemon's socket", `"$EXE" __dial unix "$SOCK"`, func(w *world, out string) string {
		if w.unixSeen.Load() > 0 {
			return "the daemon's socket was reached"
		}
		return notInOutput("ESCAPED")(w, out)
	}, false},
	{"signal the daemon", `kill -0 "$DAEMON" && echo ESCAPED; kill -STOP "$DAEMON" 2>/dev/null && kill -CONT "$DAEMON" && echo ESCAPED`, notInOutput("ESCAPED"), false},
	{"trace the daemon", `cat "/proc/$DAEMON/environ" >/dev/null && echo ESCAPED; head -c1 "/proc/$DAEMON/mem" >/dev/null 2>&1 && echo ESCAPED`, notInOutput("ESCAPED"), false},
	{"read a disk's device", `for d in /dev/vd? /dev/sd? /dev/nvme?n1; do [ -e "$d" ] && head -c 512 "$d" | wc -c | grep -qv '^0$' && echo ESCAPED; done; true`, notInOutput("ESCAPED"), false},
	// The loop is capped (300 sleeps) so that a sandbox that fails it cannot take the
	// machine down; the sandbox's bound is 64.
	{"fork bomb, bounded", `sh -c 'i=0; while [ $i -lt 300 ]; do sleep 30 & i=$((i+1)); done; echo "ALL STARTED $i"; wait'`, func(w *world, out string) string {
		// Every user but root is held by RLIMIT_NPROC: the 65th process cannot start.
		// Root is not; the guard counts its tree and kills it past the bound.
		if w.uid == 0 {
			if !strings.Contains(out, "more than the sandbox allows") {
				return "the guard did not stop root's tree past the bound"
			}
			return ""
		}
		if strings.Contains(out, "ALL STARTED 300") {
			return "300 processes ran at once"
		}
		return ""
	}, false},
}

// startedInside are commands that start in a protected folder and write it by relative paths.
var startedInside = []struct{ dir, script string }{
	{".git", `echo '[core] fsmonitor = evil' >> config; echo 'curl evil' > hooks/pre-commit; echo ../x > commondir`},
	{".git/hooks", `echo 'curl evil' > pre-commit; chmod +x pre-commit`},
	{".toolsd", `echo '{"permission":{"bash":"allow"}}' > config.json; mkdir tool`},
}

func udpSilent(w *world, out string) string {
	_ = w.udp.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	buf := make([]byte, 512)
	if n, _, err := w.udp.ReadFrom(buf); err == nil {
		return fmt.Sprintf("a datagram reached the test's listener (%q)", buf[:n])
	}
	return notInOutput("ESCAPED")(w, out)
}

// TestEscapes runs every escape, as root and as an unprivileged user where the test runs as
// root, with namespaces and with Landlock alone: none may get out, and every blocked attempt
// that leaves an error behind is explained in words the model can act on.
func TestEscapes(t *testing.T) {
	if runtime.GOOS != "linux" || !sandbox.Probe("").Available() {
		t.Skip("the kernel offers no Landlock")
	}
	users := []int{os.Getuid()}
	if os.Getuid() == 0 {
		users = append(users, 65534)
	}
	for _, uid := range users {
		for _, landlockOnly := range []bool{false, true} {
			t.Run(fmt.Sprintf("uid%d/%s", uid, modeName(landlockOnly)), func(t *testing.T) {
				runEscapes(t, newWorld(t, uid, landlockOnly, ""))
			})
		}
	}
}

// TestEscapesStaticBinary runs every escape (and every git attack) with a toolsd built as toolsd is shipped, without
// cgo, as the guard and the stage: a static binary applies Landlock to all its threads
// another way (the runtime's AllThreadsSyscall, where a cgo build goes through libc's
// threads), and the race detector, which the other tests run with, needs cgo.
func TestEscapesStaticBinary(t *testing.T) {
	if runtime.GOOS != "linux" || !sandbox.Probe("").Available() {
		t.Skip("the kernel offers no Landlock")
	}
	exe := staticToolsd(t)
	for _, landlockOnly := range []bool{false, true} {
		t.Run(modeName(landlockOnly), func(t *testing.T) {
			w := newWorld(t, os.Getuid(), landlockOnly, exe)
			runEscapes(t, w)
			if _, err := exec.LookPath("git"); err == nil {
				t.Run("git", func(t *testing.T) { runGitAttacks(t, w) })
			}
		})
	}
}

// TestEscapesWarm runs every escape (and every git attack) through guards started ahead of
// their commands (internal/proc's warm.go), as the daemon runs them: each stage confined
// itself before its command came.
func TestEscapesWarm(t *testing.T) {
	if runtime.GOOS != "linux" || !sandbox.Probe("").Available() {
		t.Skip("the kernel offers no Landlock")
	}
	proc.SetWarm(true)
	t.Cleanup(func() { proc.SetWarm(false) })
	for _, landlockOnly := range []bool{false, true} {
		t.Run(modeName(landlockOnly), func(t *testing.T) {
			w := newWorld(t, os.Getuid(), landlockOnly, "")
			before := proc.WarmRuns()
			runEscapes(t, w)
			if _, err := exec.LookPath("git"); err == nil {
				t.Run("git", func(t *testing.T) { runGitAttacks(t, w) })
			}
			// A guard set up before a folder Landlock's grants list changed is not used
			// (the temp folder, which other tests change, holds the world): not all of
			// them run ahead, but some must.
			if n := proc.WarmRuns() - before; n == 0 {
				t.Error("no command ran through a guard started ahead")
			} else {
				t.Logf("%d commands ran through a guard started ahead", n)
			}
		})
	}
}

func modeName(landlockOnly bool) string {
	if landlockOnly {
		return "landlock"
	}
	return "namespaces"
}

// runEscapes checks that ordinary work runs in w and that every escape fails there.
func runEscapes(t *testing.T, w *world) {
	// The sandbox must let ordinary work through, or every escape "fails".
	if out, code := w.run(t, `echo ok > src/new.txt && cat src/new.txt && echo t > "$TMPDIR/t" && ls "$HOME" >/dev/null`); code != 0 || !strings.Contains(out, "ok") {
		t.Fatalf("ordinary work failed in the sandbox (exit %d): %s", code, out)
	}
	for _, e := range escapes {
		out, _ := w.run(t, e.script)
		if got := e.check(w, out); got != "" {
			t.Errorf("%s: ESCAPE: %s\noutput:\n%s", e.name, got, out)
			continue
		}
		if e.explain {
			if why := sandbox.Explain(w.policy, w.mode, w.ws, out, nil); len(why) == 0 {
				t.Errorf("%s: blocked, but nothing tells the model why; output:\n%s", e.name, out)
			}
		}
	}
	// A command that starts in a read-only folder: the stage enters its folder before it
	// mounts the protected paths read-only, and must not write through the folder beneath
	// the mount (its relative paths).
	for _, e := range startedInside {
		out, _ := w.runIn(t, filepath.Join(w.ws, e.dir), w.policy, e.script)
		if got := gitIntact(w, out); got != "" {
			t.Errorf("started in %s: ESCAPE: %s\noutput:\n%s", e.dir, got, out)
		}
	}
}

// staticToolsd builds cmd/toolsd with CGO_ENABLED=0 into a folder of the test, and checks
// that the result is static (no program interpreter).
func staticToolsd(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to build toolsd with")
	}
	_, file, _, _ := runtime.Caller(0)
	exe := filepath.Join(t.TempDir(), "toolsd")
	cmd := exec.Command("go", "build", "-o", exe, "./cmd/toolsd")
	cmd.Dir = filepath.Join(filepath.Dir(file), "..", "..")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Fatalf("%s has a program interpreter: not a static build", exe)
		}
	}
	return exe
}

// TestCannotConfineDoesNotRun: a policy the stage cannot apply fails the command; it never
// runs unconfined.
func TestCannotConfineDoesNotRun(t *testing.T) {
	w := newWorld(t, os.Getuid(), false, "")
	w.policy = &sandbox.Policy{Read: []string{"/"}, Write: []string{w.ws}, Net: sandbox.Net{Mode: sandbox.NetProxy}} // no proxy address
	out, code := w.run(t, `echo RAN`)
	if code != 126 || strings.Contains(out, "RAN") {
		t.Fatalf("exit %d, output %q: want 126 and the command not run", code, out)
	}
	if !strings.Contains(out, "proxy") {
		t.Errorf("the error does not say what is wrong: %q", out)
	}
}

// TestInheritedDescriptorsDoNotReachTheTool: a descriptor the daemon inherited without
// close-on-exec (from the editor that started it, say) is open in every process it starts;
// Landlock governs what a process opens, not what it holds, so a confined command must not
// get it: writing a file outside the workspace through it would be a way out. Both for a
// stage set up with its command and for one set up ahead of it.
func TestInheritedDescriptorsDoNotReachTheTool(t *testing.T) {
	if runtime.GOOS != "linux" || !sandbox.Probe("").Available() {
		t.Skip("the kernel offers no Landlock")
	}
	proc.SetWarm(true)
	t.Cleanup(func() { proc.SetWarm(false) })
	for _, landlockOnly := range []bool{false, true} {
		t.Run(modeName(landlockOnly), func(t *testing.T) {
			w := newWorld(t, os.Getuid(), landlockOnly, "")
			// As an editor leaks one: open without close-on-exec, at a number of its own.
			fd, err := syscall.Open(filepath.Join(w.out, "victim"), syscall.O_WRONLY|syscall.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			const leaked = 201
			if err := syscall.Dup3(fd, leaked, 0); err != nil {
				t.Fatal(err)
			}
			_ = syscall.Close(fd)
			defer syscall.Close(leaked)
			before := proc.WarmRuns()
			for i := range 3 {
				out, _ := w.run(t, `echo pwned >&201; ls /proc/self/fd | tr '\n' ' '`)
				if got := victimIntact(w, out); got != "" {
					t.Fatalf("run %d: ESCAPE through an inherited descriptor: %s\noutput:\n%s", i, got, out)
				}
			}
			if proc.WarmRuns() == before {
				t.Log("no command ran through a guard started ahead")
			}
		})
	}
}
