package audit

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	collector "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// officialEncoder encodes spans the official way: the otlptracehttp exporter, with no
// compression, posting to a loopback server that keeps the request body.
type officialEncoder struct {
	srv *httptest.Server
	exp sdktrace.SpanExporter

	mu     sync.Mutex
	bodies [][]byte
}

func newOfficialEncoder(t testing.TB) *officialEncoder {
	t.Helper()
	o := &officialEncoder{}
	o.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" ||
			r.Header.Get("Content-Encoding") != "" {
			http.Error(w, fmt.Sprintf("unexpected request %s %s %v (%v)", r.Method, r.URL.Path, r.Header, err), http.StatusBadRequest)
			return
		}
		o.mu.Lock()
		o.bodies = append(o.bodies, body)
		o.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	exp, err := otlptracehttp.New(context.Background(),
		otlptracehttp.WithEndpointURL(o.srv.URL+"/v1/traces"),
		otlptracehttp.WithInsecure(),
		otlptracehttp.WithCompression(otlptracehttp.NoCompression),
		otlptracehttp.WithEncoding(otlptracehttp.EncodingProtobuf),
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}),
		otlptracehttp.WithMaxRequestSize(0),
	)
	if err != nil {
		o.srv.Close()
		t.Fatal(err)
	}
	o.exp = exp
	t.Cleanup(func() {
		if err := o.exp.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
		o.srv.Close()
	})
	return o
}

// encode returns the bodies of the requests the official exporter sent for spans: one, or
// none when it had nothing to send.
func (o *officialEncoder) encode(t testing.TB, spans []sdktrace.ReadOnlySpan) [][]byte {
	t.Helper()
	o.mu.Lock()
	o.bodies = nil
	o.mu.Unlock()
	if err := o.exp.ExportSpans(context.Background(), spans); err != nil {
		t.Fatal(err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.bodies
}

// normalised decodes an ExportTraceServiceRequest and sorts its resource spans, and each
// one's scope spans, by their resource (scope) and schema URL marshalled. The official
// transform groups spans through maps, so its order of resource spans varies from run to
// run (ours is the order of first appearance); what is compared is the message up to that
// order. Spans within a scope keep their order, in both.
func normalised(t testing.TB, body []byte) *collector.ExportTraceServiceRequest {
	t.Helper()
	var req collector.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &req); err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	det := proto.MarshalOptions{Deterministic: true}
	key := func(m proto.Message, schemaURL string) string {
		b, err := det.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return string(b) + "\x00" + schemaURL
	}
	for _, rs := range req.ResourceSpans {
		slices.SortStableFunc(rs.ScopeSpans, func(a, b *tracepb.ScopeSpans) int {
			return strings.Compare(key(a.Scope, a.SchemaUrl), key(b.Scope, b.SchemaUrl))
		})
	}
	slices.SortStableFunc(req.ResourceSpans, func(a, b *tracepb.ResourceSpans) int {
		return strings.Compare(key(a.Resource, a.SchemaUrl), key(b.Resource, b.SchemaUrl))
	})
	return &req
}

// compareWithOfficial encodes spans both ways and fails unless they decode to the same
// request (up to grouping order).
func compareWithOfficial(t *testing.T, o *officialEncoder, spans []sdktrace.ReadOnlySpan) {
	t.Helper()
	ours := appendTraceRequest(nil, spans)
	bodies := o.encode(t, spans)
	if len(bodies) != 1 {
		t.Fatalf("the official exporter sent %d requests, want 1", len(bodies))
	}
	want, got := normalised(t, bodies[0]), normalised(t, ours)
	if !proto.Equal(want, got) {
		t.Errorf("our request differs from the official one\nofficial: %v\nours:     %v", want, got)
	}
}

func traceID(b byte) trace.TraceID {
	return trace.TraceID{0x0a, 0xf7, 0x65, 0x19, 0x16, 0xcd, 0x43, 0xdd, 0x84, 0x48, 0xeb, 0x21, 0x1c, 0x80, 0x31, b}
}

func spanID(b byte) trace.SpanID { return trace.SpanID{0xb7, 0xad, 0x6b, 0x71, 0x69, 0x20, 0x33, b} }

// everyAttribute has a value of each attribute type, with the zero values, empty slices,
// nested slices and maps, and strings long enough for two- and three-byte lengths.
func everyAttribute() []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.Bool("bool.true", true),
		attribute.Bool("bool.false", false),
		attribute.Int64("int.zero", 0),
		attribute.Int64("int.neg", -42),
		attribute.Int64("int.max", math.MaxInt64),
		attribute.Int64("int.min", math.MinInt64),
		attribute.Float64("float.zero", 0),
		attribute.Float64("float", -1.5e300),
		attribute.Float64("float.inf", math.Inf(1)),
		attribute.String("string", "héllo"),
		attribute.String("string.empty", ""),
		attribute.String("string.long", strings.Repeat("x", 200)),
		attribute.String("string.longer", strings.Repeat("y", 20000)),
		attribute.String("", "empty key"),
		attribute.BoolSlice("bools", []bool{true, false, true}),
		attribute.BoolSlice("bools.empty", []bool{}),
		attribute.Int64Slice("ints", []int64{0, -1, 1, math.MaxInt64, math.MinInt64}),
		attribute.Int64Slice("ints.empty", nil),
		attribute.IntSlice("ints.one", []int{7}),
		attribute.Float64Slice("floats", []float64{0, 0.5, -2}),
		attribute.Float64Slice("floats.empty", nil),
		attribute.StringSlice("strings", []string{"a", "", strings.Repeat("z", 300)}),
		attribute.StringSlice("strings.empty", []string{}),
		attribute.ByteSlice("bytes", []byte{0, 1, 2, 0xff}),
		attribute.ByteSlice("bytes.empty", nil),
		attribute.Slice("slice", attribute.StringValue("s"), attribute.IntValue(1), attribute.Value{},
			attribute.SliceValue(attribute.BoolValue(false)), attribute.MapValue(attribute.String("k", "v"))),
		attribute.Slice("slice.empty"),
		attribute.Map("map", attribute.Int("b", 2), attribute.String("a", ""), attribute.Slice("c")),
		attribute.Map("map.empty"),
		{Key: "empty.value"}, // attribute.EMPTY
	}
}

