// Package otlptest is an OTLP trace receiver for tests, built from the official
// OpenTelemetry protocol modules: a gRPC and an HTTP (protobuf) server on loopback that
// write each span they get as a JSON line. Tests run it as a process of its own (Start
// re-runs the test binary in receiver mode), so that stopping the collector is killing it.
package otlptest

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	collector "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	common "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/grpc"
	_ "google.golang.org/grpc/encoding/gzip" // takes gzip-compressed gRPC messages
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
	"google.golang.org/protobuf/proto"
)

// envReceiver makes the test binary a receiver (MaybeRun); envQuiet makes it take spans
// without reporting them (for benchmarks).
const (
	envReceiver = "TOOLSD_OTLPTEST_RECEIVER"
	envQuiet    = "TOOLSD_OTLPTEST_QUIET"
)

// Span is one received span.
type Span struct {
	Name     string         `json:"name"`
	TraceID  string         `json:"traceID"`
	SpanID   string         `json:"spanID"`
	ParentID string         `json:"parentID"`
	Attrs    map[string]any `json:"attrs"`
	Resource map[string]any `json:"resource"`
	Via      string         `json:"via"` // grpc or http
	// Headers are the request's headers (gRPC's metadata) of interest: authorization, and
	// the encoding of the body (content-encoding over HTTP, grpc-encoding over gRPC).
	Headers map[string]string `json:"headers,omitempty"`
}

// MaybeRun serves as a receiver and exits when the test binary was started by Start; call
// it first in TestMain.
func MaybeRun() {
	if os.Getenv(envReceiver) != "1" {
		return
	}
	if err := serve(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

func serve(w io.Writer) error {
	gl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	out := &writer{w: w, quiet: os.Getenv(envQuiet) == "1"}
	gs := grpc.NewServer(grpc.StatsHandler(encodingStats{}))
	collector.RegisterTraceServiceServer(gs, &traceServer{out: out})
	go func() { _ = gs.Serve(gl) }()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", func(rw http.ResponseWriter, r *http.Request) {
		var body []byte
		var err error
		switch enc := r.Header.Get("Content-Encoding"); enc {
		case "gzip":
			var zr *gzip.Reader
			if zr, err = gzip.NewReader(r.Body); err == nil {
				body, err = io.ReadAll(io.LimitReader(zr, 64<<20))
			}
		case "":
			body, err = io.ReadAll(io.LimitReader(r.Body, 64<<20))
		default:
			err = fmt.Errorf("unknown content-encoding %q", enc)
		}
		req := &collector.ExportTraceServiceRequest{}
		if err == nil {
			err = proto.Unmarshal(body, req)
		}
		if err != nil {
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		out.write(req, "http", map[string]string{"authorization": r.Header.Get("Authorization"), "encoding": r.Header.Get("Content-Encoding")})
		b, _ := proto.Marshal(&collector.ExportTraceServiceResponse{})
		rw.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = rw.Write(b)
	})
	go func() { _ = http.Serve(hl, mux) }()
	out.line(map[string]string{"grpc": gl.Addr().String(), "http": hl.Addr().String()})
	// Until stdin closes (the test is done) or the process is killed.
	_, _ = io.Copy(io.Discard, os.Stdin)
	return nil
}

type traceServer struct {
	collector.UnimplementedTraceServiceServer
	out *writer
}

func (s *traceServer) Export(ctx context.Context, req *collector.ExportTraceServiceRequest) (*collector.ExportTraceServiceResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	first := func(k string) string {
		if v := md.Get(k); len(v) > 0 {
			return v[0]
		}
		return ""
	}
	enc, _ := ctx.Value(encodingKey{}).(*string)
	s.out.write(req, "grpc", map[string]string{"authorization": first("authorization"), "encoding": *enc})
	return &collector.ExportTraceServiceResponse{}, nil
}

// encodingStats notes each call's grpc-encoding, which gRPC keeps out of its metadata, in
// the call's context.
type encodingStats struct{}

type encodingKey struct{}

func (encodingStats) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context {
	return context.WithValue(ctx, encodingKey{}, new(string))
}

func (encodingStats) HandleRPC(ctx context.Context, s stats.RPCStats) {
	if h, ok := s.(*stats.InHeader); ok {
		if enc, ok := ctx.Value(encodingKey{}).(*string); ok {
			*enc = h.Compression
		}
	}
}

func (encodingStats) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }
func (encodingStats) HandleConn(context.Context, stats.ConnStats)                       {}

