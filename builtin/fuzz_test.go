package builtin

import (
	"strings"
	"testing"
)

// FuzzApplyPatch: parsing and applying any patch text to any file never panics, and a
// successful apply of a patch without changes keeps the text.
func FuzzApplyPatch(f *testing.F) {
	f.Add("*** Begin Patch\n*** Update File: a\n@@ x\n a\n-b\n+c\n*** End of File\n*** End Patch", "x\na\nb\n")
	f.Add("*** Begin Patch\n*** Add File: n\n+1\n*** Delete File: d\n*** End Patch", "")
	f.Add("apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: a\n*** Move to: b\n*** End Patch\nEOF", "q")
	f.Fuzz(func(t *testing.T, patch, text string) {
		ops, err := parsePatch(patch)
		if err != nil {
			return
		}
		for _, op := range ops {
			if op.kind != "update" {
				continue
			}
			out, err := applyChunks(op, text)
			if err != nil {
				continue
			}
			changes := false
			for _, c := range op.chunks {
				for _, l := range c.ops {
					changes = changes || l.kind != ' '
				}
			}
			if !changes && text != "" && strings.HasSuffix(text, "\n") && out != text {
				t.Fatalf("a patch of context only changed the text: %q -> %q", text, out)
			}
		}
	})
}

// FuzzReplaceText: replacing never panics, and an exact unique match gives what
// strings.Replace gives.
func FuzzReplaceText(f *testing.F) {
	f.Add("a\n  b\nc\n", "b", "B", false)
	f.Add("x x x", "x", "y", true)
	f.Add("\tif a {\n\t\tb()\n\t}\n", "if a {\n\tb()\n}", "if c {\n}", false)
	f.Fuzz(func(t *testing.T, text, old, new string, all bool) {
		if old == "" {
			return
		}
		out, n, strategy, err := replaceText(text, old, new, all)
		if err != nil {
			return
		}
		if strategy == "exact" && !all && n == 1 && out != strings.Replace(text, old, new, 1) {
			t.Fatalf("exact replace differs")
		}
		if strategy == "exact" && all && out != strings.ReplaceAll(text, old, new) {
			t.Fatalf("exact replaceAll differs")
		}
	})
}
