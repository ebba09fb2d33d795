package registry

// Provider-adapted schemas.
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
	"encoding/json"
	"errors"
	"fmt"
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

// schemaOf is the schema {k: v}.
func schemaOf(k string, v any) *jsonobj.Object {
	o := &jsonobj.Object{}
	o.Set(k, v)
	return o
}

// mergeBranch adds an allOf branch, already adapted, to the schema out: each of its keys
// that out does not have yet.
func mergeBranch(out, branch *jsonobj.Object) {
	for k, v := range branch.All() {
		if !out.Has(k) {
			out.Set(k, v)
		}
	}
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
