package rpcbench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolsd/toolsd/internal/harness"
	"github.com/toolsd/toolsd/protocol"
)

// record is one benchmark's numbers, written as a JSON line to $BENCH_OUT for the report.
type record struct {
	Bench       string  `json:"bench"`  // spawn, read, concurrent, big
	Client      string  `json:"client"` // go-harness, node-vscode-jsonrpc, mcp-ts-client
	Server      string  `json:"server"` // toolsd, echo, server-filesystem
	N           int     `json:"n"`
	P50us       float64 `json:"p50_us,omitempty"`
	P99us       float64 `json:"p99_us,omitempty"`
	MeanUs      float64 `json:"mean_us,omitempty"`
	Callers     int     `json:"callers,omitempty"`
	CallsPerSec float64 `json:"calls_per_s,omitempty"`
	RespBytes   int     `json:"resp_bytes,omitempty"`
	ServerCPUus float64 `json:"server_cpu_us_per_call,omitempty"` // the server process's user+system CPU per call

	// BenchmarkBigOutput only.
	OutBytes        int64   `json:"out_bytes,omitempty"`              // bytes the command printed
	ExecSeconds     float64 `json:"exec_seconds,omitempty"`           // tools/execute round trip
	ReadSeconds     float64 `json:"read_seconds,omitempty"`           // paging the full output back
	PeakAnonMiB     float64 `json:"peak_anon_mib,omitempty"`          // highest RssAnon sampled (heap, stacks)
	PeakFileMiB     float64 `json:"peak_file_mib,omitempty"`          // highest RssFile sampled (the bbolt mmap)
	ExecPeakAnonMiB float64 `json:"exec_peak_anon_mib,omitempty"`     // RssAnon peak by then
	StoreMapMiBExec float64 `json:"store_map_rss_mib_exec,omitempty"` // resident pages of the store's mmap then
	StoreMapMiBEnd  float64 `json:"store_map_rss_mib_end,omitempty"`  // and after paging the output back
	Lines           int64   `json:"lines,omitempty"`                  // lines outputs/read returned
	Bytes           int64   `json:"bytes,omitempty"`                  // bytes outputs/read returned, newlines included
	ResultBytes     int     `json:"result_bytes,omitempty"`           // size of the truncated output in the result
	Pages           int     `json:"pages,omitempty"`                  // outputs/read calls
	Truncated       bool    `json:"truncated,omitempty"`              // the result said truncated
	OK              *bool   `json:"ok,omitempty"`                     // every check passed and the RSS bar was met
	Problem         string  `json:"problem,omitempty"`                // what failed, if not OK
	SampleCount     int     `json:"samples,omitempty"`                // RSS samples taken
	TotalLinesRep   int64   `json:"total_lines_reported,omitempty"`
	TotalBytesRep   int64   `json:"total_bytes_reported,omitempty"`
}

func emit(b *testing.B, r record) {
	b.Helper()
	line, err := json.Marshal(r)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%s", line)
	path := os.Getenv("BENCH_OUT")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(append(line, '\n')); err != nil {
		b.Fatal(err)
	}
}

// latencies summarises per-call durations and reports them as benchmark metrics.
func latencies(b *testing.B, r *record, lat []time.Duration) {
	b.Helper()
	if len(lat) == 0 {
		return
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	r.N = len(s)
	r.P50us = us(percentile(s, 50))
	r.P99us = us(percentile(s, 99))
	r.MeanUs = us(sum / time.Duration(len(s)))
	b.ReportMetric(r.P50us, "p50-µs")
	b.ReportMetric(r.P99us, "p99-µs")
}

// percentile is the nearest-rank percentile of sorted durations.
func percentile(sorted []time.Duration, p int) time.Duration {
	k := (len(sorted)*p + 99) / 100 // ceil(n*p/100)
	return sorted[max(k-1, 0)]
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// cpuUse is what a process has used of the CPU so far, read two ways: ticks is user plus
// system time from /proc/<pid>/stat, which counts every thread the process ever had but in
// clock ticks of 10 ms (the echo floor's 20,000 calls take a dozen of them); run is the sum
// of its threads' run time in nanoseconds from /proc/<pid>/task/*/schedstat, which misses
// the threads that have exited.
type cpuUse struct{ ticks, run time.Duration }

const tick = 10 * time.Millisecond

func cpuNow(pid int) cpuUse {
	var u cpuUse
	if data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		// The command name (field 2) may hold spaces; the fields after it start past ")".
		if f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:])); len(f) >= 13 {
			ut, _ := strconv.ParseInt(f[11], 10, 64) // field 14, utime
			st, _ := strconv.ParseInt(f[12], 10, 64) // field 15, stime
			u.ticks = time.Duration(ut+st) * tick
		}
	}
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	for _, t := range tasks {
		data, err := os.ReadFile(t)
		if err != nil {
			continue // the thread has exited
		}
		if f := strings.Fields(string(data)); len(f) > 0 {
			ns, _ := strconv.ParseInt(f[0], 10, 64)
			u.run += time.Duration(ns)
		}
	}
	return u
}

