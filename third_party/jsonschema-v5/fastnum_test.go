package jsonschema

import (
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
	"testing"
)

// The number checks of schema.go take a fast path for json.Numbers written as plain integer
// literals (see isInteger and numberInt64). The tests here hold them to upstream's big.Rat
// logic, written out again in refLeaves: same verdicts, same error texts.

// numberTexts are instances: plain integers on both sides of the int64 range, and the
// texts only big.Rat reads (fractions, exponents, "-0", "+1", hex), integers among them.
var numberTexts = []string{
	"0", "-0", "1", "-1", "2", "-2", "7", "10", "99", "100", "101", "2000", "2001", "2002",
	"007", "-007",
	"9223372036854775806", "9223372036854775807", "9223372036854775808", "9223372036854775809",
	"-9223372036854775807", "-9223372036854775808", "-9223372036854775809",
	"18446744073709551616", "-18446744073709551616",
	"123456789012345678901234567890", "-123456789012345678901234567890",
	"1.0", "-1.0", "2001.0", "0.0", "-0.0", "0.5", "-0.5", "1.5", "2000.999", "2001.0001",
	"1e2", "1E2", "1e+2", "1e-2", "-1e2", "1.5e1", "2.001e3", "20.01e2",
	"1e18", "1e19", "9.223372036854775807e18", "9.223372036854775808e18",
	"1e400", "-1e400", "1e-400", "123e-3", "+1", "+0", "0x10",
}

// boundTexts are the bounds: integers within int64 and beyond, fractions, exponents.
var boundTexts = []string{
	"0", "-0", "1", "-1", "2", "10", "100", "2000", "2001", "2002",
	"9223372036854775807", "-9223372036854775808", "9223372036854775808", "-9223372036854775809",
	"123456789012345678901234567890",
	"0.5", "-0.5", "1.5", "2000.5", "1.0", "2001.0", "1e2", "2.001e3", "1e-3", "1e30", "-1e30",
}

// boundsSchema is a schema with every number keyword bounded by bound, multipleOf only for
// a positive bound (the meta-schema wants it so).
func boundsSchema(bound string) string {
	s := fmt.Sprintf(`{"const": %[1]s, "minimum": %[1]s, "exclusiveMinimum": %[1]s, "maximum": %[1]s, "exclusiveMaximum": %[1]s`, bound)
	if r, ok := new(big.Rat).SetString(bound); ok && r.Sign() > 0 {
		s += fmt.Sprintf(`, "multipleOf": %s`, bound)
	}
	return s + "}"
}

func compileString(tb testing.TB, schema string) *Schema {
	tb.Helper()
	c := NewCompiler()
	if err := c.AddResource("mem:///s.json", strings.NewReader(schema)); err != nil {
		tb.Fatal(err)
	}
	sch, err := c.Compile("mem:///s.json")
	if err != nil {
		tb.Fatalf("%s: %v", schema, err)
	}
	return sch
}

// refLeaves is what upstream's validate reports for the number v against boundsSchema(bound),
// computed with big.Rat alone: the keyword and message of each failure, in upstream's order.
func refLeaves(v json.Number, bound string) []string {
	num, _ := new(big.Rat).SetString(fmt.Sprint(v))
	b, _ := new(big.Rat).SetString(bound)
	f, _ := b.Float64()
	c := num.Cmp(b)
	var out []string
	if c != 0 {
		out = append(out, fmt.Sprintf("/const: value must be %#v", json.Number(bound)))
	}
	if c < 0 {
		out = append(out, fmt.Sprintf("/minimum: must be >= %v but found %v", f, v))
	}
	if c <= 0 {
		out = append(out, fmt.Sprintf("/exclusiveMinimum: must be > %v but found %v", f, v))
	}
	if c > 0 {
		out = append(out, fmt.Sprintf("/maximum: must be <= %v but found %v", f, v))
	}
	if c >= 0 {
		out = append(out, fmt.Sprintf("/exclusiveMaximum: must be < %v but found %v", f, v))
	}
	if b.Sign() > 0 && !new(big.Rat).Quo(num, b).IsInt() {
		out = append(out, fmt.Sprintf("/multipleOf: %v not multipleOf %v", v, f))
	}
	return out
}

// refIsInt is upstream's "integer" check.
func refIsInt(v interface{}) bool {
	num, _ := new(big.Rat).SetString(fmt.Sprint(v))
	return num.IsInt()
}

// leaves gives the keyword and message of each failure err reports, and err's text.
func leaves(err error) ([]string, string) {
	if err == nil {
		return nil, ""
	}
	ve := err.(*ValidationError)
	var out []string
	for _, c := range ve.Causes {
		if len(c.Causes) > 0 || c.InstanceLocation != "" {
			out = append(out, fmt.Sprintf("unexpected cause %#v", c))
			continue
		}
		out = append(out, c.KeywordLocation+": "+c.Message)
	}
	return out, err.Error()
}

