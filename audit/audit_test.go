package audit

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/toolsd/toolsd/internal/otlptest"
	"github.com/toolsd/toolsd/protocol"
)

func TestMain(m *testing.M) {
	otlptest.MaybeRun()
	goleak.VerifyTestMain(m)
}

func clearEnv(t *testing.T) {
	for _, k := range []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
		"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
		"OTEL_EXPORTER_OTLP_COMPRESSION", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
		"OTEL_EXPORTER_OTLP_INSECURE", "OTEL_EXPORTER_OTLP_TRACES_INSECURE", "OTEL_EXPORTER_OTLP_CERTIFICATE", "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE",
		"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", "OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE", "OTEL_EXPORTER_OTLP_CLIENT_KEY", "OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY", "OTEL_BSP_MAX_QUEUE_SIZE",
		"OTEL_BSP_SCHEDULE_DELAY", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES"} {
		t.Setenv(k, "")
	}
}

func TestOffUnlessTurnedOn(t *testing.T) {
	clearEnv(t)
	e, err := New(context.Background(), Options{})
	if e != nil || err != nil {
		t.Fatalf("without the environment: %v, %v", e, err)
	}
	// A nil exporter is safe to use.
	c := e.StartCall(CallInfo{CallID: "c"}, time.Now())
	c.Decision(protocol.Decision{})
	c.End("read", "completed", "", time.Now())
	if e.Status() != (Status{}) || e.Close(context.Background()) != nil {
		t.Error("a nil exporter did something")
	}
	t.Setenv("OTEL_TRACES_EXPORTER", "zipkin")
	if _, err := New(context.Background(), Options{}); err == nil {
		t.Error("an exporter toolsd does not have: no error")
	}
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
	if _, err := New(context.Background(), Options{}); err == nil {
		t.Error("http/json: no error")
	}
	t.Setenv("OTEL_SDK_DISABLED", "true")
	if e, err := New(context.Background(), Options{}); e != nil || err != nil {
		t.Errorf("OTEL_SDK_DISABLED: %v %v", e, err)
	}
}

var decision = protocol.Decision{
	Permission: "bash", Patterns: []string{"git push --force"}, Action: "deny", By: "rule", At: time.Now(),
	Provenance: &protocol.Provenance{Kind: "rule", Text: `rule bash "git push --force*": deny (managed policy /etc/toolsd/config.json:3:14)`,
		Rule: `bash "git push --force*": deny`, Layer: "managed", File: "/etc/toolsd/config.json", Line: 3, Column: 14, Pattern: "git push --force"},
}

