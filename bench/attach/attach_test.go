// Package attach_test measures what attaching to the workspace's daemon costs and saves
// (issue 10), side by side in one run: `toolsd mcp` attaching to a running owner against a
// standalone start, an MCP read round trip through the forwarder against a standalone
// `toolsd mcp` serving it directly, and 64 concurrent MCP callers both ways. Ratios are
// reported as metrics; see bench/README.md.
//
//	go test ./bench/attach -run '^$' -bench . -benchtime 30x
package attach_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsd/toolsd/internal/harness"
)

// setup is a workspace with a 1 KiB file, a private runtime folder and config, and an owner
// kept running by an anchor client for the whole benchmark.
type setup struct {
	bin, ws, file, env0 string
	env                 []string
	anchor              *sdk.ClientSession
}

func newSetup(b *testing.B) *setup { return newSetupWith(b, "") }

// newSetupWith is newSetup with the user's toolsd config.json (none if empty) written first.
func newSetupWith(b *testing.B, config string) *setup {
	b.Helper()
	bin := os.Getenv("TOOLSD_BIN")
	if bin == "" {
		bin = harness.Binary(b)
	}
	s := &setup{bin: bin, ws: b.TempDir()}
	s.file = filepath.Join(s.ws, "file.txt")
	line := strings.Repeat("x", 63) + "\n"
	if err := os.WriteFile(s.file, []byte(strings.Repeat(line, 16)), 0o644); err != nil {
		b.Fatal(err)
	}
	rt, err := os.MkdirTemp("", "rt")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = os.RemoveAll(rt) })
	cfg := b.TempDir()
	if config != "" {
		if err := os.MkdirAll(filepath.Join(cfg, "toolsd"), 0o700); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(cfg, "toolsd", "config.json"), []byte(strings.ReplaceAll(config, "$WS", s.ws)), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	s.env = append(os.Environ(), "XDG_RUNTIME_DIR="+rt, "XDG_CONFIG_HOME="+cfg, "XDG_STATE_HOME="+b.TempDir(), "GORACE=atexit_sleep_ms=0", "TOOLSD_STANDALONE=")
	s.anchor = s.connect(b, false, "anchor")
	b.Cleanup(func() {
		_ = s.anchor.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if err := harness.WaitOwnersGone(ctx, rt); err != nil {
			b.Error(err)
		}
	})
	return s
}

// connect spawns `toolsd mcp` (standalone: serving the client itself, on a store of its own)
// and returns its initialized session.
func (s *setup) connect(b *testing.B, standalone bool, name string) *sdk.ClientSession {
	b.Helper()
	return s.connectWith(b, standalone, name, nil)
}

func (s *setup) connectWith(b *testing.B, standalone bool, name string, opts *sdk.ClientOptions) *sdk.ClientSession {
	b.Helper()
	args := []string{"mcp", "--workspace", s.ws, "--grace=500ms"}
	if standalone {
		args = append(args, "--standalone", "--store", filepath.Join(b.TempDir(), "standalone.db"))
	}
	cmd := exec.Command(s.bin, args...)
	cmd.Env = s.env
	cl := sdk.NewClient(&sdk.Implementation{Name: name, Version: "1"}, opts)
	cs, err := cl.Connect(context.Background(), &sdk.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, nil)
	if err != nil {
		b.Fatalf("connecting to toolsd mcp (standalone %v): %v", standalone, err)
	}
	return cs
}

var seq atomic.Int64

func (s *setup) read(b *testing.B, cs *sdk.ClientSession) time.Duration {
	n := seq.Add(1)
	t0 := time.Now()
	r, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "read", Arguments: map[string]any{"filePath": s.file, "limit": 2000 + n}})
	d := time.Since(t0)
	if err != nil || r.IsError {
		b.Errorf("read: %v %+v", err, r)
	}
	return d
}

