//go:build unix

package builtin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestBash(t *testing.T) {
	tests := []struct {
		name    string
		args    map[string]any
		out     []string // substrings of what was streamed to Output
		result  []string // substrings of Result.Output
		err     []string
		exit    int
		timeout bool
	}{
		{name: "echo", args: map[string]any{"command": "echo hello", "description": "Says hello"}, out: []string{"hello\n"}, exit: 0},
		{name: "stderr interleaved", args: map[string]any{"command": "echo out; echo err >&2; echo out2"}, out: []string{"out\nerr\nout2\n"}},
		{name: "exit code", args: map[string]any{"command": "echo failing; exit 3"}, out: []string{"failing\n"}, result: []string{"[exit code 3]"}, exit: 3},
		{name: "exit code without newline", args: map[string]any{"command": "printf x; exit 1"}, result: []string{"\n[exit code 1]"}, exit: 1},
		{name: "no output", args: map[string]any{"command": "true"}, result: []string{"(no output)"}},
		{name: "stdin is empty", args: map[string]any{"command": "read x; echo status=$?"}, out: []string{"status=1"}},
		{name: "env non-interactive", args: map[string]any{"command": "echo $GIT_TERMINAL_PROMPT $DEBIAN_FRONTEND $PAGER $GIT_PAGER"}, out: []string{"0 noninteractive cat cat"}},
		{name: "workdir", args: map[string]any{"command": "pwd", "workdir": "sub"}, out: []string{"/sub\n"}},
		{name: "workdir missing", args: map[string]any{"command": "pwd", "workdir": "nope"}, err: []string{"workdir nope does not exist"}},
		{name: "workdir is a file", args: map[string]any{"command": "pwd", "workdir": "f.txt"}, err: []string{"workdir f.txt is not a folder"}},
		{name: "timeout", args: map[string]any{"command": "echo started; sleep 600", "timeout": 1000}, out: []string{"started"}, result: []string{"[timed out after 1s", "killed"}, timeout: true, exit: 143},
		{name: "signal exit", args: map[string]any{"command": "kill -9 $$"}, result: []string{"[exit code 137: killed by signal 9 (killed)]"}, exit: 137},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, "-- sub/x --\n-- f.txt --\nhi\n")
			res, err := e.run("bash", tc.args)
			if len(tc.err) > 0 {
				if err == nil {
					t.Fatalf("no error; result %+v", res)
				}
				mustContain(t, "error", err.Error(), tc.err...)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			mustContain(t, "streamed output", e.out.String(), tc.out...)
			mustContain(t, "result output", res.Output, tc.result...)
			if res.Metadata["exit"] != tc.exit && !(tc.timeout && res.Metadata["exit"] != 0) {
				t.Errorf("exit = %v, want %d", res.Metadata["exit"], tc.exit)
			}
			if res.Metadata["timedOut"] != tc.timeout {
				t.Errorf("timedOut = %v", res.Metadata["timedOut"])
			}
			if _, ok := res.Metadata["durationMs"].(int64); !ok {
				t.Errorf("durationMs = %#v", res.Metadata["durationMs"])
			}
			if d, ok := tc.args["description"]; ok && (res.Metadata["description"] != d || res.Title != d) {
				t.Errorf("description = %v, title %q", res.Metadata["description"], res.Title)
			}
		})
	}
}

// pidsIn returns the numbers printed as "pid=N" in s.
func pidsIn(s string) []int {
	var pids []int
	for f := range strings.FieldsSeq(s) {
		if v, ok := strings.CutPrefix(f, "pid="); ok {
			if n, err := strconv.Atoi(v); err == nil {
				pids = append(pids, n)
			}
		}
	}
	return pids
}

// alive reports whether pid is a live (not zombie) process.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// state is the field after the ")" closing the command name.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// waitDead waits until none of pids is alive, or fails.
func waitDead(t *testing.T, pids []int) {
	t.Helper()
	// A process's death signals nothing we can wait on here: poll, with a deadline.
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for _, pid := range pids {
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("process %d survived", pid)
			}
			<-tick.C
		}
	}
}

const treeScript = `sleep 600 & echo pid=$!; sleep 600 & echo pid=$!; echo pid=$$; wait`

func TestBashTimeoutKillsTree(t *testing.T) {
	e := newEnv(t, "")
	e.setOptions(&Options{BashGrace: 500 * time.Millisecond})
	// The timeout leaves a loaded machine time to start the tree; the test waits on the
	// tool's return, not on the clock.
	res, err := e.run("bash", map[string]any{"command": treeScript, "timeout": 1500})
	if err != nil {
		t.Fatal(err)
	}
	if res.Metadata["timedOut"] != true {
		t.Fatalf("not timed out: %+v", res.Metadata)
	}
	pids := pidsIn(e.out.String())
	if len(pids) != 3 {
		t.Fatalf("pids %v from %q", pids, e.out.String())
	}
	waitDead(t, pids)
}

