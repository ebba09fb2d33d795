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
	"slices"
	"strings"
	"sync"

	"github.com/toolsd/toolsd/internal/jsonobj"
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
	v, err := jsonobj.Parse(schema)
	if err != nil {
		return nil, fmt.Errorf("registry: schema is not valid JSON: %w", err)
	}
	root, ok := v.(*jsonobj.Object)
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
		root = root.Clone()
		root.Del("$schema")
		out = root
	default:
		out = root
	}
	b, err := jsonobj.Marshal(out)
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
					for _, bk := range a.adapt(bo, ptr+"/allOf/0", false).Keys() {
						if !out.Has(bk) {
							out.Set(bk, bo.Get(bk))
						}
					}
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

// schemaOf is the schema {k: v}.
func schemaOf(k string, v any) *jsonobj.Object {
	o := &jsonobj.Object{}
	o.Set(k, v)
	return o
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
		b, _ := jsonobj.Marshal(v)
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
func addNotes(s *jsonobj.Object, notes []string) {
	if len(notes) == 0 {
		return
	}
	d, _ := s.Get("description").(string)
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
		s.Set("description", note)
	} else {
		s.Set("description", d+" "+note)
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
					ad := g.adapt(bo, depth+1)
					for _, bk := range ad.Keys() {
						if !out.Has(bk) {
							out.Set(bk, ad.Get(bk))
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