func pct(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

func us(d time.Duration) float64 { return float64(d.Microseconds()) }

// BenchmarkMCPAttach: from spawning `toolsd mcp` to its initialize result, attaching to the
// running owner against a standalone start that opens the workspace itself (a store that
// exists, as on a later start). Each iteration does one of each. Goal: attach/standalone
// p50 <= 0.2.
func BenchmarkMCPAttach(b *testing.B) {
	s := newSetup(b)
	s.connect(b, true, "warm").Close() // the standalone store exists
	var attach, standalone []time.Duration
	for b.Loop() {
		for _, alone := range []bool{false, true} {
			t0 := time.Now()
			cs := s.connect(b, alone, "attach")
			d := time.Since(t0)
			_ = cs.Close()
			if alone {
				standalone = append(standalone, d)
			} else {
				attach = append(attach, d)
			}
		}
	}
	b.ReportMetric(us(pct(attach, 0.5)), "attach-p50-µs")
	b.ReportMetric(us(pct(standalone, 0.5)), "standalone-p50-µs")
	b.ReportMetric(float64(pct(attach, 0.5))/float64(pct(standalone, 0.5)), "attach/standalone")
}

// BenchmarkMCPAttachReady: from spawning `toolsd mcp` to a tools/list that has the tools of
// the MCP server the user configured (server-filesystem under Node, as an agent's setup
// often has one): attaching to the running owner, which has them, against a standalone start,
// which starts the server and lists again on notifications/tools/list_changed. This is what
// an agent waits for before its first round; BenchmarkMCPAttach stops at initialize.
// Needs node and bench/rpc/node's packages (bench/run.sh installs them).
func BenchmarkMCPAttachReady(b *testing.B) {
	_, here, _, _ := runtime.Caller(0) // bench/run.sh runs the compiled test from the repository's root
	server := filepath.Join(filepath.Dir(here), "..", "rpc", "node", "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js")
	if _, err := os.Stat(server); err != nil {
		b.Skip("server-filesystem is not installed: npm ci in bench/rpc/node (bench/run.sh does)")
	}
	if _, err := exec.LookPath("node"); err != nil {
		b.Skip("no node")
	}
	s := newSetupWith(b, fmt.Sprintf(`{"mcp": {"fs": {"command": ["node", %q, "$WS"]}}}`, server))
	ready := func(standalone bool) time.Duration {
		changed := make(chan struct{}, 1)
		opts := &sdk.ClientOptions{ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		}}
		t0 := time.Now()
		cs := s.connectWith(b, standalone, "ready", opts)
		defer cs.Close()
		for {
			r, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				b.Fatal(err)
			}
			if slices.ContainsFunc(r.Tools, func(t *sdk.Tool) bool { return strings.HasPrefix(t.Name, "fs_") }) {
				return time.Since(t0)
			}
			select {
			case <-changed:
			case <-time.After(30 * time.Second):
				b.Fatalf("no fs_ tool after 30 s (standalone %v): %d tools", standalone, len(r.Tools))
			}
		}
	}
	ready(false) // the owner has started the server and listed its tools
	ready(true)  // the standalone store exists
	var attach, standalone []time.Duration
	for b.Loop() {
		attach = append(attach, ready(false))
		standalone = append(standalone, ready(true))
	}
	b.ReportMetric(us(pct(attach, 0.5)), "attach-p50-µs")
	b.ReportMetric(us(pct(standalone, 0.5)), "standalone-p50-µs")
	b.ReportMetric(float64(pct(attach, 0.5))/float64(pct(standalone, 0.5)), "attach/standalone")
}

// BenchmarkMCPRead: a read of a 1 KiB file through the forwarder (toolsd mcp → owner)
// against a standalone toolsd mcp, interleaved. Goal: forwarder/direct p50 <= 1.3.
func BenchmarkMCPRead(b *testing.B) {
	s := newSetup(b)
	fwd := s.connect(b, false, "forwarded")
	defer fwd.Close()
	direct := s.connect(b, true, "direct")
	defer direct.Close()
	for range 100 { // warm up both
		s.read(b, fwd)
		s.read(b, direct)
	}
	var f, d []time.Duration
	for b.Loop() {
		f = append(f, s.read(b, fwd))
		d = append(d, s.read(b, direct))
	}
	b.ReportMetric(us(pct(f, 0.5)), "forwarder-p50-µs")
	b.ReportMetric(us(pct(f, 0.99)), "forwarder-p99-µs")
	b.ReportMetric(us(pct(d, 0.5)), "direct-p50-µs")
	b.ReportMetric(us(pct(d, 0.99)), "direct-p99-µs")
	b.ReportMetric(float64(pct(f, 0.5))/float64(pct(d, 0.5)), "forwarder/direct-p50")
}

// BenchmarkMCPRead64: 64 callers with a read in flight each on one MCP session, through the
// forwarder and directly; calls/s of each and their ratio. Each iteration runs 500 calls on
// each side, interleaved.
func BenchmarkMCPRead64(b *testing.B) {
	s := newSetup(b)
	fwd := s.connect(b, false, "forwarded")
	defer fwd.Close()
	direct := s.connect(b, true, "direct")
	defer direct.Close()
	run := func(cs *sdk.ClientSession, n int) time.Duration {
		var next atomic.Int64
		var wg sync.WaitGroup
		t0 := time.Now()
		for range 64 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for next.Add(1) <= int64(n) {
					s.read(b, cs)
				}
			}()
		}
		wg.Wait()
		return time.Since(t0)
	}
	run(fwd, 256)
	run(direct, 256)
	const n = 500
	var f, d time.Duration
	for b.Loop() {
		f += run(fwd, n)
		d += run(direct, n)
	}
	calls := float64(n * b.N)
	b.ReportMetric(calls/f.Seconds(), "forwarder-calls/s")
	b.ReportMetric(calls/d.Seconds(), "direct-calls/s")
	b.ReportMetric(d.Seconds()/f.Seconds(), "forwarder/direct")
}
