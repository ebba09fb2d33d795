//go:build unix

package project

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// TestDefinitionSchema checks definition.schema.json (for editors) against the parser: the
// same fields, and the same verdict on the examples and on broken definitions.
func TestDefinitionSchema(t *testing.T) {
	data, err := os.ReadFile("definition.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Properties map[string]any `json:"properties"`
	}
	json.Unmarshal(data, &doc)
	var names []string
	for k := range doc.Properties {
		names = append(names, k)
	}
	want := append([]string{"$schema"}, fields...)
	slices.Sort(names)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("schema properties %v, parser fields %v", names, want)
	}
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	if err := c.AddResource("definition.schema.json", bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("definition.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	inputs := map[string][]byte{
		"unknown field":   []byte(`{"description": "x", "command": ["x"], "comand": []}`),
		"string command":  []byte(`{"description": "x", "command": "x"}`),
		"string timeout":  []byte(`{"description": "x", "command": ["x"], "timeout": "30s"}`),
		"no description":  []byte(`{"command": ["x"]}`),
		"bad output":      []byte(`{"description": "x", "command": ["x"], "output": "xml"}`),
		"empty program":   []byte(`{"description": "x", "command": [""]}`),
		"minimal":         []byte(`{"description": "x", "command": ["x"]}`),
		"env of strings":  []byte(`{"description": "x", "command": ["x"], "env": {"A": "b"}}`),
		"blank desc":      []byte(`{"description": "  ", "command": ["x"]}`),
		"parameters list": []byte(`{"description": "x", "command": ["x"], "parameters": []}`),
	}
	examples, _ := filepath.Glob("../testdata/workspace/.toolsd/tool/*.json")
	for _, e := range examples {
		inputs[filepath.Base(e)], _ = os.ReadFile(e)
	}
	for name, in := range inputs {
		t.Run(name, func(t *testing.T) {
			var v any
			json.Unmarshal(in, &v)
			schemaOK := s.Validate(v) == nil
			def, _ := ParseDefinition("t", "/x/t.json", in)
			if schemaOK != (def != nil) {
				t.Errorf("schema says valid=%v, parser says valid=%v", schemaOK, def != nil)
			}
		})
	}
}
