package sandbox_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolsd/toolsd/internal/sandbox"
)

// A stamp holds while what it saw is there, and not once a protected entry is another file,
// even one of the same inode number; and one that saw a time within the clock's grain of
// its taking never holds, since a change in the same tick would leave that time equal.
func TestStamp(t *testing.T) {
	ws := t.TempDir()
	for _, d := range []string{".git", "src", ".vscode"} {
		if err := os.Mkdir(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p := sandbox.Build(sandbox.Options{Workspace: ws, TempDir: t.TempDir(), MaxProcs: 256})

	if sandbox.TakeStamp(p).Holds(sandbox.ModeNamespaces) {
		t.Error("a stamp taken right after the workspace was made holds")
	}

	old := time.Now().Add(-time.Hour)
	aged := func() {
		for _, d := range []string{"", ".git", "src"} {
			if err := os.Chtimes(filepath.Join(ws, d), old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Birth and change times cannot be set back: wait out the grain once, as a person would.
	aged()
	time.Sleep(sandbox.RacyGrain)
	s := sandbox.TakeStamp(p)
	if !s.Holds(sandbox.ModeNamespaces) || !s.Holds(sandbox.ModeLandlock) {
		t.Fatal("a stamp does not hold with nothing changed")
	}

	// .vscode made again as a link: on ext4 the link often gets the folder's inode number.
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
