package sandbox_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/toolsd/toolsd/internal/sandbox"
)

// gitAttack is a confined command that tries to change what an unconfined git in the
// workspace runs later: every planted command touches $MARK.
type gitAttack struct {
	name   string
	script string
	// in are the folders (relative to the workspace) where the unconfined git runs after
	// the attack: the workspace, and a nested repository an editor would find.
	in []string
}

// plant makes, in the folder named by the shell expression dir, a copy of the workspace's
// git folder whose configuration and hooks run `touch $MARK`.
func plant(dir string) string {
	return `cp -r .git ` + dir + ` 2>/dev/null || { mkdir -p ` + dir + ` && cp -r .git/. ` + dir + `/; }
printf '[core]\n\tfsmonitor = touch %s\n\thooksPath = %s\n' "$MARK" "$(cd ` + dir + ` && pwd)/hooks" >> ` + dir + `/config
mkdir -p ` + dir + `/hooks && printf '#!/bin/sh\ntouch %s\n' "$MARK" > ` + dir + `/hooks/pre-commit && chmod +x ` + dir + `/hooks/pre-commit
`
}

var gitAttacks = []gitAttack{
	{"commondir to a planted folder", plant("planted") + `echo ../planted > .git/commondir`, []string{"."}},
	{"the git folder renamed and replaced", plant("planted") + `mv .git old-git && mv planted .git`, []string{"."}},
	{"the git folder replaced by a link to one in the temp folder", plant(`"$TMPDIR/evil"`) + `mv .git old-git; rm -rf .git; echo "gitdir: $TMPDIR/evil" > .git`, []string{"."}},
	{"a hooks folder planted beside the git folder", `mkdir -p .git/hooks2 && printf '#!/bin/sh\ntouch %s\n' "$MARK" > .git/hooks2/pre-commit && chmod +x .git/hooks2/pre-commit && mv .git/hooks .git/hooks-old; mv .git/hooks2 .git/hooks; rmdir .git/hooks 2>/dev/null; mv .git/hooks2 .git/hooks`, []string{"."}},
	{"a nested repository", `mkdir -p src/sub && cd src/sub && git init -q && ` + plant(".git-planted") + `rm -rf .git && mv .git-planted .git`, []string{".", "src/sub"}},
	{"a nested repository at depth, as a git file", `mkdir -p src/a/b/c && ` + plant(`"$TMPDIR/deep"`) + `echo "gitdir: $TMPDIR/deep" > src/a/b/c/.git`, []string{".", "src/a/b/c"}},
	{"a nested repository made by git init", `git init -q src/new && printf '[core]\n\tfsmonitor = touch %s\n' "$MARK" >> src/new/.git/config`, []string{".", "src/new"}},
	{"a nested repository, made in the temp folder and moved in", `git init -q "$TMPDIR/made" && printf '[core]\n\tfsmonitor = touch %s\n' "$MARK" >> "$TMPDIR/made/.git/config" && mv "$TMPDIR/made/.git" src/.git`, []string{".", "src"}},
	{"a submodule's configuration", `printf '[core]\n\tfsmonitor = touch %s\n' "$MARK" >> .git/modules/mod/config; mkdir -p .git/modules/mod/hooks; printf '#!/bin/sh\ntouch %s\n' "$MARK" > .git/modules/mod/hooks/pre-commit; chmod +x .git/modules/mod/hooks/pre-commit`, []string{".", "mod"}},
	{"a submodule's git file pointed elsewhere", plant(`"$TMPDIR/modevil"`) + `echo "gitdir: $TMPDIR/modevil" > mod/.git`, []string{".", "mod"}},
	{"a linked worktree's configuration", `mkdir -p .git/worktrees/wt && echo ../.. > .git/worktrees/wt/commondir && printf '[core]\n\tfsmonitor = touch %s\n' "$MARK" > .git/worktrees/wt/config.worktree; git config extensions.worktreeConfig true`, []string{"."}},
	{"a submodule's git file removed and made again", plant(`"$TMPDIR/modevil"`) + `rm -f mod/.git; echo "gitdir: $TMPDIR/modevil" > mod/.git`, []string{".", "mod"}},
	{"a submodule's git file removed and made again as a link", plant(`"$TMPDIR/modevil"`) + `rm -f mod/.git; ln -s "$TMPDIR/modevil" mod/.git`, []string{".", "mod"}},
	{"the git folder removed and made again as a link", plant(`"$TMPDIR/evil"`) + `rm -rf .git; ln -s "$TMPDIR/evil" .git`, []string{"."}},
	{"objects from elsewhere", `mkdir -p .git/objects/info && echo "$TMPDIR/objects" > .git/objects/info/alternates`, []string{"."}},
}

