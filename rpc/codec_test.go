package rpc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/toolsd/toolsd/protocol"
)

// TestExecuteResultEncoding: the hand-written encoding of a call's answer is byte for byte
// the codec's encoding/json, for every field (set by reflection, so that a field added to
// the type and not to appendExecuteResult fails here) and for the zero value.
func TestExecuteResultEncoding(t *testing.T) {
	full := &protocol.ExecuteResult{}
	v := reflect.ValueOf(full).Elem()
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
		default:
			t.Fatalf("field %s: no test value for %s", v.Type().Field(i).Name, f.Type())
		}
	}
	for name, r := range map[string]*protocol.ExecuteResult{
		"every field": full,
		"zero":        {},
		"a read":      {CallID: "c1", Status: "completed", Title: "a.txt", Output: "     1\tx\n", Metadata: json.RawMessage(`{"lines":1}`), Attachments: []protocol.Attachment{}},
	} {
		got, err := codec{}.Marshal(r)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(r); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, bytes.TrimSuffix(want.Bytes(), []byte("\n"))) {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want.Bytes())
		}
	}
	if got, err := (codec{}).Marshal((*protocol.ExecuteResult)(nil)); err != nil || string(got) != "null" {
		t.Errorf("a nil result: %s, %v", got, err)
	}
	if _, err := (codec{}).Marshal(&protocol.ExecuteResult{Metadata: json.RawMessage(`{`)}); err == nil {
		t.Error("invalid metadata gave no error")
	}
}
