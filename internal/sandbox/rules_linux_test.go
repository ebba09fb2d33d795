package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// With Landlock alone, a protected path is cut out of the writable folders that hold it, and
// only of those: a read grant above it keeps everything readable, so it is one rule and its
// folder's other entries are not listed one by one (a workspace in a folder of many entries
// made every spawn list them all).
func TestProtectedPathsSplitOnlyWriteGrants(t *testing.T) {
	root := t.TempDir()
	for i := range 50 {
		if err := os.Mkdir(filepath.Join(root, fmt.Sprintf("other%02d", i)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ws := filepath.Join(root, "ws")
	for _, d := range []string{"src", ".git/hooks"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p := &Policy{Read: []string{root}, Write: []string{ws}, Protect: []string{filepath.Join(ws, ".git", "hooks")}}
	gs := plan(p, true)
	access := map[string][]string{}
	for _, g := range gs {
		access[g.path] = append(access[g.path], fmt.Sprint(g.access))
	}
	if len(access[root]) != 1 {
		t.Fatalf("the read grant on %s: %v", root, access[root])
	}
	if _, ok := access[filepath.Join(root, "other07")]; ok {
		t.Fatalf("a folder beside the workspace got a rule of its own: the read grant was split\n%v", grantedPaths(gs))
	}
	// The workspace's write grant is split around .git/hooks: src and .git's other entries
	// writable, .git itself and the hooks folder only readable.
	hooks := filepath.Join(ws, ".git", "hooks")
	for _, g := range gs {
		if g.access&^accessRead != 0 && (g.path == hooks || g.path == filepath.Join(ws, ".git") || g.path == ws) {
			t.Errorf("%s may be written (%v): the protected path could be replaced", g.path, g.access)
		}
	}
	if !slices.Contains(grantedPaths(gs), filepath.Join(ws, "src")) {
		t.Errorf("src lost its write grant: %v", grantedPaths(gs))
	}
}
