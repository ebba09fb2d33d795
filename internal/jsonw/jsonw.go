// Package jsonw writes JSON objects field by field, byte for byte as encoding/json writes
// them, for the few values the daemon encodes on every call (a call's record, its summary,
// its result), where encoding/json's reflection and its second pass over raw values cost a
// tenth of the daemon's CPU.
package jsonw

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math/bits"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/toolsd/toolsd/internal/jsondec"
)

// Object appends one JSON object to B. Its methods add the members in the order they are
// called; the first error sticks and is returned by End. HTML says whether <, > and & are
// escaped, as json.Marshal does and an Encoder with SetEscapeHTML(false) does not.
//
// Keys are written as given: they must be plain ASCII letters, as the protocol's are.
type Object struct {
	B    []byte
	HTML bool
	err  error
	n    int
}

// Begin starts the object.
func (o *Object) Begin() { o.B = append(o.B, '{'); o.n = 0 }

// End closes the object and returns the first error met.
func (o *Object) End() ([]byte, error) {
	o.B = append(o.B, '}')
	return o.B, o.err
}

func (o *Object) key(k string) {
	if o.n > 0 {
		o.B = append(o.B, ',')
	}
	o.n++
	o.B = append(o.B, '"')
	o.B = append(o.B, k...)
	o.B = append(o.B, '"', ':')
}

// String adds a string member.
func (o *Object) String(k, v string) {
	o.key(k)
	o.B = String(o.B, v, o.HTML)
}

// StringOmit adds a string member unless it is empty (omitempty).
func (o *Object) StringOmit(k, v string) {
	if v != "" {
		o.String(k, v)
	}
}

// Bool adds a boolean member.
func (o *Object) Bool(k string, v bool) {
	o.key(k)
	o.B = strconv.AppendBool(o.B, v)
}

// BoolOmit adds a boolean member unless it is false (omitempty).
func (o *Object) BoolOmit(k string, v bool) {
	if v {
		o.Bool(k, v)
	}
}

// IntOmit adds an integer member unless it is zero (omitempty).
func (o *Object) IntOmit(k string, v int64) {
	if v != 0 {
		o.key(k)
		o.B = strconv.AppendInt(o.B, v, 10)
	}
}

// Raw adds a json.RawMessage member: null when nil, else compacted and escaped as
// encoding/json does; raw that is not valid JSON is an error.
func (o *Object) Raw(k string, raw []byte) {
	o.key(k)
	o.raw(raw)
}

// RawOmit adds a json.RawMessage member unless it is empty (omitempty).
func (o *Object) RawOmit(k string, raw []byte) {
	if len(raw) > 0 {
		o.Raw(k, raw)
	}
}

func (o *Object) raw(raw []byte) { o.put(Raw(o.B, raw, o.HTML)) }

// put takes what an append returned: the buffer, and its error if it is the first.
func (o *Object) put(b []byte, err error) {
	o.B = b
	if err != nil && o.err == nil {
		o.err = err
	}
}

// Time adds a time member as time.Time's MarshalJSON writes it.
func (o *Object) Time(k string, t time.Time) {
	o.key(k)
	o.put(Time(o.B, t))
}

// TimeOmit adds a *time.Time member unless it is nil (omitempty).
func (o *Object) TimeOmit(k string, t *time.Time) {
	if t != nil {
		o.Time(k, *t)
	}
}

// Value adds a member of any other type, written by encoding/json (for the rare and the
// nested: slices of decisions, a model, a client).
func (o *Object) Value(k string, v any) {
	o.key(k)
	o.put(Value(o.B, v, o.HTML))
}

// Open adds a member that is an object: the members added next are its own, until Close
// with what Open returned.
func (o *Object) Open(k string) (outer int) { return o.open(k, '{') }

// open adds a member that opens with c and holds members or elements of its own.
func (o *Object) open(k string, c byte) (outer int) {
	o.key(k)
	o.B = append(o.B, c)
	outer, o.n = o.n, 0
	return outer
}

// Close ends the object that Open or OpenElem began.
func (o *Object) Close(outer int) {
	o.B = append(o.B, '}')
	o.n = outer
}

// OpenArray adds a member that is an array, whose elements OpenElem begins, until
// CloseArray with what OpenArray returned.
func (o *Object) OpenArray(k string) (outer int) { return o.open(k, '[') }

// CloseArray ends the array member that OpenArray began.
func (o *Object) CloseArray(outer int) {
	o.B = append(o.B, ']')
	o.n = outer
}

// OpenElem begins an element of an array that is an object: the members added next are its
// own, until Close with what OpenElem returned.
func (o *Object) OpenElem() (outer int) {
	if o.n > 0 {
		o.B = append(o.B, ',')
	}
	o.n++
	o.B = append(o.B, '{')
	outer, o.n = o.n, 0
	return outer
}

// Strings adds a []string member: null when nil.
func (o *Object) Strings(k string, v []string) {
	o.key(k)
	o.B = appendStrings(o.B, v, o.HTML)
}

// appendStrings appends v as a JSON array of strings, null when nil.
func appendStrings(b []byte, v []string, html bool) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = String(b, s, html)
	}
	return append(b, ']')
}

// StringsOmit adds a []string member unless it is empty (omitempty).
func (o *Object) StringsOmit(k string, v []string) {
	if len(v) > 0 {
		o.Strings(k, v)
	}
}

// Slice adds a slice member as encoding/json writes it: null when nil, [] when empty, else
// each element by encoding/json (the slices written here are rarely long).
func Slice[T any](o *Object, k string, v []T) {
	switch {
	case v == nil:
		o.key(k)
		o.B = append(o.B, "null"...)
	case len(v) == 0:
		o.key(k)
		o.B = append(o.B, '[', ']')
	default:
		o.Value(k, v)
	}
}

