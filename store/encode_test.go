package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/toolsd/toolsd/protocol"
)

// fill sets every field of v, recursively, to a value that is not zero and that needs
// escaping, so that a field added to a type and forgotten by its hand-written encoder
// fails the comparison with encoding/json.
func fill(v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), n)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Date(2026, 11, 30, 17, 0, *n, *n*1000, time.UTC)))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), n)
			}
		}
	case reflect.Slice:
		if v.Type() == reflect.TypeFor[json.RawMessage]() {
			v.SetBytes([]byte(fmt.Sprintf(` { "k%d" : [ "<&>\u2028" , 1 ] } `, *n)))
			return
		}
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range v.Len() {
			fill(v.Index(i), n)
		}
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d <&> \"q\"\t\u2028 caf\u00e9 \xff", *n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(int64(*n))
	default:
		panic("fill: no value for " + v.Type().String())
	}
}

func TestEncodeCallIsJSONMarshal(t *testing.T) {
	full := &protocol.CallRecord{}
	n := 0
	fill(reflect.ValueOf(full).Elem(), &n)
	full.Metadata = json.RawMessage(`{"sandbox": {"confined": true}}`)
	now := time.Date(2026, 11, 30, 18, 0, 0, 0, time.FixedZone("x", 3600))
	for name, rec := range map[string]*protocol.CallRecord{
		"every field": full,
		"zero":        {},
		"sparse":      {Decisions: []protocol.Decision{{}, {Patterns: []string{}}}, Hooks: []protocol.HookRun{}},
		"a read": {CallID: "c1", SessionID: "s", MessageID: "m", Tool: "read", Status: "completed", Title: "a.txt",
			Args: json.RawMessage(`{"filePath":"a.txt"}`), Metadata: json.RawMessage(`{}`), Output: "     1\tx\n",
			Attachments: []protocol.Attachment{}, Decisions: []protocol.Decision{}, StartedAt: now, EndedAt: &now},
	} {
		v, err := encodeCall(rec)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		sum, rest, err := splitCall(v)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		s := summaryOf(rec)
		wantSum, _ := json.Marshal(&s)
		wantFull, _ := json.Marshal(rec)
		if !bytes.Equal(sum, wantSum) {
			t.Errorf("%s: summary\n got %s\nwant %s", name, sum, wantSum)
		}
		if !bytes.Equal(rest, wantFull) {
			t.Errorf("%s: record\n got %s\nwant %s", name, rest, wantFull)
		}
		if w := binary.PutUvarint(make([]byte, binary.MaxVarintLen32), uint64(len(sum))); len(v) != w+len(wantSum)+len(wantFull) {
			t.Errorf("%s: value of %d bytes, want %d", name, len(v), w+len(wantSum)+len(wantFull))
		}
	}
	if !summaryOf(full).Confined {
		t.Error("the summary of a confined call is not confined")
	}
}

func TestEncodeCallRefusesInvalidRaw(t *testing.T) {
	for _, rec := range []*protocol.CallRecord{
		{Args: json.RawMessage(`{"a":`)},
		{Metadata: json.RawMessage(`nope`)},
		{StartedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		if _, err := encodeCall(rec); err == nil {
			t.Errorf("encodeCall(%+v) gave no error", rec)
		}
	}
}

func BenchmarkEncodeCall(b *testing.B) {
	now := time.Now().UTC()
	var out bytes.Buffer
	for i := 1; i <= 16; i++ {
		fmt.Fprintf(&out, "    %2d\tline %02d of the one-KiB file read by toolsd's benchmarks: xxxxxx\n", i, i)
	}
	rec := &protocol.CallRecord{CallID: "call-123456", SessionID: "bench", MessageID: "m1", Tool: "read", Status: "completed", Title: "one-kib.txt",
		Args:     json.RawMessage(`{"filePath":"/tmp/bench/one-kib.txt","limit":2001}`),
		Metadata: json.RawMessage(`{"filePath":"/tmp/bench/one-kib.txt","lines":16,"offset":1,"totalLines":16,"truncated":false}`),
		Output:   out.String(), Attachments: []protocol.Attachment{}, Decisions: []protocol.Decision{}, StartedAt: now, EndedAt: &now,
		Client: &protocol.ClientRef{ID: "c1", Name: "bench", Kind: "editor"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := encodeCall(rec); err != nil {
			b.Fatal(err)
		}
	}
}
