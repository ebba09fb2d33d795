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
	// Room for the fields around the output and for its escapes: text escapes to a little
	// more than itself (a newline or a tab to two bytes). A record that needs more (an
	// output of control characters) grows once.
	v := make([]byte, room, room+1024+len(rec.Output)+len(rec.Output)/8+len(rec.Error)+len(rec.Args)+len(rec.Metadata)+len(rec.ModelArgs))
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
	decisions(&o, r.Decisions)
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

// decisions adds a record's decisions: every call has at least the one that let it run.
func decisions(o *jsonw.Object, ds []protocol.Decision) {
	if len(ds) == 0 {
		jsonw.Slice(o, "decisions", ds)
		return
	}
	outer := o.OpenArray("decisions")
	for i := range ds {
		d := &ds[i]
		elem := o.OpenElem()
		o.String("permission", d.Permission)
		o.Strings("patterns", d.Patterns)
		o.String("action", d.Action)
		o.String("by", d.By)
		if r := d.Rule; r != nil {
			in := o.Open("rule")
			o.String("permission", r.Permission)
			o.String("pattern", r.Pattern)
			o.String("action", r.Action)
			o.StringOmit("source", r.Source)
			o.Close(in)
		}
		o.StringOmit("reply", d.Reply)
		o.StringOmit("scope", d.Scope)
		o.StringOmit("message", d.Message)
		client(o, d.Client)
		o.Time("at", d.At)
		if p := d.Provenance; p != nil {
			in := o.Open("provenance")
			o.String("kind", p.Kind)
			o.String("text", p.Text)
			o.StringOmit("rule", p.Rule)
			o.StringOmit("layer", p.Layer)
			o.StringOmit("file", p.File)
			o.IntOmit("line", int64(p.Line))
			o.IntOmit("column", int64(p.Column))
			o.StringOmit("pattern", p.Pattern)
			o.TimeOmit("rememberedAt", p.RememberedAt)
			o.StringOmit("rememberedBy", p.RememberedBy)
			o.StringOmit("hook", p.Hook)
			o.StringOmit("reason", p.Reason)
			o.StringsOmit("reasons", p.Reasons)
			o.StringOmit("untrusted", p.Untrusted)
			o.StringOmit("protected", p.Protected)
			o.Close(in)
		}
		o.TimeOmit("askedAt", d.AskedAt)
		o.IntOmit("waitedMs", d.WaitedMs)
		o.StringOmit("answeredBy", d.AnsweredBy)
		o.Close(elem)
	}
	o.CloseArray(outer)
}