// gitEnv is the environment of the test's own (unconfined) git: no user or system
// configuration but what it sets.
func gitEnv(home string) []string {
	return []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
		"GIT_ALLOW_PROTOCOL=file"}
}

func git(t *testing.T, dir, home string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = gitEnv(home)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func mustGit(t *testing.T, dir, home string, args ...string) {
	t.Helper()
	if out, err := git(t, dir, home, args...); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// repo makes a fresh git workspace in w, with a commit and a submodule "mod", and the policy
// a confined command there gets.
func (w *world) repo(t *testing.T, name string) (string, *sandbox.Policy) {
	t.Helper()
	ws := filepath.Join(filepath.Dir(w.ws), "repos", name)
	lib := ws + "-lib"
	for _, d := range []string{ws, lib} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		mustGit(t, d, w.home, "init", "-q")
		if err := os.MkdirAll(filepath.Join(d, "src"), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"f.txt", "src/g.txt"} {
			if err := os.WriteFile(filepath.Join(d, f), []byte("one\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		mustGit(t, d, w.home, "add", ".")
		mustGit(t, d, w.home, "commit", "-qm", "one")
	}
	mustGit(t, ws, w.home, "-c", "protocol.file.allow=always", "submodule", "add", "-q", lib, "mod")
	mustGit(t, ws, w.home, "commit", "-qm", "mod")
	p := sandbox.Build(sandbox.Options{Workspace: ws, Home: w.home, TempDir: w.tmp, Private: []string{w.private}, MaxProcs: 64})
	p.LandlockOnly = w.policy.LandlockOnly
	return ws, p
}

// TestGitRunsNothingPlanted: no confined command can change what an unconfined git in the
// workspace runs: after each attack, the person's (or the editor's) git status and git
// commit, in the workspace and in the nested repository the attack made, run nothing it
// planted. In both modes.
func TestGitRunsNothingPlanted(t *testing.T) {
	if runtime.GOOS != "linux" || !sandbox.Probe("").Available() {
		t.Skip("the kernel offers no Landlock")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	for _, landlockOnly := range []bool{false, true} {
		t.Run(modeName(landlockOnly), func(t *testing.T) {
			runGitAttacks(t, newWorld(t, os.Getuid(), landlockOnly, ""))
		})
	}
}

// runGitAttacks runs every git attack in w, each in a repository of its own, and after each
// a real unconfined git status and git commit where an editor or the person would run them.
func runGitAttacks(t *testing.T, w *world) { runGitAttacksWith(t, w, nil) }

// runGitAttacksWith is runGitAttacks with, when journal is set, the journal it gives for each
// repository as the policy's (the daemon's look, not the guard's).
func runGitAttacksWith(t *testing.T, w *world, journal func(t *testing.T, ws string) sandbox.Journal) {
	for i, a := range gitAttacks {
		t.Run(strings.ReplaceAll(a.name, " ", "_"), func(t *testing.T) {
			ws, p := w.repo(t, fmt.Sprint(i))
			if journal != nil {
				p.Journal = journal(t, ws)
			}
			w.attack(t, ws, p, a, fmt.Sprintf("ran-%s-%d", w.mode, i))
		})
	}
}

// attack runs a in the workspace ws with the policy p, then a real unconfined git status and
// git commit where an editor or the person would run them, and fails if they ran what it
// planted (the file mark in w.out).
func (w *world) attack(t *testing.T, ws string, p *sandbox.Policy, a gitAttack, mark string) {
	t.Helper()
	mark = filepath.Join(w.out, mark)
	out, _ := w.runIn(t, ws, p, a.script, "MARK="+mark)
	if _, err := os.Stat(mark); err == nil {
		t.Fatalf("the confined command itself made the mark (the test is wrong)\n%s", out)
	}
	for _, dir := range a.in {
		d := filepath.Join(ws, dir)
		if _, err := os.Stat(d); err != nil {
			continue
		}
		st, _ := git(t, d, w.home, "status")
		ci, _ := git(t, d, w.home, "commit", "--allow-empty", "-qm", "after")
		if _, err := os.Stat(mark); err == nil {
			t.Errorf("an unconfined git in %s ran what the confined command planted\nconfined:\n%s\ngit status:\n%s\ngit commit:\n%s", dir, out, st, ci)
			_ = os.Remove(mark)
		}
	}
}

// TestConfinedGit: which git commands work confined. Reading ones do; those that change the
// repository (add, commit) are refused, and what the model reads says the git folder is
// read-only in the sandbox, so that the daemon offers to run them outside it.
func TestConfinedGit(t *testing.T) {
	if runtime.GOOS != "linux" || !sandbox.Probe("").Available() {
		t.Skip("the kernel offers no Landlock")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	for _, landlockOnly := range []bool{false, true} {
		t.Run(modeName(landlockOnly), func(t *testing.T) {
			w := newWorld(t, os.Getuid(), landlockOnly, "")
			ws, p := w.repo(t, "ordinary")
			if err := os.WriteFile(filepath.Join(ws, "f.txt"), []byte("two\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, c := range []string{"git status", "git diff", "git log --oneline", "git diff --stat HEAD", "git show HEAD", "git submodule status", "git ls-files", "git rev-parse HEAD", "git blame f.txt"} {
				if out, code := w.runIn(t, ws, p, c+" </dev/null"); code != 0 {
					t.Errorf("%s: exit %d confined:\n%s", c, code, out)
				}
			}
			for _, c := range []string{"git add f.txt", "git commit -qam two"} {
				out, code := w.runIn(t, ws, p, c)
				if code == 0 {
					t.Errorf("%s ran confined: the git folder was written\n%s", c, out)
					continue
				}
				why := strings.Join(sandbox.Explain(p, w.modeOf(landlockOnly), ws, out, nil), "; ")
				if !strings.Contains(why, "read-only in the sandbox") || !strings.Contains(why, ".git") {
					t.Errorf("%s: the model reads %q for\n%s", c, why, out)
				}
			}
		})
	}
}

// TestProtectedEntriesMovedAside: a protected settings entry a confined command makes at the
// workspace's top level (the editor's folder, direnv's script) is refused (Landlock: the top
// level takes no new entries) or moved aside once the command ended, and the output says so.
func TestProtectedEntriesMovedAside(t *testing.T) {
	if runtime.GOOS != "linux" || !sandbox.Probe("").Available() {
		t.Skip("the kernel offers no Landlock")
	}
	for _, landlockOnly := range []bool{false, true} {
		t.Run(modeName(landlockOnly), func(t *testing.T) {
			w := newWorld(t, os.Getuid(), landlockOnly, "")
			out, _ := w.run(t, `mkdir -p .vscode && echo '{"git.path": "/tmp/evil"}' > .vscode/settings.json; echo 'touch /tmp/evil' > .envrc; git init -q src/nested`)
			for _, name := range []string{".vscode", ".envrc", "src/nested/.git"} {
				if _, err := os.Lstat(filepath.Join(w.ws, name)); err == nil {
					t.Errorf("%s is in the workspace after the command:\n%s", name, out)
				}
			}
			if _, err := os.Stat(filepath.Join(w.ws, "src/nested/.git"+sandbox.Quarantine)); err != nil || !strings.Contains(out, "moved it aside") {
				t.Errorf("the nested repository was not moved aside, or the output does not say so (%v):\n%s", err, out)
			}
			if !landlockOnly && !strings.Contains(out, ".vscode"+sandbox.Quarantine) {
				t.Errorf("the output does not say where .vscode went:\n%s", out)
			}
		})
	}
}

func (w *world) modeOf(landlockOnly bool) string {
	if landlockOnly {
		return sandbox.ModeLandlock
	}
	return sandbox.ModeNamespaces
}
