package session

import (
	"context"
	"testing"
	"time"

	"github.com/toolsd/toolsd/audit"
	"github.com/toolsd/toolsd/internal/otlptest"
	"github.com/toolsd/toolsd/permission"
	"github.com/toolsd/toolsd/protocol"
	"github.com/toolsd/toolsd/registry"
)

// BenchmarkDecision measures one permission decision as the pipeline makes it — the
// engine's Decide, the provenance, the record entry — with the audit export off and on
// (to a real receiver process on loopback), beside Decide alone. The ratio on/off is the
// cost of export; provenance/decide the cost of saying why.
//
//	go test ./session -run '^$' -bench Decision -benchmem
func BenchmarkDecision(b *testing.B) {
	e, err := permission.NewEngine(nil)
	if err != nil {
		b.Fatal(err)
	}
	rs, err := permission.ParseConfig([]byte(`{"bash": {"*": "ask", "git *": "allow", "git push *": "ask", "rm *": "deny", "go test *": "allow"}}`), permission.LayerUser)
	if err != nil {
		b.Fatal(err)
	}
	_ = e.SetLayer(permission.LayerUser, rs)
	req := registry.AskRequest{Permission: "bash", Patterns: []string{"git status --short", "go test ./..."}}
	q := permission.Query{SessionID: "s", Permission: req.Permission, Patterns: req.Patterns}
	b.Run("decide-only", func(b *testing.B) {
		for b.Loop() {
			if e.Decide(q).Action != permission.Allow {
				b.Fatal("not allowed")
			}
		}
	})
	run := func(b *testing.B, exp *audit.Exporter) {
		br := &broker{policy: e, now: time.Now, pending: map[string]*pendingAsk{}}
		c := &callState{sessionID: "s", callID: "c", tool: "bash", permKey: "bash"}
		c.trace = exp.StartCall(audit.CallInfo{SessionID: "s", CallID: "c", Tool: "bash"}, time.Now())
		ctx := context.Background()
		for b.Loop() {
			d, err := br.ask(ctx, c, req)
			if err != nil || d.Provenance == nil {
				b.Fatal(err)
			}
			c.addDecision(d)
			c.decisions = c.decisions[:0]
		}
		c.trace.End("bash", protocol.StatusCompleted, "", time.Now())
	}
	b.Run("provenance-export-off", func(b *testing.B) { run(b, nil) })
	b.Run("provenance-export-on", func(b *testing.B) {
		r := otlptest.StartQuiet(b)
		b.Setenv("OTEL_TRACES_EXPORTER", "otlp")
		b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+r.GRPC)
		b.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
		exp, err := audit.New(context.Background(), audit.Options{})
		if err != nil || exp == nil {
			b.Fatal(err)
		}
		run(b, exp)
		b.StopTimer()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = exp.Close(ctx)
		s := exp.Status()
		b.ReportMetric(float64(s.Dropped), "dropped")
	})
}
