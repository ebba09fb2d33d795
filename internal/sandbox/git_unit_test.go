package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestProtectedPaths: Build protects the top-level entries of internal/protect and the whole
// git folder; for a workspace whose .git is a git file, the git folder it names and that
// one's common folder when a command could write them; a .git above the workspace in a
// writable folder and git's user configuration in a writable home are protected when they
// exist and watched when they do not.
func TestProtectedPaths(t *testing.T) {
	root := real(t.TempDir())
	tmp := filepath.Join(root, "tmp")
	main := filepath.Join(tmp, "main")
	ws := filepath.Join(tmp, "wt", "ws")
	home := filepath.Join(root, "home")
	for _, d := range []string{filepath.Join(main, ".git", "worktrees", "ws"), ws, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(ws, ".git"), []byte("gitdir: "+filepath.Join(main, ".git", "worktrees", "ws")+"\n"), 0o644))
	must(os.WriteFile(filepath.Join(main, ".git", "worktrees", "ws", "commondir"), []byte("../..\n"), 0o644))
	must(os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[user]\n"), 0o644))

	p := Build(Options{Workspace: ws, Home: home, TempDir: tmp, Write: []string{home}})
	for _, want := range []string{
		filepath.Join(ws, ".git"), filepath.Join(ws, ".toolsd"), filepath.Join(ws, ".vscode"), filepath.Join(ws, ".envrc"),
		filepath.Join(main, ".git", "worktrees", "ws"), filepath.Join(main, ".git"), filepath.Join(home, ".gitconfig"),
	} {
		if !slices.Contains(p.Protect, want) {
			t.Errorf("%s is not protected: %v", want, p.Protect)
		}
	}
	for _, want := range []string{filepath.Join(tmp, "wt", ".git"), filepath.Join(tmp, ".git"), filepath.Join(home, ".config", "git")} {
		if !slices.Contains(p.Watch, want) {
			t.Errorf("%s is not watched: %v", want, p.Watch)
		}
	}
	if slices.Contains(p.Watch, filepath.Join(root, ".git")) || slices.Contains(p.Protect, filepath.Join(root, ".git")) {
		t.Errorf("a folder no command may write is watched: %v %v", p.Protect, p.Watch)
	}
	if p.MayWrite(filepath.Join(main, ".git", "config")) || p.MayWrite(filepath.Join(ws, ".git")) || !p.MayWrite(filepath.Join(ws, "src.go")) {
		t.Errorf("MayWrite: the git folders must be read-only, the workspace's files writable")
	}
}