// everyField is a batch whose spans exercise every field the transform writes, in an
// order that interleaves resources and scopes.
func everyField() tracetest.SpanStubs {
	res1 := resource.NewWithAttributes("https://opentelemetry.io/schemas/1.26.0",
		attribute.String("service.name", "toolsd"), attribute.Int("pid", 4242),
		attribute.StringSlice("args", []string{"serve", "--stdio"}), attribute.Bool("debug", false))
	res2 := resource.NewSchemaless(attribute.String("service.name", "other"))
	scopeA := instrumentation.Scope{
		Name: "github.com/toolsd/toolsd/audit", Version: "1.2.3", SchemaURL: "https://opentelemetry.io/schemas/1.24.0",
		Attributes: attribute.NewSet(attribute.String("scope.attr", "a"), attribute.Int64Slice("scope.ints", []int64{1, 2})),
	}
	scopeB := instrumentation.Scope{Name: "b"}
	scopeNoName := instrumentation.Scope{Version: "0.1"}
	ts, err := trace.ParseTraceState("vendor=v1,other@tenant=x:y")
	if err != nil {
		panic(err)
	}
	start := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
	sc := func(t, s byte, flags trace.TraceFlags, ts trace.TraceState, remote bool) trace.SpanContext {
		return trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID(t), SpanID: spanID(s), TraceFlags: flags, TraceState: ts, Remote: remote})
	}
	events := []sdktrace.Event{
		{Name: "asked", Time: start.Add(time.Millisecond), Attributes: everyAttribute()[:12], DroppedAttributeCount: 3},
		{Name: "", Time: time.Unix(0, 0)},
		{Name: "before epoch", Time: time.Unix(-5, 0), Attributes: []attribute.KeyValue{attribute.String("k", "v")}},
	}
	links := []sdktrace.Link{
		{SpanContext: sc(9, 9, trace.FlagsSampled, ts, true), Attributes: everyAttribute()[12:], DroppedAttributeCount: 1},
		{SpanContext: sc(8, 8, 0, trace.TraceState{}, false)},
		{SpanContext: trace.SpanContext{}, DroppedAttributeCount: -3}, // invalid ids, negative count clamps to 0
	}
	return tracetest.SpanStubs{
		{
			Name: "toolsd.call", SpanContext: sc(1, 1, trace.FlagsSampled, ts, false), Parent: sc(1, 0x10, trace.FlagsSampled, ts, true),
			SpanKind: trace.SpanKindServer, StartTime: start, EndTime: start.Add(time.Second),
			Attributes: everyAttribute(), Events: events, Links: links,
			Status:            sdktrace.Status{Code: codes.Error, Description: "it failed"},
			DroppedAttributes: 5, DroppedEvents: 6, DroppedLinks: 7,
			Resource: res1, InstrumentationScope: scopeA,
		},
		{
			Name: "toolsd.permission", SpanContext: sc(1, 2, 0, trace.TraceState{}, false), Parent: sc(1, 1, 0, trace.TraceState{}, false),
			SpanKind: trace.SpanKindClient, StartTime: start, EndTime: start.Add(time.Millisecond),
			Attributes: []attribute.KeyValue{attribute.String("toolsd.decision", "allow")},
			Status:     sdktrace.Status{Code: codes.Ok, Description: "ok, with a description the SDK would drop"},
			Resource:   res1, InstrumentationScope: scopeB,
		},
		{
			Name: "other.internal", SpanContext: sc(2, 3, trace.FlagsSampled, trace.TraceState{}, false),
			SpanKind: trace.SpanKindInternal, StartTime: start, EndTime: start,
			Status:   sdktrace.Status{Code: codes.Unset, Description: "unset, described"},
			Resource: res2, InstrumentationScope: scopeA,
		},
		{
			Name: "toolsd.call.start", SpanContext: sc(1, 4, trace.FlagsSampled, trace.TraceState{}, false), Parent: sc(1, 1, trace.FlagsSampled, ts, false),
			SpanKind: trace.SpanKindProducer, StartTime: start, EndTime: start,
			Links: links[1:2], DroppedLinks: -1, DroppedEvents: math.MaxInt64,
			Resource: res1, InstrumentationScope: scopeA,
		},
		{
			Name: "consumer", SpanContext: sc(3, 5, trace.FlagsSampled, trace.TraceState{}, true),
			SpanKind: trace.SpanKindConsumer, StartTime: start, // no end time
			Status:   sdktrace.Status{Code: codes.Code(99)},
			Resource: res2, // the zero scope: no scope written
		},
		{
			Name: "unspecified kind", SpanContext: sc(3, 6, 0, trace.TraceState{}, false),
			SpanKind: trace.SpanKindUnspecified, StartTime: time.Unix(-1, 0), EndTime: time.Unix(1, 0),
			Resource: res1, InstrumentationScope: scopeB,
		},
		{
			Name: "unknown kind, no resource", SpanContext: sc(4, 7, 0, trace.TraceState{}, false),
			SpanKind: trace.SpanKind(42), InstrumentationScope: scopeNoName,
		},
		{
			Name: "zero ids", Resource: res2, InstrumentationScope: scopeNoName,
		},
	}
}

