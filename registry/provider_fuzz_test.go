package registry

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// FuzzAdaptSchema checks that every provider's adaptation of a schema that compiles is valid
// JSON, and that StripNulls never breaks arguments.
func FuzzAdaptSchema(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/provider/default/*.json")
	for _, s := range seeds {
		b, _ := os.ReadFile(s)
		f.Add(b, []byte(`{"a": null, "filePath": null, "todos": [{"id": null}]}`))
	}
	f.Add([]byte(`{"type":"object","properties":{"p":{"$ref":"#/$defs/p"}},"$defs":{"p":{"$ref":"#/$defs/p"}}}`), []byte(`{"p":null}`))
	f.Fuzz(func(t *testing.T, schema, args []byte) {
		if _, err := CompileSchema("t", schema); err != nil {
			return
		}
		for _, p := range []string{ProviderOpenAI, ProviderGoogle, ProviderAnthropic, ""} {
			out, err := AdaptSchema(p, schema)
			if err != nil {
				if _, ok := err.(*NotStrictError); !ok {
					t.Fatalf("%s: %v", p, err)
				}
			}
			if !json.Valid(out) {
				t.Fatalf("%s: invalid JSON %s", p, out)
			}
		}
		stripped := StripNulls(schema, args)
		if json.Valid(args) && !json.Valid(stripped) {
			t.Fatalf("StripNulls broke %s into %s", args, stripped)
		}
	})
}
