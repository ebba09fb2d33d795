// Package hooks measures what hooks cost per call, side by side in one run: a read with no
// hooks, with a before hook that is not matched, and with one command hook matched (a no-op
// program confined as in the daemon, the same with the hook's sandbox turned off, and a
// Python script as people write them), each through the guard:
//
//	go test -run '^$' -bench . -benchtime 200x ./bench/hooks
package hooks

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/toolsd/toolsd/internal/proc"
	"github.com/toolsd/toolsd/protocol"
	"github.com/toolsd/toolsd/session"
)

// The test binary is the guard and the sandbox's stage, as the toolsd binary is.
func TestMain(m *testing.M) {
	proc.MaybeRunHelper()
	os.Exit(m.Run())
}

type nopSink struct{}

func (nopSink) Progress(protocol.ProgressParams) {}
func (nopSink) Asked(protocol.AskedParams)       {}
func (nopSink) Answered(protocol.AnsweredParams) {}
func (nopSink) Changed(protocol.ChangedParams)   {}
func (nopSink) Clients(protocol.ClientsParams)   {}

type setting struct {
	name  string
	hooks any
	c     *session.Client
	times []time.Duration
}

// BenchmarkHookOverhead runs one read per setting per iteration, interleaved, and reports
// each setting's p50 and its ratio to the read without hooks.
func BenchmarkHookOverhead(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	proc.SetGuardPath(exe)
	defer proc.SetGuardPath("")
	pyHook := filepath.Join(b.TempDir(), "noop.py")
	if err := os.WriteFile(pyHook, []byte("import json, sys\njson.load(sys.stdin)\nsys.exit(0)\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	truePath := "/bin/true"
	settings := []*setting{
		{name: "none"},
		{name: "none-again"}, // the same as none: how far two identical settings differ here
		{name: "unmatched", hooks: map[string]any{"before": []any{map[string]any{"match": "webfetch", "command": []string{truePath}}}}},
		{name: "command", hooks: map[string]any{"before": []any{map[string]any{"match": "read", "command": []string{truePath}}}}},
		{name: "unconfined", hooks: map[string]any{"before": []any{map[string]any{"match": "read", "command": []string{truePath}, "sandbox": map[string]any{"enabled": false}}}}},
		{name: "python", hooks: map[string]any{"before": []any{map[string]any{"match": "read", "command": []string{"python3", pyHook}}}}},
	}
	for _, s := range settings {
		ws := b.TempDir()
		if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("hello\n"), 0o644); err != nil {
			b.Fatal(err)
		}
		opts := map[string]any{}
		if s.hooks != nil {
			opts["hooks"] = s.hooks
		}
		raw, _ := json.Marshal(opts)
		c, err := session.Open(context.Background(), session.WorkspaceOptions{Folder: ws, StorePath: filepath.Join(b.TempDir(), "store.db"), InitOptions: raw, NoCheckpoints: true},
			session.ClientOptions{Name: "bench", Sink: nopSink{}})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		s.c = c
	}
	ctx := context.Background()
	n := 0
	call := func(s *setting) {
		n++
		p := protocol.ExecuteParams{SessionID: "bench", MessageID: "m", CallID: fmt.Sprintf("c%d", n), Tool: "read",
			Args: json.RawMessage(fmt.Sprintf(`{"filePath":"a.txt","limit":%d}`, 1000+n))}
		start := time.Now()
		res, err := s.c.Execute(ctx, p)
		d := time.Since(start)
		if err != nil || res.Status != "completed" {
			b.Fatalf("%s: %v %+v", s.name, err, res)
		}
		s.times = append(s.times, d)
	}
	for _, s := range settings { // warm up: the first call of each opens its workspace's caches
		call(s)
		s.times = nil
	}
	round := 0
	for b.Loop() {
		// The settings take turns at going first, so that none gains from the order.
		for i := range settings {
			call(settings[(i+round)%len(settings)])
		}
		round++
	}
	p50 := func(s *setting) float64 {
		t := slices.Clone(s.times)
		slices.Sort(t)
		return float64(t[len(t)/2].Nanoseconds()) / 1e3
	}
	base := p50(settings[0])
	for _, s := range settings {
		b.ReportMetric(p50(s), s.name+"-p50-µs")
		if s != settings[0] {
			b.ReportMetric(p50(s)/base, s.name+"/none")
		}
	}
}