// cpuSince is the CPU time the process has used since u0: the threads' run time, unless
// that fell more than the ticks' rounding short of the ticks (a thread exited meanwhile,
// or there is no schedstat), when the ticks are all there is.
func cpuSince(pid int, u0 cpuUse) time.Duration {
	u := cpuNow(pid)
	run, ticks := u.run-u0.run, u.ticks-u0.ticks
	if u0.run == 0 || run < ticks-3*tick {
		return ticks
	}
	return run
}

func toolsdBin(b testing.TB) string {
	if p := os.Getenv("TOOLSD_BIN"); p != "" {
		return p
	}
	return harness.Binary(b)
}

var (
	echoOnce sync.Once
	echoPath string
	echoErr  error
	tempDirs []string // removed when the tests end
)

func echoBin(b testing.TB) string {
	if p := os.Getenv("ECHO_BIN"); p != "" {
		return p
	}
	echoOnce.Do(func() {
		dir, err := os.MkdirTemp("", "toolsd-echo-")
		if err != nil {
			echoErr = err
			return
		}
		tempDirs = append(tempDirs, dir)
		echoPath = filepath.Join(dir, "echo")
		_, file, _, _ := runtime.Caller(0)
		cmd := exec.Command("go", "build", "-o", echoPath, "./echo")
		cmd.Dir = filepath.Dir(file)
		if out, err := cmd.CombinedOutput(); err != nil {
			echoErr = fmt.Errorf("go build ./echo: %v\n%s", err, out)
		}
	})
	if echoErr != nil {
		b.Fatal(echoErr)
	}
	return echoPath
}

// workspace makes a workspace holding the 1 KiB file the read benchmarks read and returns
// the folder and the file's absolute path.
func workspace(b *testing.B) (string, string) {
	b.Helper()
	ws := b.TempDir()
	var sb strings.Builder
	for i := range 16 { // 16 lines of 63 characters and a newline: 1024 bytes
		line := fmt.Sprintf("line %02d of the one-KiB file read by toolsd's benchmarks: ", i+1)
		line += strings.Repeat("x", 63-len(line))
		sb.WriteString(line[:63] + "\n")
	}
	if sb.Len() != 1024 {
		b.Fatalf("fixture is %d bytes, want 1024", sb.Len())
	}
	path := filepath.Join(ws, "one-kib.txt")
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	return ws, path
}

// startToolsd spawns toolsd with a store and a config folder of its own under state. They
// are apart, as on any real machine: the daemon watches its config folder, and a config
// folder that held the store would wake it at every write of its record.
func startToolsd(b *testing.B, state string) *harness.Daemon {
	b.Helper()
	config := filepath.Join(state, "config")
	if err := os.MkdirAll(config, 0o700); err != nil {
		b.Fatal(err)
	}
	return harness.Start(b, toolsdBin(b), harness.Options{
		Args: []string{"--store", filepath.Join(state, "store.db")},
		Env:  []string{"XDG_CONFIG_HOME=" + config, "XDG_STATE_HOME=" + state},
	})
}

// server is one benchmark target: how to spawn it.
type server struct {
	name  string
	start func(b *testing.B, state string) *harness.Daemon
}

var servers = []server{
	{"toolsd", startToolsd},
	{"echo", func(b *testing.B, _ string) *harness.Daemon {
		return harness.Start(b, echoBin(b), harness.Options{})
	}},
}

func ctxFor(b *testing.B, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	b.Cleanup(cancel)
	return ctx
}

// BenchmarkSpawn measures spawn to the initialize result, process start included.
func BenchmarkSpawn(b *testing.B) {
	for _, s := range servers {
		b.Run("server="+s.name, func(b *testing.B) {
			ws, _ := workspace(b)
			state := b.TempDir()
			ctx := ctxFor(b, 10*time.Minute)
			once := func() time.Duration {
				t0 := time.Now()
				d := s.start(b, state)
				var res json.RawMessage
				err := d.Call(ctx, "initialize", map[string]any{
					"processId": os.Getpid(), "workspaceFolder": ws,
					"clientInfo":   map[string]string{"name": "bench", "version": "1"},
					"capabilities": map[string]bool{"ask": true, "progress": true},
				}, &res)
				el := time.Since(t0)
				if err != nil {
					b.Fatalf("initialize: %v\n%s", err, d.Stderr())
				}
				_ = d.Notify(ctx, "initialized", map[string]any{})
				if code, err := d.Shutdown(ctx); err != nil || code != 0 {
					b.Fatalf("shutdown: code %d, %v", code, err)
				}
				return el
			}
			once() // the first spawn creates the store and warms the page cache
			var lat []time.Duration
			for b.Loop() {
				lat = append(lat, once())
			}
			r := record{Bench: "spawn", Client: "go-harness", Server: s.name}
			latencies(b, &r, lat)
			emit(b, r)
		})
	}
}

// caller makes tools/execute read calls with fresh callIDs.
//
// Every call's args carry a distinct limit (at least 2000 lines, so the whole 16-line file is
// read either way): toolsd asks under doom_loop when a session makes the same call three
// times in a row, and an agent stuck in a loop is not what these benchmarks measure.
type caller struct {
	d      *harness.Daemon
	path   string // JSON-quoted
	nextID atomic.Int64
}

