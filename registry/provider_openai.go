package registry

// OpenAI's strict mode: every property required, optional ones nullable, and the nulls a
// strict model sends for them stripped again before validation.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/toolsd/toolsd/internal/jsonobj"
)

type openaiAdapter struct {
	notStrict []string
}

// openaiKeep are the keywords strict mode accepts; others are dropped.
var openaiKeep = map[string]bool{
	"type": true, "description": true, "title": true, "enum": true, "const": true,
	"pattern": true, "format": true,
	"minimum": true, "maximum": true, "exclusiveMinimum": true, "exclusiveMaximum": true, "multipleOf": true,
	"minItems": true, "maxItems": true,
	"$ref": true,
}

var openaiFormats = map[string]bool{
	"date-time": true, "time": true, "date": true, "duration": true, "email": true,
	"hostname": true, "ipv4": true, "ipv6": true, "uuid": true,
}

func (a *openaiAdapter) adapt(s *jsonobj.Object, ptr string, root bool) *jsonobj.Object {
	out := &jsonobj.Object{}
	var notes []string
	for k, v := range s.All() {
		switch k {
		case "properties", "required", "additionalProperties":
			// Handled below; keep their place.
			out.Set(k, placeholder{})
		case "items":
			if is, ok := v.(*jsonobj.Object); ok {
				out.Set("items", a.adapt(is, ptr+"/items", false))
			} else {
				a.notStrict = append(a.notStrict, ptr+"/items")
			}
		case "anyOf", "oneOf":
			if arr, ok := v.([]any); ok {
				var branches []any
				for i, b := range arr {
					if bo, ok := b.(*jsonobj.Object); ok {
						branches = append(branches, a.adapt(bo, fmt.Sprintf("%s/%s/%d", ptr, k, i), false))
					}
				}
				out.Set("anyOf", branches)
			}
		case "allOf":
			if arr, ok := v.([]any); ok && len(arr) == 1 {
				if bo, ok := arr[0].(*jsonobj.Object); ok {
					mergeBranch(out, a.adapt(bo, ptr+"/allOf/0", false))
					continue
				}
			}
			a.notStrict = append(a.notStrict, ptr+"/allOf")
		case "$defs", "definitions":
			if defs, ok := v.(*jsonobj.Object); ok {
				od := &jsonobj.Object{}
				for _, dk := range defs.Keys() {
					if do, ok := defs.Get(dk).(*jsonobj.Object); ok {
						od.Set(dk, a.adapt(do, ptr+"/"+k+"/"+dk, false))
					}
				}
				out.Set("$defs", od)
			}
		case "$ref":
			if r, ok := v.(string); ok {
				out.Set("$ref", strings.Replace(r, "#/definitions/", "#/$defs/", 1))
			}
		case "format":
			if f, ok := v.(string); ok && openaiFormats[f] {
				out.Set(k, v)
			} else {
				notes = append(notes, fmt.Sprintf("format: %v", v))
			}
		default:
			if openaiKeep[k] {
				out.Set(k, v)
			} else if note := constraintNote(k, v); note != "" {
				notes = append(notes, note)
			}
		}
	}
	if isObjectSchema(s) {
		props, _ := s.Get("properties").(*jsonobj.Object)
		if props == nil || props.Len() == 0 {
			if ap := s.Get("additionalProperties"); s.Has("additionalProperties") && ap != false {
				// A map with free keys: strict mode has no way to say it.
				a.notStrict = append(a.notStrict, orRootPtr(ptr))
				if apo, ok := ap.(*jsonobj.Object); ok {
					out.Set("additionalProperties", a.adapt(apo, ptr+"/additionalProperties", false))
				} else {
					out.Set("additionalProperties", ap)
				}
			} else {
				out.Set("properties", &jsonobj.Object{})
				out.Set("required", []any{})
				out.Set("additionalProperties", false)
			}
		} else {
			required := map[string]bool{}
			if r, ok := s.Get("required").([]any); ok {
				for _, x := range r {
					if xs, ok := x.(string); ok {
						required[xs] = true
					}
				}
			}
			op := &jsonobj.Object{}
			var req []any
			for _, pk := range props.Keys() {
				po, ok := props.Get(pk).(*jsonobj.Object)
				if !ok {
					po = &jsonobj.Object{} // a boolean schema: anything
				}
				ad := a.adapt(po, ptr+"/properties/"+escapePtr(pk), false)
				if !required[pk] {
					ad = nullable(ad)
				}
				op.Set(pk, ad)
				req = append(req, pk)
			}
			out.Set("properties", op)
			out.Set("required", req)
			out.Set("additionalProperties", false)
		}
		if !out.Has("type") {
			out.Set("type", "object")
		}
	}
	for _, k := range []string{"properties", "required", "additionalProperties"} {
		if _, ok := out.Get(k).(placeholder); ok {
			out.Del(k)
		}
	}
	addNotes(out, notes)
	if root && !out.Has("type") {
		out.Set("type", "object")
	}
	return out
}

// placeholder holds a key's place in an object until its value is known.
type placeholder struct{}

