package builtin

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolsd/toolsd/protocol"
	"github.com/toolsd/toolsd/registry"
)

var update = flag.Bool("update", false, "rewrite the golden schemas in testdata/schemas")

// TestSchemasGolden compares every tool's schema with testdata/schemas/<tool>.json.
func TestSchemasGolden(t *testing.T) {
	for _, tool := range Tools(nil) {
		t.Run(tool.ID, func(t *testing.T) {
			if _, err := registry.CompileSchema(tool.ID, tool.Parameters); err != nil {
				t.Fatal(err)
			}
			var v map[string]any
			if err := json.Unmarshal(tool.Parameters, &v); err != nil {
				t.Fatal(err)
			}
			if v["additionalProperties"] != false || v["type"] != "object" {
				t.Errorf("schema is not a closed object: %s", tool.Parameters)
			}
			var pretty bytes.Buffer
			if err := json.Indent(&pretty, tool.Parameters, "", "  "); err != nil {
				t.Fatal(err)
			}
			pretty.WriteByte('\n')
			path := filepath.Join("testdata", "schemas", tool.ID+".json")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, pretty.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./builtin -run TestSchemasGolden -update)", err)
			}
			if !bytes.Equal(want, pretty.Bytes()) {
				t.Errorf("schema of %s changed (run with -update if intended):\n%s", tool.ID, pretty.Bytes())
			}
		})
	}
}

func TestToolsContract(t *testing.T) {
	want := map[string]struct {
		perm     string
		readOnly bool
	}{
		"read": {"read", true}, "bash": {"bash", false},
		"write": {"edit", false}, "edit": {"edit", false}, "apply_patch": {"edit", false},
		"glob": {"glob", true}, "grep": {"grep", true}, "list": {"list", true},
		"webfetch": {"webfetch", false}, "todowrite": {"todowrite", true}, "todoread": {"todoread", true},
	}
	got := map[string]*registry.Tool{}
	for _, tool := range Tools(nil) {
		got[tool.ID] = tool
		w, ok := want[tool.ID]
		if !ok {
			t.Errorf("unexpected tool %s", tool.ID)
			continue
		}
		if tool.Source != registry.SourceBuiltin || tool.PermissionKey() != w.perm || tool.ReadOnly != w.readOnly {
			t.Errorf("%s: source %q permission %q readOnly %v, want builtin %q %v", tool.ID, tool.Source, tool.PermissionKey(), tool.ReadOnly, w.perm, w.readOnly)
		}
		if tool.Description == "" || tool.Execute == nil {
			t.Errorf("%s: no description or Execute", tool.ID)
		}
	}
	// The registry accepts them all.
	r := registry.New()
	r.SetSource(registry.SourceBuiltin, Tools(nil), nil)
	if d := r.Catalog().Diagnostics(); len(d) != 0 {
		t.Errorf("diagnostics: %+v", d)
	}

	offered := func(id string, m *protocol.Model) bool {
		tool, ok := got[id]
		if !ok {
			return false
		}
		return tool.Models == nil || tool.Models(m)
	}
	for _, tc := range []struct {
		m     *protocol.Model
		patch bool
	}{
		{nil, false},
		{&protocol.Model{ProviderID: "anthropic", ModelID: "claude-sonnet-4"}, false},
		{&protocol.Model{ProviderID: "openai", ModelID: "whatever"}, true},
		{&protocol.Model{ProviderID: "openrouter", ModelID: "openai/gpt-5"}, true},
		{&protocol.Model{ProviderID: "azure", ModelID: "o3-mini"}, true},
		{&protocol.Model{ProviderID: "x", ModelID: "gpt-5-codex"}, true},
	} {
		if _, ok := got["apply_patch"]; !ok {
			break
		}
		if offered("apply_patch", tc.m) != tc.patch || offered("edit", tc.m) == tc.patch || offered("write", tc.m) == tc.patch {
			t.Errorf("model %+v: apply_patch %v edit %v write %v", tc.m, offered("apply_patch", tc.m), offered("edit", tc.m), offered("write", tc.m))
		}
		if !offered("read", tc.m) || !offered("bash", tc.m) {
			t.Errorf("model %+v: read or bash not offered", tc.m)
		}
	}
	// Configurable.
	for _, tool := range Tools(&Options{UsePatch: func(*protocol.Model) bool { return true }}) {
		if tool.ID == "edit" && tool.Models(nil) {
			t.Errorf("UsePatch always: edit still offered")
		}
	}
}

// TestAlwaysIsExact: "always" answers remember the exact path (wildcards escaped), and
// external_directory the folder.
func TestAlwaysIsExact(t *testing.T) {
	e := newEnv(t, "-- a*b.txt --\nx\n")
	if _, err := e.run("read", map[string]any{"filePath": "a*b.txt"}); err != nil {
		t.Fatal(err)
	}
	r := e.asks.asked("read")
	if len(r) != 1 || r[0].Patterns[0] != "a*b.txt" || len(r[0].Always) != 1 || r[0].Always[0] != `a\*b.txt` {
		t.Fatalf("read ask %+v", r)
	}
	outside, _ := filepath.EvalSymlinks(t.TempDir())
	os.WriteFile(filepath.Join(outside, "f"), []byte("x\n"), 0o644)
	if _, err := e.run("read", map[string]any{"filePath": filepath.Join(outside, "f")}); err != nil {
		t.Fatal(err)
	}
	x := e.asks.asked("external_directory")
	if len(x) != 1 || x[0].Always[0] != filepath.ToSlash(outside)+"/*" {
		t.Fatalf("external ask %+v", x)
	}
}

// BenchmarkTools is the built-ins' construction, paid by every workspace's open (the
// daemon's spawn): their schemas are built then.
func BenchmarkTools(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		Tools(nil)
	}
}
