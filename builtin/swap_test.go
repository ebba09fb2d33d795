//go:build linux

package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toolsd/toolsd/registry"
)

// realTempDir is a new temporary folder by its real path.
func realTempDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestSearchSymlinkSwapStress swaps a folder of the workspace with a symlink to an outside
// folder, over and over, while grep, glob, list and read run on the workspace: nothing of
// the outside folder (file contents or names, which carry a marker) may ever show.
func TestSearchSymlinkSwapStress(t *testing.T) {
	const marker = "OUTSIDE-SECRET-5f1c2e"
	outside := realTempDir(t)
	mustWrite := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var tree strings.Builder
	for i := range 8 {
		// The same names inside and outside: a name listed inside and opened after the swap
		// would read the outside file.
		fmt.Fprintf(&tree, "-- d/f%d.txt --\nneedle inside %d\n-- d/sub/g%d.txt --\nneedle inside\n", i, i, i)
		mustWrite(filepath.Join(outside, fmt.Sprintf("f%d.txt", i)), "needle "+marker+"\n")
		mustWrite(filepath.Join(outside, "sub", fmt.Sprintf("g%d.txt", i)), "needle "+marker+"\n")
		mustWrite(filepath.Join(outside, fmt.Sprintf("%s-%d.txt", marker, i)), "needle "+marker+"\n")
	}
	e := newEnv(t, tree.String())
	e.asks.deny["external_directory"] = true
	link := filepath.Join(realTempDir(t), "link")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	if err := unix.Renameat2(unix.AT_FDCWD, e.path("d"), unix.AT_FDCWD, link, unix.RENAME_EXCHANGE); err != nil {
		t.Skipf("no RENAME_EXCHANGE here: %v", err)
	}
	stop := make(chan struct{})
	swapped := make(chan struct{})
	go func() {
		defer close(swapped)
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = unix.Renameat2(unix.AT_FDCWD, e.path("d"), unix.AT_FDCWD, link, unix.RENAME_EXCHANGE)
		}
	}()
	defer func() { close(stop); <-swapped }()

	calls := []struct {
		tool string
		args map[string]any
	}{
		{"grep", map[string]any{"pattern": "needle"}},
		{"grep", map[string]any{"pattern": "needle", "path": "d"}},
		{"grep", map[string]any{"pattern": "needle", "path": "d/f3.txt"}},
		{"glob", map[string]any{"pattern": "**/*.txt"}},
		{"glob", map[string]any{"pattern": "*", "path": "d"}},
		{"list", map[string]any{}},
		{"list", map[string]any{"path": "d"}},
		{"read", map[string]any{"filePath": "d"}},
		{"read", map[string]any{"filePath": "d/f3.txt"}},
	}
	raws := make([][]byte, len(calls))
	for i, c := range calls {
		raws[i], _ = json.Marshal(c.args)
	}
	deadline := time.Now().Add(3 * time.Second)
	n := 0
	for ; time.Now().Before(deadline); n++ {
		c := calls[n%len(calls)]
		res, err := e.tools[c.tool].Execute(context.Background(), e.call(c.tool), raws[n%len(calls)])
		var out string
		if res != nil {
			out = res.Output
		}
		if err != nil {
			out += "\nerror: " + err.Error()
		}
		if strings.Contains(out, marker) {
			t.Fatalf("call %d, %s %s showed the outside folder:\n%s", n, c.tool, raws[n%len(calls)], out)
		}
	}
	t.Logf("%d calls", n)
}

// TestWriteParentSwappedDuringAsk: while the person reads the ask, an existing parent of a
// new file is swapped for a symlink to an outside folder. write, edit and apply_patch then
// fail, and nothing is created outside: no folder, no file.
func TestWriteParentSwappedDuringAsk(t *testing.T) {
	for _, tc := range []struct {
		name, tool string
		args       map[string]any
	}{
		{"write", "write", map[string]any{"filePath": "a/new1/new2/f.txt", "content": "x\n"}},
		{"write into the parent", "write", map[string]any{"filePath": "a/f.txt", "content": "x\n"}},
		{"edit create", "edit", map[string]any{"filePath": "a/new1/f.txt", "oldString": "", "newString": "x\n"}},
		{"patch add", "apply_patch", map[string]any{"patchText": "*** Begin Patch\n*** Add File: a/new1/new2/f.txt\n+x\n*** End Patch"}},
		{"patch move", "apply_patch", map[string]any{"patchText": "*** Begin Patch\n*** Update File: keep.txt\n*** Move to: a/new1/moved.txt\n*** End Patch"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, "-- a/old.txt --\nold\n-- keep.txt --\nkeep\n")
			outside := realTempDir(t)
			call := e.call(tc.tool)
			call.Ask = func(ctx context.Context, req registry.AskRequest) error {
				if req.Permission != "edit" {
					return nil
				}
				if err := os.Rename(e.path("a"), e.path("a.moved")); err != nil {
					return err
				}
				return os.Symlink(outside, e.path("a"))
			}
			raw, _ := json.Marshal(tc.args)
			_, err := e.tools[tc.tool].Execute(context.Background(), call, raw)
			if err == nil {
				t.Fatal("the change went through a parent swapped for a symlink")
			}
			if !strings.Contains(err.Error(), "changed") {
				t.Errorf("err = %v, want it to say the path changed", err)
			}
			if ents, _ := os.ReadDir(outside); len(ents) > 0 {
				t.Fatalf("created outside: %v", ents)
			}
			if _, err := os.Stat(e.path("keep.txt")); err != nil {
				t.Errorf("the moved file is gone: %v", err)
			}
		})
	}
}
