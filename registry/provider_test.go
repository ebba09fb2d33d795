package registry

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestAdaptSchema(t *testing.T) {
	cases := []struct {
		name, provider, in, want string
		notStrict                bool
	}{
		{
			name:     "openai: optional made nullable, all required, closed",
			provider: "openai",
			in:       `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"a":{"type":"string","minLength":1,"description":"A."},"b":{"type":"integer","default":3}},"required":["a"]}`,
			want:     `{"type":"object","properties":{"a":{"type":"string","description":"A. (not empty)"},"b":{"type":["integer","null"],"description":"(default 3)"}},"required":["a","b"],"additionalProperties":false}`,
		},
		{
			name:     "openai: nested objects and arrays of objects",
			provider: "openai",
			in:       `{"type":"object","properties":{"todos":{"type":"array","items":{"type":"object","properties":{"id":{"type":"string"},"done":{"type":"boolean"}},"required":["id"]}}},"required":["todos"]}`,
			want:     `{"type":"object","properties":{"todos":{"type":"array","items":{"type":"object","properties":{"id":{"type":"string"},"done":{"type":["boolean","null"]}},"required":["id","done"],"additionalProperties":false}}},"required":["todos"],"additionalProperties":false}`,
		},
		{
			name:     "openai: optional enum gets null in the enum",
			provider: "openai",
			in:       `{"type":"object","properties":{"f":{"type":"string","enum":["text","html"]}}}`,
			want:     `{"type":"object","properties":{"f":{"type":["string","null"],"enum":["text","html",null]}},"required":["f"],"additionalProperties":false}`,
		},
		{
			name:     "openai: optional $ref wrapped in anyOf, definitions renamed",
			provider: "openai",
			in:       `{"type":"object","properties":{"p":{"$ref":"#/definitions/pt","description":"A point."}},"definitions":{"pt":{"type":"object","properties":{"x":{"type":"number"}},"required":["x"]}}}`,
			want:     `{"type":"object","properties":{"p":{"description":"A point.","anyOf":[{"$ref":"#/$defs/pt"},{"type":"null"}]}},"$defs":{"pt":{"type":"object","properties":{"x":{"type":"number"}},"required":["x"],"additionalProperties":false}},"required":["p"],"additionalProperties":false}`,
		},
		{
			name:     "openai: oneOf becomes anyOf",
			provider: "openai",
			in:       `{"type":"object","properties":{"v":{"oneOf":[{"type":"string"},{"type":"number"}]}},"required":["v"]}`,
			want:     `{"type":"object","properties":{"v":{"anyOf":[{"type":"string"},{"type":"number"}]}},"required":["v"],"additionalProperties":false}`,
		},
		{
			name:     "openai: a single-branch allOf is merged as adapted",
			provider: "openai",
			in:       `{"type":"object","properties":{"p":{"allOf":[{"type":"object","properties":{"u":{"type":"string","format":"uri"},"n":{"oneOf":[{"type":"string"},{"type":"null"}]}},"required":["n"]}]}},"required":["p"]}`,
			want:     `{"type":"object","properties":{"p":{"type":"object","properties":{"u":{"type":["string","null"],"description":"(format: uri)"},"n":{"anyOf":[{"type":"string"},{"type":"null"}]}},"required":["u","n"],"additionalProperties":false}},"required":["p"],"additionalProperties":false}`,
		},
		{
			name:      "openai: a free-form map cannot be strict",
			provider:  "openai",
			in:        `{"type":"object","properties":{"env":{"type":"object","additionalProperties":{"type":"string"}}},"required":["env"]}`,
			want:      `{"type":"object","properties":{"env":{"type":"object","additionalProperties":{"type":"string"}}},"required":["env"],"additionalProperties":false}`,
			notStrict: true,
		},
		{
			name:     "openai: no parameters",
			provider: "openai",
			in:       `{"type":"object"}`,
			want:     `{"type":"object","properties":{},"required":[],"additionalProperties":false}`,
		},
		{
			name:     "google: refs inlined, type lists nullable, enums of strings, no additionalProperties",
			provider: "google",
			in:       `{"$schema":"x","type":"object","properties":{"p":{"$ref":"#/$defs/pt"},"n":{"type":["integer","null"],"enum":[1,2]},"m":{"type":"string","enum":["a","b"],"format":"uri"}},"required":["p","zz"],"additionalProperties":false,"$defs":{"pt":{"type":"object","properties":{"x":{"type":"number","exclusiveMinimum":0}}}}}`,
			want:     `{"type":"object","properties":{"p":{"type":"object","properties":{"x":{"type":"number","description":"(greater than 0)"}}},"n":{"nullable":true,"type":"integer","description":"(one of 1, 2)"},"m":{"type":"string","enum":["a","b"],"description":"(format: uri)"}},"required":["p"],"propertyOrdering":["p","n","m"]}`,
		},
		{
			name:     "google: anyOf with null becomes nullable; const becomes enum",
			provider: "google",
			in:       `{"type":"object","properties":{"a":{"anyOf":[{"type":"string"},{"type":"null"}]},"k":{"const":"x"},"l":{"type":"array"}}}`,
			want:     `{"type":"object","properties":{"a":{"nullable":true,"type":"string"},"k":{"enum":["x"],"type":"string"},"l":{"type":"array","items":{"type":"string"}}},"propertyOrdering":["a","k","l"]}`,
		},
		{
			name:     "anthropic: as is without $schema",
			provider: "anthropic",
			in:       `{"$schema":"x","type":"object","properties":{"a":{"type":"string","minLength":1}},"additionalProperties":false}`,
			want:     `{"type":"object","properties":{"a":{"type":"string","minLength":1}},"additionalProperties":false}`,
		},
		{
			name:     "default: as is",
			provider: "ollama",
			in:       `{"$schema":"x", "type":"object"}`,
			want:     `{"$schema":"x","type":"object"}`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := AdaptSchema(tc.provider, json.RawMessage(tc.in))
			var ns *NotStrictError
			if tc.notStrict != errors.As(err, &ns) || (err != nil && ns == nil) {
				t.Fatalf("err = %v", err)
			}
			if string(got) != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
	for _, bad := range []string{`[]`, `{`, `"x"`} {
		if _, err := AdaptSchema("openai", json.RawMessage(bad)); err == nil {
			t.Errorf("AdaptSchema(%s) did not fail", bad)
		}
	}
}

func TestStripNulls(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{
		"a":{"type":"string"},
		"b":{"type":["string","null"]},
		"c":{"type":"string"},
		"o":{"$ref":"#/$defs/o"},
		"list":{"type":"array","items":{"type":"object","properties":{"x":{"type":"string"},"y":{"type":"string"}},"required":["y"]}}
	},"required":["c"],"$defs":{"o":{"type":"object","properties":{"z":{"type":"integer"}}}}}`)
	cases := []struct{ in, want string }{
		{`{"a":null,"b":null,"c":null}`, `{"b":null,"c":null}`},
		{`{"o":{"z":null},"list":[{"x":null,"y":null},{"x":"1"}]}`, `{"o":{},"list":[{"y":null},{"x":"1"}]}`},
		{`{"a":"x"}`, `{"a":"x"}`},
		{`{"unknown":null}`, `{"unknown":null}`},
		{`not json null`, `not json null`},
	}
	// Schemas whose $refs fan out stay cheap.
	fan := json.RawMessage(`{"type":"object","allOf":[{"$ref":"#"},{"$ref":"#"}],"anyOf":[{"$ref":"#"}],"properties":{"a":{"$ref":"#"},"b":{"$ref":"#"}}}`)
	if got := string(StripNulls(fan, json.RawMessage(`{"a":{"b":{"a":null}}}`))); got != `{"a":{"b":{}}}` {
		t.Errorf("fan-out: %s", got)
	}
	if _, err := AdaptSchema("google", fan); err != nil {
		t.Error(err)
	}
	for _, tc := range cases {
		if got := string(StripNulls(schema, json.RawMessage(tc.in))); got != tc.want {
			t.Errorf("StripNulls(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
