package audit

import (
	"context"
	"fmt"
	"io"
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
	"google.golang.org/protobuf/proto"

	"github.com/toolsd/toolsd/protocol"
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

// sdkAttrs are attrs as the SDK's attributes.
func sdkAttrs(attrs []attr) []attribute.KeyValue {
	out := make([]attribute.KeyValue, len(attrs))
	for i, a := range attrs {
		switch a.kind {
		case attrString:
			out[i] = attribute.String(a.key, a.s)
		case attrInt:
			out[i] = attribute.Int64(a.key, a.n)
		case attrStrings:
			out[i] = attribute.StringSlice(a.key, a.ss)
		}
	}
	return out
}

// sdkSpans are spans as OpenTelemetry's SDK makes them with the options audit used before
// it had spans of its own (TestSDKSpansAreInternalSampledLocal checks what that gives): kind
// internal, sampled, a local parent, the status Error with its description for a failed
// span, the resource res without a schema URL, the scope named scopeName.
func sdkSpans(res []attr, spans []*span) []sdktrace.ReadOnlySpan {
	r := resource.NewSchemaless(sdkAttrs(res)...)
	stubs := make(tracetest.SpanStubs, len(spans))
	for i, s := range spans {
		sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: s.trace, SpanID: s.id, TraceFlags: trace.FlagsSampled})
		var parent trace.SpanContext
		if s.parent != ([8]byte{}) {
			parent = trace.NewSpanContext(trace.SpanContextConfig{TraceID: s.trace, SpanID: s.parent, TraceFlags: trace.FlagsSampled})
		}
		st := sdktrace.Status{Code: codes.Unset}
		if s.failed {
			st = sdktrace.Status{Code: codes.Error, Description: s.errText}
		}
		stubs[i] = tracetest.SpanStub{Name: s.name, SpanContext: sc, Parent: parent, SpanKind: trace.SpanKindInternal,
			StartTime: s.start, EndTime: s.end, Attributes: sdkAttrs(s.attrs), Status: st,
			Resource: r, InstrumentationScope: instrumentation.Scope{Name: scopeName}}
	}
	return stubs.Snapshots()
}

// compareWithOfficial encodes spans both ways and fails unless they decode to the same
// request.
func compareWithOfficial(t *testing.T, o *officialEncoder, res []attr, spans []*span) {
	t.Helper()
	ours, err := traceRequest(res, spans)
	if err != nil {
		t.Fatal(err)
	}
	bodies := o.encode(t, sdkSpans(res, spans))
	if len(bodies) != 1 {
		t.Fatalf("the official exporter sent %d requests, want 1", len(bodies))
	}
	want, got := normalised(t, bodies[0]), normalised(t, ours)
	if !proto.Equal(want, got) {
		w, g := fmt.Sprint(want), fmt.Sprint(got)
		i := 0
		for i < min(len(w), len(g)) && w[i] == g[i] {
			i++
		}
		t.Errorf("our request differs from the official one from byte %d of its text:\nofficial: …%.300s\nours:     …%.300s", i, w[i:], g[i:])
	}
}

// recorded returns the spans an Exporter that is not running has queued.
func recorded(e *Exporter) []*span {
	var out []*span
	for {
		select {
		case s := <-e.queue:
			out = append(out, s)
		default:
			return out
		}
	}
}

// quietExporter queues spans and never sends them.
func quietExporter(version string, env map[string]string) *Exporter {
	return &Exporter{workspace: "/home/ann/shop", resource: resourceAttrs(version, func(k string) string { return env[k] }),
		queue: make(chan *span, 1024)}
}

