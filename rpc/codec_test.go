package rpc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/toolsd/toolsd/protocol"
)

// fillFields sets every field of the struct v points to (by reflection, so that a field
// added to the type and not to its hand-written encoding fails the tests below).
func fillFields(t *testing.T, v reflect.Value) {
	t.Helper()
	v = v.Elem()
	for i := range v.NumField() {
		f, text := v.Field(i), fmt.Sprintf("field %d <&> \"q\"\t\u2028 caf\u00e9 \xff", i)
		switch f.Interface().(type) {
		case string:
			f.SetString(text)
		case bool:
			f.SetBool(true)
		case json.RawMessage:
			f.SetBytes([]byte(` { "k" : [ "<&>\u2028" , 1 ] } `))
		case []protocol.Attachment:
			f.Set(reflect.ValueOf([]protocol.Attachment{{ID: text, Mime: "image/png", Data: "AAAA"}, {}}))
		case *protocol.ClientRef:
			c := &protocol.ClientRef{}
			fillFields(t, reflect.ValueOf(c))
			f.Set(reflect.ValueOf(c))
		default:
			t.Fatalf("field %s: no test value for %s", v.Type().Field(i).Name, f.Type())
		}
	}
}

// wantCodec checks that the codec writes v byte for byte as its encoding/json does.
func wantCodec(t *testing.T, name string, v any) {
	t.Helper()
	got, err := codec{}.Marshal(v)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, bytes.TrimSuffix(want.Bytes(), []byte("\n"))) {
		t.Errorf("%s:\n got %s\nwant %s", name, got, want.Bytes())
	}
}

// TestExecuteResultEncoding: the hand-written encoding of a call's answer is byte for byte
// the codec's encoding/json, for every field and for the zero value.
func TestExecuteResultEncoding(t *testing.T) {
	full := &protocol.ExecuteResult{}
	fillFields(t, reflect.ValueOf(full))
	for name, r := range map[string]*protocol.ExecuteResult{
		"every field": full,
		"zero":        {},
		"a read":      {CallID: "c1", Status: "completed", Title: "a.txt", Output: "     1\tx\n", Metadata: json.RawMessage(`{"lines":1}`), Attachments: []protocol.Attachment{}},
	} {
		wantCodec(t, name, r)
	}
	if got, err := (codec{}).Marshal((*protocol.ExecuteResult)(nil)); err != nil || string(got) != "null" {
		t.Errorf("a nil result: %s, %v", got, err)
	}
	if _, err := (codec{}).Marshal(&protocol.ExecuteResult{Metadata: json.RawMessage(`{`)}); err == nil {
		t.Error("invalid metadata gave no error")
	}
}

// TestProgressEncoding: the same for tools/progress's params.
func TestProgressEncoding(t *testing.T) {
	full := &protocol.ProgressParams{}
	fillFields(t, reflect.ValueOf(full))
	for name, p := range map[string]*protocol.ProgressParams{
		"every field": full,
		"zero":        {},
		"a read":      {SessionID: "s", CallID: "c1", Tool: "read", Status: "completed", Title: "a.txt"},
		"no client":   {SessionID: "s", CallID: "c1", Tool: "read", Status: "running", Metadata: json.RawMessage(`{"n":1}`)},
		"a client":    {SessionID: "s", CallID: "c1", Tool: "read", Status: "completed", Client: &protocol.ClientRef{ID: "c-1", Name: "Claude Code"}},
	} {
		wantCodec(t, name, p)
	}
	if got, err := (codec{}).Marshal((*protocol.ProgressParams)(nil)); err != nil || string(got) != "null" {
		t.Errorf("nil params: %s, %v", got, err)
	}
}
