package builtin

import (
	"bytes"
	"context"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolsd/toolsd/registry"
)

const editTree = `
-- go.go --
package main

func main() {
	if x {
		println("a")
		println("b")
	}
}
-- dup.txt --
foo
bar
foo
baz
foo
-- crlf.txt --
one` + "\r\n" + `two` + "\r\n" + `three` + "\r\n" + `-- empty.txt --
-- ws.txt --
a   b    c
next
`

func TestEdit(t *testing.T) {
	tests := []struct {
		name  string
		setup func(e *env)
		args  map[string]any
		file  string // file to check afterwards
		want  string // its whole content
		out   []string
		err   []string
		match string
	}{
		{name: "exact", args: map[string]any{"filePath": "go.go", "oldString": `println("a")`, "newString": `println("A")`}, file: "go.go", want: "package main\n\nfunc main() {\n\tif x {\n\t\tprintln(\"A\")\n\t\tprintln(\"b\")\n\t}\n}\n", match: "exact", out: []string{"Edited go.go: 1 replacement(s), +1 -1 lines."}},
		{name: "several matches", args: map[string]any{"filePath": "dup.txt", "oldString": "foo", "newString": "qux"}, err: []string{"oldString matches 3 places in dup.txt", "at lines 1, 3, 5", "replaceAll"}},
		{name: "replaceAll", args: map[string]any{"filePath": "dup.txt", "oldString": "foo", "newString": "qux", "replaceAll": true}, file: "dup.txt", want: "qux\nbar\nqux\nbaz\nqux\n", out: []string{"3 replacement(s)"}},
		{name: "not found shows closest", args: map[string]any{"filePath": "go.go", "oldString": "println(\"c\")\nprintln(\"b\")", "newString": "x"}, err: []string{"oldString was not found in go.go", "The closest text in the file:", "     5\t\t\tprintln(\"a\")"}},
		{name: "line number prefix", args: map[string]any{"filePath": "go.go", "oldString": "     5\tprintln(\"zz\")", "newString": "x"}, err: []string{"line-number prefix"}},
		{name: "indentation flexible reindents", args: map[string]any{"filePath": "go.go", "oldString": "if x {\n\tprintln(\"a\")\n\tprintln(\"b\")\n}", "newString": "if y {\n\tprintln(\"c\")\n}"}, file: "go.go", want: "package main\n\nfunc main() {\n\tif y {\n\t\tprintln(\"c\")\n\t}\n}\n", match: "indentation", out: []string{"ignoring indentation"}},
		{name: "trimmed", args: map[string]any{"filePath": "go.go", "oldString": "println(\"a\")   \n  println(\"b\")", "newString": "\t\tprintln(\"ab\")"}, file: "go.go", want: "package main\n\nfunc main() {\n\tif x {\n\t\tprintln(\"ab\")\n\t}\n}\n", match: "trimmed"},
		{name: "whitespace", args: map[string]any{"filePath": "ws.txt", "oldString": "a b c", "newString": "abc"}, file: "ws.txt", want: "abc\nnext\n", match: "whitespace"},
		{name: "crlf kept", args: map[string]any{"filePath": "crlf.txt", "oldString": "one\ntwo", "newString": "uno\ndos\nmas"}, file: "crlf.txt", want: "uno\r\ndos\r\nmas\r\nthree\r\n"},
		{name: "bom kept", setup: func(e *env) {
			os.WriteFile(e.path("bom.txt"), []byte("\xEF\xBB\xBFhello\nworld\n"), 0o644)
		}, args: map[string]any{"filePath": "bom.txt", "oldString": "world", "newString": "there"}, file: "bom.txt", want: "\xEF\xBB\xBFhello\nthere\n"},
		{name: "create with empty oldString", args: map[string]any{"filePath": "new/dir/f.txt", "oldString": "", "newString": "hi\n"}, file: "new/dir/f.txt", want: "hi\n", out: []string{"Created new/dir/f.txt"}},
		{name: "empty oldString on empty file", args: map[string]any{"filePath": "empty.txt", "oldString": "", "newString": "x"}, file: "empty.txt", want: "x"},
		{name: "empty oldString on full file", args: map[string]any{"filePath": "go.go", "oldString": "", "newString": "x"}, err: []string{"oldString is empty but go.go is not"}},
		{name: "same strings", args: map[string]any{"filePath": "go.go", "oldString": "x", "newString": "x"}, err: []string{"the same"}},
		{name: "missing file", args: map[string]any{"filePath": "go.og", "oldString": "x", "newString": "y"}, err: []string{"file not found: go.og", "go.go"}},
		{name: "folder", args: map[string]any{"filePath": ".", "oldString": "x", "newString": "y"}, err: []string{"is a folder"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, editTree)
			if tc.setup != nil {
				tc.setup(e)
			}
			var before map[string]string
			if len(tc.err) > 0 {
				before = snapshot(t, e.ws)
			}
			res, err := e.run("edit", tc.args)
			if len(tc.err) > 0 {
				if err == nil {
					t.Fatalf("no error: %s", res.Output)
				}
				mustContain(t, "error", err.Error(), tc.err...)
				if after := snapshot(t, e.ws); !maps.Equal(before, after) {
					t.Errorf("a failed edit changed files")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(e.path(tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("content = %q, want %q", got, tc.want)
			}
			mustContain(t, "output", res.Output, tc.out...)
			if tc.match != "" && res.Metadata["match"] != tc.match {
				t.Errorf("match = %v, want %s", res.Metadata["match"], tc.match)
			}
			edits := e.asks.asked("edit")
			if len(edits) != 1 || edits[0].Patterns[0] != tc.file {
				t.Fatalf("edit asks = %+v", edits)
			}
			if d, _ := edits[0].Metadata["diff"].(string); !strings.HasPrefix(d, "--- a/"+tc.file+"\n+++ b/"+tc.file+"\n@@ ") {
				t.Errorf("diff in the ask = %q", d)
			}
			if edits[0].Metadata["filePath"] != filepath.ToSlash(e.path(tc.file)) {
				t.Errorf("filePath in the ask = %v", edits[0].Metadata["filePath"])
			}
		})
	}
}

func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			m[p] = string(b)
		}
		return nil
	})
	return m
}