func newCaller(d *harness.Daemon, path string) *caller {
	q, _ := json.Marshal(path)
	return &caller{d: d, path: string(q)}
}

func (c *caller) params() protocol.ExecuteParams {
	n := c.nextID.Add(1)
	return protocol.ExecuteParams{
		SessionID: "bench", MessageID: "m1", CallID: fmt.Sprintf("call-%d", n), Tool: "read",
		Args: json.RawMessage(fmt.Sprintf(`{"filePath":%s,"limit":%d}`, c.path, 2000+n)),
	}
}

func (c *caller) read(ctx context.Context) (*protocol.ExecuteResult, error) {
	var res protocol.ExecuteResult
	if err := c.d.Call(ctx, "tools/execute", c.params(), &res); err != nil {
		return nil, err
	}
	if res.Status != "completed" {
		return nil, fmt.Errorf("read: status %q: %s", res.Status, res.Error)
	}
	return &res, nil
}

var (
	sampleMu sync.Mutex // guards sample
	sample   json.RawMessage
)

// readSample returns toolsd's raw result for a read of the 1 KiB file, for the echo to
// answer with.
func readSample(b *testing.B, ctx context.Context) json.RawMessage {
	sampleMu.Lock()
	defer sampleMu.Unlock()
	if sample != nil {
		return sample
	}
	ws, path := workspace(b)
	d := startToolsd(b, b.TempDir())
	if _, err := d.Initialize(ctx, ws, true, nil); err != nil {
		b.Fatal(err)
	}
	var raw json.RawMessage
	if err := d.Call(ctx, "tools/execute", newCaller(d, path).params(), &raw); err != nil {
		b.Fatal(err)
	}
	if _, err := d.Shutdown(ctx); err != nil {
		b.Fatal(err)
	}
	sample = raw
	return raw
}

// ready starts a server on the 1 KiB workspace, initializes it, points the echo at toolsd's
// result, and warms up with 200 calls.
func ready(b *testing.B, s server, ctx context.Context) (*caller, int) {
	b.Helper()
	ws, path := workspace(b)
	d := s.start(b, b.TempDir())
	if _, err := d.Initialize(ctx, ws, true, nil); err != nil {
		b.Fatalf("initialize: %v\n%s", err, d.Stderr())
	}
	if s.name == "echo" {
		if err := d.Call(ctx, "bench/setResult", readSample(b, ctx), nil); err != nil {
			b.Fatal(err)
		}
	}
	c := newCaller(d, path)
	var raw json.RawMessage
	if err := d.Call(ctx, "tools/execute", c.params(), &raw); err != nil {
		b.Fatal(err)
	}
	for range 200 {
		if _, err := c.read(ctx); err != nil {
			b.Fatalf("warm-up: %v\n%s", err, d.Stderr())
		}
	}
	return c, len(raw)
}

// BenchmarkReadRoundTrip measures sequential tools/execute read calls on a 1 KiB file.
func BenchmarkReadRoundTrip(b *testing.B) {
	for _, s := range servers {
		b.Run("server="+s.name, func(b *testing.B) {
			ctx := ctxFor(b, 10*time.Minute)
			c, size := ready(b, s, ctx)
			lat := make([]time.Duration, 0, b.N)
			for b.Loop() {
				t0 := time.Now()
				if _, err := c.read(ctx); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			r := record{Bench: "read", Client: "go-harness", Server: s.name, RespBytes: size}
			latencies(b, &r, lat)
			emit(b, r)
		})
	}
}

// BenchmarkConcurrent64 measures throughput with 64 tools/execute read calls in flight on
// one connection.
func BenchmarkConcurrent64(b *testing.B) {
	const callers = 64
	for _, s := range servers {
		b.Run("server="+s.name, func(b *testing.B) {
			ctx := ctxFor(b, 10*time.Minute)
			c, size := ready(b, s, ctx)
			procs := runtime.GOMAXPROCS(0)
			b.SetParallelism((callers + procs - 1) / procs)
			var failed atomic.Pointer[error]
			pid := c.d.Cmd.Process.Pid
			cpu0 := cpuNow(pid)
			b.ResetTimer()
			t0 := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := c.read(ctx); err != nil {
						failed.CompareAndSwap(nil, &err)
						return
					}
				}
			})
			el := time.Since(t0)
			b.StopTimer()
			cpuPerCall := us(cpuSince(pid, cpu0)) / float64(b.N)
			if e := failed.Load(); e != nil {
				b.Fatal(*e)
			}
			rate := float64(b.N) / el.Seconds()
			b.ReportMetric(rate, "calls/s")
			if b.N < callers {
				return // the framework's first probe run, not the measured one
			}
			b.ReportMetric(cpuPerCall, "server-cpu-µs/call")
			emit(b, record{Bench: "concurrent", Client: "go-harness", Server: s.name, N: b.N, Callers: (callers + procs - 1) / procs * procs, CallsPerSec: rate, RespBytes: size, ServerCPUus: cpuPerCall})
		})
	}
}
