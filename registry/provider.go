package registry

// Provider-adapted schemas and tool names.
//
// A tool's schema is written once, in JSON Schema draft 2020-12, and is what the validator
// uses. Each model provider accepts a different dialect when tools are declared, so
// tools/resolve hands out a copy adapted to the round's provider:
//
//   - "openai": strict function calling. Every object lists all its properties in
//     "required" and has "additionalProperties": false; a property that was optional
//     becomes nullable (a type list with "null", or an anyOf with {"type": "null"}), so a
//     strict model sends null for an argument it means to leave out. StripNulls removes
//     those nulls again before validation. Keywords strict mode rejects are dropped, and
//     constraints that carry meaning are kept as a note in the description.
//   - "google" (Gemini): only the keywords of Gemini's Schema object; $ref inlined from
//     $defs/definitions; type lists become "nullable"; enums are strings only (other enums
//     become a note in the description); additionalProperties removed; "propertyOrdering"
//     keeps the properties' order.
//   - "anthropic": draft 2020-12 as written, without "$schema".
//   - anything else: as written.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
)

// Provider ids AdaptSchema knows.
const (
	ProviderOpenAI    = "openai"
	ProviderGoogle    = "google"
	ProviderAnthropic = "anthropic"
)

// NotStrictError reports parts of a schema that OpenAI's strict mode cannot express (an
// object whose keys are free, say). AdaptSchema returns it together with a schema adapted
// as far as possible, which is meant to be sent with strict: false.
type NotStrictError struct {
	// Locations are JSON pointers into the original schema.
	Locations []string
}

func (e *NotStrictError) Error() string {
	return fmt.Sprintf("registry: schema not expressible in strict mode at %s", strings.Join(e.Locations, ", "))
}

// AdaptSchema returns schema in the dialect of providerID (see the package's notes above).
// The result is compact JSON with the keys in their original order. An error is returned
// for a schema that is not a JSON object; for "openai", a *NotStrictError comes with a
// usable schema. Results are remembered (a catalogue's schemas change rarely and every
// tools/resolve adapts them all); the caller must not change the returned bytes.
func AdaptSchema(providerID string, schema json.RawMessage) (json.RawMessage, error) {
	k := adaptKey{providerID, string(schema)}
	adapted.Lock()
	r, ok := adapted.m[k]
	adapted.Unlock()
	if ok {
		return r.schema, r.err
	}
	out, err := adaptSchema(providerID, schema)
	adapted.Lock()
	if adapted.m == nil || len(adapted.m) >= maxAdapted {
		// Hot reloads of a tool being written make new schemas; forget them all at once
		// rather than keep a schema per edit.
		adapted.m = map[adaptKey]adaptResult{}
	}
	adapted.m[k] = adaptResult{out, err}
	adapted.Unlock()
	return out, err
}

// maxAdapted bounds the remembered adaptations (each keeps its schema twice, as the key and
// adapted: a few MB at most): far more than a catalogue has tools times the providers it is
// asked for.
const maxAdapted = 1024

type adaptKey struct{ provider, schema string }

type adaptResult struct {
	schema json.RawMessage
	err    error
}

var adapted struct {
	sync.Mutex
	m map[adaptKey]adaptResult
}

func adaptSchema(providerID string, schema json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(schema)) == 0 {
		schema = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	v, err := parseOrdered(schema)
	if err != nil {
		return nil, fmt.Errorf("registry: schema is not valid JSON: %w", err)
	}
	root, ok := v.(*object)
	if !ok {
		return nil, errors.New("registry: schema is not a JSON object")
	}
	var out any
	var adaptErr error
	switch strings.ToLower(providerID) {
	case ProviderOpenAI:
		a := &openaiAdapter{}
		out = a.adapt(root, "", true)
		if len(a.notStrict) > 0 {
			adaptErr = &NotStrictError{Locations: a.notStrict}
		}
	case ProviderGoogle, "gemini", "vertex", "google-vertex":
		g := &googleAdapter{root: root}
		out = g.adapt(root, 0)
	case ProviderAnthropic:
		root = root.clone()
		root.del("$schema")
		out = root
	default:
		out = root
	}
	b, err := marshal(out)
	if err != nil {
		return nil, err
	}
	return b, adaptErr
}

// ---- OpenAI strict mode ----

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

