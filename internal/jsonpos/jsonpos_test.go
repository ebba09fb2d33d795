package jsonpos

import (
	"errors"
	"testing"
)

func TestParse(t *testing.T) {
	data := []byte("{\n  \"a\": [1, {\"b\": true}],\n  \"c\" : \"x\"\n}")
	n, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ptr       string
		line, col int
		kind      Kind
		wantReach bool
	}{
		{"", 1, 1, Object, true},
		{"/a", 2, 8, Array, true},
		{"/a/1/b", 2, 18, Bool, true},
		{"/c", 3, 9, String, true},
		{"/a/7", 2, 8, Array, false},
	} {
		t.Run(tc.ptr, func(t *testing.T) {
			got, ok := n.Lookup(tc.ptr)
			if ok != tc.wantReach {
				t.Fatalf("reached = %v", ok)
			}
			l, c := Position(data, got.Offset)
			if l != tc.line || c != tc.col || got.Kind != tc.kind {
				t.Errorf("got %d:%d %v, want %d:%d %v", l, c, got.Kind, tc.line, tc.col, tc.kind)
			}
		})
	}
	if l, c := Position(data, n.Fields[1].KeyOffset); l != 3 || c != 3 {
		t.Errorf("key c at %d:%d, want 3:3", l, c)
	}
}

func TestSyntaxErrors(t *testing.T) {
	for _, tc := range []struct {
		in        string
		line, col int
	}{
		{"{\n  \"a\": 1,\n  \"b\" 2\n}", 3, 7},
		{"{\"a\": 1", 1, 8},
		{"{} x", 1, 4},
		{"", 1, 1},
		{"[1,,2]", 1, 4},
		{"{\"a\": tru}", 1, 8},
		{"{\"a\": 1 \"b\": 2}", 1, 9},
	} {
		t.Run(tc.in, func(t *testing.T) {
			_, err := Parse([]byte(tc.in))
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("got %v, want a SyntaxError", err)
			}
			if l, c := Position([]byte(tc.in), se.Offset); l != tc.line || c != tc.col {
				t.Errorf("at %d:%d, want %d:%d (%v)", l, c, tc.line, tc.col, se)
			}
		})
	}
}