func TestEditRefusedChangesNothing(t *testing.T) {
	e := newEnv(t, editTree)
	e.asks.deny["edit"] = true
	before := snapshot(t, e.ws)
	_, err := e.run("edit", map[string]any{"filePath": "go.go", "oldString": "main", "newString": "x", "replaceAll": true})
	if !isPermissionError(err) {
		t.Fatalf("err = %v", err)
	}
	if !maps.Equal(before, snapshot(t, e.ws)) {
		t.Fatal("refused edit changed the file")
	}
}

// TestEditChangedWhileAsking: the file changes while the person decides; the edit fails
// rather than overwrite the newer content.
func TestEditChangedWhileAsking(t *testing.T) {
	e := newEnv(t, editTree)
	call := e.call("edit")
	call.Ask = func(ctx context.Context, req registry.AskRequest) error {
		return os.WriteFile(e.path("go.go"), []byte("package other // longer now\n"), 0o644)
	}
	_, err := e.tools["edit"].Execute(context.Background(), call, []byte(`{"filePath":"go.go","oldString":"main()","newString":"run()"}`))
	if err == nil || !strings.Contains(err.Error(), "changed on disk") {
		t.Fatalf("err = %v", err)
	}
	if b, _ := os.ReadFile(e.path("go.go")); string(b) != "package other // longer now\n" {
		t.Fatalf("file overwritten: %q", b)
	}
}

// TestEditChangedWhileAskingSameSizeAndTime: the file changes while the person decides, to
// bytes of the same size, and its modification time is set back (touch -d); the edit still
// fails rather than overwrite them.
func TestEditChangedWhileAskingSameSizeAndTime(t *testing.T) {
	e := newEnv(t, editTree)
	fi, err := os.Stat(e.path("go.go"))
	if err != nil {
		t.Fatal(err)
	}
	old, _ := os.ReadFile(e.path("go.go"))
	changed := bytes.ToUpper(old)
	call := e.call("edit")
	call.Ask = func(ctx context.Context, req registry.AskRequest) error {
		if err := os.WriteFile(e.path("go.go"), changed, 0o644); err != nil {
			return err
		}
		return os.Chtimes(e.path("go.go"), fi.ModTime(), fi.ModTime())
	}
	_, err = e.tools["edit"].Execute(context.Background(), call, []byte(`{"filePath":"go.go","oldString":"main()","newString":"run()"}`))
	if err == nil || !strings.Contains(err.Error(), "changed on disk") {
		t.Fatalf("err = %v", err)
	}
	if b, _ := os.ReadFile(e.path("go.go")); !bytes.Equal(b, changed) {
		t.Fatalf("file overwritten: %q", b)
	}
}

