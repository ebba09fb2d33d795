package store

import (
	"encoding/binary"

	"github.com/toolsd/toolsd/internal/jsonw"
	"github.com/toolsd/toolsd/protocol"
)

// A call's value is uvarint(len(summary)) summary record: the JSON protocol.CallSummary first,
// so that ListCalls decodes a few hundred bytes per row instead of whole records with their
// arguments and output, then the JSON protocol.CallRecord. Both are written field by field,
// byte for byte as json.Marshal writes them (TestEncodeCallIsJSONMarshal), in one buffer.
func encodeCall(rec *protocol.CallRecord) ([]byte, error) {
	const room = binary.MaxVarintLen32
	v := make([]byte, room, room+768+2*len(rec.Output)+len(rec.Args)+len(rec.Metadata)+len(rec.ModelArgs))
	sum := summaryOf(rec)
	v, err := appendSummary(v, &sum)
	if err != nil {
		return nil, err
	}
	// The summary's length goes right before it: move the summary down to meet it.
	n := len(v) - room
	var head [room]byte
	w := binary.PutUvarint(head[:], uint64(n))
	copy(v[room-w:], head[:w])
	v = v[room-w:]
	return appendRecord(v, rec)
}

func appendSummary(b []byte, s *protocol.CallSummary) ([]byte, error) {
	o := jsonw.Object{B: b, HTML: true}
	o.Begin()
	o.String("callID", s.CallID)
	o.String("sessionID", s.SessionID)
	o.String("messageID", s.MessageID)
	o.String("tool", s.Tool)
	o.String("status", s.Status)
	o.String("title", s.Title)
	o.Time("startedAt", s.StartedAt)
	o.TimeOmit("endedAt", s.EndedAt)
	o.Bool("truncated", s.Truncated)
	o.StringOmit("outputID", s.OutputID)
	o.IntOmit("changes", int64(s.Changes))
	o.BoolOmit("confined", s.Confined)
	client(&o, s.Client)
	return o.End()
}

func appendRecord(b []byte, r *protocol.CallRecord) ([]byte, error) {
	o := jsonw.Object{B: b, HTML: true}
	o.Begin()
	o.String("callID", r.CallID)
	o.String("sessionID", r.SessionID)
	o.String("messageID", r.MessageID)
	o.String("tool", r.Tool)
	o.StringOmit("agent", r.Agent)
	if r.Model != nil {
		o.Value("model", r.Model)
	}
	o.String("status", r.Status)
	o.String("title", r.Title)
	o.Raw("args", r.Args)
	o.Raw("metadata", r.Metadata)
	o.String("output", r.Output)
	o.StringOmit("error", r.Error)
	o.Bool("truncated", r.Truncated)
	o.StringOmit("outputID", r.OutputID)
	jsonw.Slice(&o, "attachments", r.Attachments)
	jsonw.Slice(&o, "decisions", r.Decisions)
	o.Time("startedAt", r.StartedAt)
	o.TimeOmit("endedAt", r.EndedAt)
	o.IntOmit("changes", int64(r.Changes))
	client(&o, r.Client)
	o.RawOmit("modelArgs", r.ModelArgs)
	jsonw.SliceOmit(&o, "hooks", r.Hooks)
	return o.End()
}

// client adds the client member of a record or summary (omitempty).
func client(o *jsonw.Object, c *protocol.ClientRef) {
	if c == nil {
		return
	}
	outer := o.Open("client")
	o.String("id", c.ID)
	o.String("name", c.Name)
	o.StringOmit("version", c.Version)
	o.StringOmit("kind", c.Kind)
	o.Close(outer)
}
