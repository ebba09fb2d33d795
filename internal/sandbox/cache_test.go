package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestWorkspaceCache: two workspaces get two caches (and a confined build's variables point
// into its own); the same workspace, by any path that leads to it, gets the same one; the
// caches of workspaces gone or long unused are removed, and nothing else.
func TestWorkspaceCache(t *testing.T) {
	root := filepath.Join(t.TempDir(), "sandbox")
	base := t.TempDir()
	a, b := filepath.Join(base, "a"), filepath.Join(base, "b")
	for _, d := range []string{a, b} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(a, link); err != nil {
		t.Fatal(err)
	}
	// What the old layout left: one cache for everyone (nothing reads it any more).
	if err := os.MkdirAll(filepath.Join(root, "go-build", "ab"), 0o700); err != nil {
		t.Fatal(err)
	}
	ca, err := WorkspaceCache(root, a)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := WorkspaceCache(root, b)
	if err != nil {
		t.Fatal(err)
	}
	if ca == cb || filepath.Dir(ca) != root || filepath.Dir(cb) != root {
		t.Fatalf("caches %s and %s: want two folders of %s", ca, cb, root)
	}
	if cl, _ := WorkspaceCache(root, link); cl != ca {
		t.Errorf("the workspace by a symlink got %s, by its real path %s", cl, ca)
	}
	if _, err := os.Stat(filepath.Join(root, "go-build", "ab")); err != nil {
		t.Errorf("the shared cache of old, which an older toolsd may still use, was removed (%v)", err)
	}
	for ws, c := range map[string]string{a: ca, b: cb} {
		p := Build(Options{Workspace: ws, TempDir: t.TempDir(), CacheDir: c})
		if !slices.Contains(p.Env, "GOCACHE="+filepath.Join(real(c), "go-build")) || !slices.Contains(p.Write, real(c)) {
			t.Errorf("policy of %s: env %v, write %v: want its own cache %s", ws, p.Env, p.Write, c)
		}
		for _, e := range p.Env {
			other := cb
			if c == cb {
				other = ca
			}
			if strings.Contains(e, filepath.Base(other)) {
				t.Errorf("policy of %s names the other workspace's cache: %s", ws, e)
			}
		}
	}
	// b not opened for longer than CacheMaxAge: the next open of a removes it.
	old := time.Now().Add(-CacheMaxAge - time.Hour)
	if err := os.Chtimes(cb, old, old); err != nil {
		t.Fatal(err)
	}
	if _, err := WorkspaceCache(root, a); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cb); !os.IsNotExist(err) {
		t.Errorf("the cache of a workspace unused for %v is still there (%v)", CacheMaxAge, err)
	}
	if _, err := os.Stat(ca); err != nil {
		t.Errorf("the workspace's own cache is gone: %v", err)
	}
	// A workspace that is gone: its cache goes with the next open of another.
	cb, _ = WorkspaceCache(root, b)
	if err := os.Remove(b); err != nil {
		t.Fatal(err)
	}
	if _, err := WorkspaceCache(root, a); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cb); !os.IsNotExist(err) {
		t.Errorf("the cache of a workspace that is gone is still there (%v)", err)
	}
	if _, err := os.Stat(cb + recordSuffix); !os.IsNotExist(err) {
		t.Errorf("the record of a cache that is gone is still there (%v)", err)
	}
}
