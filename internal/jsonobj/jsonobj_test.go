package jsonobj

import (
	"encoding/json"
	"testing"
)

// TestRoundTrip: members keep their order (a repeated name its first place and last value),
// numbers their text, and < > & are not escaped.
func TestRoundTrip(t *testing.T) {
	v, err := Parse([]byte(` {"z": 1.50, "a": {"y": [true, null, "<&>"], "x": {}}, "z": 2e1, "m": []} `))
	if err != nil {
		t.Fatal(err)
	}
	o := v.(*Object)
	if o.Get("z") != json.Number("2e1") || o.Get("nope") != nil || !o.Has("m") || o.Has("nope") {
		t.Fatalf("members: %v", o.Keys())
	}
	o.Set("b", "new")
	o.Del("m")
	got, err := Marshal(o)
	if want := `{"z":2e1,"a":{"y":[true,null,"<&>"],"x":{}},"b":"new"}`; err != nil || string(got) != want {
		t.Fatalf("Marshal = %s, %v; want %s", got, err, want)
	}
	for _, bad := range []string{``, `{`, `{"a":1}x`, `[1,]`} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("Parse(%q) succeeded", bad)
		}
	}
}

// TestParseKept: every value below the top one comes with the text it was read from.
func TestParseKept(t *testing.T) {
	v, err := ParseKept([]byte(`{"a": [ 1,  {"b" : "c"} ], "n": 1.0}`))
	if err != nil {
		t.Fatal(err)
	}
	o := v.(*Object)
	for k, want := range map[string]string{"a": `[ 1,  {"b" : "c"} ]`, "n": `1.0`} {
		var raw any
		for name, v := range o.All() {
			if name == k {
				raw = v
			}
		}
		if k, ok := raw.(*Kept); !ok || string(k.Raw) != want {
			t.Errorf("%s: %#v, want the text %s", k, raw, want)
		}
	}
	list := o.Get("a").([]any)
	if inner := Unwrap(list[1]).(*Object); inner.Get("b") != "c" || string(list[1].(*Kept).Raw) != `{"b" : "c"}` {
		t.Errorf("a[1] = %#v", list[1])
	}
	if got, _ := Marshal(o); string(got) != `{"a":[1,{"b":"c"}],"n":1.0}` {
		t.Errorf("Marshal = %s", got)
	}
}