// withScope is a span of another instrumentation scope.
type withScope struct {
	sdktrace.ReadOnlySpan
	scope instrumentation.Scope
}

func (s withScope) InstrumentationScope() instrumentation.Scope { return s.scope }

func TestTraceRequestIsOfficial(t *testing.T) {
	o := newOfficialEncoder(t)
	stubs := everyField()
	spans := stubs.Snapshots()
	compareWithOfficial(t, o, spans)

	// A nil span is skipped, as the transform skips it.
	compareWithOfficial(t, o, slices.Insert(slices.Clone(spans), 3, sdktrace.ReadOnlySpan(nil)))

	// A scope of nothing but an empty attribute set is not the zero scope: the transform
	// writes it, empty. (A SpanStub would make it the zero scope, hence withScope.)
	empty := instrumentation.Scope{Attributes: *attribute.EmptySet()}
	compareWithOfficial(t, o, []sdktrace.ReadOnlySpan{withScope{spans[0], empty}, withScope{spans[1], empty}, spans[2]})

	// One span of each, alone.
	for i, s := range spans {
		t.Run(stubs[i].Name, func(t *testing.T) { compareWithOfficial(t, o, []sdktrace.ReadOnlySpan{s}) })
	}

	// Spans of the real SDK, not stubs: a tracer provider with a resource, two tracers and
	// a span with events, links, a status and an error recorded.
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "toolsd"))))
	ctx, parent := tp.Tracer("a", trace.WithInstrumentationVersion("1"), trace.WithInstrumentationAttributes(attribute.Bool("x", true))).
		Start(context.Background(), "parent", trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(everyAttribute()...))
	_, child := tp.Tracer("b").Start(ctx, "child", trace.WithLinks(trace.Link{SpanContext: parent.SpanContext(), Attributes: everyAttribute()[:3]}))
	child.AddEvent("event", trace.WithAttributes(attribute.String("k", "v")))
	child.RecordError(fmt.Errorf("boom"))
	child.SetStatus(codes.Error, "failed")
	child.End()
	parent.SetStatus(codes.Ok, "dropped by the SDK")
	parent.End()
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	compareWithOfficial(t, o, rec.Ended())
}

