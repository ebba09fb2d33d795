package registry

// Gemini's dialect: the keywords of its Schema object, $refs inlined.

import (
	"fmt"
	"strings"

	"github.com/toolsd/toolsd/internal/jsonobj"
)

type googleAdapter struct {
	root *jsonobj.Object
	// nodes counts adapted schemas, so that $refs that fan out cannot blow up.
	nodes int
}

// maxInlineNodes bounds the size of a schema with its $refs inlined.
const maxInlineNodes = 5000

var googleKeep = map[string]bool{
	"description": true, "title": true, "minItems": true, "maxItems": true,
	"minProperties": true, "maxProperties": true, "minLength": true, "maxLength": true,
	"pattern": true, "minimum": true, "maximum": true, "example": true,
}

var googleFormats = map[string]map[string]bool{
	"string":  {"enum": true, "date-time": true},
	"number":  {"float": true, "double": true},
	"integer": {"int32": true, "int64": true},
}

const maxInlineDepth = 12

func (g *googleAdapter) adapt(s *jsonobj.Object, depth int) *jsonobj.Object {
	g.nodes++
	if depth > maxInlineDepth || g.nodes > maxInlineNodes {
		return schemaOf("description", "(nested too deep to show; same shape as its parent)")
	}
	// Inline a $ref, with the referring schema's own keywords on top.
	if r, ok := s.Get("$ref").(string); ok {
		target := g.resolve(r)
		merged := &jsonobj.Object{}
		if target != nil {
			for _, k := range target.Keys() {
				merged.Set(k, target.Get(k))
			}
		}
		for _, k := range s.Keys() {
			if k != "$ref" {
				merged.Set(k, s.Get(k))
			}
		}
		merged.Del("$ref")
		if target != nil && target.Has("$ref") {
			merged.Set("$ref", target.Get("$ref"))
		}
		return g.adapt(merged, depth+1)
	}
	out := &jsonobj.Object{}
	var notes []string
	typ := ""
	switch t := s.Get("type").(type) {
	case string:
		typ = t
	case []any:
		var kinds []string
		for _, x := range t {
			if xs, ok := x.(string); ok && xs != "null" {
				kinds = append(kinds, xs)
			}
		}
		if len(kinds) < len(t) {
			out.Set("nullable", true)
		}
		if len(kinds) == 1 {
			typ = kinds[0]
		} else if len(kinds) > 1 {
			var branches []any
			for _, k := range kinds {
				branches = append(branches, schemaOf("type", k))
			}
			out.Set("anyOf", branches)
		}
	}
	if typ == "null" {
		typ = ""
		out.Set("nullable", true)
	}
	if typ != "" {
		out.Set("type", typ)
	}
	for k, v := range s.All() {
		switch k {
		case "type", "$schema", "$id", "$comment", "$defs", "definitions", "additionalProperties", "required":
		case "nullable":
			if v == true {
				out.Set("nullable", true)
			}
		case "properties":
			props, ok := v.(*jsonobj.Object)
			if !ok {
				continue
			}
			op := &jsonobj.Object{}
			var order []any
			for _, pk := range props.Keys() {
				po, ok := props.Get(pk).(*jsonobj.Object)
				if !ok {
					po = &jsonobj.Object{}
				}
				op.Set(pk, g.adapt(po, depth+1))
				order = append(order, pk)
			}
			out.Set("properties", op)
			if r, ok := s.Get("required").([]any); ok {
				var req []any
				for _, x := range r {
					if xs, ok := x.(string); ok && props.Has(xs) {
						req = append(req, xs)
					}
				}
				if len(req) > 0 {
					out.Set("required", req)
				}
			}
			if len(order) > 1 {
				out.Set("propertyOrdering", order)
			}
		case "items":
			if io, ok := v.(*jsonobj.Object); ok {
				out.Set("items", g.adapt(io, depth+1))
			}
		case "anyOf", "oneOf":
			arr, _ := v.([]any)
			var branches []any
			for _, b := range arr {
				bo, ok := b.(*jsonobj.Object)
				if !ok {
					continue
				}
				if bt, ok := bo.Get("type").(string); ok && bt == "null" && bo.Len() == 1 {
					out.Set("nullable", true)
					continue
				}
				branches = append(branches, g.adapt(bo, depth+1))
			}
			if len(branches) == 1 {
				for _, bk := range branches[0].(*jsonobj.Object).Keys() {
					if !out.Has(bk) {
						out.Set(bk, branches[0].(*jsonobj.Object).Get(bk))
					}
				}
			} else if len(branches) > 1 {
				out.Set("anyOf", branches)
			}
		case "allOf":
			arr, _ := v.([]any)
			for _, b := range arr {
				if bo, ok := b.(*jsonobj.Object); ok {
					mergeBranch(out, g.adapt(bo, depth+1))
				}
			}
		case "enum", "const":
			vals, ok := v.([]any)
			if k == "const" {
				vals, ok = []any{v}, true
			}
			if !ok {
				continue
			}
			var strs []any
			allStrings := true
			for _, x := range vals {
				switch x := x.(type) {
				case nil:
					out.Set("nullable", true)
				case string:
					strs = append(strs, x)
				default:
					allStrings = false
				}
			}
			if allStrings && len(strs) > 0 {
				out.Set("enum", strs)
				if typ == "" {
					out.Set("type", "string")
				}
			} else {
				var shown []string
				for _, x := range vals {
					b, _ := jsonobj.Marshal(x)
					shown = append(shown, string(b))
				}
				notes = append(notes, "one of "+strings.Join(shown, ", "))
			}
		case "format":
			if f, ok := v.(string); ok && googleFormats[typ][f] {
				out.Set("format", f)
			} else {
				notes = append(notes, fmt.Sprintf("format: %v", v))
			}
		case "default":
			notes = append(notes, constraintNote(k, v))
		default:
			if googleKeep[k] {
				out.Set(k, v)
			} else if note := constraintNote(k, v); note != "" {
				notes = append(notes, note)
			}
		}
	}
	if out.Get("type") == "array" && !out.Has("items") {
		out.Set("items", schemaOf("type", "string"))
	}
	if out.Get("type") == "object" && !out.Has("properties") && depth == 0 {
		out.Set("properties", &jsonobj.Object{})
	}
	addNotes(out, notes)
	// Gemini wants the type first; keep the rest in order.
	return out
}

// resolve finds a local $ref target ("#", "#/$defs/x", "#/definitions/x").
func (g *googleAdapter) resolve(ref string) *jsonobj.Object {
	if ref == "#" {
		return g.root
	}
	if !strings.HasPrefix(ref, "#/") {
		return nil
	}
	var cur any = g.root
	for _, tok := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		o, ok := cur.(*jsonobj.Object)
		if !ok {
			return nil
		}
		cur = o.Get(tok)
	}
	o, _ := cur.(*jsonobj.Object)
	return o
}

// deref follows a $ref, if any.
func (g *googleAdapter) deref(s *jsonobj.Object) *jsonobj.Object {
	for range 8 {
		r, ok := s.Get("$ref").(string)
		if !ok {
			return s
		}
		t := g.resolve(r)
		if t == nil {
			return s
		}
		s = t
	}
	return s
}
