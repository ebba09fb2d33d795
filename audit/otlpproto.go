// OTLP's protobuf, written by hand: the ExportTraceServiceRequest that carries the audit
// trail's spans to a collector, encoded with a few append helpers so that the daemon links
// neither the protobuf nor the gRPC runtime, nor OpenTelemetry's SDK. It writes what the
// official Go exporter's transform (otlptrace/internal/tracetransform) writes for the same
// spans made by the SDK, field for field; TestTraceRequestIsOfficial compares the two.
//
// Field numbers are those of opentelemetry/proto: collector/trace/v1, trace/v1, common/v1
// and resource/v1. As proto3 does, a field at its zero value is left out, except the
// members of AnyValue's oneof and the sub-messages the transform always sets (a span's
// status, a key-value's value, an array value), which are written even when empty.

package audit

import (
	"encoding/binary"
	"time"
)

// appendTraceRequest appends to dst the protobuf encoding of an OTLP
// ExportTraceServiceRequest holding spans, all of the resource res and of toolsd's
// instrumentation scope. No spans encode to nothing: an empty request.
func appendTraceRequest(dst []byte, res []attr, spans []*span) []byte {
	if len(spans) == 0 {
		return dst
	}
	b, rs := pbOpen(dst, 1) // resource_spans
	b, r := pbOpen(b, 1)    // resource
	for _, a := range res {
		b = appendKeyValue(b, 1, a) // attributes
	}
	b = pbClose(b, r)
	b, ss := pbOpen(b, 2) // scope_spans
	b, sc := pbOpen(b, 1) // scope
	b = pbString(b, 1, scopeName)
	b = pbClose(b, sc)
	for _, s := range spans {
		b = appendSpan(b, 2, s) // spans
	}
	b = pbClose(b, ss)
	return pbClose(b, rs)
}

// appendSpan appends a Span (trace/v1): of kind internal, sampled, its parent (if any) not
// remote.
func appendSpan(b []byte, field int, s *span) []byte {
	b, m := pbOpen(b, field)
	b = pbBytes(b, 1, s.trace[:]) // trace_id
	b = pbBytes(b, 2, s.id[:])    // span_id
	if s.parent != ([8]byte{}) {
		b = pbBytes(b, 4, s.parent[:]) // parent_span_id
	}
	b = pbString(b, 5, s.name)              // name
	b = pbUint(b, 6, 1)                     // kind: SPAN_KIND_INTERNAL
	b = pbFixed64(b, 7, unixNanos(s.start)) // start_time_unix_nano
	b = pbFixed64(b, 8, unixNanos(s.end))   // end_time_unix_nano
	for _, a := range s.attrs {
		b = appendKeyValue(b, 9, a) // attributes
	}
	b, st := pbOpen(b, 15) // status, always set by the transform
	if s.failed {
		b = pbString(b, 2, s.errText) // message
		b = pbUint(b, 3, 2)           // code: STATUS_CODE_ERROR
	}
	b = pbClose(b, st)
	// flags: the W3C flags (sampled) and SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK; the parent
	// is never remote, so SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK is not set.
	b = pbFixed32(b, 16, 0x01|0x100)
	return pbClose(b, m)
}

// appendKeyValue appends a KeyValue (common/v1), whose AnyValue is a string_value, an
// int_value or an array_value of string_values.
func appendKeyValue(b []byte, field int, a attr) []byte {
	b, m := pbOpen(b, field)
	b = pbString(b, 1, a.key) // key
	b, v := pbOpen(b, 2)      // value
	switch a.kind {
	case attrString:
		b = pbStringAlways(b, 1, a.s) // string_value
	case attrInt:
		b = pbTag(b, 3, pbWireVarint) // int_value
		b = binary.AppendUvarint(b, uint64(a.n))
	case attrStrings:
		var arr int
		b, arr = pbOpen(b, 5) // array_value
		for _, s := range a.ss {
			var e int
			b, e = pbOpen(b, 1) // values
			b = pbStringAlways(b, 1, s)
			b = pbClose(b, e)
		}
		b = pbClose(b, arr)
	}
	b = pbClose(b, v)
	return pbClose(b, m)
}

// unixNanos is t in nanoseconds since the Unix epoch, 0 for a time before it.
func unixNanos(t time.Time) uint64 {
	return uint64(max(0, t.UnixNano()))
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
