//go:build unix

package project

import (
	"strings"
	"testing"
	"time"
)

func TestParseDefinitionErrors(t *testing.T) {
	cases := []struct {
		name      string
		src       string
		line, col int
		want      string // in the message
	}{
		{"bad JSON", "{\n  \"description\": \"x\",\n  \"command\": [\"a\"\n}", 4, 1, "bad JSON"},
		{"not an object", `["a"]`, 1, 1, "must be a JSON object"},
		{"missing command", `{"description": "x"}`, 1, 1, `missing field "command"`},
		{"missing description", `{"command": ["x"]}`, 1, 1, `missing field "description"`},
		{"unknown field", "{\n  \"description\": \"x\",\n  \"comand\": [\"x\"]\n}", 3, 3, `did you mean "command"`},
		{"command as a string", `{"description": "x", "command": "go test"}`, 1, 33, "array of strings"},
		{"empty command", `{"description": "x", "command": []}`, 1, 33, "is empty"},
		{"non-string argv", `{"description": "x", "command": ["go", 1]}`, 1, 40, `"command"[1] must be a string`},
		{"timeout as a duration", `{"description": "x", "command": ["x"], "timeout": "30s"}`, 1, 51, "write 30000 instead"},
		{"negative timeout", `{"description": "x", "command": ["x"], "timeout": -1}`, 1, 51, "whole number of milliseconds"},
		{"bad output", `{"description": "x", "command": ["x"], "output": "xml"}`, 1, 50, `"output" must be "text"`},
		{"env of numbers", `{"description": "x", "command": ["x"], "env": {"A": 1}}`, 1, 53, `"env".A must be a string`},
		{"duplicate field", `{"description": "x", "description": "y", "command": ["x"]}`, 1, 22, "more than once"},
		{"empty description", `{"description": " ", "command": ["x"]}`, 1, 17, "is empty"},
		{"parameters not an object", `{"description": "x", "command": ["x"], "parameters": []}`, 1, 54, "JSON Schema object"},
		{
			"schema does not compile",
			"{\n  \"description\": \"x\",\n  \"command\": [\"x\"],\n  \"parameters\": {\n    \"type\": \"object\",\n    \"properties\": {\"n\": {\"type\": \"nope\"}}\n  }\n}",
			6, 34, "does not compile",
		},
		{"schema not of an object", `{"description": "x", "command": ["x"], "parameters": {"type": "string"}}`, 1, 54, `"type" must be "object"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			def, diags := ParseDefinition("t", "/ws/.toolsd/tool/t.json", []byte(tc.src))
			if def != nil {
				t.Fatalf("loaded a broken definition: %+v", def)
			}
			for _, d := range diags {
				if strings.Contains(d.Message, tc.want) {
					if d.Line != tc.line || d.Column != tc.col {
						t.Errorf("%q at %d:%d, want %d:%d", d.Message, d.Line, d.Column, tc.line, tc.col)
					}
					if d.Severity != "error" || d.Path != "/ws/.toolsd/tool/t.json" {
						t.Errorf("bad diagnostic %+v", d)
					}
					return
				}
			}
			t.Fatalf("no diagnostic mentions %q: %+v", tc.want, diags)
		})
	}
}

func TestParseDefinition(t *testing.T) {
	src := `{
  "$schema": "https://example.com/tool.schema.json",
  "description": "Run the tests of one package.",
  "parameters": {"type": "object", "properties": {"pkg": {"type": "string"}}, "required": ["pkg"]},
  "command": ["/bin/cat", "-"],
  "cwd": "sub",
  "env": {"A": "b"},
  "timeout": 1500,
  "output": "json"
}`
	def, diags := ParseDefinition("t", "/ws/.toolsd/tool/t.json", []byte(src))
	if def == nil || len(diags) != 0 {
		t.Fatalf("got %+v, %+v", def, diags)
	}
	if def.Timeout != 1500*time.Millisecond || def.Output != OutputJSON || def.Cwd != "sub" || def.Env["A"] != "b" || def.Argv0 != "/bin/cat" {
		t.Errorf("bad definition %+v", def)
	}
	def2, _ := ParseDefinition("t", "/ws/.toolsd/tool/t.json", []byte(strings.Replace(src, "1500", "1501", 1)))
	if def2.Fingerprint == def.Fingerprint {
		t.Error("the fingerprint did not change with the content")
	}
}

func TestRelativeProgram(t *testing.T) {
	def, diags := ParseDefinition("t", "/nonexistent/tool/t.json", []byte(`{"description": "x", "command": ["./run.sh", "a"]}`))
	if def == nil {
		t.Fatal(diags)
	}
	if def.Argv0 != "/nonexistent/tool/run.sh" {
		t.Errorf("argv0 = %s", def.Argv0)
	}
	if len(diags) != 1 || diags[0].Severity != "warning" || !strings.Contains(diags[0].Message, "does not exist") {
		t.Errorf("want a warning that the program is missing, got %+v", diags)
	}
}