func (a *openaiAdapter) adapt(s *object, ptr string, root bool) *object {
	out := &object{}
	var notes []string
	for _, k := range s.keys {
		v := s.vals[k]
		switch k {
		case "properties", "required", "additionalProperties":
			// Handled below; keep their place.
			out.set(k, placeholder{})
		case "items":
			if is, ok := v.(*object); ok {
				out.set("items", a.adapt(is, ptr+"/items", false))
			} else {
				a.notStrict = append(a.notStrict, ptr+"/items")
			}
		case "anyOf", "oneOf":
			if arr, ok := v.([]any); ok {
				var branches []any
				for i, b := range arr {
					if bo, ok := b.(*object); ok {
						branches = append(branches, a.adapt(bo, fmt.Sprintf("%s/%s/%d", ptr, k, i), false))
					}
				}
				out.set("anyOf", branches)
			}
		case "allOf":
			if arr, ok := v.([]any); ok && len(arr) == 1 {
				if bo, ok := arr[0].(*object); ok {
					for _, bk := range a.adapt(bo, ptr+"/allOf/0", false).keys {
						if !out.has(bk) {
							out.set(bk, bo.vals[bk])
						}
					}
					continue
				}
			}
			a.notStrict = append(a.notStrict, ptr+"/allOf")
		case "$defs", "definitions":
			if defs, ok := v.(*object); ok {
				od := &object{}
				for _, dk := range defs.keys {
					if do, ok := defs.vals[dk].(*object); ok {
						od.set(dk, a.adapt(do, ptr+"/"+k+"/"+dk, false))
					}
				}
				out.set("$defs", od)
			}
		case "$ref":
			if r, ok := v.(string); ok {
				out.set("$ref", strings.Replace(r, "#/definitions/", "#/$defs/", 1))
			}
		case "format":
			if f, ok := v.(string); ok && openaiFormats[f] {
				out.set(k, v)
			} else {
				notes = append(notes, fmt.Sprintf("format: %v", v))
			}
		default:
			if openaiKeep[k] {
				out.set(k, v)
			} else if note := constraintNote(k, v); note != "" {
				notes = append(notes, note)
			}
		}
	}
	if isObjectSchema(s) {
		props, _ := s.vals["properties"].(*object)
		if props == nil || len(props.keys) == 0 {
			if ap, ok := s.vals["additionalProperties"]; ok && ap != false {
				// A map with free keys: strict mode has no way to say it.
				a.notStrict = append(a.notStrict, orRootPtr(ptr))
				if apo, ok := ap.(*object); ok {
					out.set("additionalProperties", a.adapt(apo, ptr+"/additionalProperties", false))
				} else {
					out.set("additionalProperties", ap)
				}
			} else {
				out.set("properties", &object{})
				out.set("required", []any{})
				out.set("additionalProperties", false)
			}
		} else {
			required := map[string]bool{}
			if r, ok := s.vals["required"].([]any); ok {
				for _, x := range r {
					if xs, ok := x.(string); ok {
						required[xs] = true
					}
				}
			}
			op := &object{}
			var req []any
			for _, pk := range props.keys {
				po, ok := props.vals[pk].(*object)
				if !ok {
					po = &object{} // a boolean schema: anything
				}
				ad := a.adapt(po, ptr+"/properties/"+escapePtr(pk), false)
				if !required[pk] {
					ad = nullable(ad)
				}
				op.set(pk, ad)
				req = append(req, pk)
			}
			out.set("properties", op)
			out.set("required", req)
			out.set("additionalProperties", false)
		}
		if !out.has("type") {
			out.set("type", "object")
		}
	}
	for _, k := range []string{"properties", "required", "additionalProperties"} {
		if _, ok := out.vals[k].(placeholder); ok {
			out.del(k)
		}
	}
	addNotes(out, notes)
	if root && !out.has("type") {
		out.set("type", "object")
	}
	return out
}

// placeholder holds a key's place in an object until its value is known.
type placeholder struct{}

// nullable lets a schema also accept null.
func nullable(s *object) *object {
	if allowsNull(s) {
		return s
	}
	out := s.clone()
	switch t := s.vals["type"].(type) {
	case string:
		out.set("type", []any{t, "null"})
		if e, ok := s.vals["enum"].([]any); ok {
			out.set("enum", append(slices.Clone(e), nil))
		}
		if _, ok := s.vals["const"]; !ok {
			return out
		}
	case []any:
		out.set("type", append(slices.Clone(t), "null"))
		if e, ok := s.vals["enum"].([]any); ok {
			out.set("enum", append(slices.Clone(e), nil))
		}
		if _, ok := s.vals["const"]; !ok {
			return out
		}
	}
	if br, ok := s.vals["anyOf"].([]any); ok {
		out.set("anyOf", append(slices.Clone(br), &object{keys: []string{"type"}, vals: map[string]any{"type": "null"}}))
		return out
	}
	// Wrap: {"description": d, "anyOf": [s without d, {"type": "null"}]}.
	inner := s.clone()
	wrapper := &object{}
	if d, ok := inner.vals["description"]; ok {
		wrapper.set("description", d)
		inner.del("description")
	}
	wrapper.set("anyOf", []any{inner, &object{keys: []string{"type"}, vals: map[string]any{"type": "null"}}})
	return wrapper
}