// SliceOmit adds a slice member unless it is empty (omitempty).
func SliceOmit[T any](o *Object, k string, v []T) {
	if len(v) > 0 {
		o.Value(k, v)
	}
}

// Map appends m as encoding/json writes a map[string]any: keys sorted; strings, booleans,
// integers, nil, []string and maps like m written here, any other value by encoding/json.
func Map(b []byte, m map[string]any, html bool) ([]byte, error) {
	if m == nil {
		return append(b, "null"...), nil
	}
	var keys [16]string
	ks := keys[:0]
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	b = append(b, '{')
	var err error
	for i, k := range ks {
		if i > 0 {
			b = append(b, ',')
		}
		b = String(b, k, html)
		b = append(b, ':')
		switch v := m[k].(type) {
		case nil:
			b = append(b, "null"...)
		case string:
			b = String(b, v, html)
		case bool:
			b = strconv.AppendBool(b, v)
		case int:
			b = strconv.AppendInt(b, int64(v), 10)
		case int64:
			b = strconv.AppendInt(b, v, 10)
		case map[string]any:
			if b, err = Map(b, v, html); err != nil {
				return b, err
			}
		case []string:
			b = appendStrings(b, v, html)
		default:
			if b, err = Value(b, v, html); err != nil {
				return b, err
			}
		}
	}
	return append(b, '}'), nil
}

// String appends s as a JSON string, escaped exactly as encoding/json escapes it: control
// characters, quotes and backslashes; <, > and & when html; U+2028 and U+2029 always;
// each byte of invalid UTF-8 as \ufffd.
func String(b []byte, s string, html bool) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		// Eight bytes at a time up to the next that needs a look: most of a file's text
		// needs no escape.
		if i+8 <= len(s) {
			m := special(le64(s[i:]), html)
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) / 8
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if safe(c, html) {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

const hex = "0123456789abcdef"

// safe reports whether the ASCII byte c is written as itself.
func safe(c byte, html bool) bool {
	if c < 0x20 || c == '"' || c == '\\' {
		return false
	}
	return !html || c != '<' && c != '>' && c != '&'
}

func le64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// special marks with its high bit each byte of w (eight bytes of a string, the first in the
// low byte) that is not plain ASCII to write as itself: a control character, a quote, a
// backslash, a byte of a multi-byte character, and <, > or & when html. A mark can also
// land above a marked byte (a borrow), never below the first: the lowest mark is exact.
func special(w uint64, html bool) uint64 {
	m := w & highs                    // not ASCII
	m |= (w - ones*0x20) &^ w & highs // below 0x20
	m |= eq(w, '"') | eq(w, '\\')
	if html {
		m |= eq(w, '<') | eq(w, '>') | eq(w, '&')
	}
	return m
}

// eq marks the bytes of w equal to c (the has-zero-byte test on w^c).
func eq(w uint64, c byte) uint64 {
	x := w ^ (ones * uint64(c))
	return (x - ones) &^ x & highs
}

// Raw appends raw as encoding/json writes a json.RawMessage: null when nil, else compacted
// (with <, >, & and U+2028, U+2029 escaped when html). Invalid JSON is an error.
func Raw(b []byte, raw []byte, html bool) ([]byte, error) {
	if raw == nil {
		return append(b, "null"...), nil
	}
	if compact(raw, html) {
		if !jsondec.Valid(raw) {
			return b, errInvalid
		}
		return append(b, raw...), nil
	}
	buf := bytes.NewBuffer(b)
	if err := json.Compact(buf, raw); err != nil {
		return b, errInvalid
	}
	if !html {
		return buf.Bytes(), nil
	}
	// HTMLEscape escapes <, >, & and U+2028, U+2029, as json.Marshal's compaction does.
	out := buf.Bytes()
	tail := bytes.Clone(out[len(b):])
	buf = bytes.NewBuffer(out[:len(b)])
	json.HTMLEscape(buf, tail)
	return buf.Bytes(), nil
}

var errInvalid = errors.New("jsonw: a raw value is not valid JSON")

// compact reports whether raw, if valid, is already as encoding/json would write it: no
// white space at all (not even in strings, to keep this a scan of bytes) and nothing to
// escape.
func compact(raw []byte, html bool) bool {
	// Eight bytes at a time: a word passes when none of its bytes is one of those below.
	for len(raw) >= 8 {
		w := binary.LittleEndian.Uint64(raw)
		m := eq(w, ' ') | eq(w, '\t') | eq(w, '\n') | eq(w, '\r') | eq(w, 0xE2)
		if html {
			m |= eq(w, '<') | eq(w, '>') | eq(w, '&')
		}
		if m != 0 {
			return false
		}
		raw = raw[8:]
	}
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\n', '\r', 0xE2:
			return false
		case '<', '>', '&':
			if html {
				return false
			}
		}
	}
	return true
}

// Time appends t as time.Time's MarshalJSON writes it (RFC 3339 with nanoseconds, quoted).
func Time(b []byte, t time.Time) ([]byte, error) {
	out, err := t.AppendText(append(b, '"'))
	if err != nil {
		// A year or a zone offset RFC 3339 cannot write: MarshalJSON's own error.
		_, err = t.MarshalJSON()
		return b, err
	}
	return append(out, '"'), nil
}

// Value appends v as encoding/json writes it (without the Encoder's newline).
func Value(b []byte, v any, html bool) ([]byte, error) {
	if html {
		out, err := json.Marshal(v)
		return append(b, out...), err
	}
	buf := bytes.NewBuffer(b)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return b, err
	}
	out := buf.Bytes()
	return out[:len(out)-1], nil
}
