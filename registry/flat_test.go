package registry

import (
	"bytes"
	"encoding/json"
	"testing"
)

// flatSchemas are schemas of the flat shape (the first is the read tool's), and schemas
// that only look like it.
var flatSchemas = []struct {
	schema string
	flat   bool
}{
	{`{"type":"object","properties":{"filePath":{"type":"string","minLength":1,"description":"d"},"offset":{"type":"integer","minimum":0},"limit":{"type":"integer","minimum":1}},"required":["filePath"]}`, true},
	{`{"type":"object","properties":{"a":{"type":"string","maxLength":3},"n":{"type":"number","exclusiveMinimum":-2,"maximum":10},"b":{"type":"boolean"}},"required":["a","b"],"additionalProperties":false}`, true},
	{`{"type":"object","properties":{"i":{"type":"integer","exclusiveMaximum":5,"minimum":-9223372036854775808}}}`, true},
	{`{"type":"object","properties":{"i":{"type":"integer","minimum":0.5}}}`, true}, // a bound the pass leaves to the library
	{`{"type":"object"}`, true},
	{`{"type":"object","properties":{"\ufffd":{"type":"boolean"}}}`, true},
	{`{"type":"object","properties":{"e":{"type":"string","enum":["x","y"]}}}`, false},
	{`{"type":"object","properties":{"p":{"type":"string","pattern":"^a"}}}`, false},
	{`{"type":"object","properties":{"f":{"type":"string","format":"uri"}}}`, false},
	{`{"type":"object","properties":{"o":{"type":"object"}}}`, false},
	{`{"type":"object","properties":{"t":{"type":["string","null"]}}}`, false},
	{`{"type":"object","properties":{"m":{"type":"integer","multipleOf":2}}}`, false},
	{`{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":{"type":"string"}}`, false},
	{`{"type":"object","patternProperties":{"^x":{"type":"string"}}}`, false},
	{`{"type":"object","minProperties":1}`, false},
	{`{"type":"object","properties":{"a":{"$ref":"#/$defs/s"}},"$defs":{"s":{"type":"string"}}}`, false},
	{`{"type":"object","properties":{"a":{"type":"string"}},"anyOf":[{"required":["a"]}]}`, false},
	{`{"properties":{"a":{"type":"string"}}}`, false},
}

// flatArgs are argument objects for those schemas: fitting, breaking them, and the JSON
// the pass leaves to the library.
var flatArgs = []string{
	`{}`, `{"filePath":"a.txt"}`, `{"filePath":"a.txt","limit":2001}`, `{"filePath":"","limit":1}`,
	`{"filePath":"a","offset":-1}`, `{"filePath":"a","offset":0}`, `{"filePath":"a","limit":1.0}`,
	`{"filePath":"a","limit":1e3}`, `{"filePath":"a","limit":"2"}`, `{"filePath":null}`,
	`{"filePath":"a","filePath":""}`, `{"filePath":"a","extra":{"x":[1,2]}}`, `{"filePath":"a"} {}`,
	`{"filePath":"a"}x`, `[1]`, `"s"`, `{"filePath":"\ud800"}`, "{\"filePath\":\"\xff\"}",
	`{"filePath":"\u00e9\u00e9"}`, `{"a":"abc","b":true}`, `{"a":"abcd","b":true}`, `{"a":"é","b":false,"n":-1}`,
	`{"a":"x","b":true,"n":-2}`, `{"a":"x","b":true,"n":10}`, `{"a":"x","b":true,"n":11}`, `{"a":"x","b":1}`,
	`{"a":"x","b":true,"c":1}`, `{"i":4}`, `{"i":5}`, `{"i":-9223372036854775808}`, `{"i":-9223372036854775809}`,
	`{"i":99999999999999999999}`, `{"i":1}`, `{"i":0}`, `{"a":"x"}`, `{"a":1}`, `{"x":1,"x":2}`,
	`{"filePath":"a","limit":-0}`, `{"filePath":"a","limit":01}`, `{"filePath":"a",}`,
	"{\"\xff\":1}", `{"\ufffd":1}`, `{"\ufffd":true}`,
}

func compileFlat(t testing.TB, schema string) (*compiledSchema, bool) {
	t.Helper()
	c, err := compile("t", json.RawMessage(schema))
	if err != nil {
		t.Fatalf("%s: %v", schema, err)
	}
	return c, c.flat != nil
}

// TestFlatOf: the flat form is found for the shapes it handles and for no other.
func TestFlatOf(t *testing.T) {
	for _, fs := range flatSchemas {
		if _, flat := compileFlat(t, fs.schema); flat != fs.flat {
			t.Errorf("%s: flat %v, want %v", fs.schema, flat, fs.flat)
		}
	}
}

// TestFlatAgrees: for every schema and argument object above, validating with the flat pass
// gives the library's answer, and the pass accepts what plainly fits.
func TestFlatAgrees(t *testing.T) {
	accepted := 0
	for _, fs := range flatSchemas {
		c, _ := compileFlat(t, fs.schema)
		for _, a := range flatArgs {
			lib := validate(c.s, nil, "t", []byte(a))
			with := validate(c.s, c.flat, "t", []byte(a))
			if (lib == nil) != (with == nil) { // the errors are the library's either way
				t.Errorf("%s with %s: library %v, with the flat pass %v", fs.schema, a, lib, with)
			}
			if c.flat != nil && c.flat.accepts(bytes.TrimSpace([]byte(a))) {
				accepted++
			}
		}
	}
	c, _ := compileFlat(t, flatSchemas[0].schema)
	for _, a := range []string{`{"filePath":"a.txt"}`, `{"filePath":"/w/a.txt","limit":2001}`, ` {"offset":3, "filePath":"a"} `} {
		if !c.flat.accepts(bytes.TrimSpace([]byte(a))) {
			t.Errorf("the read schema's flat pass does not accept %s", a)
		}
	}
	if accepted == 0 {
		t.Fatal("the flat pass accepted nothing")
	}
}

// FuzzFlatAgreesWithLibrary: whatever the flat pass accepts, the library accepts.
func FuzzFlatAgreesWithLibrary(f *testing.F) {
	for i := range flatSchemas {
		for _, a := range flatArgs {
			f.Add(uint8(i), []byte(a))
		}
	}
	compiled := make([]*compiledSchema, len(flatSchemas))
	for i, fs := range flatSchemas {
		compiled[i], _ = compileFlat(f, fs.schema)
	}
	f.Fuzz(func(t *testing.T, which uint8, args []byte) {
		c := compiled[int(which)%len(compiled)]
		if c.flat == nil {
			return
		}
		trimmed := bytes.TrimSpace(args)
		if len(trimmed) == 0 || !c.flat.accepts(trimmed) {
			return
		}
		if err := validate(c.s, nil, "t", args); err != nil {
			t.Fatalf("%s: the flat pass accepts %q, the library refuses it: %v", flatSchemas[int(which)%len(compiled)].schema, args, err)
		}
	})
}