type writer struct {
	mu    sync.Mutex
	w     io.Writer
	quiet bool
}

func (w *writer) line(v any) {
	b, _ := json.Marshal(v)
	w.mu.Lock()
	defer w.mu.Unlock()
	fmt.Fprintf(w.w, "%s\n", b)
}

func (w *writer) write(req *collector.ExportTraceServiceRequest, via string, headers map[string]string) {
	if w.quiet {
		return
	}
	for _, rs := range req.ResourceSpans {
		res := attrs(rs.GetResource().GetAttributes())
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				w.line(Span{Name: sp.Name, TraceID: hex.EncodeToString(sp.TraceId), SpanID: hex.EncodeToString(sp.SpanId),
					ParentID: hex.EncodeToString(sp.ParentSpanId), Attrs: attrs(sp.Attributes), Resource: res, Via: via, Headers: headers})
			}
		}
	}
}

func attrs(kvs []*common.KeyValue) map[string]any {
	m := map[string]any{}
	for _, kv := range kvs {
		m[kv.Key] = value(kv.Value)
	}
	return m
}

func value(v *common.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *common.AnyValue_StringValue:
		return x.StringValue
	case *common.AnyValue_IntValue:
		return x.IntValue
	case *common.AnyValue_BoolValue:
		return x.BoolValue
	case *common.AnyValue_DoubleValue:
		return x.DoubleValue
	case *common.AnyValue_ArrayValue:
		var out []any
		for _, e := range x.ArrayValue.Values {
			out = append(out, value(e))
		}
		return out
	}
	return nil
}

// Receiver is a receiver process.
type Receiver struct {
	// GRPC and HTTP are the listeners' addresses (host:port).
	GRPC, HTTP string

	cmd   *exec.Cmd
	stdin io.Closer
	done  chan struct{}

	mu    sync.Mutex // guards spans
	spans []Span
	more  chan struct{} // closed and replaced when a span arrives
}

// Start runs the test binary as a receiver (the test package's TestMain calls MaybeRun)
// and waits until it listens.
func Start(t testing.TB) *Receiver {
	t.Helper()
	return start(t, false)
}

// StartQuiet is Start for a receiver that takes spans and reports none (for benchmarks).
func StartQuiet(t testing.TB) *Receiver {
	t.Helper()
	return start(t, true)
}

func start(t testing.TB, quiet bool) *Receiver {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), envReceiver+"=1")
	if quiet {
		cmd.Env = append(cmd.Env, envQuiet+"=1")
	}
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &Receiver{cmd: cmd, stdin: stdin, done: make(chan struct{}), more: make(chan struct{})}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	if !sc.Scan() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("the receiver did not start: %v", sc.Err())
	}
	var addrs map[string]string
	if err := json.Unmarshal(sc.Bytes(), &addrs); err != nil {
		t.Fatalf("receiver: %v: %s", err, sc.Bytes())
	}
	r.GRPC, r.HTTP = addrs["grpc"], addrs["http"]
	go func() {
		defer close(r.done)
		for sc.Scan() {
			var s Span
			if json.Unmarshal(sc.Bytes(), &s) == nil {
				r.mu.Lock()
				r.spans = append(r.spans, s)
				close(r.more)
				r.more = make(chan struct{})
				r.mu.Unlock()
			}
		}
		_ = cmd.Wait()
	}()
	t.Cleanup(r.Stop)
	return r
}

// Stop kills the receiver and waits for it.
func (r *Receiver) Stop() {
	_ = r.cmd.Process.Kill()
	_ = r.stdin.Close()
	<-r.done
}

// Spans returns what arrived so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Wait waits until ok holds for the spans received, or fails the test after d.
func (r *Receiver) Wait(t testing.TB, d time.Duration, what string, ok func([]Span) bool) []Span {
	t.Helper()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		spans, more := append([]Span(nil), r.spans...), r.more
		r.mu.Unlock()
		if ok(spans) {
			return spans
		}
		select {
		case <-more:
		case <-r.done:
			t.Fatalf("the receiver exited while waiting for %s", what)
		case <-deadline.C:
			var names []string
			for _, s := range spans {
				names = append(names, s.Name)
			}
			t.Fatalf("after %s, no %s; received: %s", d, what, strings.Join(names, ", "))
		}
	}
}
