// Package jsondec decodes and checks JSON exactly as encoding/json does, but faster:
// through github.com/go-json-experiment/json (the code of Go's encoding/json/v2) with its
// options for version 1's behaviour, and through encoding/json itself for an input that
// fails, so that errors read as they always have.
package jsondec

import (
	"bytes"
	"encoding/json"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

var v1 = jsonv1.DefaultOptionsV1()

// Unmarshal is json.Unmarshal(data, v).
func Unmarshal(data []byte, v any) error {
	if jsonv2.Unmarshal(data, v, v1) == nil {
		return nil
	}
	return json.Unmarshal(data, v)
}

// Valid is json.Valid(data): duplicate names and invalid UTF-8 in strings are allowed, as
// encoding/json allows them.
func Valid(data []byte) bool {
	return jsontext.Value(data).IsValid(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
}

// Canonical is data with its objects' members sorted by name and no white space, numbers as
// written (1.0 and 1 differ): one form for the same value however it was spaced and ordered.
// Anything but one JSON value is data itself.
func Canonical(data []byte) []byte {
	v := jsontext.Value(bytes.Clone(data))
	if v.Format(jsontext.ReorderRawObjects(true), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)) != nil {
		return data
	}
	return v
}

// Marshal is json.Marshal(v) without HTML escaping: what toolsd writes is read by editors,
// people and models, not browsers, so < > & stay as they are.
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
