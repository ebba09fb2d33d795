package proc

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// treeModeEnv makes the test binary a process of a tree (see init): "parent" starts a
// "child" (this binary again), prints the child's pid and waits; "child" waits.
const treeModeEnv = "TOOLSD_PROC_TREE_MODE"

// init runs the test binary as the guard, or as a process of a tree, when asked to: before
// TestMain, on every system (Linux's TestMain runs the guard too, for its own tests).
func init() {
	if len(os.Args) > 1 && os.Args[1] == GuardArg {
		os.Exit(RunGuard(os.Args[2:]))
	}
	switch os.Getenv(treeModeEnv) {
	case "child":
		time.Sleep(time.Minute)
		os.Exit(0)
	case "parent":
		exe, err := os.Executable()
		if err != nil {
			os.Exit(3)
		}
		c := exec.Command(exe)
		c.Env = append(os.Environ(), treeModeEnv+"=child")
		if err := c.Start(); err != nil {
			os.Exit(3)
		}
		fmt.Println(c.Process.Pid)
		time.Sleep(time.Minute)
		os.Exit(0)
	}
}

// TestGuardKillsTreeOnCancel: on every system, cancelling a guarded command kills its whole
// tree: the command, and the process it started, which is no process group's leader and
// which the guard did not start (Linux: the subreaper's kill; macOS: the process group and
// the walk by parent pid; Windows: the Job Object).
func TestGuardKillsTreeOnCancel(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("GORACE", "atexit_sleep_ms=0")
	SetGuardPath(exe)
	defer SetGuardPath("")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := Command(ctx, 500*time.Millisecond, exe)
	cmd.Env = append(os.Environ(), treeModeEnv+"=parent")
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	cmd.Stdout = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	_ = pr.SetReadDeadline(time.Now().Add(time.Minute)) // where pipes have deadlines
	line, err := bufio.NewReader(pr).ReadString('\n')
	child, perr := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || perr != nil {
		cancel()
		_ = cmd.Wait()
		KillGroup(cmd)
		t.Fatalf("the tree's child pid: %q, %v %v", line, err, perr)
	}
	if !alive(child) {
		t.Fatalf("the child %d is not running before the cancel", child)
	}
	cancel()
	_ = cmd.Wait()
	KillGroup(cmd)
	deadline := time.Now().Add(10 * time.Second)
	for alive(child) {
		if time.Now().After(deadline) {
			t.Fatalf("the child %d of the cancelled command still runs", child)
		}
		time.Sleep(10 * time.Millisecond) // polling a process we cannot wait for
	}
}
