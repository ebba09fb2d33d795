package jsonw

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// encode is what encoding/json writes for v, with or without HTML escaping.
func encode(t testing.TB, v any, html bool) ([]byte, error) {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(html)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

var strs = []string{
	"", "a", "plain text of a file, long enough for a word or two", "tab\there", "line\nline\r\n",
	`quote " and \ backslash`, "<html> & more", "\x00\x01\x1f\x7f", "caf\u00e9 \u2028 \u2029 \U0001F600",
	"bad \xff utf-8 \xe2\x80", "\xe2\x80\xa8", strings.Repeat("0123456<", 9), strings.Repeat("x", 64) + "\"",
	"12345678\t", "1234567\xc3", "\u00e9\u00e9\u00e9\u00e9",
}

func TestString(t *testing.T) {
	for _, s := range strs {
		for _, html := range []bool{true, false} {
			want, _ := encode(t, s, html)
			if got := String([]byte("x"), s, html); string(got) != "x"+string(want) {
				t.Errorf("String(%q, html=%v) = %s, want %s", s, html, got[1:], want)
			}
		}
	}
}

func FuzzString(f *testing.F) {
	for _, s := range strs {
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, s string, html bool) {
		want, _ := encode(t, s, html)
		if got := String(nil, s, html); !bytes.Equal(got, want) {
			t.Fatalf("String(%q, html=%v) = %s, want %s", s, html, got, want)
		}
	})
}

var raws = []string{
	`{}`, `{"a":1}`, ` { "a" : [1, 2, {"b":"<x>"}] } `, `"\u2028"`, "\"\xe2\x80\xa8\"", `{"a":"&"}`, `[1,2`, ``, `nul`,
	`{"a":1}{}`, `1e5`, `"tab\tin string"`, "{\"a\":\"raw\ttab\"}", `{"filePath":"/tmp/x.txt","limit":2001}`,
}

func TestRaw(t *testing.T) {
	for _, r := range raws {
		for _, html := range []bool{true, false} {
			checkRaw(t, []byte(r), html)
		}
	}
	checkRaw(t, nil, true)
}

func checkRaw(t *testing.T, raw []byte, html bool) {
	t.Helper()
	want, werr := encode(t, json.RawMessage(raw), html)
	got, gerr := Raw([]byte("x"), raw, html)
	if (werr != nil) != (gerr != nil) {
		t.Fatalf("Raw(%q, html=%v): error %v, encoding/json's %v", raw, html, gerr, werr)
	}
	if werr == nil && string(got) != "x"+string(want) {
		t.Fatalf("Raw(%q, html=%v) = %s, want %s", raw, html, got[1:], want)
	}
	if werr != nil && string(got) != "x" {
		t.Fatalf("Raw(%q) failed but appended %q", raw, got)
	}
}

func FuzzRaw(f *testing.F) {
	for _, r := range raws {
		f.Add([]byte(r), true)
	}
	f.Fuzz(func(t *testing.T, raw []byte, html bool) {
		if raw == nil {
			raw = []byte{}
		}
		checkRaw(t, raw, html)
	})
}

func TestTime(t *testing.T) {
	for _, tm := range []time.Time{
		{}, time.Date(2026, 11, 30, 17, 44, 12, 123456789, time.UTC), time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", -3600*5-1800)),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("far", 25*3600)),
	} {
		want, werr := encode(t, tm, true)
		got, gerr := Time(nil, tm)
		if (werr != nil) != (gerr != nil) || werr == nil && !bytes.Equal(got, want) {
			t.Errorf("Time(%v) = %s, %v; want %s, %v", tm, got, gerr, want, werr)
		}
	}
}

