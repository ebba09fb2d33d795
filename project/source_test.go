//go:build unix

package project_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolsd/toolsd/project"
	"github.com/toolsd/toolsd/protocol"
	"github.com/toolsd/toolsd/registry"
)

type changeEvent struct {
	ch    registry.Change
	diags []protocol.Diagnostic
}

func startSource(t *testing.T, opts project.SourceOptions) (*project.Source, *registry.Registry, chan changeEvent) {
	t.Helper()
	reg := registry.New()
	reg.SetSource(registry.SourceBuiltin, []*registry.Tool{{ID: "read", Description: "Read.", Source: registry.SourceBuiltin}}, nil)
	events := make(chan changeEvent, 100)
	opts.OnChange = func(ch registry.Change, d []protocol.Diagnostic) { events <- changeEvent{ch, d} }
	opts.Builtins = []string{"read"}
	if opts.Debounce == 0 {
		opts.Debounce = 20 * time.Millisecond
	}
	s, err := project.NewSource(reg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, reg, events
}

func next(t *testing.T, events chan changeEvent) changeEvent {
	t.Helper()
	select {
	case e := <-events:
		return e
	case <-time.After(5 * time.Second):
		t.Fatal("no tools/changed within 5s")
	}
	return changeEvent{}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	// Save as editors do: write a temporary file, rename it over the target.
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func def(desc string) string {
	return fmt.Sprintf(`{"description": %q, "command": ["cat"], "parameters": {"type": "object", "properties": {"x": {"type": "string"}}}}`, desc)
}

func ids(reg *registry.Registry) []string {
	var out []string
	for _, e := range reg.Catalog().Entries() {
		out = append(out, e.ID)
	}
	return out
}

// TestLifecycle drives a definition through add, edit, break, fix, rename and delete, with
// real files and fsnotify, starting before the .toolsd folder exists.
func TestLifecycle(t *testing.T) {
	ws := t.TempDir()
	_, reg, events := startSource(t, project.SourceOptions{Options: project.Options{Workspace: ws}})
	dir := filepath.Join(ws, ".toolsd", "tool")
	a := filepath.Join(dir, "greet.json")
	b := filepath.Join(dir, "welcome.json")
	steps := []struct {
		name        string
		act         func()
		want        registry.Change
		wantDiag    string // a diagnostic message must contain it; "" means none at all
		wantDiagPos [2]int
		wantIDs     []string
	}{
		{
			name:    "add under a .toolsd created after start",
			act:     func() { writeFile(t, a, def("Greet.")) },
			want:    registry.Change{Added: []string{"greet"}},
			wantIDs: []string{"greet", "read"},
		},
		{
			name:    "edit",
			act:     func() { writeFile(t, a, def("Greet someone.")) },
			want:    registry.Change{Changed: []string{"greet"}},
			wantIDs: []string{"greet", "read"},
		},
		{
			name:        "break",
			act:         func() { writeFile(t, a, "{\n  \"description\": \"Greet.\",\n  \"command\": [\"cat\"],,\n}") },
			want:        registry.Change{Removed: []string{"greet"}},
			wantDiag:    "bad JSON",
			wantDiagPos: [2]int{3, 22},
			wantIDs:     []string{"read"},
		},
		{
			name:    "fix",
			act:     func() { writeFile(t, a, def("Greet.")) },
			want:    registry.Change{Added: []string{"greet"}},
			wantIDs: []string{"greet", "read"},
		},
		{
			name: "rename",
			act: func() {
				if err := os.Rename(a, b); err != nil {
					t.Fatal(err)
				}
			},
			want:    registry.Change{Added: []string{"welcome"}, Removed: []string{"greet"}},
			wantIDs: []string{"read", "welcome"},
		},
		{
			name:        "shadow a built-in",
			act:         func() { writeFile(t, filepath.Join(dir, "read.json"), def("Mine.")) },
			wantDiag:    "would shadow the built-in",
			wantIDs:     []string{"read", "welcome"},
			wantDiagPos: [2]int{0, 0},
		},
		{
			name: "delete",
			act: func() {
				for _, p := range []string{b, filepath.Join(dir, "read.json")} {
					if err := os.Remove(p); err != nil {
						t.Fatal(err)
					}
				}
			},
			want:    registry.Change{Removed: []string{"welcome"}},
			wantIDs: []string{"read"},
		},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			st.act()
			e := next(t, events)
			norm := func(s []string) []string { return append([]string{}, s...) }
			if !slices.Equal(norm(e.ch.Added), norm(st.want.Added)) || !slices.Equal(norm(e.ch.Removed), norm(st.want.Removed)) || !slices.Equal(norm(e.ch.Changed), norm(st.want.Changed)) {
				t.Errorf("change = %+v, want %+v", e.ch, st.want)
			}
			if st.wantDiag == "" {
				if len(e.diags) != 0 {
					t.Errorf("diagnostics = %+v, want none", e.diags)
				}
			} else {
				found := false
				for _, d := range e.diags {
					if strings.Contains(d.Message, st.wantDiag) {
						found = true
						if st.wantDiagPos != [2]int{d.Line, d.Column} {
							t.Errorf("diagnostic at %d:%d, want %v", d.Line, d.Column, st.wantDiagPos)
						}
					}
				}
				if !found {
					t.Errorf("diagnostics %+v do not mention %q", e.diags, st.wantDiag)
				}
			}
			if got := ids(reg); !slices.Equal(got, st.wantIDs) {
				t.Errorf("catalogue = %v, want %v", got, st.wantIDs)
			}
		})
	}
}

