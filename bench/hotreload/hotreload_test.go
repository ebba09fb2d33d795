// Package hotreload measures hot reload at the watcher + project.Source + registry layer:
// from the write of a tool definition to the registry's change callback.
//
//	go test ./bench/hotreload -run '^$' -bench . -benchtime 100x
//
// BenchmarkEdit reports p50 and p99 latency over its iterations (one edit each; target
// p99 < 150 ms with the default 50 ms debounce). BenchmarkBurst writes 500 times across 50
// files per iteration and fails if a burst yields more than 3 callbacks or a wrong final
// catalogue.
package hotreload

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/toolsd/toolsd/project"
	"github.com/toolsd/toolsd/protocol"
	"github.com/toolsd/toolsd/registry"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type event struct {
	ch registry.Change
	at time.Time
}

func start(b *testing.B, ws string) (*registry.Registry, chan event) {
	b.Helper()
	reg := registry.New()
	events := make(chan event, 1024)
	s, err := project.NewSource(reg, project.SourceOptions{
		Options: project.Options{Workspace: ws},
		OnChange: func(ch registry.Change, _ []protocol.Diagnostic) {
			events <- event{ch, time.Now()}
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return reg, events
}

// save writes a definition as editors do: a temporary file renamed over the target.
func save(b *testing.B, path, desc string) {
	b.Helper()
	body := fmt.Sprintf(`{"description": %q, "command": ["true"], "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}}}`, desc)
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		b.Fatal(err)
	}
}

func wait(b *testing.B, events chan event) event {
	b.Helper()
	select {
	case e := <-events:
		return e
	case <-time.After(10 * time.Second):
		b.Fatal("no change callback within 10s")
	}
	return event{}
}

func BenchmarkEdit(b *testing.B) {
	ws := b.TempDir()
	dir := filepath.Join(ws, ".toolsd", "tool")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	_, events := start(b, ws)
	path := filepath.Join(dir, "edited.json")
	save(b, path, "v0")
	wait(b, events)
	var lat []time.Duration
	i := 0
	for b.Loop() {
		i++
		t0 := time.Now()
		save(b, path, fmt.Sprint("v", i))
		e := wait(b, events)
		if !slices.Equal(e.ch.Changed, []string{"edited"}) {
			b.Fatalf("change = %+v", e.ch)
		}
		lat = append(lat, e.at.Sub(t0))
	}
	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(float64(len(lat))*p))] }
	b.ReportMetric(float64(pct(0.50).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(pct(0.99).Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
}

func BenchmarkBurst(b *testing.B) {
	const files, writes = 50, 500
	ws := b.TempDir()
	dir := filepath.Join(ws, ".toolsd", "tool")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	reg, events := start(b, ws)
	round := 0
	worst := 0
	for b.Loop() {
		round++
		for w := range writes {
			save(b, filepath.Join(dir, fmt.Sprintf("t%02d.json", w%files)), fmt.Sprintf("round %d write %d", round, w))
		}
		// A sentinel written after the burst: its callback comes after every burst event
		// (or merges into the last burst batch).
		sentinel := filepath.Join(dir, "sentinel.json")
		save(b, sentinel, fmt.Sprint("sentinel ", round))
		callbacks := 0
		for {
			e := wait(b, events)
			onlySentinel := slices.Equal(append(append(append([]string{}, e.ch.Added...), e.ch.Changed...), e.ch.Removed...), []string{"sentinel"})
			if !onlySentinel {
				callbacks++
			}
			if d, ok := reg.Catalog().Lookup("sentinel"); ok && d.Description == fmt.Sprint("sentinel ", round) {
				break
			}
		}
		worst = max(worst, callbacks)
		if callbacks > 3 {
			b.Fatalf("round %d: a burst of %d writes gave %d callbacks, want at most 3", round, writes, callbacks)
		}
		// The final catalogue holds every file's last write.
		for f := range files {
			last := writes - files + f
			e, ok := reg.Catalog().Lookup(fmt.Sprintf("t%02d", f))
			if want := fmt.Sprintf("round %d write %d", round, last); !ok || e.Description != want {
				b.Fatalf("t%02d: description %q, want %q", f, e.Description, want)
			}
		}
	}
	b.ReportMetric(float64(worst), "max-callbacks/burst")
}
