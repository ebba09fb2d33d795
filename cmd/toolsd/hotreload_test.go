//go:build unix

package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolsd/toolsd/protocol"
)

// TestProjectToolHotReload adds, edits, breaks, fixes, renames and deletes a project tool
// while the daemon runs; every step yields the right tools/changed and tools/resolve, and a
// call to the new tool works without a restart.
func TestProjectToolHotReload(t *testing.T) {
	e := newEnv(t, envOpts{})
	dir := filepath.Join(e.ws, ".toolsd", "tool") // does not exist when the daemon starts
	write := func(name, content string) {
		t.Helper()
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		// An editor's atomic save: write a temporary file, rename it over the target.
		tmp := filepath.Join(dir, "."+name+".tmp")
		if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	changed := func(mark int, pred func(protocol.ChangedParams) bool) protocol.ChangedParams {
		t.Helper()
		raw, _, err := e.d.WaitFor(e.ctx, mark, "tools/changed", func(r json.RawMessage) bool {
			var c protocol.ChangedParams
			return json.Unmarshal(r, &c) == nil && pred(c)
		})
		if err != nil {
			t.Fatal(err)
		}
		var c protocol.ChangedParams
		_ = json.Unmarshal(raw, &c)
		return c
	}
	resolve := func() map[string]protocol.ToolInfo {
		t.Helper()
		var rr protocol.ResolveResult
		if err := e.d.Call(e.ctx, "tools/resolve", protocol.ResolveParams{SessionID: "s1"}, &rr); err != nil {
			t.Fatal(err)
		}
		m := map[string]protocol.ToolInfo{}
		for _, x := range rr.Tools {
			m[x.ID] = x
		}
		return m
	}
	def := func(desc string) string {
		return `{"description": "` + desc + `", "parameters": {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}, "command": ["cat"]}`
	}

	mark := e.d.Mark()
	write("echo_args.json", def("Echo the arguments."))
	changed(mark, func(c protocol.ChangedParams) bool { return slices.Contains(c.Added, "echo_args") })
	if tl, ok := resolve()["echo_args"]; !ok || tl.Source != "project" {
		t.Fatalf("echo_args not resolved as a project tool: %+v", tl)
	}
	mark = e.d.Mark()
	_, wait := e.start(protocol.ExecuteParams{CallID: "p1", Tool: "echo_args", Args: args("word", "bonjour")})
	ask := e.waitAsk(mark, "p1")
	if ask.Permission != "echo_args" {
		t.Fatalf("project tool asked under %q", ask.Permission)
	}
	if err := e.reply(ask.ID, "once", ""); err != nil {
		t.Fatal(err)
	}
	res, err := wait()
	if err != nil || res.Status != "completed" || !strings.Contains(res.Output, `"bonjour"`) {
		t.Fatalf("project tool call: %+v %v", res, err)
	}
	// Invalid arguments never reach the command.
	res, err = e.execute(protocol.ExecuteParams{CallID: "p2", Tool: "echo_args", Args: args("word", 5)})
	if err != nil || res.Status != "error" || !strings.Contains(res.Error, "/word") {
		t.Fatalf("invalid args: %+v %v", res, err)
	}

	mark = e.d.Mark()
	write("echo_args.json", def("Echo the arguments back."))
	changed(mark, func(c protocol.ChangedParams) bool { return slices.Contains(c.Changed, "echo_args") })
	if resolve()["echo_args"].Description != "Echo the arguments back." {
		t.Fatal("edit not picked up")
	}

	mark = e.d.Mark()
	write("echo_args.json", `{"description": "broken", "parameters": {"type": "object"`)
	c := changed(mark, func(c protocol.ChangedParams) bool { return len(c.Diagnostics) > 0 })
	if !strings.HasSuffix(c.Diagnostics[0].Path, "echo_args.json") || c.Diagnostics[0].Line == 0 {
		t.Fatalf("diagnostic lacks file or line: %+v", c.Diagnostics)
	}
	if _, ok := resolve()["read"]; !ok {
		t.Fatal("a broken definition broke the built-ins")
	}

	mark = e.d.Mark()
	write("echo_args.json", def("Fixed."))
	changed(mark, func(c protocol.ChangedParams) bool { return len(c.Diagnostics) == 0 })
	if resolve()["echo_args"].Description != "Fixed." {
		t.Fatal("fix not picked up")
	}

	mark = e.d.Mark()
	if err := os.Rename(filepath.Join(dir, "echo_args.json"), filepath.Join(dir, "say.json")); err != nil {
		t.Fatal(err)
	}
	c = changed(mark, func(c protocol.ChangedParams) bool { return slices.Contains(c.Added, "say") })
	if !slices.Contains(c.Removed, "echo_args") {
		t.Fatalf("rename: %+v", c)
	}

	mark = e.d.Mark()
	if err := os.Remove(filepath.Join(dir, "say.json")); err != nil {
		t.Fatal(err)
	}
	changed(mark, func(c protocol.ChangedParams) bool { return slices.Contains(c.Removed, "say") })
	if _, ok := resolve()["say"]; ok {
		t.Fatal("deleted tool still resolved")
	}
}