// nullable lets a schema also accept null.
func nullable(s *jsonobj.Object) *jsonobj.Object {
	if allowsNull(s) {
		return s
	}
	out := s.Clone()
	switch t := s.Get("type").(type) {
	case string:
		out.Set("type", []any{t, "null"})
		if e, ok := s.Get("enum").([]any); ok {
			out.Set("enum", append(slices.Clone(e), nil))
		}
		if !s.Has("const") {
			return out
		}
	case []any:
		out.Set("type", append(slices.Clone(t), "null"))
		if e, ok := s.Get("enum").([]any); ok {
			out.Set("enum", append(slices.Clone(e), nil))
		}
		if !s.Has("const") {
			return out
		}
	}
	if br, ok := s.Get("anyOf").([]any); ok {
		out.Set("anyOf", append(slices.Clone(br), schemaOf("type", "null")))
		return out
	}
	// Wrap: {"description": d, "anyOf": [s without d, {"type": "null"}]}.
	inner := s.Clone()
	wrapper := &jsonobj.Object{}
	if inner.Has("description") {
		wrapper.Set("description", inner.Get("description"))
		inner.Del("description")
	}
	wrapper.Set("anyOf", []any{inner, schemaOf("type", "null")})
	return wrapper
}

// allowsNull reports whether a schema accepts null.
func allowsNull(s *jsonobj.Object) bool {
	if s == nil || s.Len() == 0 {
		return true
	}
	switch t := s.Get("type").(type) {
	case string:
		if t == "null" {
			return true
		}
	case []any:
		if slices.Contains(t, any("null")) {
			return true
		}
	}
	if s.Get("nullable") == true {
		return true
	}
	if e, ok := s.Get("enum").([]any); ok && slices.Contains(e, nil) {
		return true
	}
	if s.Has("const") && s.Get("const") == nil {
		return true
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if br, ok := s.Get(k).([]any); ok {
			for _, b := range br {
				if bo, ok := b.(*jsonobj.Object); ok && allowsNull(bo) {
					return true
				}
			}
		}
	}
	return false
}

func isObjectSchema(s *jsonobj.Object) bool {
	switch t := s.Get("type").(type) {
	case string:
		return t == "object"
	case []any:
		return slices.Contains(t, any("object"))
	}
	return s.Has("properties")
}

// StripNulls removes from args the object properties whose value is null where the
// original schema neither requires the property nor allows null for it: a strict-mode
// model sends null for an optional argument it leaves out (see AdaptSchema), and the
// validator, which uses the original schema, should see it absent. Nested objects (under
// properties, items, and $ref to $defs) are cleaned too. args come back unchanged when
// nothing is removed or when either input is not valid JSON.
func StripNulls(schema json.RawMessage, args json.RawMessage) json.RawMessage {
	if !bytes.Contains(args, []byte("null")) {
		return args
	}
	sv, err := jsonobj.Parse(schema)
	if err != nil {
		return args
	}
	root, ok := sv.(*jsonobj.Object)
	if !ok {
		return args
	}
	av, err := jsonobj.Parse(args)
	if err != nil {
		return args
	}
	g := &googleAdapter{root: root} // for resolve
	if !stripNulls(g, root, av, 0) {
		return args
	}
	b, err := jsonobj.Marshal(av)
	if err != nil {
		return args
	}
	return b
}

// stripNulls cleans v in place against schema s and reports whether it removed anything.
func stripNulls(g *googleAdapter, s *jsonobj.Object, v any, depth int) bool {
	g.nodes++
	if s == nil || depth > 32 || g.nodes > 10*maxInlineNodes {
		return false
	}
	if r, ok := s.Get("$ref").(string); ok {
		if t := g.resolve(r); t != nil {
			return stripNulls(g, t, v, depth+1)
		}
	}
	changed := false
	// Branches: with exactly one non-null branch, descend into it.
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		if br, ok := s.Get(k).([]any); ok {
			var cands []*jsonobj.Object
			for _, b := range br {
				if bo, ok := b.(*jsonobj.Object); ok && !(bo.Len() == 1 && bo.Get("type") == "null") {
					cands = append(cands, bo)
				}
			}
			if len(cands) == 1 || k == "allOf" {
				for _, c := range cands {
					changed = stripNulls(g, c, v, depth+1) || changed
				}
			}
		}
	}
	switch v := v.(type) {
	case *jsonobj.Object:
		props, _ := s.Get("properties").(*jsonobj.Object)
		required := map[string]bool{}
		if r, ok := s.Get("required").([]any); ok {
			for _, x := range r {
				if xs, ok := x.(string); ok {
					required[xs] = true
				}
			}
		}
		for _, k := range slices.Clone(v.Keys()) {
			var ps *jsonobj.Object
			if props != nil {
				ps, _ = props.Get(k).(*jsonobj.Object)
			}
			if v.Get(k) == nil {
				if props == nil || !props.Has(k) || required[k] {
					continue
				}
				if ps != nil && allowsNull(g.deref(ps)) {
					continue
				}
				v.Del(k)
				changed = true
				continue
			}
			if ps != nil {
				changed = stripNulls(g, ps, v.Get(k), depth+1) || changed
			}
		}
	case []any:
		if is, ok := s.Get("items").(*jsonobj.Object); ok {
			for _, e := range v {
				changed = stripNulls(g, is, e, depth+1) || changed
			}
		}
	}
	return changed
}
