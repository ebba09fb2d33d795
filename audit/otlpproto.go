// OTLP's protobuf, written by hand: the ExportTraceServiceRequest that carries spans to a
// collector, encoded here with a few append helpers so that the daemon links neither the
// protobuf nor the gRPC runtime (and none of the generated OTLP types). It writes the same
// message as the official exporter's transform (otlptrace/internal/tracetransform, v1.47.0),
// field for field; TestTraceRequestIsOfficial compares the two.
//
// Field numbers are those of opentelemetry/proto: collector/trace/v1, trace/v1, common/v1
// and resource/v1. As proto3 does, a field at its zero value is left out, except the
// members of AnyValue's oneof and the sub-messages the transform always sets (a span's
// status, a key-value's value, an array value), which are written even when empty.

package audit

import (
	"encoding/binary"
	"math"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// appendTraceRequest appends to dst the protobuf encoding of an OTLP
// ExportTraceServiceRequest (opentelemetry/proto/collector/trace/v1) that holds spans.
//
// Spans are grouped by resource (by its attributes, as resource.Equivalent tells them
// apart), then by instrumentation scope, both in the order they first appear in spans;
// within a scope, spans keep their order. Nil spans are skipped. No spans encode to
// nothing: an empty request.
func appendTraceRequest(dst []byte, spans []sdktrace.ReadOnlySpan) []byte {
	// done marks the spans already written; on the stack for a usual batch.
	var buf [128]bool
	var done []bool
	if len(spans) <= len(buf) {
		done = buf[:len(spans)]
	} else {
		done = make([]bool, len(spans))
	}
	for i, s := range spans {
		if s != nil && !done[i] {
			dst = appendResourceSpans(dst, 1, spans, i, done) // resource_spans
		}
	}
	return dst
}

// appendResourceSpans appends a ResourceSpans of the resource of spans[first] with every
// span not yet done of that resource, and marks them done.
func appendResourceSpans(b []byte, field int, spans []sdktrace.ReadOnlySpan, first int, done []bool) []byte {
	res := spans[first].Resource()
	key := res.Equivalent()
	b, m := pbOpen(b, field)
	if res != nil {
		b = appendResource(b, 1, res) // resource
	}
	for i := first; i < len(spans); i++ {
		if !done[i] && spans[i] != nil && spans[i].Resource().Equivalent() == key {
			b = appendScopeSpans(b, 2, spans, i, key, done) // scope_spans
		}
	}
	b = pbString(b, 3, res.SchemaURL()) // schema_url
	return pbClose(b, m)
}

// appendScopeSpans appends a ScopeSpans of the scope of spans[first] with every span not
// yet done of that scope and of the resource key, and marks them done.
func appendScopeSpans(b []byte, field int, spans []sdktrace.ReadOnlySpan, first int, key attribute.Distinct, done []bool) []byte {
	scope := spans[first].InstrumentationScope()
	b, m := pbOpen(b, field)
	if scope != (instrumentation.Scope{}) {
		b = appendScope(b, 1, scope) // scope
	}
	for i := first; i < len(spans); i++ {
		s := spans[i]
		if !done[i] && s != nil && s.Resource().Equivalent() == key && s.InstrumentationScope() == scope {
			done[i] = true
			b = appendSpan(b, 2, s) // spans
		}
	}
	b = pbString(b, 3, scope.SchemaURL) // schema_url
	return pbClose(b, m)
}

// appendResource appends a Resource (opentelemetry/proto/resource/v1).
func appendResource(b []byte, field int, res *resource.Resource) []byte {
	b, m := pbOpen(b, field)
	for it := res.Iter(); it.Next(); {
		b = appendKeyValue(b, 1, it.Attribute()) // attributes
	}
	return pbClose(b, m)
}

// appendScope appends an InstrumentationScope (common/v1).
func appendScope(b []byte, field int, scope instrumentation.Scope) []byte {
	b, m := pbOpen(b, field)
	b = pbString(b, 1, scope.Name)    // name
	b = pbString(b, 2, scope.Version) // version
	for it := scope.Attributes.Iter(); it.Next(); {
		b = appendKeyValue(b, 3, it.Attribute()) // attributes
	}
	return pbClose(b, m)
}

// appendSpan appends a Span (trace/v1).
func appendSpan(b []byte, field int, s sdktrace.ReadOnlySpan) []byte {
	b, m := pbOpen(b, field)
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	b = pbBytes(b, 1, tid[:])                   // trace_id
	b = pbBytes(b, 2, sid[:])                   // span_id
	b = appendTraceState(b, 3, sc.TraceState()) // trace_state
	parent := s.Parent()
	if psid := parent.SpanID(); psid.IsValid() {
		b = pbBytes(b, 4, psid[:]) // parent_span_id
	}
	b = pbString(b, 5, s.Name())                  // name
	b = pbUint(b, 6, spanKind(s.SpanKind()))      // kind
	b = pbFixed64(b, 7, unixNanos(s.StartTime())) // start_time_unix_nano
	b = pbFixed64(b, 8, unixNanos(s.EndTime()))   // end_time_unix_nano
	for _, kv := range s.Attributes() {
		b = appendKeyValue(b, 9, kv) // attributes
	}
	b = pbUint(b, 10, clampUint32(s.DroppedAttributes())) // dropped_attributes_count
	events := s.Events()
	for i := range events {
		b = appendEvent(b, 11, &events[i]) // events
	}
	b = pbUint(b, 12, clampUint32(s.DroppedEvents())) // dropped_events_count
	links := s.Links()
	for i := range links {
		b = appendLink(b, 13, &links[i]) // links
	}
	b = pbUint(b, 14, clampUint32(s.DroppedLinks()))         // dropped_links_count
	b = appendStatus(b, 15, s.Status())                      // status, always set by the transform
	b = pbFixed32(b, 16, spanFlags(sc.TraceFlags(), parent)) // flags
	return pbClose(b, m)
}

// appendEvent appends a Span.Event.
func appendEvent(b []byte, field int, e *sdktrace.Event) []byte {
	b, m := pbOpen(b, field)
	b = pbFixed64(b, 1, unixNanos(e.Time)) // time_unix_nano
	b = pbString(b, 2, e.Name)             // name
	for _, kv := range e.Attributes {
		b = appendKeyValue(b, 3, kv) // attributes
	}
	b = pbUint(b, 4, clampUint32(e.DroppedAttributeCount)) // dropped_attributes_count
	return pbClose(b, m)
}

// appendLink appends a Span.Link. Like the transform, it leaves out the link's trace_state.
func appendLink(b []byte, field int, l *sdktrace.Link) []byte {
	b, m := pbOpen(b, field)
	tid, sid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
	b = pbBytes(b, 1, tid[:]) // trace_id
	b = pbBytes(b, 2, sid[:]) // span_id
	for _, kv := range l.Attributes {
		b = appendKeyValue(b, 4, kv) // attributes
	}
	b = pbUint(b, 5, clampUint32(l.DroppedAttributeCount))                    // dropped_attributes_count
	b = pbFixed32(b, 6, spanFlags(l.SpanContext.TraceFlags(), l.SpanContext)) // flags
	return pbClose(b, m)
}

// appendStatus appends a Status. The message is written whatever the code, as the
// transform does (the SDK itself keeps a description only with codes.Error).
func appendStatus(b []byte, field int, st sdktrace.Status) []byte {
	var code uint64 // STATUS_CODE_UNSET
	switch st.Code {
	case codes.Ok:
		code = 1 // STATUS_CODE_OK
	case codes.Error:
		code = 2 // STATUS_CODE_ERROR
	}
	b, m := pbOpen(b, field)
	b = pbString(b, 2, st.Description) // message
	b = pbUint(b, 3, code)             // code
	return pbClose(b, m)
}

// appendTraceState appends the W3C tracestate as its header value, "k=v,k=v", as
// TraceState.String would give it, without building the string.
func appendTraceState(b []byte, field int, ts trace.TraceState) []byte {
	if ts.Len() == 0 {
		return b
	}
	b, m := pbOpen(b, field)
	ts.Walk(func(k, v string) bool {
		if len(b) > m+1 {
			b = append(b, ',')
		}
		b = append(b, k...)
		b = append(b, '=')
		b = append(b, v...)
		return true
	})
	return pbClose(b, m)
}

// appendKeyValue appends a KeyValue (common/v1); its value is always set, if only to an
// empty AnyValue.
func appendKeyValue(b []byte, field int, kv attribute.KeyValue) []byte {
	b, m := pbOpen(b, field)
	b = pbString(b, 1, string(kv.Key)) // key
	b = appendAnyValue(b, 2, kv.Value) // value
	return pbClose(b, m)
}

// appendAnyValue appends an AnyValue (common/v1). Its oneof's member is written even at its
// zero value (false, 0, ""), since a oneof has presence; an EMPTY value is an AnyValue with
// none set, and a type the transform does not know is the string "INVALID".
func appendAnyValue(b []byte, field int, v attribute.Value) []byte {
	b, m := pbOpen(b, field)
	switch v.Type() {
	case attribute.EMPTY:
	case attribute.STRING:
		b = pbStringAlways(b, 1, v.AsString()) // string_value
	case attribute.BOOL:
		b = pbBoolAlways(b, 2, v.AsBool()) // bool_value
	case attribute.INT64:
		b = pbTag(b, 3, pbWireVarint) // int_value
		b = binary.AppendUvarint(b, uint64(v.AsInt64()))
	case attribute.FLOAT64:
		b = pbTag(b, 4, pbWireFixed64) // double_value
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v.AsFloat64()))
	case attribute.BOOLSLICE:
		b = appendArrayValue(b, 5, v.AsBoolSlice(), attribute.BoolValue) // array_value
	case attribute.INT64SLICE:
		b = appendArrayValue(b, 5, v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		b = appendArrayValue(b, 5, v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		b = appendArrayValue(b, 5, v.AsStringSlice(), attribute.StringValue)
	case attribute.SLICE:
		b = appendArrayValue(b, 5, v.AsSlice(), func(e attribute.Value) attribute.Value { return e })
	case attribute.MAP:
		b = appendKeyValueList(b, 6, v.AsMap()) // kvlist_value
	case attribute.BYTESLICE:
		b = pbTag(b, 7, pbWireBytes) // bytes_value
		s := v.AsByteSlice()
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	default:
		b = pbStringAlways(b, 1, "INVALID")
	}
	return pbClose(b, m)
}

// appendArrayValue appends an ArrayValue (common/v1) of elems, each made a Value by value.
func appendArrayValue[E any](b []byte, field int, elems []E, value func(E) attribute.Value) []byte {
	b, m := pbOpen(b, field)
	for _, e := range elems {
		b = appendAnyValue(b, 1, value(e)) // values
	}
	return pbClose(b, m)
}

// appendKeyValueList appends a KeyValueList (common/v1).
func appendKeyValueList(b []byte, field int, kvs []attribute.KeyValue) []byte {
	b, m := pbOpen(b, field)
	for _, kv := range kvs {
		b = appendKeyValue(b, 1, kv) // values
	}
	return pbClose(b, m)
}

// spanKind maps the SDK's span kind to OTLP's Span.SpanKind.
func spanKind(k trace.SpanKind) uint64 {
	switch k {
	case trace.SpanKindInternal:
		return 1
	case trace.SpanKindServer:
		return 2
	case trace.SpanKindClient:
		return 3
	case trace.SpanKindProducer:
		return 4
	case trace.SpanKindConsumer:
		return 5
	}
	return 0 // SPAN_KIND_UNSPECIFIED
}

// spanFlags is the transform's buildSpanFlagsWith: the W3C trace flags in the low byte,
// SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK (0x100) always, and
// SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK (0x200) when the parent (or, for a link, the linked
// span) is remote.
func spanFlags(tf trace.TraceFlags, parent trace.SpanContext) uint32 {
	flags := uint32(tf) | 0x100
	if parent.IsRemote() {
		flags |= 0x200
	}
	return flags
}

// unixNanos is t in nanoseconds since the Unix epoch, 0 for a time before it.
func unixNanos(t time.Time) uint64 {
	return uint64(max(0, t.UnixNano()))
}

// clampUint32 is n clamped to uint32, as the transform counts what was dropped.
func clampUint32(n int) uint64 {
	return uint64(min(max(n, 0), math.MaxUint32))
}

// Protobuf wire types.
const (
	pbWireVarint  = 0
	pbWireFixed64 = 1
	pbWireBytes   = 2
	pbWireFixed32 = 5
)

func pbTag(b []byte, field, wire int) []byte {
	return binary.AppendUvarint(b, uint64(field)<<3|uint64(wire))
}

// pbUint appends a varint field, unless v is zero.
func pbUint(b []byte, field int, v uint64) []byte {
	if v == 0 {
		return b
	}
	return binary.AppendUvarint(pbTag(b, field, pbWireVarint), v)
}

// pbFixed64 appends a fixed64 field, unless v is zero.
func pbFixed64(b []byte, field int, v uint64) []byte {
	if v == 0 {
		return b
	}
	return binary.LittleEndian.AppendUint64(pbTag(b, field, pbWireFixed64), v)
}

// pbFixed32 appends a fixed32 field, unless v is zero.
func pbFixed32(b []byte, field int, v uint32) []byte {
	if v == 0 {
		return b
	}
	return binary.LittleEndian.AppendUint32(pbTag(b, field, pbWireFixed32), v)
}

// pbString appends a string field, unless s is empty.
func pbString(b []byte, field int, s string) []byte {
	if s == "" {
		return b
	}
	return pbStringAlways(b, field, s)
}

// pbStringAlways appends a string field even if s is empty (a oneof member).
func pbStringAlways(b []byte, field int, s string) []byte {
	b = binary.AppendUvarint(pbTag(b, field, pbWireBytes), uint64(len(s)))
	return append(b, s...)
}

// pbBytes appends a bytes field, unless p is empty.
func pbBytes(b []byte, field int, p []byte) []byte {
	if len(p) == 0 {
		return b
	}
	b = binary.AppendUvarint(pbTag(b, field, pbWireBytes), uint64(len(p)))
	return append(b, p...)
}

// pbBoolAlways appends a bool field even if v is false (a oneof member).
func pbBoolAlways(b []byte, field int, v bool) []byte {
	b = pbTag(b, field, pbWireVarint)
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// pbOpen appends the tag of a length-delimited field and one byte of room for its length,
// and returns where that byte is; the caller appends the body and then calls pbClose.
func pbOpen(b []byte, field int) ([]byte, int) {
	b = pbTag(b, field, pbWireBytes)
	return append(b, 0), len(b)
}

// pbClose writes the length of the body appended since pbOpen returned m. A body of 128
// bytes or more needs a longer varint: the body moves up to make room.
func pbClose(b []byte, m int) []byte {
	n := len(b) - m - 1
	if n < 0x80 {
		b[m] = byte(n)
		return b
	}
	var lb [binary.MaxVarintLen64]byte
	k := binary.PutUvarint(lb[:], uint64(n))
	b = append(b, lb[:k-1]...) // grow by k-1
	copy(b[m+k:], b[m+1:m+1+n])
	copy(b[m:], lb[:k])
	return b
}
