package jsondec

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/toolsd/toolsd/protocol"
)

type args struct {
	FilePath string         `json:"filePath"`
	Offset   *int           `json:"offset"`
	Limit    *int           `json:"limit"`
	Flags    []string       `json:"flags,omitempty"`
	Extra    map[string]any `json:"extra,omitempty"`
	N        float64        `json:"n"`
	Raw      json.RawMessage
	Inner    struct {
		B bool `json:"b"`
	} `json:"inner"`
}

var seeds = []string{
	`{"a":1,"a":2}`, `"\xff\xfe"`, "\"\xff\"", `[1,]`, `{"a" 1}`, `01`, `-`, `1.`, `.5`, `1e`, `"\u12"`, `"\x"`, "\"\x01\"", `[[[[]]]]`, ` 1 `, `1 2`, `tru`, `nulls`,
	`{"sessionID":"s","messageID":"m","callID":"c","tool":"read","args":{"filePath":"a.txt","limit":2001}}`,
	`{"SESSIONID":"case","Tool":"x","tool":"last wins"}`,
	`{"sessionID":"bad \xff utf-8","callID":"\ud800"}`,
	`{"args":null,"model":{"providerID":"p","modelID":"m"},"agent":"build"}`,
	`{"filePath":"x","offset":-1,"limit":1e2}`,
	`{"filePath":1}`, `{"limit":"2"}`, `{"limit":1.5}`, `{"limit":99999999999999999999}`, `[1]`, `"s"`, `null`, `{`, `{}x`, ``,
	`{"flags":["a",null,"b"],"extra":{"k":[1,{"z":null}]},"n":-0.0e-3,"Raw":{"a" : [ 1 ]},"inner":{"b":true,"c":1}}`,
	`{"n":1e400}`, `{"inner":[]}`, `{"unknown":{"deep":[[[]]]},"filePath":"\u00e9\\n"}`,
}

// check: Unmarshal gives what json.Unmarshal gives, for the value and for the error.
func check(t *testing.T, data []byte) {
	if got, want := Valid(data), json.Valid(data); got != want {
		t.Fatalf("Valid(%q) = %v, json.Valid %v", data, got, want)
	}
	for _, mk := range []func() any{func() any { return new(protocol.ExecuteParams) }, func() any { return new(args) }, func() any { var v any; return &v }} {
		got, want := mk(), mk()
		gerr, werr := Unmarshal(data, got), json.Unmarshal(data, want)
		if (gerr == nil) != (werr == nil) || gerr != nil && gerr.Error() != werr.Error() {
			t.Fatalf("%q into %T: error %v, encoding/json's %v", data, got, gerr, werr)
		}
		if werr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q into %T:\n got %#v\nwant %#v", data, got, got, want)
		}
	}
}

func TestUnmarshalIsEncodingJSON(t *testing.T) {
	for _, s := range seeds {
		check(t, []byte(s))
	}
}

func FuzzUnmarshal(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { check(t, data) })
}

func BenchmarkUnmarshal(b *testing.B) {
	data := []byte(seeds[0])
	b.ReportAllocs()
	for b.Loop() {
		var p protocol.ExecuteParams
		if err := Unmarshal(data, &p); err != nil {
			b.Fatal(err)
		}
	}
}

// TestCanonical: the same value however spaced, ordered or escaped has one form; other
// values (and arrays in another order) have others.
func TestCanonical(t *testing.T) {
	same := [][]string{
		{`{"b":{"y":1,"x":[2,1]},"a":"\u00e9"}`, ` { "a" : "é", "b" : { "x" : [ 2, 1 ], "y" : 1 } } `},
		{`["x",{"k":null,"j":true}]`, `[ "x" , { "j" : true , "k" : null } ]`},
	}
	for _, s := range same {
		if a, b := Canonical([]byte(s[0])), Canonical([]byte(s[1])); !bytes.Equal(a, b) {
			t.Errorf("%s and %s: %s and %s", s[0], s[1], a, b)
		}
	}
	differ := [][]string{{`[1,2]`, `[2,1]`}, {`{"n":1}`, `{"n":1.0}`}, {`{"a":"x"}`, `{"a":"y"}`}, {`{}`, `not json`}}
	for _, d := range differ {
		if a, b := Canonical([]byte(d[0])), Canonical([]byte(d[1])); bytes.Equal(a, b) {
			t.Errorf("%s and %s have one form: %s", d[0], d[1], a)
		}
	}
}
