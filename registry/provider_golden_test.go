package registry_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/toolsd/toolsd/builtin"
	"github.com/toolsd/toolsd/project"
	"github.com/toolsd/toolsd/registry"
)

func init() {
	// Another test file of this binary may have registered -update already.
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files")
	}
}

func updating() bool { return flag.Lookup("update").Value.String() == "true" }

// goldenTools are every built-in and the demo workspace's example project tools.
func goldenTools(t *testing.T) []*registry.Tool {
	t.Helper()
	tools := builtin.Tools(nil)
	ws, _ := filepath.Abs("../testdata/workspace")
	proj, diags := project.NewLoader(project.Options{Workspace: ws}).Load()
	if len(diags) != 0 {
		t.Fatalf("example tools: %+v", diags)
	}
	if len(proj) < 3 || len(tools) < 4 {
		t.Fatalf("only %d built-ins and %d example tools", len(tools), len(proj))
	}
	return append(tools, proj...)
}

// TestProviderGolden adapts every built-in's and example tool's schema to each provider and
// compares with registry/testdata/provider/<provider>/<tool>.json (go test -update rewrites
// them). It also checks each dialect's rules on the result.
func TestProviderGolden(t *testing.T) {
	tools := goldenTools(t)
	for _, provider := range []string{"openai", "google", "anthropic", "default"} {
		dir := filepath.Join("testdata", "provider", provider)
		if updating() {
			os.RemoveAll(dir)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		for _, tool := range tools {
			t.Run(provider+"/"+tool.ID, func(t *testing.T) {
				got, err := registry.AdaptSchema(provider, tool.Parameters)
				var ns *registry.NotStrictError
				if err != nil && !errors.As(err, &ns) {
					t.Fatal(err)
				}
				if ns != nil {
					t.Errorf("%s's schema is not strict-mode compatible: %v", tool.ID, ns)
				}
				var pretty bytes.Buffer
				if err := json.Indent(&pretty, got, "", "  "); err != nil {
					t.Fatal(err)
				}
				pretty.WriteByte('\n')
				path := filepath.Join(dir, tool.ID+".json")
				if updating() {
					if err := os.WriteFile(path, pretty.Bytes(), 0o644); err != nil {
						t.Fatal(err)
					}
				} else {
					want, err := os.ReadFile(path)
					if err != nil {
						t.Fatalf("%v (run go test ./registry -run TestProviderGolden -update)", err)
					}
					if !bytes.Equal(want, pretty.Bytes()) {
						t.Errorf("%s differs from the golden file:\n%s\n(run with -update if the change is intended)", path, pretty.String())
					}
				}
				checkDialect(t, provider, got)
			})
		}
	}
}

// googleKeywords are the keywords of Gemini's Schema object.
var googleKeywords = []string{"type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems",
	"properties", "required", "minProperties", "maxProperties", "minLength", "maxLength", "pattern", "example",
	"anyOf", "propertyOrdering", "default", "items", "minimum", "maximum"}

func checkDialect(t *testing.T, provider string, schema json.RawMessage) {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(schema, &v); err != nil {
		t.Fatal(err)
	}
	// Every result is still a schema that compiles.
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	if err := c.AddResource("s.json", bytes.NewReader(schema)); err != nil {
		t.Fatal(err)
	}
	if provider != "google" { // nullable and propertyOrdering are OpenAPI, not draft 2020-12
		if _, err := c.Compile("s.json"); err != nil {
			t.Errorf("adapted schema does not compile: %v", err)
		}
	}
	var walk func(s map[string]any, at string)
	walk = func(s map[string]any, at string) {
		switch provider {
		case "openai":
			if props, ok := s["properties"].(map[string]any); ok {
				req, _ := s["required"].([]any)
				if len(req) != len(props) {
					t.Errorf("openai: %s: required %v does not list every property", at, req)
				}
				if s["additionalProperties"] != false {
					t.Errorf("openai: %s: additionalProperties is not false", at)
				}
			}
			for _, k := range []string{"minLength", "maxLength", "default", "$schema", "oneOf", "allOf", "uniqueItems"} {
				if _, ok := s[k]; ok {
					t.Errorf("openai: %s: keyword %s is left", at, k)
				}
			}
		case "google":
			for k := range s {
				if !slices.Contains(googleKeywords, k) {
					t.Errorf("google: %s: keyword %s is not Gemini's", at, k)
				}
			}
			if e, ok := s["enum"].([]any); ok {
				for _, x := range e {
					if _, ok := x.(string); !ok {
						t.Errorf("google: %s: enum value %v is not a string", at, x)
					}
				}
			}
			if _, ok := s["type"].([]any); ok {
				t.Errorf("google: %s: type is a list", at)
			}
		case "anthropic":
			if _, ok := s["$schema"]; ok && at == "" {
				t.Errorf("anthropic: $schema is left")
			}
		}
		for _, k := range []string{"properties", "$defs"} {
			if m, ok := s[k].(map[string]any); ok {
				for name, sub := range m {
					if sm, ok := sub.(map[string]any); ok {
						walk(sm, at+"/"+k+"/"+name)
					}
				}
			}
		}
		if sm, ok := s["items"].(map[string]any); ok {
			walk(sm, at+"/items")
		}
		if br, ok := s["anyOf"].([]any); ok {
			for _, b := range br {
				if bm, ok := b.(map[string]any); ok {
					walk(bm, at+"/anyOf")
				}
			}
		}
	}
	walk(v, "")
}

// TestStrictRoundTrip checks the promise behind the openai dialect: for each tool, an
// argument object that fills every optional property with null, as a strict model does,
// validates against the original schema once StripNulls has run.
func TestStrictRoundTrip(t *testing.T) {
	reg := registry.New()
	reg.SetSource(registry.SourceBuiltin, goldenTools(t), nil)
	ran := 0
	for _, e := range reg.Catalog().Entries() {
		t.Run(e.ID, func(t *testing.T) {
			var s struct {
				Properties map[string]map[string]any `json:"properties"`
				Required   []string                  `json:"required"`
			}
			json.Unmarshal(e.Parameters, &s)
			args := map[string]any{}
			for name, p := range s.Properties {
				if !slices.Contains(s.Required, name) {
					args[name] = nil
				} else if v, ok := sample(p); ok {
					args[name] = v
				} else {
					t.Skipf("no sample value for %s", name)
				}
			}
			raw, _ := json.Marshal(args)
			if !strings.Contains(string(raw), "null") {
				t.Skip("no optional properties")
			}
			if err := e.Validate(raw); err == nil {
				t.Fatalf("the original schema accepts nulls already: %s", raw)
			}
			if err := e.Validate(registry.StripNulls(e.Parameters, raw)); err != nil {
				t.Errorf("after StripNulls: %v", err)
			}
			ran++
		})
	}
	if ran < 5 {
		t.Errorf("only %d tools were checked", ran)
	}
}

// sample returns a value that a simple property schema accepts.
func sample(p map[string]any) (any, bool) {
	if _, ok := p["pattern"]; ok {
		return nil, false
	}
	if e, ok := p["enum"].([]any); ok && len(e) > 0 {
		return e[0], true
	}
	switch p["type"] {
	case "string":
		return "x", true
	case "integer", "number":
		if m, ok := p["minimum"]; ok {
			return m, true
		}
		return 1, true
	case "boolean":
		return false, true
	}
	return nil, false
}
