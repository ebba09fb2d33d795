//go:build unix

package sandbox

import (
	"os"
	"path/filepath"
	"testing"
)

// The guard moves aside a .git in the folder it found it in, never through a link that
// replaced a folder on the way since (a confined process can swap one in while the guard
// looks): another repository's .git stays where it is.
func TestRenameAsideFollowsNoLink(t *testing.T) {
	root := t.TempDir()
	ws, other := filepath.Join(root, "ws"), filepath.Join(root, "other")
	for _, d := range []string{filepath.Join(ws, "src", ".git"), filepath.Join(other, ".git")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	got, err := renameAside(filepath.Join(ws, "src", ".git"))
	if err != nil || got != filepath.Join(ws, "src", ".git"+Quarantine) {
		t.Fatalf("renameAside: %q %v", got, err)
	}
	if err := os.MkdirAll(filepath.Join(ws, "src", ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := renameAside(filepath.Join(ws, "src", ".git")); err != nil || got != filepath.Join(ws, "src", ".git"+Quarantine+"-2") {
		t.Fatalf("the second renameAside: %q %v", got, err)
	}
	// src becomes a link to the other repository's folder.
	if err := os.Rename(filepath.Join(ws, "src"), filepath.Join(ws, "src.old")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, filepath.Join(ws, "src")); err != nil {
		t.Fatal(err)
	}
	if _, err := renameAside(filepath.Join(ws, "src", ".git")); err == nil {
		t.Error("renameAside went through a link")
	}
	if _, err := os.Stat(filepath.Join(other, ".git")); err != nil {
		t.Errorf("the other repository's .git was moved: %v", err)
	}
}