// allowsNull reports whether a schema accepts null.
func allowsNull(s *object) bool {
	if s == nil || len(s.keys) == 0 {
		return true
	}
	switch t := s.vals["type"].(type) {
	case string:
		if t == "null" {
			return true
		}
	case []any:
		if slices.Contains(t, any("null")) {
			return true
		}
	}
	if s.vals["nullable"] == true {
		return true
	}
	if e, ok := s.vals["enum"].([]any); ok && slices.Contains(e, nil) {
		return true
	}
	if c, ok := s.vals["const"]; ok && c == nil {
		return true
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if br, ok := s.vals[k].([]any); ok {
			for _, b := range br {
				if bo, ok := b.(*object); ok && allowsNull(bo) {
					return true
				}
			}
		}
	}
	return false
}

func isObjectSchema(s *object) bool {
	switch t := s.vals["type"].(type) {
	case string:
		return t == "object"
	case []any:
		return slices.Contains(t, any("object"))
	}
	return s.has("properties")
}

// constraintNote describes a dropped constraint for the description ("" for keywords that
// carry nothing a model needs).
func constraintNote(k string, v any) string {
	switch k {
	case "minLength":
		if fmt.Sprint(v) == "1" {
			return "not empty"
		}
		return fmt.Sprintf("at least %v characters", v)
	case "maxLength":
		return fmt.Sprintf("at most %v characters", v)
	case "pattern":
		return fmt.Sprintf("must match the pattern %v", v)
	case "uniqueItems":
		if v == true {
			return "items must be unique"
		}
	case "minProperties":
		return fmt.Sprintf("at least %v entries", v)
	case "maxProperties":
		return fmt.Sprintf("at most %v entries", v)
	case "default":
		b, _ := marshal(v)
		return "default " + string(b)
	case "exclusiveMinimum":
		return fmt.Sprintf("greater than %v", v)
	case "exclusiveMaximum":
		return fmt.Sprintf("less than %v", v)
	case "multipleOf":
		return fmt.Sprintf("a multiple of %v", v)
	case "minimum":
		return fmt.Sprintf("at least %v", v)
	case "maximum":
		return fmt.Sprintf("at most %v", v)
	case "minItems":
		if fmt.Sprint(v) == "1" {
			return "at least one item"
		}
		return fmt.Sprintf("at least %v items", v)
	case "maxItems":
		return fmt.Sprintf("at most %v items", v)
	}
	return ""
}

// addNotes appends dropped constraints to a schema's description, unless the description
// already says them.
func addNotes(s *object, notes []string) {
	if len(notes) == 0 {
		return
	}
	d, _ := s.vals["description"].(string)
	var add []string
	for _, n := range notes {
		if !strings.Contains(d, n) {
			add = append(add, n)
		}
	}
	if len(add) == 0 {
		return
	}
	note := "(" + strings.Join(add, "; ") + ")"
	if d == "" {
		s.set("description", note)
	} else {
		s.set("description", d+" "+note)
	}
}

