package rpc

import (
	"encoding/json"

	"go.lsp.dev/jsonrpc2"

	"github.com/toolsd/toolsd/internal/jsonw"
	"github.com/toolsd/toolsd/protocol"
)

// codec encodes payloads with the standard library's encoding/json, chosen on purpose over
// the library's json/v2 default: its rules (omitempty drops false and 0, nil slices are
// null, HTML is not escaped here) are the ones the protocol types and the golden files are
// written for, and it is the encoder the rest of the daemon uses. Result types initialise
// their slices so arrays are never null on the wire; golden tests pin every shape.
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
	case *protocol.ExecuteResult:
		// Every call's answer: written field by field (TestExecuteResultEncoding).
		if m != nil {
			return appendExecuteResult(make([]byte, 0, 256+len(m.Output)+len(m.Metadata)+len(m.Error)), m)
		}
	case *protocol.ProgressParams:
		// Every call's tools/progress: written field by field (TestProgressEncoding).
		if m != nil {
			return appendProgress(make([]byte, 0, 256+len(m.Title)+len(m.Metadata)), m)
		}
	}
	return jsonw.Value(nil, v, false)
}

// appendExecuteResult appends r as the codec's encoding/json writes it.
func appendExecuteResult(b []byte, r *protocol.ExecuteResult) ([]byte, error) {
	o := jsonw.Object{B: b}
	o.Begin()
	o.String("callID", r.CallID)
	o.String("status", r.Status)
	o.String("title", r.Title)
	o.String("output", r.Output)
	o.Raw("metadata", r.Metadata)
	jsonw.Slice(&o, "attachments", r.Attachments)
	o.Bool("truncated", r.Truncated)
	o.StringOmit("outputID", r.OutputID)
	o.StringOmit("error", r.Error)
	return o.End()
}

// appendProgress appends p as the codec's encoding/json writes it.
func appendProgress(b []byte, p *protocol.ProgressParams) ([]byte, error) {
	o := jsonw.Object{B: b}
	o.Begin()
	o.String("sessionID", p.SessionID)
	o.StringOmit("messageID", p.MessageID)
	o.String("callID", p.CallID)
	o.String("tool", p.Tool)
	o.String("status", p.Status)
	o.StringOmit("title", p.Title)
	o.RawOmit("metadata", p.Metadata)
	if c := p.Client; c != nil {
		outer := o.Open("client")
		o.String("id", c.ID)
		o.String("name", c.Name)
		o.StringOmit("version", c.Version)
		o.StringOmit("kind", c.Kind)
		o.Close(outer)
	}
	return o.End()
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
