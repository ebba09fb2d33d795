//go:build unix

package project_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolsd/toolsd/internal/fsopen/fsopentest"
	"github.com/toolsd/toolsd/project"
	"github.com/toolsd/toolsd/protocol"
	"github.com/toolsd/toolsd/registry"
)

func load(t *testing.T, o project.Options) (tools []*registry.Tool, diags []protocol.Diagnostic) {
	t.Helper()
	fsopentest.Promptly(t, 10*time.Second, "Load", func() { tools, diags = project.NewLoader(o).Load() })
	return tools, diags
}

func saying(diags []protocol.Diagnostic, path, says string) bool {
	for _, d := range diags {
		if d.Path == path && d.Severity == "error" && strings.Contains(d.Message, says) {
			return true
		}
	}
	return false
}

// TestDefinitionKinds: a definition that is a FIFO, a link to /dev/zero, a folder, a socket,
// too large or a link to a FIFO is a diagnostic at once, in the workspace's folder and the
// user's, and the other definitions load.
func TestDefinitionKinds(t *testing.T) {
	for _, where := range []string{"ws/.toolsd/tool", "user/tools"} {
		for _, k := range fsopentest.Kinds(1 << 20) {
			t.Run(where+"/"+k.Name, func(t *testing.T) {
				root := t.TempDir()
				writeTree(t, root, "-- "+where+"/good.json --\n"+def("good")+"\n")
				bad := filepath.Join(root, where, "bad.json")
				k.Make(t, bad)
				tools, diags := load(t, project.Options{Workspace: filepath.Join(root, "ws"), UserDir: filepath.Join(root, "user")})
				if !saying(diags, bad, k.Says) {
					t.Fatalf("no diagnostic on %s saying %q: %+v", bad, k.Says, diags)
				}
				if len(tools) != 1 || tools[0].ID != "good" {
					t.Fatalf("tools %v, want good", tools)
				}
			})
		}
	}
}

// TestToolFolderKinds: a tool folder that is a FIFO, a link to one, a link to /dev/zero, a
// socket or a file is a diagnostic at once, and so is a folder of too many entries; the other
// folders load.
func TestToolFolderKinds(t *testing.T) {
	for _, k := range fsopentest.Kinds(1 << 20) {
		if k.Name == "folder" {
			continue
		}
		t.Run(k.Name, func(t *testing.T) {
			root := t.TempDir()
			writeTree(t, root, "-- user/tool/good.json --\n"+def("good")+"\n")
			bad := filepath.Join(root, "ws", ".toolsd", "tool")
			if err := os.MkdirAll(filepath.Dir(bad), 0o755); err != nil {
				t.Fatal(err)
			}
			k.Make(t, bad)
			tools, diags := load(t, project.Options{Workspace: filepath.Join(root, "ws"), UserDir: filepath.Join(root, "user")})
			if !saying(diags, bad, "not a folder") {
				t.Fatalf("no diagnostic on %s: %+v", bad, diags)
			}
			if len(tools) != 1 || tools[0].ID != "good" {
				t.Fatalf("tools %v, want good", tools)
			}
		})
	}
	t.Run("too many entries", func(t *testing.T) {
		root := t.TempDir()
		dir := filepath.Join(root, "ws", ".toolsd", "tool")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i := range 1001 {
			if err := os.WriteFile(filepath.Join(dir, "t"+strconv.Itoa(i)+".json"), []byte(def("x")), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		tools, diags := load(t, project.Options{Workspace: filepath.Join(root, "ws")})
		if len(tools) != 0 || !saying(diags, dir, "more than 1000 entries") {
			t.Fatalf("%d tools, diagnostics %+v", len(tools), diags)
		}
	})
}

// TestDefinitionBecomesFIFO: a definition replaced by a FIFO while the daemon runs is a
// diagnostic, not a reload that never ends.
func TestDefinitionBecomesFIFO(t *testing.T) {
	ws := t.TempDir()
	path := filepath.Join(ws, ".toolsd", "tool", "x.json")
	writeFile(t, path, def("x"))
	_, _, events := startSource(t, project.SourceOptions{Options: project.Options{Workspace: ws}})
	tmp := filepath.Join(filepath.Dir(path), ".new")
	fsopentest.Kinds(1 << 20)[0].Make(t, tmp) // fifo
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	for {
		e := next(t, events)
		if saying(e.diags, path, "a FIFO (named pipe), not a regular file") {
			return
		}
	}
}