func escapePtr(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

func orRootPtr(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

// ---- Google Gemini ----

type googleAdapter struct {
	root *object
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

func (g *googleAdapter) adapt(s *object, depth int) *object {
	g.nodes++
	if depth > maxInlineDepth || g.nodes > maxInlineNodes {
		return &object{keys: []string{"description"}, vals: map[string]any{"description": "(nested too deep to show; same shape as its parent)"}}
	}
	// Inline a $ref, with the referring schema's own keywords on top.
	if r, ok := s.vals["$ref"].(string); ok {
		target := g.resolve(r)
		merged := &object{}
		if target != nil {
			for _, k := range target.keys {
				merged.set(k, target.vals[k])
			}
		}
		for _, k := range s.keys {
			if k != "$ref" {
				merged.set(k, s.vals[k])
			}
		}
		merged.del("$ref")
		if target != nil && target.has("$ref") {
			merged.set("$ref", target.vals["$ref"])
		}
		return g.adapt(merged, depth+1)
	}
	out := &object{}
	var notes []string
	typ := ""
	switch t := s.vals["type"].(type) {
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
			out.set("nullable", true)
		}
		if len(kinds) == 1 {
			typ = kinds[0]
		} else if len(kinds) > 1 {
			var branches []any
			for _, k := range kinds {
				branches = append(branches, &object{keys: []string{"type"}, vals: map[string]any{"type": k}})
			}
			out.set("anyOf", branches)
		}
	}
	if typ == "null" {
		typ = ""
		out.set("nullable", true)
	}
	if typ != "" {
		out.set("type", typ)
	}
	for _, k := range s.keys {
		v := s.vals[k]
		switch k {
		case "type", "$schema", "$id", "$comment", "$defs", "definitions", "additionalProperties", "required":
		case "nullable":
			if v == true {
				out.set("nullable", true)
			}
		case "properties":
			props, ok := v.(*object)
			if !ok {
				continue
			}
			op := &object{}
			var order []any
			for _, pk := range props.keys {
				po, ok := props.vals[pk].(*object)
				if !ok {
					po = &object{}
				}
				op.set(pk, g.adapt(po, depth+1))
				order = append(order, pk)
			}
			out.set("properties", op)
			if r, ok := s.vals["required"].([]any); ok {
				var req []any
				for _, x := range r {
					if xs, ok := x.(string); ok && props.has(xs) {
						req = append(req, xs)
					}
				}
				if len(req) > 0 {
					out.set("required", req)
				}
			}
			if len(order) > 1 {
				out.set("propertyOrdering", order)
			}
		case "items":
			if io, ok := v.(*object); ok {
				out.set("items", g.adapt(io, depth+1))
			}
		case "anyOf", "oneOf":
			arr, _ := v.([]any)
			var branches []any
			for _, b := range arr {
				bo, ok := b.(*object)
				if !ok {
					continue
				}
				if bt, ok := bo.vals["type"].(string); ok && bt == "null" && len(bo.keys) == 1 {
					out.set("nullable", true)
					continue
				}
				branches = append(branches, g.adapt(bo, depth+1))
			}
			if len(branches) == 1 {
				for _, bk := range branches[0].(*object).keys {
					if !out.has(bk) {
						out.set(bk, branches[0].(*object).vals[bk])
					}
				}
			} else if len(branches) > 1 {
				out.set("anyOf", branches)
			}
		case "allOf":
			arr, _ := v.([]any)
			for _, b := range arr {
				if bo, ok := b.(*object); ok {
					ad := g.adapt(bo, depth+1)
					for _, bk := range ad.keys {
						if !out.has(bk) {
							out.set(bk, ad.vals[bk])
						}
					}
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
					out.set("nullable", true)
				case string:
					strs = append(strs, x)
				default:
					allStrings = false
				}
			}
			if allStrings && len(strs) > 0 {
				out.set("enum", strs)
				if typ == "" {
					out.set("type", "string")
				}
			} else {
				var shown []string
				for _, x := range vals {
					b, _ := marshal(x)
					shown = append(shown, string(b))
				}
				notes = append(notes, "one of "+strings.Join(shown, ", "))
			}
		case "format":
			if f, ok := v.(string); ok && googleFormats[typ][f] {
				out.set("format", f)
			} else {
				notes = append(notes, fmt.Sprintf("format: %v", v))
			}
		case "default":
			notes = append(notes, constraintNote(k, v))
		default:
			if googleKeep[k] {
				out.set(k, v)
			} else if note := constraintNote(k, v); note != "" {
				notes = append(notes, note)
			}
		}
	}
	if out.vals["type"] == "array" && !out.has("items") {
		out.set("items", &object{keys: []string{"type"}, vals: map[string]any{"type": "string"}})
	}
	if out.vals["type"] == "object" && !out.has("properties") && depth == 0 {
		out.set("properties", &object{})
	}
	addNotes(out, notes)
	// Gemini wants the type first; keep the rest in order.
	return out
}

// resolve finds a local $ref target ("#", "#/$defs/x", "#/definitions/x").
func (g *googleAdapter) resolve(ref string) *object {
	if ref == "#" {
		return g.root
	}
	if !strings.HasPrefix(ref, "#/") {
		return nil
	}
	var cur any = g.root
	for _, tok := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		o, ok := cur.(*object)
		if !ok {
			return nil
		}
		cur = o.vals[tok]
	}
	o, _ := cur.(*object)
	return o
}

// ---- Tool names ----

// ToolName returns the name a tool is declared under to providerID: id with characters
// the provider does not accept replaced by '_', and, when longer than 64 characters, cut
// to 55 and suffixed with '_' and 8 hex digits of id's SHA-256, so that different long ids
// stay different. The result is deterministic; the caller maps names back to ids.
func ToolName(providerID, id string) string {
	google := false
	switch strings.ToLower(providerID) {
	case ProviderGoogle, "gemini", "vertex", "google-vertex":
		google = true
	}
	var b strings.Builder
	for _, r := range id {
		ok := r == '_' || r == '-' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')
		if google && (r == '.' || r == ':') {
			ok = true
		}
		if ok {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	name := b.String()
	if name == "" {
		name = "_"
	}
	if google {
		if c := name[0]; !(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
			name = "_" + name
		}
	}
	if len(name) > 64 || (name != id && len(name) > 55 && name[:55] != id) {
		if len(name) > 64 {
			sum := sha256.Sum256([]byte(id))
			name = name[:55] + "_" + hex.EncodeToString(sum[:4])
		}
	}
	return name
}

// ---- Nulls from strict-mode models ----

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
	sv, err := parseOrdered(schema)
	if err != nil {
		return args
	}
	root, ok := sv.(*object)
	if !ok {
		return args
	}
	av, err := parseOrdered(args)
	if err != nil {
		return args
	}
	g := &googleAdapter{root: root} // for resolve
	if !stripNulls(g, root, av, 0) {
		return args
	}
	b, err := marshal(av)
	if err != nil {
		return args
	}
	return b
}

// stripNulls cleans v in place against schema s and reports whether it removed anything.
func stripNulls(g *googleAdapter, s *object, v any, depth int) bool {
	g.nodes++
	if s == nil || depth > 32 || g.nodes > 10*maxInlineNodes {
		return false
	}
	if r, ok := s.vals["$ref"].(string); ok {
		if t := g.resolve(r); t != nil {
			return stripNulls(g, t, v, depth+1)
		}
	}
	changed := false
	// Branches: with exactly one non-null branch, descend into it.
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		if br, ok := s.vals[k].([]any); ok {
			var cands []*object
			for _, b := range br {
				if bo, ok := b.(*object); ok && !(len(bo.keys) == 1 && bo.vals["type"] == "null") {
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
	case *object:
		props, _ := s.vals["properties"].(*object)
		required := map[string]bool{}
		if r, ok := s.vals["required"].([]any); ok {
			for _, x := range r {
				if xs, ok := x.(string); ok {
					required[xs] = true
				}
			}
		}
		for _, k := range slices.Clone(v.keys) {
			var ps *object
			if props != nil {
				ps, _ = props.vals[k].(*object)
			}
			if v.vals[k] == nil {
				if props == nil || !props.has(k) || required[k] {
					continue
				}
				if ps != nil && allowsNull(g.deref(ps)) {
					continue
				}
				v.del(k)
				changed = true
				continue
			}
			if ps != nil {
				changed = stripNulls(g, ps, v.vals[k], depth+1) || changed
			}
		}
	case []any:
		if is, ok := s.vals["items"].(*object); ok {
			for _, e := range v {
				changed = stripNulls(g, is, e, depth+1) || changed
			}
		}
	}
	return changed
}

// deref follows a $ref, if any.
func (g *googleAdapter) deref(s *object) *object {
	for range 8 {
		r, ok := s.vals["$ref"].(string)
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

// ---- An ordered JSON object ----

// object is a JSON object that keeps its keys' order. Values are nil, bool, json.Number,
// string, []any or *object.
type object struct {
	keys []string
	vals map[string]any
}

func (o *object) has(k string) bool { _, ok := o.vals[k]; return ok }

func (o *object) set(k string, v any) {
	if o.vals == nil {
		o.vals = map[string]any{}
	}
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

func (o *object) del(k string) {
	if _, ok := o.vals[k]; !ok {
		return
	}
	delete(o.vals, k)
	o.keys = slices.DeleteFunc(o.keys, func(x string) bool { return x == k })
}

// clone copies the object itself (not its values).
func (o *object) clone() *object {
	c := &object{keys: slices.Clone(o.keys), vals: make(map[string]any, len(o.vals))}
	for k, v := range o.vals {
		c.vals[k] = v
	}
	return c
}

func (o *object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		vb, err := marshal(o.vals[k])
		if err != nil {
			return nil, err
		}
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// marshal is json.Marshal without HTML escaping: schemas are read by models, not browsers.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

func parseOrdered(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := parseValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON value")
	}
	return v, nil
}

func parseValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &object{vals: map[string]any{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				v, err := parseValue(dec)
				if err != nil {
					return nil, err
				}
				o.set(k, v)
			}
			_, err := dec.Token()
			return o, err
		case '[':
			arr := []any{}
			for dec.More() {
				v, err := parseValue(dec)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			_, err := dec.Token()
			return arr, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	}
	return tok, nil
}
