package rpc

import (
	"encoding/json"

	"go.lsp.dev/jsonrpc2"

	"github.com/toolsd/toolsd/internal/jsondec"
)

// codec encodes payloads with the standard library's encoding/json, chosen on purpose over
// the library's json/v2 default: its rules (omitempty drops false and 0, nil slices are
// null) are the ones the protocol types and the golden files are written for, and it is the
// encoder the rest of the daemon uses. HTML is not escaped. Result types initialise their
// slices so arrays are never null on the wire; golden tests pin every shape.
type codec struct{}

func (codec) Marshal(v any) ([]byte, error) {
	switch m := v.(type) {
	case jsonrpc2.RawMessage:
		if m == nil {
			return []byte("null"), nil
		}
		return m, nil
	case json.RawMessage:
		if m == nil {
			return []byte("null"), nil
		}
		return m, nil
	}
	return jsondec.Marshal(v)
}

func (codec) Unmarshal(data []byte, v any) error {
	switch m := v.(type) {
	case *jsonrpc2.RawMessage:
		*m = append((*m)[:0], data...)
		return nil
	case *json.RawMessage:
		*m = append((*m)[:0], data...)
		return nil
	}
	return json.Unmarshal(data, v)
}
