//go:build unix

package project

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParseDefinition checks that any file content gives either a definition or error
// diagnostics, never a panic, and that positions point inside the file.
func FuzzParseDefinition(f *testing.F) {
	seeds, _ := filepath.Glob("../testdata/workspace/.toolsd/tool/*.json")
	for _, s := range seeds {
		b, _ := os.ReadFile(s)
		f.Add(b)
	}
	f.Add([]byte(`{"description": "x", "command": ["x"], "timeout": "30s", "comand": 1}`))
	f.Add([]byte(`{"description": "x", "command": ["x"], "parameters": {"type": "object", "properties": {"a": {"$ref": "#/$defs/nope"}}}}`))
	f.Add([]byte("{\n\"env\": {\"A\": 1}, \"output\": \"xml\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		def, diags := ParseDefinition("t", "/nonexistent/t.json", data)
		lines := 1
		for _, c := range data {
			if c == '\n' {
				lines++
			}
		}
		hasError := false
		for _, d := range diags {
			if d.Severity == "error" {
				hasError = true
			}
			if d.Line < 0 || d.Line > lines || d.Message == "" {
				t.Fatalf("bad diagnostic %+v for %q", d, data)
			}
		}
		if (def == nil) != hasError {
			t.Fatalf("definition %v with diagnostics %+v", def, diags)
		}
		if def != nil && (len(def.Command) == 0 || def.Description == "" || def.Timeout <= 0) {
			t.Fatalf("incomplete definition %+v", def)
		}
	})
}