// TestTraceRequestIsOfficialRandom compares random batches: attributes of random types and
// strings of lengths around the bounds of one-, two- and three-byte varints, so that
// messages of every level cross them.
func TestTraceRequestIsOfficialRandom(t *testing.T) {
	o := newOfficialEncoder(t)
	r := rand.New(rand.NewPCG(1, 2))
	lengths := []int{0, 1, 60, 100, 110, 120, 125, 126, 127, 128, 129, 200, 16370, 16380, 16383, 16384, 16390}
	str := func() string { return strings.Repeat("s", lengths[r.IntN(len(lengths))]) }
	var value func(depth int) attribute.Value
	value = func(depth int) attribute.Value {
		switch r.IntN(12) {
		case 0:
			return attribute.BoolValue(r.IntN(2) == 0)
		case 1:
			return attribute.Int64Value(r.Int64() - r.Int64())
		case 2:
			return attribute.Float64Value(r.NormFloat64())
		case 3:
			return attribute.BoolSliceValue(make([]bool, r.IntN(4)))
		case 4:
			return attribute.Int64SliceValue(make([]int64, r.IntN(8)))
		case 5:
			return attribute.Float64SliceValue(make([]float64, r.IntN(20)))
		case 6:
			ss := make([]string, r.IntN(3))
			for i := range ss {
				ss[i] = str()
			}
			return attribute.StringSliceValue(ss)
		case 7:
			return attribute.ByteSliceValue([]byte(str()))
		case 8:
			if depth < 2 {
				vs := make([]attribute.Value, r.IntN(4))
				for i := range vs {
					vs[i] = value(depth + 1)
				}
				return attribute.SliceValue(vs...)
			}
		case 9:
			if depth < 2 {
				kvs := make([]attribute.KeyValue, r.IntN(4))
				for i := range kvs {
					kvs[i] = attribute.KeyValue{Key: attribute.Key(fmt.Sprint("k", i)), Value: value(depth + 1)}
				}
				return attribute.MapValue(kvs...)
			}
		case 10:
			return attribute.Value{}
		}
		return attribute.StringValue(str())
	}
	attrs := func(n int) []attribute.KeyValue {
		kvs := make([]attribute.KeyValue, r.IntN(n))
		for i := range kvs {
			kvs[i] = attribute.KeyValue{Key: attribute.Key(str()), Value: value(0)}
		}
		return kvs
	}
	resources := []*resource.Resource{nil, resource.NewSchemaless(attrs(4)...), resource.NewWithAttributes("s", attrs(4)...)}
	scopes := []instrumentation.Scope{{}, {Name: str()}, {Name: "n", Version: str(), SchemaURL: str(), Attributes: attribute.NewSet(attrs(4)...)}}
	for range 100 {
		stubs := make(tracetest.SpanStubs, 1+r.IntN(6))
		for i := range stubs {
			s := &stubs[i]
			s.Name = str()
			s.SpanContext = trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID(byte(r.Uint32())), SpanID: spanID(byte(r.Uint32())), TraceFlags: trace.TraceFlags(r.Uint32())})
			s.StartTime = time.Unix(0, r.Int64N(1<<62))
			s.Attributes = attrs(12)
			for range r.IntN(3) {
				s.Events = append(s.Events, sdktrace.Event{Name: str(), Attributes: attrs(4)})
			}
			s.Status = sdktrace.Status{Code: codes.Code(r.IntN(3)), Description: str()}
			s.Resource = resources[r.IntN(len(resources))]
			s.InstrumentationScope = scopes[r.IntN(len(scopes))]
		}
		compareWithOfficial(t, o, stubs.Snapshots())
		if t.Failed() {
			break
		}
	}
}

// TestTraceRequestEmpty: no spans (or only nil ones) are an empty request, no bytes; the
// official exporter sends nothing then, since its transform gives no resource spans.
func TestTraceRequestEmpty(t *testing.T) {
	for _, spans := range [][]sdktrace.ReadOnlySpan{nil, {}, {nil, nil}} {
		if b := appendTraceRequest(nil, spans); len(b) != 0 {
			t.Errorf("appendTraceRequest(nil, %v) = %x, want nothing", spans, b)
		}
		if b := appendTraceRequest([]byte("prefix"), spans); string(b) != "prefix" {
			t.Errorf("appendTraceRequest(prefix, %v) = %q, want prefix", spans, b)
		}
	}
	o := newOfficialEncoder(t)
	if bodies := o.encode(t, []sdktrace.ReadOnlySpan{nil}); len(bodies) != 0 {
		t.Errorf("the official exporter sent %d requests for no spans", len(bodies))
	}
}