// TestTraceRequestIsOfficial: the spans of calls, made by the Exporter's own API (a call that
// ends well, one that fails, decisions with every piece of provenance and with none, asks),
// encode to the request the official exporter sends for the same spans made by the SDK.
func TestTraceRequestIsOfficial(t *testing.T) {
	e := quietExporter("1.2.3", map[string]string{"OTEL_RESOURCE_ATTRIBUTES": "team=pay%20ments, deployment.environment=ci,broken", "OTEL_SERVICE_NAME": "toolsd-ci"})
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	asked := at.Add(time.Second)
	remembered := at.Add(-time.Hour)
	c := e.StartCall(CallInfo{SessionID: "s1", MessageID: "m1", CallID: "call_1", Tool: "bash", Agent: "build"}, at)
	c.Decision(protocol.Decision{Permission: "bash", Patterns: []string{"git push --force", "rm -rf build"}, Action: "deny", By: "rule", At: at,
		Provenance: &protocol.Provenance{Kind: "rule", Text: "rule …", Rule: `bash "git push --force*": deny`, Layer: "managed",
			File: "/etc/toolsd/config.json", Line: 3, Column: 14, RememberedAt: &remembered, RememberedBy: "editor",
			Hook: "pre", Reason: "why", Reasons: []string{"a", "b"}, Untrusted: "project rule"}})
	c.Decision(protocol.Decision{Permission: "edit", Action: "allow", By: "person", At: asked.Add(2 * time.Second), AskedAt: &asked, WaitedMs: 2000,
		Reply: "always", Scope: "session", AnsweredBy: "Visual Studio Code", Message: ""})
	c.Decision(protocol.Decision{Permission: "read", Action: "allow", By: "rule", At: at}) // no provenance, no patterns
	c.End("bash", protocol.StatusError, "exit status 1: permission denied", at.Add(5*time.Second))
	ok := e.StartCall(CallInfo{SessionID: "s1", MessageID: "m2", CallID: "call_2", Tool: "read"}, at)
	ok.End("read", protocol.StatusCompleted, "", at.Add(time.Millisecond))
	spans := recorded(e)
	if len(spans) != 7 {
		t.Fatalf("%d spans, want 7", len(spans))
	}
	o := newOfficialEncoder(t)
	compareWithOfficial(t, o, e.resource, spans)
	for _, s := range spans {
		compareWithOfficial(t, o, e.resource, []*span{s})
	}
}

// TestTraceRequestIsOfficialRandom compares random batches: strings of lengths around the
// bounds of one-, two- and three-byte varints, so that messages of every level cross them.
func TestTraceRequestIsOfficialRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	text := func() string {
		n := []int{0, 1, 100, 127, 128, 200, 16000, 16383, 16384, 17000}[r.IntN(10)]
		return strings.Repeat(string(rune('a'+r.IntN(26))), n)
	}
	key := func() string { return "k" + text() } // the SDK leaves out an attribute without a key
	o := newOfficialEncoder(t)
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for range 100 {
		var spans []*span
		for range 1 + r.IntN(6) {
			s := &span{name: text(), trace: newTraceID(), id: newSpanID(), start: at, end: at.Add(time.Duration(r.IntN(1e9)))}
			if r.IntN(2) == 0 {
				s.parent = newSpanID()
			}
			if r.IntN(3) == 0 {
				s.failed, s.errText = true, text()
			}
			for range r.IntN(8) {
				switch r.IntN(3) {
				case 0:
					s.attrs = append(s.attrs, str(key(), text()))
				case 1:
					s.attrs = append(s.attrs, num(key(), r.Int64()-r.Int64()))
				default:
					var ss []string
					for range r.IntN(4) {
						ss = append(ss, text())
					}
					s.attrs = append(s.attrs, strs(key(), ss))
				}
			}
			spans = append(spans, s)
		}
		// A resource is a set: sorted by key, one value per key, as resourceAttrs makes it.
		res := []attr{str("service.name", text()), str(key(), text()), str(key(), text())}
		slices.SortStableFunc(res, func(a, b attr) int { return strings.Compare(a.key, b.key) })
		res = slices.CompactFunc(res, func(a, b attr) bool { return a.key == b.key })
		compareWithOfficial(t, o, res, spans)
	}
}

