// Package jsonobj holds JSON values whose objects keep their members' order, for code that
// rewrites JSON a person wrote (a settings file, a tool's schema) and writes it back in the
// order it was written.
package jsonobj

import (
	"bytes"
	"iter"
	"slices"

	"github.com/toolsd/toolsd/internal/jsondec"
	"github.com/toolsd/toolsd/internal/jsonpos"
)

// An Object is a JSON object that keeps its members in order. Its values are nil, bool,
// json.Number, string, []any, *Object or *Kept. The zero Object is empty and ready to use;
// an Object is not safe for concurrent use.
type Object struct {
	keys []string
	vals map[string]any
}

// Keys returns the members' names in order; the caller must not change the slice.
func (o *Object) Keys() []string { return o.keys }

// All yields the members in order, a *Kept value as it is.
func (o *Object) All() iter.Seq2[string, any] {
	return func(yield func(string, any) bool) {
		for _, k := range o.keys {
			if !yield(k, o.vals[k]) {
				return
			}
		}
	}
}

// Len is the number of members.
func (o *Object) Len() int { return len(o.keys) }

// Has reports whether the object has a member k.
func (o *Object) Has(k string) bool { _, ok := o.vals[k]; return ok }

// Get returns the value of member k (a *Kept's value), or nil if there is none.
func (o *Object) Get(k string) any { return Unwrap(o.vals[k]) }

// Set sets member k to v: in its place if there is one, else last.
func (o *Object) Set(k string, v any) {
	if o.vals == nil {
		o.vals = map[string]any{}
	}
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

// Del removes member k, if there is one.
func (o *Object) Del(k string) {
	if _, ok := o.vals[k]; !ok {
		return
	}
	delete(o.vals, k)
	o.keys = slices.DeleteFunc(o.keys, func(x string) bool { return x == k })
}

// Clone copies the object itself (not its values).
func (o *Object) Clone() *Object {
	c := &Object{keys: slices.Clone(o.keys), vals: make(map[string]any, len(o.vals))}
	for k, v := range o.vals {
		c.vals[k] = v
	}
	return c
}

// MarshalJSON writes the object compactly, its members in order.
func (o *Object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		vb, err := Marshal(o.vals[k])
		if err != nil {
			return nil, err
		}
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// Kept is a value read by ParseKept and not replaced since: Raw is the text it was read
// from, which is what is written back, so that an edit changes no line it does not need to.
type Kept struct {
	Value any
	Raw   []byte
}

// MarshalJSON is the text the value was read from.
func (k *Kept) MarshalJSON() ([]byte, error) { return k.Raw, nil }

// Unwrap is v's value if v is a *Kept, else v.
func Unwrap(v any) any {
	if k, ok := v.(*Kept); ok {
		return k.Value
	}
	return v
}

// Parse reads exactly one JSON value: objects as *Object (a repeated name keeps its first
// place and its last value), arrays as []any, numbers as json.Number.
func Parse(data []byte) (any, error) { return parse(data, false) }

// ParseKept is Parse with every value below the top one a *Kept.
func ParseKept(data []byte) (any, error) { return parse(data, true) }

func parse(data []byte, keep bool) (any, error) {
	n, err := jsonpos.Parse(data)
	if err != nil {
		return nil, err
	}
	return value(n, keep, false), nil
}

func value(n *jsonpos.Node, keep, wrap bool) any {
	var v any
	switch n.Kind {
	case jsonpos.Object:
		o := &Object{vals: make(map[string]any, len(n.Fields))}
		for _, f := range n.Fields {
			o.Set(f.Name, value(f.Value, keep, keep))
		}
		v = o
	case jsonpos.Array:
		a := make([]any, 0, len(n.Elems))
		for _, e := range n.Elems {
			a = append(a, value(e, keep, keep))
		}
		v = a
	default:
		v = n.Value
	}
	if wrap {
		return &Kept{Value: v, Raw: n.Raw}
	}
	return v
}

// Marshal is jsondec.Marshal: JSON without HTML escaping.
func Marshal(v any) ([]byte, error) { return jsondec.Marshal(v) }