// TestExport: over both protocols, the environment alone turns export on, and the spans
// arrive with the decision's provenance, the headers, and the service's name.
func TestExport(t *testing.T) {
	r := otlptest.Start(t)
	for _, tc := range []struct{ proto, endpoint, compression string }{
		{"grpc", "http://" + r.GRPC, ""}, {"http/protobuf", "http://" + r.HTTP, ""},
		{"grpc", "http://" + r.GRPC, "gzip"}, {"http/protobuf", "http://" + r.HTTP, "gzip"},
	} {
		t.Run(tc.proto+"/"+tc.compression, func(t *testing.T) {
			clearEnv(t)
			t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", tc.endpoint)
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", tc.proto)
			t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20t0ken")
			t.Setenv("OTEL_EXPORTER_OTLP_COMPRESSION", tc.compression)
			t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=ci")
			e, err := New(context.Background(), Options{Version: "1.2.3", Workspace: "/ws"})
			if err != nil || e == nil {
				t.Fatalf("New: %v %v", e, err)
			}
			id := "call-" + tc.proto + tc.compression
			at := time.Now()
			c := e.StartCall(CallInfo{SessionID: "s", MessageID: "m", CallID: id, Tool: "bash", Agent: "build"}, at)
			c.Decision(decision)
			c.End("bash", "error", "permission denied", at.Add(time.Millisecond))
			if err := e.Close(context.Background()); err != nil { // flushes
				t.Fatal(err)
			}
			via := map[string]string{"grpc": "grpc", "http/protobuf": "http"}[tc.proto]
			spans := r.Wait(t, 20*time.Second, "the call's three spans via "+via, func(ss []otlptest.Span) bool {
				n := 0
				for _, s := range ss {
					if s.Attrs[AttrCall] == id || s.Attrs[AttrPermission] != nil && s.Via == via && s.Headers["encoding"] == tc.compression {
						n++
					}
				}
				return n >= 3
			})
			var call, start, perm *otlptest.Span
			for i, s := range spans {
				if s.Via != via || s.Headers["encoding"] != tc.compression {
					continue
				}
				switch {
				case s.Name == "toolsd.call" && s.Attrs[AttrCall] == id:
					call = &spans[i]
				case s.Name == "toolsd.call.start" && s.Attrs[AttrCall] == id:
					start = &spans[i]
				case s.Name == "toolsd.permission":
					perm = &spans[i]
				}
			}
			if call == nil || start == nil || perm == nil {
				t.Fatalf("spans: %+v", spans)
			}
			if perm.ParentID != call.SpanID || start.ParentID != call.SpanID || perm.TraceID != call.TraceID {
				t.Errorf("the decision is not in the call's trace: %+v %+v", call, perm)
			}
			want := map[string]any{AttrPermission: "bash", AttrDecision: "deny", AttrDecidedBy: "rule", AttrKind: "rule",
				AttrRule: `bash "git push --force*": deny`, AttrLayer: "managed", AttrFile: "/etc/toolsd/config.json", AttrLine: float64(3), AttrColumn: float64(14)}
			for k, v := range want {
				if perm.Attrs[k] != v {
					t.Errorf("%s = %v, want %v", k, perm.Attrs[k], v)
				}
			}
			if call.Attrs[AttrStatus] != "error" || call.Attrs[AttrAgent] != "build" || call.Attrs[AttrWorkspace] != "/ws" {
				t.Errorf("call span: %+v", call.Attrs)
			}
			if call.Resource["service.name"] != "toolsd" || call.Resource["service.version"] != "1.2.3" || call.Resource["deployment.environment"] != "ci" {
				t.Errorf("resource: %+v", call.Resource)
			}
			if perm.Headers["authorization"] != "Bearer t0ken" {
				t.Errorf("headers: %+v", perm.Headers)
			}
			if s := e.Status(); s.Exported < 3 || s.Dropped != 0 {
				t.Errorf("status %+v", s)
			}
		})
	}
}

// TestSettingTurnsItOn: the setting's endpoint turns export on without the environment.
func TestSettingTurnsItOn(t *testing.T) {
	clearEnv(t)
	r := otlptest.Start(t)
	e, err := New(context.Background(), Options{Endpoint: "http://" + r.HTTP, Protocol: "http/protobuf"})
	if err != nil || e == nil {
		t.Fatalf("New: %v %v", e, err)
	}
	e.StartCall(CallInfo{CallID: "x"}, time.Now()).End("read", "completed", "", time.Now())
	_ = e.Close(context.Background())
	r.Wait(t, 20*time.Second, "the call span", func(ss []otlptest.Span) bool { return len(ss) >= 2 })
}

// TestCollectorDown: with the collector gone, recording never waits; what cannot be kept is
// dropped and counted, and Close returns within its deadline.
func TestCollectorDown(t *testing.T) {
	clearEnv(t)
	r := otlptest.Start(t)
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+r.GRPC)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	t.Setenv("OTEL_BSP_MAX_QUEUE_SIZE", "16")
	e, err := New(context.Background(), Options{})
	if err != nil || e == nil {
		t.Fatal(err)
	}
	r.Stop()
	for range 200 { // three spans each
		c := e.StartCall(CallInfo{CallID: "c"}, time.Now())
		c.Decision(decision)
		c.End("bash", "completed", "", time.Now())
	}
	s := e.Status()
	if s.Dropped == 0 || s.Lost() == "" {
		t.Errorf("nothing counted as dropped: %+v", s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = e.Close(ctx)
	if s := e.Status(); s.Dropped+s.Failed+s.Exported != 600 {
		t.Errorf("600 spans made, %+v accounted for", s)
	}
}
