package rpcbench

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolsd/toolsd/protocol"
	"github.com/toolsd/toolsd/session"
)

// These benchmarks drive the execute pipeline in process (session.Workspace.Execute: validate,
// permission, read, truncate, record in bbolt), without pipes or JSON-RPC, so that a CPU
// profile shows where a tools/execute read spends its time:
//
//	go test -run '^$' -bench InProcess -benchtime 5000x -cpuprofile cpu.out ./bench/rpc/
//	go tool pprof -top -cum bench/rpc/rpc.test cpu.out

type nopSink struct{}

func (nopSink) Progress(protocol.ProgressParams) {}
func (nopSink) Asked(protocol.AskedParams)       {}
func (nopSink) Answered(protocol.AnsweredParams) {}
func (nopSink) Changed(protocol.ChangedParams)   {}
func (nopSink) Clients(protocol.ClientsParams)   {}

func openWorkspace(b *testing.B) (*session.Client, string) {
	b.Helper()
	ws, path := workspace(b)
	w, err := session.Open(context.Background(), session.WorkspaceOptions{
		Folder: ws, StorePath: filepath.Join(b.TempDir(), "store.db"),
	}, session.ClientOptions{Name: "bench", CanAsk: true, Sink: nopSink{}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = w.Close() })
	return w, path
}

func readParams(path string, n int64) protocol.ExecuteParams {
	q, _ := json.Marshal(path)
	return protocol.ExecuteParams{
		SessionID: "bench", MessageID: "m1", CallID: fmt.Sprintf("call-%d", n), Tool: "read",
		Args: json.RawMessage(fmt.Sprintf(`{"filePath":%s,"limit":%d}`, q, 2000+n)),
	}
}

// BenchmarkInProcessRead is one read after another.
func BenchmarkInProcessRead(b *testing.B) {
	w, path := openWorkspace(b)
	ctx := context.Background()
	var n int64
	for b.Loop() {
		n++
		res, err := w.Execute(ctx, readParams(path, n))
		if err != nil || res.Status != "completed" {
			b.Fatalf("read: %v %+v", err, res)
		}
	}
}

// BenchmarkInProcessRead64 is 64 reads in flight at once.
func BenchmarkInProcessRead64(b *testing.B) {
	w, path := openWorkspace(b)
	ctx := context.Background()
	var n atomic.Int64
	procs := runtime.GOMAXPROCS(0)
	b.SetParallelism((64 + procs - 1) / procs)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			res, err := w.Execute(ctx, readParams(path, n.Add(1)))
			if err != nil || res.Status != "completed" {
				b.Errorf("read: %v %+v", err, res)
				return
			}
		}
	})
}

// BenchmarkInProcessOpen opens and closes a workspace whose store exists: the part of
// spawn-to-ready that is toolsd's own work (the rest is process start and the round trip).
func BenchmarkInProcessOpen(b *testing.B) {
	ws, _ := workspace(b)
	storePath := filepath.Join(b.TempDir(), "store.db")
	var opening, closing time.Duration
	open := func() {
		t0 := time.Now()
		w, err := session.Open(context.Background(), session.WorkspaceOptions{
			Folder: ws, StorePath: storePath,
		}, session.ClientOptions{Name: "bench", CanAsk: true, Sink: nopSink{}})
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
		opening += t1.Sub(t0)
		closing += time.Since(t1)
	}
	open() // creates the store
	opening, closing = 0, 0
	for b.Loop() {
		open()
	}
	b.ReportMetric(float64(opening.Microseconds())/float64(b.N), "open-µs/op")
	b.ReportMetric(float64(closing.Microseconds())/float64(b.N), "close-µs/op")
}

// BenchmarkInProcessResolve: tools/resolve of the built-in catalogue for a model of OpenAI
// (whose strict dialect makes the most work of adapting the schemas), in process.
func BenchmarkInProcessResolve(b *testing.B) {
	ws, _ := workspace(b)
	w, err := session.Open(context.Background(), session.WorkspaceOptions{
		Folder: ws, StorePath: filepath.Join(b.TempDir(), "store.db"),
	}, session.ClientOptions{Name: "bench", CanAsk: true, Sink: nopSink{}})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	b.ReportAllocs()
	for b.Loop() {
		if r := w.Resolve(protocol.ResolveParams{SessionID: "s", Model: &protocol.Model{ProviderID: "openai"}}); len(r.Tools) == 0 {
			b.Fatal("no tools")
		}
	}
}
