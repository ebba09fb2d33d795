package registry

import (
	"bytes"
	"io"
	"math/big"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/santhosh-tekuri/jsonschema/v5"
)

// A flat schema is the common shape of a tool's parameters: an object whose properties are
// strings, integers, numbers or booleans, with lengths and integer bounds, some required,
// others perhaps forbidden. Arguments that fit one are accepted by a single pass over their
// JSON, without decoding them into maps for the schema library: that took 5 µs of a 60 µs
// read call under 64 callers.
//
// The pass only ever accepts: anything it does not handle exactly as the library would
// (a duplicate name, a number with a fraction or exponent or out of int64, a string that
// is not valid UTF-8, a null, a nested value where a property is typed, a violation) sends
// the arguments to the library, which decides and writes the errors. So an argument object
// the pass accepts is one the library accepts (FuzzFlatAgreesWithLibrary).

// maxFlatNames is the most names an argument object may have for the pass to look at it.
const maxFlatNames = 32

// flatSchema is a schema of that shape; nil when a schema has any other keyword.
type flatSchema struct {
	props    map[string]*flatProp
	required []string
	closed   bool // additionalProperties: false
}

// flatProp is one property's schema.
type flatProp struct {
	kind               byte // 's' string, 'i' integer, 'n' number, 'b' boolean
	minLen, maxLen     int  // -1: none
	min, max           *int64
	exclMin, exclMax   *int64
	hasNumberBound     bool
	numberBoundsTooBig bool // a bound is not an integer within int64: the library decides
}

// flatOf returns the flat form of s, or nil.
func flatOf(s *jsonschema.Schema) *flatSchema {
	if s == nil || !agnosticNone(s) || len(s.Types) != 1 || s.Types[0] != "object" ||
		s.MinProperties != -1 || s.MaxProperties != -1 || s.PropertyNames != nil || s.RegexProperties ||
		len(s.PatternProperties) > 0 || len(s.Dependencies) > 0 || len(s.DependentRequired) > 0 ||
		len(s.DependentSchemas) > 0 || s.UnevaluatedProperties != nil {
		return nil
	}
	f := &flatSchema{props: make(map[string]*flatProp, len(s.Properties)), required: s.Required}
	switch ap := s.AdditionalProperties.(type) {
	case nil:
	case bool:
		f.closed = !ap
	default:
		return nil
	}
	for name, ps := range s.Properties {
		p := flatPropOf(ps)
		if p == nil {
			return nil
		}
		f.props[name] = p
	}
	return f
}

// agnosticNone reports whether s has none of the keywords that apply to every type (and
// no extension, no format).
func agnosticNone(s *jsonschema.Schema) bool {
	return s.Always == nil && s.Ref == nil && s.RecursiveRef == nil && s.DynamicRef == nil &&
		s.Format == "" && s.Constant == nil && s.Enum == nil && s.Not == nil && len(s.AllOf) == 0 &&
		len(s.AnyOf) == 0 && len(s.OneOf) == 0 && s.If == nil && len(s.Extensions) == 0
}

func flatPropOf(s *jsonschema.Schema) *flatProp {
	if s == nil || !agnosticNone(s) || len(s.Types) != 1 {
		return nil
	}
	p := &flatProp{minLen: -1, maxLen: -1}
	switch s.Types[0] {
	case "string":
		if s.Pattern != nil || s.ContentEncoding != "" || s.ContentMediaType != "" || s.ContentSchema != nil {
			return nil
		}
		p.kind, p.minLen, p.maxLen = 's', s.MinLength, s.MaxLength
		return p
	case "boolean":
		p.kind = 'b'
		return p
	case "integer", "number":
		if s.MultipleOf != nil {
			return nil
		}
		p.kind = 'n'
		if s.Types[0] == "integer" {
			p.kind = 'i'
		}
		for _, b := range []struct {
			r   *big.Rat
			dst **int64
		}{{s.Minimum, &p.min}, {s.Maximum, &p.max}, {s.ExclusiveMinimum, &p.exclMin}, {s.ExclusiveMaximum, &p.exclMax}} {
			if b.r == nil {
				continue
			}
			p.hasNumberBound = true
			if !b.r.IsInt() || !b.r.Num().IsInt64() {
				p.numberBoundsTooBig = true
				continue
			}
			v := b.r.Num().Int64()
			*b.dst = &v
		}
		return p
	}
	return nil
}

// accepts reports whether args, a JSON object (already trimmed, not empty), surely fits f.
// false means "ask the library", not "invalid".
func (f *flatSchema) accepts(args []byte) bool {
	r := flatReaders.Get().(*flatReader)
	defer r.release()
	r.buf = *bytes.NewBuffer(args)
	r.dec.Reset(&r.buf, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	dec := &r.dec
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return false
	}
	var seenBuf [8]string
	seen := seenBuf[:0]
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil || tok.Kind() != '"' {
			return false
		}
		if len(seen) == maxFlatNames {
			return false // the library copes with many; the pass stays linear
		}
		name := tok.String()
		if !utf8.ValidString(name) {
			return false // encoding/json would name it with U+FFFD, which a property may be called
		}
		for _, s := range seen {
			if s == name {
				return false // a duplicate: encoding/json keeps the last, the library sees that
			}
		}
		seen = append(seen, name)
		v, err := dec.ReadValue()
		if err != nil {
			return false
		}
		p := f.props[name]
		if p == nil {
			if f.closed {
				return false
			}
			continue // no schema applies to it
		}
		if !p.fits(v) {
			return false
		}
	}
	if _, err := dec.ReadToken(); err != nil { // the '}'
		return false
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return false // more after the object, or bad JSON: the library says so
	}
	for _, r := range f.required {
		found := false
		for _, s := range seen {
			if s == r {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// flatReader is the pass's decoder, pooled: making one cost a third of the pass.
type flatReader struct {
	buf bytes.Buffer
	dec jsontext.Decoder
}

var flatReaders = sync.Pool{New: func() any { return new(flatReader) }}

// release drops the arguments the reader points at and pools it.
func (r *flatReader) release() {
	r.buf = bytes.Buffer{}
	r.dec.Reset(&r.buf)
	flatReaders.Put(r)
}

// fits reports whether the raw JSON value v surely fits p.
func (p *flatProp) fits(v jsontext.Value) bool {
	switch v.Kind() {
	case '"':
		if p.kind != 's' {
			return false
		}
		if p.minLen < 0 && p.maxLen < 0 {
			return true // a string, whatever it holds (a file's content: not copied to count it)
		}
		s, err := jsontext.AppendUnquote(nil, v)
		if err != nil || !utf8.Valid(s) {
			return false
		}
		n := utf8.RuneCount(s)
		return (p.minLen < 0 || n >= p.minLen) && (p.maxLen < 0 || n <= p.maxLen)
	case 't', 'f':
		return p.kind == 'b'
	case '0':
		if p.kind != 'i' && p.kind != 'n' {
			return false
		}
		if !plainInteger(v) {
			return false // a fraction or an exponent: the library decides
		}
		if !p.hasNumberBound {
			return true
		}
		if p.numberBoundsTooBig {
			return false
		}
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return false
		}
		return (p.min == nil || n >= *p.min) && (p.max == nil || n <= *p.max) &&
			(p.exclMin == nil || n > *p.exclMin) && (p.exclMax == nil || n < *p.exclMax)
	}
	return false // null, an object, an array
}

// plainInteger reports whether a JSON number is written as -?digits.
func plainInteger(v []byte) bool {
	if len(v) > 0 && v[0] == '-' {
		v = v[1:]
	}
	if len(v) == 0 {
		return false
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