// checkBounds validates v against sch, compiled from boundsSchema(bound), and compares the
// outcome with refLeaves.
func checkBounds(t *testing.T, sch *Schema, bound string, v json.Number) {
	t.Helper()
	want := refLeaves(v, bound)
	got, text := leaves(sch.Validate(v))
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s against %s:\n got %q\nwant %q", v, bound, got, want)
		return
	}
	if len(want) > 0 {
		wantText := fmt.Sprintf("jsonschema: '' does not validate with mem:///s.json#%s", want[0])
		if text != wantText {
			t.Errorf("%s against %s: error text\n got %q\nwant %q", v, bound, text, wantText)
		}
	}
}

// checkInteger validates v against sch, compiled from {"type": "integer"}, and compares the
// outcome with refIsInt.
func checkInteger(t *testing.T, sch *Schema, v interface{}) {
	t.Helper()
	err := sch.Validate(v)
	if want := refIsInt(v); want != (err == nil) {
		t.Errorf("%v (%T) as integer: got error %v, want integer %v", v, v, err, want)
		return
	}
	if err != nil {
		if want := "jsonschema: '' does not validate with mem:///s.json#/type: expected integer, but got number"; err.Error() != want {
			t.Errorf("%v as integer: got %q, want %q", v, err, want)
		}
	}
}

func TestNumberFastPath(t *testing.T) {
	integer := compileString(t, `{"type": "integer"}`)
	for _, text := range numberTexts {
		checkInteger(t, integer, json.Number(text))
	}
	for _, f := range []float64{0, -1, 1, 1.5, 2001, 1e18, 1e300, -0.5} {
		checkInteger(t, integer, f)
	}
	for _, bound := range boundTexts {
		sch := compileString(t, boundsSchema(bound))
		for _, text := range numberTexts {
			checkBounds(t, sch, bound, json.Number(text))
		}
	}
}

// TestNumberFastPathInObject checks the read tool's case: numbers as properties, located at
// their instance path.
func TestNumberFastPathInObject(t *testing.T) {
	sch := compileString(t, readSchema)
	for _, c := range []struct{ args, want string }{
		{`{"filePath":"/x/a.txt","limit":2001}`, ""},
		{`{"filePath":"/x/a.txt","limit":1,"offset":0}`, ""},
		{`{"filePath":"/x/a.txt","limit":1e3}`, ""},
		{`{"filePath":"/x/a.txt","limit":0}`, "jsonschema: '/limit' does not validate with mem:///s.json#/properties/limit/minimum: must be >= 1 but found 0"},
		{`{"filePath":"/x/a.txt","offset":-1}`, "jsonschema: '/offset' does not validate with mem:///s.json#/properties/offset/minimum: must be >= 0 but found -1"},
		{`{"filePath":"/x/a.txt","limit":-9223372036854775809}`, "jsonschema: '/limit' does not validate with mem:///s.json#/properties/limit/minimum: must be >= 1 but found -9223372036854775809"},
		{`{"filePath":"/x/a.txt","limit":0.5}`, "jsonschema: '/limit' does not validate with mem:///s.json#/properties/limit/type: expected integer, but got number"},
	} {
		err := sch.Validate(decodeNumbers(t, c.args))
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.args, got, c.want)
		}
	}
}

func FuzzNumberFastPath(f *testing.F) {
	for i, text := range numberTexts {
		f.Add(text, boundTexts[i%len(boundTexts)])
	}
	integer := compileString(f, `{"type": "integer"}`)
	f.Fuzz(func(t *testing.T, text, bound string) {
		if _, ok := new(big.Rat).SetString(text); !ok {
			return // upstream panics on numbers big.Rat does not read; so does this copy
		}
		var b interface{}
		if err := json.Unmarshal([]byte(bound), &b); err != nil || len(bound) > 100 {
			return
		}
		if _, ok := b.(float64); !ok {
			return
		}
		if _, ok := new(big.Rat).SetString(bound); !ok {
			return
		}
		checkInteger(t, integer, json.Number(text))
		checkBounds(t, compileString(t, boundsSchema(bound)), bound, json.Number(text))
	})
}

// readSchema is shaped like toolsd's read tool, whose arguments BenchmarkValidateSmallObject
// validates.
const readSchema = `{
	"$schema": "https://json-schema.org/draft/2020-12/schema",
	"type": "object",
	"properties": {
		"filePath": {"type": "string", "minLength": 1},
		"offset": {"type": "integer", "minimum": 0},
		"limit": {"type": "integer", "minimum": 1}
	},
	"required": ["filePath"],
	"additionalProperties": false
}`

func decodeNumbers(tb testing.TB, s string) interface{} {
	tb.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v interface{}
	if err := dec.Decode(&v); err != nil {
		tb.Fatal(err)
	}
	return v
}

func BenchmarkValidateSmallObject(b *testing.B) {
	sch := compileString(b, readSchema)
	v := decodeNumbers(b, `{"filePath":"/x/a.txt","limit":2001}`)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := sch.Validate(v); err != nil {
			b.Fatal(err)
		}
	}
}
