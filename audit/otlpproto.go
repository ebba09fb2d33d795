// OTLP's protobuf: the ExportTraceServiceRequest that carries the audit trail's spans to a
// collector, built from the official message types as the official Go exporter's transform
// (otlptrace/internal/tracetransform) builds it for the same spans made by the SDK;
// TestTraceRequestIsOfficial compares the two. The message is trace/v1's TracesData, whose
// encoding is the request's (the collector's package would link gRPC's runtime).

package audit

import (
	"strings"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// traceRequest encodes an ExportTraceServiceRequest holding spans, all of the resource res
// and of toolsd's instrumentation scope. No spans encode to nothing: an empty request.
func traceRequest(res []attr, spans []*span) ([]byte, error) {
	if len(spans) == 0 {
		return nil, nil
	}
	ps := make([]*tracepb.Span, len(spans))
	for i, s := range spans {
		p := &tracepb.Span{
			TraceId:           s.trace[:],
			SpanId:            s.id[:],
			Name:              text(s.name),
			Kind:              tracepb.Span_SPAN_KIND_INTERNAL,
			StartTimeUnixNano: unixNanos(s.start),
			EndTimeUnixNano:   unixNanos(s.end),
			Attributes:        keyValues(s.attrs),
			Status:            &tracepb.Status{}, // always set by the transform
			// The W3C flags (sampled) and SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK; the parent
			// is never remote, so SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK is not set.
			Flags: 0x01 | uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK),
		}
		if s.parent != ([8]byte{}) {
			p.ParentSpanId = s.parent[:]
		}
		if s.failed {
			p.Status = &tracepb.Status{Message: text(s.errText), Code: tracepb.Status_STATUS_CODE_ERROR}
		}
		ps[i] = p
	}
	return proto.Marshal(&tracepb.TracesData{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource: &resourcepb.Resource{Attributes: keyValues(res)},
		ScopeSpans: []*tracepb.ScopeSpans{{
			Scope: &commonpb.InstrumentationScope{Name: scopeName},
			Spans: ps,
		}},
	}}})
}

// keyValues are attrs as KeyValues, whose AnyValue is a string_value, an int_value or an
// array_value of string_values.
func keyValues(attrs []attr) []*commonpb.KeyValue {
	kvs := make([]*commonpb.KeyValue, len(attrs))
	for i, a := range attrs {
		v := &commonpb.AnyValue{}
		switch a.kind {
		case attrString:
			v.Value = &commonpb.AnyValue_StringValue{StringValue: text(a.s)}
		case attrInt:
			v.Value = &commonpb.AnyValue_IntValue{IntValue: a.n}
		case attrStrings:
			vs := make([]*commonpb.AnyValue, len(a.ss))
			for j, s := range a.ss {
				vs[j] = &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: text(s)}}
			}
			v.Value = &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: vs}}
		}
		kvs[i] = &commonpb.KeyValue{Key: text(a.key), Value: v}
	}
	return kvs
}

// text is s with each byte that is not UTF-8 replaced by U+FFFD: a protobuf string must be
// UTF-8, and a tool's error or a command line may not be.
func text(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

// unixNanos is t in nanoseconds since the Unix epoch, 0 for a time before it.
func unixNanos(t time.Time) uint64 {
	return uint64(max(0, t.UnixNano()))
}
