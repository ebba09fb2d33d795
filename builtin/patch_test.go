package builtin

import (
	"maps"
	"os"
	"strings"
	"testing"
)

const patchTree = `
-- a.py --
def greet():
    print("hi")
    return 1

def other():
    return 2
-- b.txt --
keep
remove me
keep too
-- old.txt --
to delete
-- mv.txt --
moving
-- crlf.txt --
x` + "\r\n" + `y` + "\r\n" + `-- end.txt --
a
b
a
`

func TestApplyPatch(t *testing.T) {
	tests := []struct {
		name  string
		patch string
		files map[string]string // expected contents
		gone  []string
		out   []string
		err   []string
	}{
		{name: "update add delete move", patch: `*** Begin Patch
*** Update File: a.py
@@ def greet():
     print("hi")
-    return 1
+    return 42
*** Add File: new/dir/n.txt
+first
+second
*** Delete File: old.txt
*** Update File: mv.txt
*** Move to: moved/mv2.txt
@@
-moving
+moved
*** End Patch`, files: map[string]string{
			"a.py":          "def greet():\n    print(\"hi\")\n    return 42\n\ndef other():\n    return 2\n",
			"new/dir/n.txt": "first\nsecond\n",
			"moved/mv2.txt": "moved\n",
		}, gone: []string{"old.txt", "mv.txt"}, out: []string{"M a.py", "A new/dir/n.txt", "D old.txt", "R mv.txt -> moved/mv2.txt"}},
		{name: "whitespace tolerant", patch: "*** Begin Patch\n*** Update File: b.txt\n keep   \n-remove me\n keep too\n*** End Patch\n", files: map[string]string{"b.txt": "keep\nkeep too\n"}},
		{name: "crlf kept", patch: "*** Begin Patch\n*** Update File: crlf.txt\n-y\n+z\n*** End Patch", files: map[string]string{"crlf.txt": "x\r\nz\r\n"}},
		{name: "end of file", patch: "*** Begin Patch\n*** Update File: end.txt\n-a\n+last\n*** End of File\n*** End Patch", files: map[string]string{"end.txt": "a\nb\nlast\n"}},
		{name: "two changes in order", patch: "*** Begin Patch\n*** Update File: end.txt\n-a\n+first\n@@\n-a\n+third\n*** End Patch", files: map[string]string{"end.txt": "first\nb\nthird\n"}},
		{name: "pure addition at end", patch: "*** Begin Patch\n*** Update File: b.txt\n@@\n+appended\n*** End Patch", files: map[string]string{"b.txt": "keep\nremove me\nkeep too\nappended\n"}},
		{name: "typographic quotes", patch: "*** Begin Patch\n*** Update File: a.py\n-    print(\u201chi\u201d)\n+    print(\"hello\")\n*** End Patch", files: map[string]string{"a.py": "def greet():\n    print(\"hello\")\n    return 1\n\ndef other():\n    return 2\n"}},
		{name: "heredoc wrapper", patch: "apply_patch <<'EOF'\n*** Begin Patch\n*** Delete File: old.txt\n*** End Patch\nEOF", gone: []string{"old.txt"}},
		{name: "missing begin", patch: "*** Update File: a.py\n*** End Patch", err: []string{"patch line 1", "*** Begin Patch"}},
		{name: "missing end", patch: "*** Begin Patch\n*** Delete File: old.txt", err: []string{"*** End Patch"}},
		{name: "bad add line", patch: "*** Begin Patch\n*** Add File: x.txt\nno plus\n*** End Patch", err: []string{"patch line 3", "must start with \"+\""}},
		{name: "bad update line", patch: "*** Begin Patch\n*** Update File: b.txt\n*remove me\n*** End Patch", err: []string{"patch line 3", "must start with \" \" (context)"}},
		{name: "unknown op", patch: "*** Begin Patch\n*** Rename File: b.txt\n*** End Patch", err: []string{"patch line 2", "expected \"*** Add File: \""}},
		{name: "hunk fails: nothing applied", patch: `*** Begin Patch
*** Delete File: old.txt
*** Update File: a.py
@@ def other():
-    return 3
+    return 4
*** End Patch`, err: []string{"change 1 (patch line 4, @@ def other():) of part 2 (*** Update File: a.py, patch line 3) did not apply", "return 3", "closest lines", "     6\t    return 2"}},
		{name: "context not found", patch: "*** Begin Patch\n*** Update File: a.py\n@@ def nope():\n-x\n+y\n*** End Patch", err: []string{"the @@ line \"def nope():\" was not found in a.py"}},
		{name: "update missing file", patch: "*** Begin Patch\n*** Update File: nope.py\n-x\n+y\n*** End Patch", err: []string{"part 1 (*** Update File: nope.py", "file not found"}},
		{name: "delete missing file", patch: "*** Begin Patch\n*** Delete File: nope.txt\n*** End Patch", err: []string{"*** Delete File: nope.txt", "file not found"}},
		{name: "move onto existing", patch: "*** Begin Patch\n*** Update File: mv.txt\n*** Move to: b.txt\n*** End Patch", err: []string{"already exists"}},
		{name: "same file twice", patch: "*** Begin Patch\n*** Delete File: old.txt\n*** Delete File: ./old.txt\n*** End Patch", err: []string{"also changed by part 1"}},
		{name: "empty patch", patch: "*** Begin Patch\n*** End Patch", err: []string{"changes no file"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, patchTree)
			before := snapshot(t, e.ws)
			res, err := e.run("apply_patch", map[string]any{"patchText": tc.patch})
			if len(tc.err) > 0 {
				if err == nil {
					t.Fatalf("no error: %s", res.Output)
				}
				mustContain(t, "error", err.Error(), tc.err...)
				if !maps.Equal(before, snapshot(t, e.ws)) {
					t.Error("a failed patch changed files")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for p, want := range tc.files {
				got, err := os.ReadFile(e.path(p))
				if err != nil || string(got) != want {
					t.Errorf("%s = %q (%v), want %q", p, got, err, want)
				}
			}
			for _, p := range tc.gone {
				if _, err := os.Stat(e.path(p)); err == nil {
					t.Errorf("%s still exists", p)
				}
			}
			mustContain(t, "output", res.Output, tc.out...)
			asks := e.asks.asked("edit")
			if len(asks) != 1 || !strings.Contains(asks[0].Metadata["diff"].(string), "--- a/") {
				t.Errorf("edit asks = %+v", asks)
			}
		})
	}
}

func TestApplyPatchRefusedChangesNothing(t *testing.T) {
	e := newEnv(t, patchTree)
	e.asks.deny["edit"] = true
	before := snapshot(t, e.ws)
	_, err := e.run("apply_patch", map[string]any{"patchText": "*** Begin Patch\n*** Delete File: old.txt\n*** Add File: z.txt\n+z\n*** End Patch"})
	if !isPermissionError(err) {
		t.Fatalf("err = %v", err)
	}
	if !maps.Equal(before, snapshot(t, e.ws)) {
		t.Error("refused patch changed files")
	}
	ask := e.asks.asked("edit")[0]
	if strings.Join(ask.Patterns, ",") != "old.txt,z.txt" || !ask.Destructive {
		t.Errorf("ask %+v: want patterns old.txt,z.txt, destructive (a delete)", ask)
	}
}

// TestApplyPatchOutside: a patch touching a file outside the workspace (through a link)
// asks external_directory first and changes nothing when refused.
func TestApplyPatchOutside(t *testing.T) {
	e := newEnv(t, patchTree)
	outside := t.TempDir()
	os.WriteFile(outside+"/o.txt", []byte("outside\n"), 0o644)
	os.Symlink(outside, e.path("ext"))
	e.asks.deny["external_directory"] = true
	_, err := e.run("apply_patch", map[string]any{"patchText": "*** Begin Patch\n*** Update File: ext/o.txt\n-outside\n+pwned\n*** End Patch"})
	if !isPermissionError(err) {
		t.Fatalf("err = %v", err)
	}
	if b, _ := os.ReadFile(outside + "/o.txt"); string(b) != "outside\n" {
		t.Fatalf("outside file changed: %q", b)
	}
}

// TestApplyPatchRollsBack: when a later write fails, the files already written are
// restored.
func TestApplyPatchRollsBack(t *testing.T) {
	e := newEnv(t, patchTree)
	before := snapshot(t, e.ws)
	_, err := e.run("apply_patch", map[string]any{"patchText": "*** Begin Patch\n*** Update File: a.py\n-    return 1\n+    return 9\n*** Delete File: old.txt\n*** Add File: b.txt/under-a-file.txt\n+x\n*** End Patch"})
	if err == nil || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("err = %v", err)
	}
	if !maps.Equal(before, snapshot(t, e.ws)) {
		t.Error("files were not restored")
	}
}

func TestApplyPatchAskMetadata(t *testing.T) {
	e := newEnv(t, patchTree)
	if _, err := e.run("apply_patch", map[string]any{"patchText": "*** Begin Patch\n*** Update File: b.txt\n-remove me\n*** Add File: c.txt\n+c\n*** End Patch"}); err != nil {
		t.Fatal(err)
	}
	m := e.asks.asked("edit")[0].Metadata
	files, _ := m["files"].([]any)
	if len(files) != 2 || m["filePath"] != e.ws+"/b.txt" {
		t.Fatalf("metadata %v", m)
	}
	first := files[0].(map[string]any)
	if first["filePath"] != e.ws+"/b.txt" || !strings.Contains(first["diff"].(string), "-remove me") || strings.Contains(first["diff"].(string), "+c") {
		t.Errorf("first file %v", first)
	}
	if d := m["diff"].(string); !strings.Contains(d, "-remove me") || !strings.Contains(d, "+c\n") {
		t.Errorf("combined diff %q", d)
	}
}