func TestWrite(t *testing.T) {
	tests := []struct {
		name  string
		setup func(e *env)
		path  string
		out   string
		err   string
		mode  os.FileMode
	}{
		{name: "create with folders", path: "a/b/c.txt", out: "Created a/b/c.txt", mode: 0o644},
		{name: "overwrite keeps mode", setup: func(e *env) {
			os.WriteFile(e.path("run.sh"), []byte("old\n"), 0o755)
			os.Chmod(e.path("run.sh"), 0o755)
		}, path: "run.sh", out: "Overwrote run.sh", mode: 0o755},
		{name: "folder", setup: func(e *env) { os.Mkdir(e.path("d"), 0o755) }, path: "d", err: "d is a folder"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, "")
			if tc.setup != nil {
				tc.setup(e)
			}
			res, err := e.run("write", map[string]any{"filePath": tc.path, "content": "new\ncontent\n"})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			mustContain(t, "output", res.Output, tc.out)
			fi, err := os.Stat(e.path(tc.path))
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != tc.mode {
				t.Errorf("mode = %v, want %v", fi.Mode().Perm(), tc.mode)
			}
			if b, _ := os.ReadFile(e.path(tc.path)); string(b) != "new\ncontent\n" {
				t.Errorf("content %q", b)
			}
			ents, _ := os.ReadDir(filepath.Dir(e.path(tc.path)))
			for _, en := range ents {
				if strings.Contains(en.Name(), ".toolsd-") {
					t.Errorf("temporary file left: %s", en.Name())
				}
			}
			asks := e.asks.asked("edit")
			if len(asks) != 1 || asks[0].Patterns[0] != tc.path || !strings.Contains(asks[0].Metadata["diff"].(string), "+content\n") {
				t.Errorf("edit asks = %+v", asks)
			}
		})
	}
}

// TestWriteEditSymlinkEscape: links inside the workspace that point out of it never lead
// to a write outside without external_directory.
func TestWriteEditSymlinkEscape(t *testing.T) {
	outside, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(outside, "secret.txt")
	cases := []struct {
		name  string
		setup func(e *env) string
	}{
		{"file link", func(e *env) string { os.Symlink(secret, e.path("link.txt")); return "link.txt" }},
		{"folder link", func(e *env) string { os.Symlink(outside, e.path("ld")); return "ld/secret.txt" }},
		{"dangling link", func(e *env) string {
			os.Symlink(filepath.Join(outside, "new.txt"), e.path("dangle.txt"))
			return "dangle.txt"
		}},
		{"dotdot", func(e *env) string { r, _ := filepath.Rel(e.ws, secret); return r }},
	}
	for _, tc := range cases {
		for _, tool := range []string{"write", "edit"} {
			t.Run(tc.name+"/"+tool, func(t *testing.T) {
				if err := os.WriteFile(secret, []byte("secret\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				os.Remove(filepath.Join(outside, "new.txt"))
				e := newEnv(t, "")
				p := tc.setup(e)
				e.asks.deny["external_directory"] = true
				args := map[string]any{"filePath": p, "content": "pwned\n"}
				if tool == "edit" {
					args = map[string]any{"filePath": p, "oldString": "secret", "newString": "pwned"}
					if tc.name == "dangling link" {
						args["oldString"] = ""
					}
				}
				_, err := e.run(tool, args)
				if !isPermissionError(err) {
					t.Fatalf("err = %v, want the external_directory refusal", err)
				}
				reqs := e.asks.requests()
				if len(reqs) != 1 || reqs[0].Permission != "external_directory" || reqs[0].Patterns[0] != filepath.ToSlash(outside)+"/*" {
					t.Fatalf("asks = %+v", reqs)
				}
				if b, _ := os.ReadFile(secret); string(b) != "secret\n" {
					t.Fatalf("outside file changed: %q", b)
				}
				if _, err := os.Stat(filepath.Join(outside, "new.txt")); err == nil {
					t.Fatal("file created outside")
				}
			})
		}
	}
}

// TestWriteAtomicParentSwap: a parent folder swapped for a symlink after resolution is
// caught and nothing is written outside.
func TestWriteAtomicParentSwap(t *testing.T) {
	e := newEnv(t, "-- d/f.txt --\nin\n")
	outside := t.TempDir()
	tg, err := resolvePath(e.ws, "", "filePath", "d/f.txt")
	if err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(e.path("d"))
	if err := os.Symlink(outside, e.path("d")); err != nil {
		t.Fatal(err)
	}
	if err := writeAtomic(tg.Abs, []byte("pwned")); err == nil {
		t.Fatal("wrote through a swapped parent")
	}
	if _, err := os.Stat(filepath.Join(outside, "f.txt")); err == nil {
		t.Fatal("file written outside")
	}
}

func TestEditCRLFDiffHasNoCarriageReturns(t *testing.T) {
	e := newEnv(t, editTree)
	if _, err := e.run("edit", map[string]any{"filePath": "crlf.txt", "oldString": "two", "newString": "2"}); err != nil {
		t.Fatal(err)
	}
	d := e.asks.asked("edit")[0].Metadata["diff"].(string)
	if strings.Contains(d, "\r") || !strings.Contains(d, "-two\n+2\n") {
		t.Errorf("diff %q", d)
	}
}
