//go:build unix

package main_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolsd/toolsd/internal/otlptest"
	"github.com/toolsd/toolsd/protocol"
)

func otelEnv(endpoint, proto string, more ...string) []string {
	return append([]string{"OTEL_TRACES_EXPORTER=otlp", "OTEL_EXPORTER_OTLP_ENDPOINT=" + endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL=" + proto,
		"OTEL_SERVICE_NAME=toolsd-e2e"}, more...)
}

// TestAuditExport: the standard environment alone turns the audit trail on; a real
// receiver process gets every call's start and end and every decision with its provenance,
// flushed when the daemon shuts down.
func TestAuditExport(t *testing.T) {
	r := otlptest.Start(t)
	// Nothing is sent on a timer within the test: only the shutdown's flush can deliver.
	e := newEnv(t, envOpts{
		env:     otelEnv("http://"+r.GRPC, "grpc", "OTEL_BSP_SCHEDULE_DELAY=600000"),
		options: map[string]any{"permission": map[string]any{"bash": map[string]any{"echo *": "allow", "rm *": "deny"}}, "sandbox": map[string]any{"autoAllow": false}},
	})
	if res, err := e.execute(protocol.ExecuteParams{CallID: "ok", Tool: "bash", Args: args("command", "echo audited")}); err != nil || res.Status != "completed" {
		t.Fatalf("%+v %v", res, err)
	}
	if res, err := e.execute(protocol.ExecuteParams{CallID: "no", Tool: "bash", Args: args("command", "rm -rf build")}); err != nil || res.Status != "error" {
		t.Fatalf("%+v %v", res, err)
	}
	mark := e.d.Mark()
	_, wait := e.start(protocol.ExecuteParams{CallID: "asked", Tool: "bash", Args: args("command", "ls")})
	ask := e.waitAsk(mark, "asked")
	if err := e.d.Call(e.ctx, "permission/reply", protocol.ReplyParams{ID: ask.ID, Reply: "once"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := wait(); err != nil {
		t.Fatal(err)
	}
	if n := len(r.Spans()); n != 0 {
		t.Fatalf("%d spans before the flush (the batch delay is 10 minutes)", n)
	}
	if code, err := e.d.Shutdown(e.ctx); err != nil || code != 0 {
		t.Fatalf("shutdown: %d %v", code, err)
	}
	spans := r.Wait(t, 30*time.Second, "3 calls and 3 decisions", func(ss []otlptest.Span) bool {
		calls, perms := 0, 0
		for _, s := range ss {
			switch s.Name {
			case "toolsd.call":
				calls++
			case "toolsd.permission":
				perms++
			}
		}
		return calls >= 3 && perms >= 3
	})
	byCall := map[string]otlptest.Span{}
	starts := 0
	for _, s := range spans {
		switch s.Name {
		case "toolsd.call":
			byCall[s.Attrs["toolsd.call.id"].(string)] = s
		case "toolsd.call.start":
			starts++
		}
	}
	if starts != 3 {
		t.Errorf("%d call starts, want 3", starts)
	}
	perm := func(call string) map[string]any {
		for _, s := range spans {
			if s.Name == "toolsd.permission" && s.ParentID == byCall[call].SpanID {
				return s.Attrs
			}
		}
		t.Fatalf("no decision of %s in %+v", call, spans)
		return nil
	}
	if a := perm("no"); a["toolsd.decision"] != "deny" || a["toolsd.rule"] != `bash "rm *": deny` || a["toolsd.rule.layer"] != "editor" ||
		a["toolsd.rule.file"] != "initializationOptions" || a["toolsd.rule.line"] != float64(1) || a["toolsd.provenance.kind"] != "rule" {
		t.Errorf("deny: %+v", a)
	}
	if a := perm("ok"); a["toolsd.decision"] != "allow" || a["toolsd.rule"] != `bash "echo *": allow` {
		t.Errorf("allow: %+v", a)
	}
	if a := perm("asked"); a["toolsd.decided_by"] != "person" || a["toolsd.answer"] != "once" || a["toolsd.provenance.kind"] != "default" || a["toolsd.ask.waited_ms"] == nil {
		t.Errorf("asked: %+v", a)
	}
	if c := byCall["no"]; c.Attrs["toolsd.call.status"] != "error" || c.Resource["service.name"] != "toolsd-e2e" {
		t.Errorf("call span: %+v", c)
	}
}

// TestAuditCollectorDown: with the collector gone, calls go on; the spans that cannot be
// kept are dropped, counted, and shown in tools/resolve's diagnostics; shutdown is prompt.
func TestAuditCollectorDown(t *testing.T) {
	r := otlptest.Start(t)
	e := newEnv(t, envOpts{
		env:     otelEnv("http://"+r.HTTP, "http/protobuf", "OTEL_BSP_SCHEDULE_DELAY=20", "OTEL_BSP_MAX_QUEUE_SIZE=16"),
		options: map[string]any{"permission": map[string]any{"bash": map[string]any{"echo *": "allow"}}},
	})
	if _, err := e.execute(protocol.ExecuteParams{CallID: "up", Tool: "bash", Args: args("command", "echo up")}); err != nil {
		t.Fatal(err)
	}
	r.Wait(t, 30*time.Second, "the first call over http", func(ss []otlptest.Span) bool {
		for _, s := range ss {
			if s.Name == "toolsd.call" && s.Via == "http" {
				return true
			}
		}
		return false
	})
	r.Stop()
	for i := range 40 {
		res, err := e.execute(protocol.ExecuteParams{CallID: "down" + strconv.Itoa(i), Tool: "bash", Args: args("command", "echo "+strconv.Itoa(i))})
		if err != nil || res.Status != "completed" {
			t.Fatalf("call %d with the collector down: %+v %v", i, res, err)
		}
	}
	var rr protocol.ResolveResult
	if err := e.d.Call(e.ctx, "tools/resolve", protocol.ResolveParams{SessionID: "s1"}, &rr); err != nil {
		t.Fatal(err)
	}
	found := ""
	for _, d := range rr.Diagnostics {
		if d.Path == "audit" && strings.Contains(d.Message, "spans dropped because the queue was full") {
			found = d.Message
		}
	}
	if found == "" {
		t.Fatalf("no diagnostic counts the dropped spans: %+v", rr.Diagnostics)
	}
	t.Log(found)
	start := time.Now()
	if code, err := e.d.Shutdown(e.ctx); err != nil || code != 0 {
		t.Fatalf("shutdown: %d %v", code, err)
	}
	t.Logf("shutdown with the collector down took %v", time.Since(start))
}