// TestAppendTraceRequestAppends: what is already in dst stays, and the encoding after it
// is the same as on its own.
func TestAppendTraceRequestAppends(t *testing.T) {
	spans := everyField().Snapshots()
	alone := appendTraceRequest(nil, spans)
	prefix := []byte("already there")
	got := appendTraceRequest(slices.Clip(prefix), spans)
	if !bytes.HasPrefix(got, prefix) || !bytes.Equal(got[len(prefix):], alone) {
		t.Error("appendTraceRequest(prefix, spans) is not prefix + appendTraceRequest(nil, spans)")
	}
}

// TestAppendLengthPrefix checks pbOpen/pbClose at the lengths where the varint length
// grows a byte.
func TestAppendLengthPrefix(t *testing.T) {
	for _, n := range []int{0, 1, 127, 128, 129, 16383, 16384, 16385, 1<<21 - 1, 1 << 21} {
		body := bytes.Repeat([]byte{0xab}, n)
		b, m := pbOpen([]byte("x"), 5)
		b = pbClose(append(b, body...), m)
		if b[0] != 'x' {
			t.Fatalf("n=%d: prefix overwritten", n)
		}
		num, typ, tagLen := protowire.ConsumeTag(b[1:])
		got, valLen := protowire.ConsumeBytes(b[1+tagLen:])
		if num != 5 || typ != protowire.BytesType || valLen < 0 || 1+tagLen+valLen != len(b) || !bytes.Equal(got, body) {
			t.Errorf("n=%d: field %d type %d, %d of %d bytes, body intact %v", n, num, typ, 1+tagLen+valLen, len(b), bytes.Equal(got, body))
		}
	}
}

// typicalBatch is a batch of 64 spans like toolsd's: one resource, one scope, 5 to 20
// string attributes each, a parent for most.
func typicalBatch() []sdktrace.ReadOnlySpan {
	res := resource.NewSchemaless(attribute.String("service.name", "toolsd"), attribute.String("service.version", "1.0.0"),
		attribute.String("host.name", "workstation"), attribute.Int("process.pid", 4242))
	scope := instrumentation.Scope{Name: "github.com/toolsd/toolsd/audit", Version: "1.0.0"}
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	stubs := make(tracetest.SpanStubs, 64)
	for i := range stubs {
		attrs := make([]attribute.KeyValue, 5+i%16)
		for j := range attrs {
			attrs[j] = attribute.String(fmt.Sprintf("toolsd.attr%d", j), strings.Repeat("v", 8+(i*j)%40))
		}
		var parent trace.SpanContext
		if i%4 != 0 {
			parent = trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID(byte(i / 4)), SpanID: spanID(byte(i &^ 3))})
		}
		stubs[i] = tracetest.SpanStub{
			Name:        "toolsd.call",
			SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID(byte(i / 4)), SpanID: spanID(byte(i)), TraceFlags: trace.FlagsSampled}),
			Parent:      parent, SpanKind: trace.SpanKindInternal,
			StartTime: start.Add(time.Duration(i) * time.Millisecond), EndTime: start.Add(time.Duration(i+3) * time.Millisecond),
			Attributes: attrs, Status: sdktrace.Status{Code: codes.Ok},
			Resource: res, InstrumentationScope: scope,
		}
	}
	return stubs.Snapshots()
}

func TestTraceRequestTypicalBatch(t *testing.T) {
	compareWithOfficial(t, newOfficialEncoder(t), typicalBatch())
}

func BenchmarkAppendTraceRequest(b *testing.B) {
	spans := typicalBatch()
	buf := appendTraceRequest(nil, spans)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf = appendTraceRequest(buf[:0], spans)
	}
}

// BenchmarkAppendTraceRequestFresh is the same into a nil buffer, growing it as it goes.
func BenchmarkAppendTraceRequestFresh(b *testing.B) {
	spans := typicalBatch()
	b.ReportAllocs()
	for b.Loop() {
		_ = appendTraceRequest(nil, spans)
	}
}