func TestBashCancelKillsTree(t *testing.T) {
	e := newEnv(t, "")
	e.setOptions(&Options{BashGrace: 500 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type ret struct{ err error }
	done := make(chan ret, 1)
	go func() {
		_, err := e.runCtx(ctx, "bash", map[string]any{"command": treeScript})
		done <- ret{err}
	}()
	out := e.out.waitFor(t, 10*time.Second, func(s string) bool { return len(pidsIn(s)) == 3 })
	pids := pidsIn(out)
	for _, p := range pids {
		if !alive(p) {
			t.Fatalf("process %d is not running before the cancel", p)
		}
	}
	cancel()
	select {
	case r := <-done:
		if !errors.Is(r.err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("bash did not return after cancel")
	}
	waitDead(t, pids)
}

func TestBashProgressStreamsTail(t *testing.T) {
	e := newEnv(t, "")
	e.setOptions(&Options{BashProgressInterval: 10 * time.Millisecond})
	// The command waits until a file appears, so the first line is surely published first.
	flag := filepath.Join(t.TempDir(), "go")
	done := make(chan error, 1)
	go func() {
		_, err := e.run("bash", map[string]any{"command": fmt.Sprintf("for i in $(seq 1 30); do echo line$i; done; while [ ! -e %s ]; do sleep 0.01; done; echo final", flag), "description": "Counts"})
		done <- err
	}()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev := <-e.progress:
			tail, _ := ev.meta["output"].(string)
			if !strings.Contains(tail, "line30") {
				continue
			}
			if ev.title != "Counts" {
				t.Errorf("title %q", ev.title)
			}
			if strings.Contains(tail, "line10\n") || strings.Count(tail, "\n") != tailLines-1 {
				t.Errorf("tail is not the last %d lines: %q", tailLines, tail)
			}
			if err := os.WriteFile(flag, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			mustContain(t, "output", e.out.String(), "line1\n", "line30\nfinal\n")
			return
		case err := <-done:
			t.Fatalf("returned before progress showed the output: %v", err)
		case <-deadline:
			t.Fatal("no progress with the output")
		}
	}
}

func TestBashPermissions(t *testing.T) {
	outside, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	type ask struct {
		perm     string
		patterns []string
		always   string // one of the Always patterns ("" for none expected)
		opaque   bool
	}
	tests := []struct {
		name    string
		command string
		workdir string
		want    []ask
	}{
		{"commands and writes", "git status && echo hi > out.txt", "", []ask{
			{"edit", []string{"out.txt"}, "out.txt", false},
			{"bash", []string{"git status", "echo hi"}, "git status *", false},
		}},
		{"path outside", "cat " + outside + "/secret", "", []ask{
			{"external_directory", []string{outside + "/*"}, outside + "/*", false},
			{"bash", []string{"cat " + outside + "/secret"}, "cat " + outside + "/secret", false},
		}},
		{"cd outside", "cd " + outside + " && ls", "", []ask{
			{"external_directory", []string{outside + "/*"}, outside + "/*", false},
			{"bash", []string{"cd " + outside, "ls"}, "ls *", false},
		}},
		{"opaque", "eval $X", "", []ask{{"bash", []string{"eval $X"}, "", true}}},
		{"write outside", "echo x > " + outside + "/o.txt", "", []ask{
			{"external_directory", []string{outside + "/*"}, outside + "/*", false},
			{"edit", []string{outside + "/o.txt"}, outside + "/o.txt", false},
			{"bash", []string{"echo x"}, "echo x", false},
		}},
		{"dynamic path", "cat $F", "", []ask{
			{"external_directory", []string{"$F"}, "", true},
			{"bash", []string{"cat $F"}, "cat $F", false},
		}},
		{"workdir outside", "true", outside, []ask{
			{"external_directory", []string{outside + "/*"}, outside + "/*", false},
			{"bash", []string{"true"}, "true", false},
		}},
		{"write relative to workdir", "echo hi > out.txt", "sub", []ask{
			{"edit", []string{"sub/out.txt"}, "sub/out.txt", false},
			{"bash", []string{"echo hi"}, "echo hi", false},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, "-- sub/x --\n")
			for _, p := range []string{"bash", "edit", "external_directory"} {
				e.asks.deny[p] = true
			}
			// Refusing everything stops at the first ask; allowing one at a time walks them.
			for i, w := range tc.want {
				args := map[string]any{"command": tc.command}
				if tc.workdir != "" {
					args["workdir"] = tc.workdir
				}
				e.asks.reqs = nil
				_, err := e.run("bash", args)
				if !isPermissionError(err) {
					t.Fatalf("ask %d: err = %v, want the refusal", i, err)
				}
				reqs := e.asks.requests()
				got := reqs[len(reqs)-1]
				if got.Permission != w.perm || !slices.Equal(got.Patterns, w.patterns) || got.Opaque != w.opaque {
					t.Fatalf("ask %d = %s %q opaque %v, want %s %q opaque %v", i, got.Permission, got.Patterns, got.Opaque, w.perm, w.patterns, w.opaque)
				}
				if (w.always == "") != (len(got.Always) == 0) || (w.always != "" && !slices.Contains(got.Always, w.always)) {
					t.Fatalf("ask %d: always %q, want one of them %q", i, got.Always, w.always)
				}
				if got.Metadata["command"] != tc.command {
					t.Errorf("ask metadata = %v", got.Metadata)
				}
				delete(e.asks.deny, w.perm)
			}
		})
	}
}

// A relative folder in the daemon's PATH (".", "", "bin") would let a file of the
// workspace run as a command the rules allow: the commands get the absolute folders only.
func TestBashPathIsAbsolute(t *testing.T) {
	t.Setenv("PATH", "/usr/local/bin:.::bin:/usr/bin:/bin")
	for _, kv := range environ() {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			if v != "/usr/local/bin:/usr/bin:/bin" {
				t.Fatalf("PATH = %q, want only its absolute folders", v)
			}
			return
		}
	}
	t.Fatal("no PATH")
}
