package sandbox_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/toolsd/toolsd/internal/sandbox"
)

// A stamp holds while what it saw is there; not once a protected entry is another file,
// even one of the same inode number; and not once a folder whose entries Landlock's grants
// list changed, even in the tick of the kernel's coarse clock of the change before it.
func TestStamp(t *testing.T) {
	ws := t.TempDir()
	for _, d := range []string{".git", "src", ".vscode"} {
		if err := os.Mkdir(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p := sandbox.Build(sandbox.Options{Workspace: ws, TempDir: t.TempDir(), MaxProcs: 256})

	// Taken right after the folders were made: it waits out the clock's grain, and holds.
	s := sandbox.TakeStamp(p)
	if !s.Holds(sandbox.ModeNamespaces) || !s.Holds(sandbox.ModeLandlock) {
		t.Fatal("a stamp does not hold with nothing changed")
	}

	// A file made at the workspace's top right after the stamp: its change time must differ
	// from the one the stamp saw (had the stamp not waited, the same tick of the coarse
	// clock could keep it; kernels with multigrain timestamps, 6.13 and later, tell the two
	// apart themselves, so there this holds either way).
	if err := os.WriteFile(filepath.Join(ws, "old"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s = sandbox.TakeStamp(p)
	if err := os.WriteFile(filepath.Join(ws, "new"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if s.Holds(sandbox.ModeLandlock) {
		t.Error("the stamp holds with an entry made at the workspace's top since")
	}

	// .vscode made again as a link: on ext4 the link gets the folder's inode number.
	s = sandbox.TakeStamp(p)
	vs := filepath.Join(ws, ".vscode")
	if err := os.Remove(vs); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("src", vs); err != nil {
		t.Fatal(err)
	}
	if s.Holds(sandbox.ModeNamespaces) {
		t.Error("the stamp holds with .vscode replaced by a link")
	}
}
