//go:build unix

package main_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolsd/toolsd/internal/sandbox"
	"github.com/toolsd/toolsd/protocol"
)

// TestSandboxGitRunsNothingPlanted, against the real daemon: a bash call, confined, plants a
// command for git every way it can (a nested repository, commondir, a replaced git folder);
// afterwards a real unconfined git status and git commit, in the workspace and in the nested
// repository, run none of it, and what the model reads says what the sandbox moved aside.
func TestSandboxGitRunsNothingPlanted(t *testing.T) {
	if !sandbox.Probe("").Available() {
		t.Skip("the kernel offers no Landlock")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	home := t.TempDir()
	gitEnv := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com"}
	git := func(dir string, a ...string) string {
		cmd := exec.Command("git", a...)
		cmd.Dir, cmd.Env = dir, gitEnv
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "src", "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(ws, "init", "-q")
	git(ws, "add", ".")
	git(ws, "commit", "-qm", "one")
	mark := filepath.Join(t.TempDir(), "ran")
	e := newEnv(t, envOpts{ws: ws, env: append([]string{"XDG_CACHE_HOME=" + t.TempDir()}, gitEnv[1:]...)})
	script := `git init -q src/nested && printf '[core]\n\tfsmonitor = touch ` + mark + `\n' >> src/nested/.git/config
cp -r .git planted && printf '[core]\n\tfsmonitor = touch ` + mark + `\n' >> planted/config
echo ../planted > .git/commondir
mv .git old-git && mv planted .git
true`
	// The line asks (it is not one the shell analysis understands): the person allows every
	// ask of the call.
	from := e.d.Mark()
	_, wait := e.start(protocol.ExecuteParams{CallID: "plant", Tool: "bash", Args: args("command", script)})
	ctx, cancel := context.WithCancel(e.ctx)
	answered := make(chan struct{})
	defer func() { cancel(); <-answered }()
	go func() {
		defer close(answered)
		for {
			raw, i, err := e.d.WaitFor(ctx, from, "permission/asked", func(r json.RawMessage) bool {
				var a protocol.AskedParams
				return json.Unmarshal(r, &a) == nil && a.CallID == "plant"
			})
			if err != nil {
				return
			}
			from = i + 1
			var a protocol.AskedParams
			_ = json.Unmarshal(raw, &a)
			_ = e.reply(a.ID, protocol.ReplyOnce, "")
		}
	}()
	res, err := wait()
	if err != nil || res.Status != protocol.StatusCompleted {
		t.Fatalf("the call: %v %+v", err, res)
	}
	if !strings.Contains(res.Output, "src/nested/.git") || !strings.Contains(res.Output, "moved it aside") {
		t.Errorf("the output does not say the nested repository was moved aside:\n%s", res.Output)
	}
	for _, dir := range []string{ws, filepath.Join(ws, "src", "nested"), filepath.Join(ws, "src")} {
		st := git(dir, "status")
		ci := git(dir, "commit", "--allow-empty", "-qm", "after")
		if _, err := os.Stat(mark); err == nil {
			t.Fatalf("an unconfined git in %s ran what the confined command planted\ncommand:\n%s\ngit status:\n%s\ngit commit:\n%s", dir, res.Output, st, ci)
		}
	}
}
