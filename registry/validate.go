package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// SchemaError reports a tool schema that does not compile.
type SchemaError struct {
	Tool string
	Err  error
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("the parameters schema of tool %q does not compile: %v", e.Tool, e.Err)
}

func (e *SchemaError) Unwrap() error { return e.Err }

// CompileSchema compiles a tool's parameter schema (draft 2020-12 unless it names another).
// It never loads anything from the network or the file system: every $ref must point
// inside the schema.
func CompileSchema(toolID string, schema json.RawMessage) (*jsonschema.Schema, error) {
	if len(bytes.TrimSpace(schema)) == 0 {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	var probe any
	if err := json.Unmarshal(schema, &probe); err != nil {
		return nil, &SchemaError{toolID, fmt.Errorf("not valid JSON: %v", err)}
	}
	if m, ok := probe.(map[string]any); !ok {
		return nil, &SchemaError{toolID, errors.New("it must be a JSON object")}
	} else if t, ok := m["type"]; ok && t != "object" {
		return nil, &SchemaError{toolID, fmt.Errorf(`its "type" must be "object", not %v`, t)}
	}
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.LoadURL = func(s string) (io.ReadCloser, error) {
		return nil, fmt.Errorf("$ref to %q: toolsd loads no external schemas; inline it under $defs", s)
	}
	url := "toolsd:///" + toolID + ".json"
	if err := c.AddResource(url, bytes.NewReader(schema)); err != nil {
		return nil, &SchemaError{toolID, err}
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, &SchemaError{toolID, simplifySchemaErr(err)}
	}
	return s, nil
}

func simplifySchemaErr(err error) error {
	var se *jsonschema.SchemaError
	if errors.As(err, &se) && se.Err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(se.Err, &ve) {
			return errors.New(strings.Join(flatten(ve, "schema"), "; "))
		}
		return se.Err
	}
	return err
}

// Violation is one way the arguments break the schema.
type Violation struct {
	// Pointer is the JSON pointer of the offending value ("" for the whole object).
	Pointer string `json:"pointer"`
	Message string `json:"message"`
}

// ValidationError reports arguments that break a tool's schema, written for the model.
type ValidationError struct {
	Tool       string
	Violations []Violation
	// Schema is the tool's schema, repeated so the model can correct the call.
	Schema json.RawMessage
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "The arguments for tool %q are invalid; nothing was run. Fix these and call the tool again:\n", e.Tool)
	for _, v := range e.Violations {
		p := v.Pointer
		if p == "" {
			p = "(the arguments object)"
		}
		fmt.Fprintf(&b, "- at %s: %s\n", p, v.Message)
	}
	if len(e.Schema) > 0 && len(e.Schema) < 4096 {
		fmt.Fprintf(&b, "The expected arguments schema is: %s", compactJSON(e.Schema))
	}
	return strings.TrimRight(b.String(), "\n")
}

func compactJSON(b []byte) string {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return string(b)
	}
	return buf.String()
}

func validate(s *jsonschema.Schema, tool string, args []byte) error {
	fail := func(msg string) error {
		return &ValidationError{Tool: tool, Violations: []Violation{{Pointer: "", Message: msg}}}
	}
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		trimmed = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return fail(fmt.Sprintf("the arguments are not valid JSON (%v); send a JSON object", err))
	}
	if dec.More() {
		return fail("the arguments hold more than one JSON value; send exactly one JSON object")
	}
	if _, ok := v.(map[string]any); !ok {
		return fail(fmt.Sprintf("expected a JSON object of named arguments, got %s", jsonKind(v)))
	}
	err := s.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return fail(err.Error())
	}
	out := &ValidationError{Tool: tool}
	seen := map[string]bool{}
	for _, line := range flattenViolations(ve) {
		k := line.Pointer + "\x00" + line.Message
		if !seen[k] {
			seen[k] = true
			out.Violations = append(out.Violations, line)
		}
	}
	return out
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number, float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	}
	return "an object"
}

// flattenViolations turns the library's error tree into its leaves: the messages that say
// what is wrong where.
func flattenViolations(ve *jsonschema.ValidationError) []Violation {
	var out []Violation
	var walk func(v *jsonschema.ValidationError)
	walk = func(v *jsonschema.ValidationError) {
		if len(v.Causes) == 0 {
			out = append(out, Violation{Pointer: v.InstanceLocation, Message: humanize(v.Message)})
			return
		}
		for _, c := range v.Causes {
			walk(c)
		}
	}
	walk(ve)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Pointer < out[j].Pointer })
	return out
}

func flatten(ve *jsonschema.ValidationError, what string) []string {
	var out []string
	for _, v := range flattenViolations(ve) {
		p := v.Pointer
		if p == "" {
			p = "(root)"
		}
		out = append(out, fmt.Sprintf("%s at %s: %s", what, p, v.Message))
	}
	return out
}

// humanize rewrites the library's terse messages into sentences a model acts on.
func humanize(m string) string {
	switch {
	case strings.HasPrefix(m, "missing properties: "):
		return "required argument(s) missing: " + strings.TrimPrefix(m, "missing properties: ") + "; add them"
	case strings.HasPrefix(m, "additionalProperties "):
		return "unknown argument(s) " + strings.TrimSuffix(strings.TrimPrefix(m, "additionalProperties "), " not allowed") + "; remove them or use the names in the schema"
	case strings.HasPrefix(m, "expected "):
		return m + "; send a value of the expected type"
	}
	return m
}
