//go:build unix

package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/toolsd/toolsd/internal/harness"
	"github.com/toolsd/toolsd/protocol"
)

// BenchmarkHotReloadOverRPC measures, end to end over real pipes, the time from the write of
// a project tool definition to the tools/changed notification that reports it (the
// default debounce included), and reports p50 and p99. Target: p99 under 150 ms.
//
//	go test ./cmd/toolsd -run '^$' -bench HotReload -benchtime 100x
func BenchmarkHotReloadOverRPC(b *testing.B) {
	ws := b.TempDir()
	dir := filepath.Join(ws, ".toolsd", "tool")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	d := harness.Start(b, harness.Binary(b), harness.Options{Args: []string{"--store", filepath.Join(b.TempDir(), "s.db")}, Env: []string{"XDG_CONFIG_HOME=" + b.TempDir()}})
	ctx := harness.Deadline(b, 10*time.Minute)
	if _, err := d.Initialize(ctx, ws, true, nil); err != nil {
		b.Fatal(err)
	}
	var lat []time.Duration
	i := 0
	for b.Loop() {
		i++
		mark := d.Mark()
		def := fmt.Sprintf(`{"description": "version %d", "parameters": {"type": "object"}, "command": ["true"]}`, i)
		start := time.Now()
		if err := os.WriteFile(filepath.Join(dir, "bench_tool.json"), []byte(def), 0o644); err != nil {
			b.Fatal(err)
		}
		if _, _, err := d.WaitFor(ctx, mark, "tools/changed", func(r json.RawMessage) bool {
			var c protocol.ChangedParams
			return json.Unmarshal(r, &c) == nil && (slices.Contains(c.Added, "bench_tool") || slices.Contains(c.Changed, "bench_tool"))
		}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Microseconds())/1000, "p99-ms")
}