// TestSDKSpansAreInternalSampledLocal checks what sdkSpans assumes of the spans the SDK made
// for audit: kind internal, sampled, the parent local.
func TestSDKSpansAreInternalSampledLocal(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	defer tp.Shutdown(context.Background())
	tr := tp.Tracer(scopeName)
	ctx, parent := tr.Start(context.Background(), "toolsd.call")
	_, child := tr.Start(ctx, "toolsd.permission")
	child.End()
	parent.SetStatus(codes.Error, "failed")
	parent.End()
	for _, s := range rec.Ended() {
		if s.SpanKind() != trace.SpanKindInternal || !s.SpanContext().IsSampled() || s.Parent().IsRemote() ||
			s.InstrumentationScope() != (instrumentation.Scope{Name: scopeName}) {
			t.Errorf("%s: kind %v, sampled %v, remote parent %v, scope %+v", s.Name(), s.SpanKind(), s.SpanContext().IsSampled(), s.Parent().IsRemote(), s.InstrumentationScope())
		}
	}
}

// TestTraceRequestEmpty: no spans are an empty request, no bytes; the official exporter
// sends nothing then.
func TestTraceRequestEmpty(t *testing.T) {
	if b, err := traceRequest(nil, nil); len(b) != 0 || err != nil {
		t.Errorf("traceRequest(nil, nil) = %q, %v; want nothing", b, err)
	}
	o := newOfficialEncoder(t)
	if bodies := o.encode(t, nil); len(bodies) != 0 {
		t.Errorf("the official exporter sent %d requests for no spans", len(bodies))
	}
}

// TestTraceRequestNotUTF8: a string that is not UTF-8 (a tool's error, say) is sent with
// U+FFFD in place of its bad bytes, not refused with the whole batch.
func TestTraceRequestNotUTF8(t *testing.T) {
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	s := &span{name: "toolsd.call", trace: newTraceID(), id: newSpanID(), start: at, end: at, failed: true, errText: "bad \xff byte",
		attrs: []attr{str("toolsd.tool", "x\xfe"), strs("toolsd.patterns", []string{"\xc3"})}}
	msg, err := traceRequest([]attr{str("service.name", "toolsd")}, []*span{s})
	if err != nil {
		t.Fatal(err)
	}
	req := normalised(t, msg)
	got := req.ResourceSpans[0].ScopeSpans[0].Spans[0]
	if got.Status.Message != "bad \uFFFD byte" || got.Attributes[0].Value.GetStringValue() != "x\uFFFD" ||
		got.Attributes[1].Value.GetArrayValue().Values[0].GetStringValue() != "\uFFFD" {
		t.Errorf("sent %v", got)
	}
}

// typicalBatch is a batch of 64 spans like toolsd's: a call, its start and two decisions
// per call.
func typicalBatch() ([]attr, []*span) {
	e := quietExporter("1.0.0", nil)
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := range 16 {
		c := e.StartCall(CallInfo{SessionID: "ses_1", MessageID: fmt.Sprintf("msg_%d", i), CallID: fmt.Sprintf("call_%d", i), Tool: "bash", Agent: "build"}, at)
		d := protocol.Decision{Permission: "bash", Patterns: []string{"go test ./..."}, Action: "allow", By: "rule", At: at,
			Provenance: &protocol.Provenance{Kind: "rule", Rule: `bash "go test *": allow`, Layer: "user", File: "/home/ann/.config/toolsd/config.json", Line: 4, Column: 7}}
		c.Decision(d)
		c.Decision(d)
		c.End("bash", protocol.StatusCompleted, "", at.Add(time.Second))
	}
	return e.resource, recorded(e)
}

func TestTraceRequestTypicalBatch(t *testing.T) {
	res, spans := typicalBatch()
	if len(spans) != 64 {
		t.Fatalf("%d spans", len(spans))
	}
	compareWithOfficial(t, newOfficialEncoder(t), res, spans)
}

func BenchmarkTraceRequest(b *testing.B) {
	res, spans := typicalBatch()
	buf, _ := traceRequest(res, spans)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := traceRequest(res, spans); err != nil {
			b.Fatal(err)
		}
	}
}
