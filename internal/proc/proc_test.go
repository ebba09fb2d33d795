package proc

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// alive reports whether pid runs: it exists and is not a zombie waiting for a reaper.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses.
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
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

// The whole tree dies when the context is cancelled, grandchildren included.
func TestCancelKillsTree(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := Command(ctx, 200*time.Millisecond, "sh", "-c", `sleep 600 & echo $!; sleep 600 & echo $!; wait`)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	var text string
	for strings.Count(text, "\n") < 2 {
		n, err := out.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		text += string(buf[:n])
	}
	var pids []int
	for _, f := range strings.Fields(text) {
		pid, _ := strconv.Atoi(f)
		pids = append(pids, pid)
	}
	cancel()
	err = cmd.Wait()
	KillGroup(cmd)
	if err == nil {
		t.Fatal("cancelled command reported success")
	}
	waitDead(t, pids)
}

// What a leader leaves behind in its group is killed once it exits.
func TestRunReapsStragglers(t *testing.T) {
	cmd := Command(context.Background(), 0, "sh", "-c", `sleep 600 >/dev/null 2>&1 & echo $!`)
	var sb strings.Builder
	cmd.Stdout = &sb
	if err := Run(cmd); err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(sb.String()))
	if err != nil {
		t.Fatalf("no pid in %q", sb.String())
	}
	waitDead(t, []int{pid})
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

// A background process holding the output does not keep Run waiting: it dies with the
// group when the leader exits, and what it wrote before is kept.
func TestRunDoesNotWaitForBackgroundHolders(t *testing.T) {
	var out strings.Builder
	cmd := Command(context.Background(), 0, "sh", "-c", `echo before; sleep 600 & echo $! ; echo after`)
	cmd.Stdout, cmd.Stderr = &out, &out
	done := make(chan error, 1)
	go func() { done <- Run(cmd) }()
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
	pid, _ := strconv.Atoi(f[1])
	waitDead(t, []int{pid})
}