func TestObject(t *testing.T) {
	type inner struct {
		X string `json:"x"`
	}
	type all struct {
		S  string          `json:"s"`
		SO string          `json:"so,omitempty"`
		B  bool            `json:"b"`
		BO bool            `json:"bo,omitempty"`
		I  int64           `json:"i,omitempty"`
		R  json.RawMessage `json:"r"`
		RO json.RawMessage `json:"ro,omitempty"`
		T  time.Time       `json:"t"`
		TO *time.Time      `json:"to,omitempty"`
		V  *inner          `json:"v,omitempty"`
	}
	now := time.Date(2026, 11, 30, 1, 2, 3, 4, time.UTC)
	for _, v := range []all{
		{},
		{S: "<a>", SO: "b", B: true, BO: true, I: -7, R: json.RawMessage(` [ "<" ] `), RO: json.RawMessage(`{}`), T: now, TO: &now, V: &inner{"&"}},
	} {
		for _, html := range []bool{true, false} {
			o := Object{B: []byte("x"), HTML: html}
			o.Begin()
			o.String("s", v.S)
			o.StringOmit("so", v.SO)
			o.Bool("b", v.B)
			o.BoolOmit("bo", v.BO)
			o.IntOmit("i", v.I)
			o.Raw("r", v.R)
			o.RawOmit("ro", v.RO)
			o.Time("t", v.T)
			o.TimeOmit("to", v.TO)
			if v.V != nil {
				o.Value("v", v.V)
			}
			got, err := o.End()
			want, _ := encode(t, v, html)
			if err != nil || string(got) != "x"+string(want) {
				t.Errorf("Object(html=%v) = %s, %v; want %s", html, got, err, want)
			}
		}
	}
	o := Object{}
	o.Begin()
	o.Raw("bad", []byte(`{`))
	if _, err := o.End(); err == nil {
		t.Error("an invalid raw member gave no error")
	}
}

var text = strings.Repeat("    12\tline 12 of the one-KiB file read by toolsd's benchmarks: xxxxxx\n", 16)

func BenchmarkString(b *testing.B) {
	b.SetBytes(int64(len(text)))
	buf := make([]byte, 0, 4096)
	for b.Loop() {
		buf = String(buf[:0], text, true)
	}
}

func BenchmarkStringEncodingJSON(b *testing.B) {
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		json.Marshal(text)
	}
}

func TestMap(t *testing.T) {
	for _, m := range []map[string]any{
		nil, {}, {"b": 1, "a": "x<y", "c": true, "d": nil, "e": int64(-5), "f": 1.5, "g": []string{"&"}, "h": map[string]any{"z": 1, "y": 2}},
		{"\u2028key": "v", "<": ">", "": 0, "Z": false, "a\xff": "\xff"},
		{"nested": map[string]any{"b": []string{"<", ""}, "a": map[string]any{}, "n": []string(nil), "e": []string{}}, "f": map[string]any(nil)},
	} {
		for _, html := range []bool{true, false} {
			want, werr := encode(t, m, html)
			got, gerr := Map([]byte("x"), m, html)
			if werr != nil || gerr != nil || string(got) != "x"+string(want) {
				t.Errorf("Map(%v, html=%v) = %s, %v; want %s, %v", m, html, got, gerr, want, werr)
			}
		}
	}
	if _, err := Map(nil, map[string]any{"ch": make(chan int)}, true); err == nil {
		t.Error("a value encoding/json refuses gave no error")
	}
}

func TestArrays(t *testing.T) {
	type elem struct {
		A string `json:"a"`
	}
	type doc struct {
		S  []string `json:"s"`
		SO []string `json:"so,omitempty"`
		E  []elem   `json:"e"`
	}
	for _, v := range []doc{{}, {S: []string{}, E: []elem{}}, {S: []string{"<", ""}, SO: []string{"x"}, E: []elem{{"1"}, {"2"}}}} {
		o := Object{HTML: true}
		o.Begin()
		o.Strings("s", v.S)
		o.StringsOmit("so", v.SO)
		if len(v.E) == 0 {
			Slice(&o, "e", v.E)
		} else {
			outer := o.OpenArray("e")
			for _, e := range v.E {
				in := o.OpenElem()
				o.String("a", e.A)
				o.Close(in)
			}
			o.CloseArray(outer)
		}
		got, err := o.End()
		want, _ := encode(t, v, true)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("arrays: %s, %v; want %s", got, err, want)
		}
	}
}

func BenchmarkRaw(b *testing.B) {
	raw := []byte(`{"filePath":"/tmp/bench/one-kib.txt","lines":16,"offset":1,"totalLines":16,"truncated":false}`)
	buf := make([]byte, 0, 256)
	for b.Loop() {
		buf, _ = Raw(buf[:0], raw, true)
	}
}

// FuzzCompact: compact's eight bytes at a time answer as a byte at a time does.
func FuzzCompact(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a": 1}`, "{\"a\":\"\u2028\"}", `{"a":"<b>"}`, `[1,2,3,4,5,6,7,8,9]`, "{\"k\":\"\t\"}"} {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, raw []byte, html bool) {
		want := true
		for _, c := range raw {
			switch c {
			case ' ', '\t', '\n', '\r', 0xE2:
				want = false
			case '<', '>', '&':
				want = want && !html
			}
		}
		if got := compact(raw, html); got != want {
			t.Fatalf("compact(%q, %v) = %v, want %v", raw, html, got, want)
		}
	})
}