// TestRunningCallKeepsItsDefinition edits a definition while a call of it runs.
func TestRunningCallKeepsItsDefinition(t *testing.T) {
	ws := t.TempDir()
	p := filepath.Join(ws, ".toolsd", "tool", "slow.json")
	writeFile(t, p, `{"description": "v1", "command": ["sh", "-c", "read line; echo v1"]}`)
	_, reg, events := startSource(t, project.SourceOptions{Options: project.Options{Workspace: ws}})
	e, ok := reg.Catalog().Lookup("slow")
	if !ok {
		t.Fatal("slow not loaded")
	}
	writeFile(t, p, `{"description": "v2", "command": ["sh", "-c", "echo v2"]}`)
	if ch := next(t, events).ch; !slices.Equal(ch.Changed, []string{"slow"}) {
		t.Fatalf("change = %+v", ch)
	}
	var fc fakeCall
	// e is the entry the call started with: it still runs v1.
	if _, err := e.Execute(context.Background(), fc.call(), json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	if fc.out.String() != "v1\n" {
		t.Errorf("output %q, want v1", fc.out.String())
	}
	if e2, _ := reg.Catalog().Lookup("slow"); e2.Description != "v2" {
		t.Errorf("the catalogue holds %q, want v2", e2.Description)
	}
}

func TestLoaderPrecedence(t *testing.T) {
	root := t.TempDir()
	ws, user := filepath.Join(root, "ws"), filepath.Join(root, "user")
	writeTree(t, root, `
-- ws/.toolsd/tool/a.json --
{"description": "workspace a", "command": ["x"]}
-- ws/.toolsd/tools/a.json --
{"description": "workspace tools/a", "command": ["x"]}
-- ws/.toolsd/tools/b.json --
{"description": "workspace b", "command": ["x"]}
-- ws/.toolsd/tool/bad name.json --
{}
-- ws/.toolsd/tool/.hidden.json --
{}
-- ws/.toolsd/tool/helper.sh --
#!/bin/sh
-- user/tool/a.json --
{"description": "user a", "command": ["x"]}
-- user/tool/c.json --
{"description": "user c", "command": ["x"]}
`)
	tools, diags := project.NewLoader(project.Options{Workspace: ws, UserDir: user}).Load()
	got := map[string]string{}
	for _, tl := range tools {
		got[tl.ID] = tl.Description
	}
	want := map[string]string{"a": "workspace a", "b": "workspace b", "c": "user c"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("tools = %v, want %v", got, want)
	}
	var msgs []string
	for _, d := range diags {
		msgs = append(msgs, filepath.Base(d.Path)+": "+d.Message)
	}
	if len(diags) != 2 || !strings.Contains(msgs[1], "also defined in") || !strings.Contains(msgs[0], "not make a valid tool name") {
		t.Errorf("diagnostics = %q", msgs)
	}
}
