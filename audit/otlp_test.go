package audit

import (
	"context"
	"encoding/binary"
	"encoding/pem"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestReadConfig(t *testing.T) {
	for _, tc := range []struct {
		name    string
		proto   string
		setting string
		env     map[string]string
		url     string
		headers map[string]string
		timeout time.Duration
		gzip    bool
		err     string
	}{
		{name: "http default", proto: "http/protobuf", url: "http://localhost:4318/v1/traces"},
		{name: "grpc default", proto: "grpc", url: "http://localhost:4317" + grpcExportPath},
		{name: "setting is a base URL", proto: "http/protobuf", setting: "https://c.example:4318/otlp/", url: "https://c.example:4318/otlp/v1/traces"},
		{name: "setting already names the path", proto: "http/protobuf", setting: "http://c:4318/v1/traces", url: "http://c:4318/v1/traces"},
		{name: "general endpoint gets the path", proto: "http/protobuf", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/base"}, url: "http://c:4318/base/v1/traces"},
		{name: "traces endpoint is taken as it is", proto: "http/protobuf",
			env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://other:1", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/custom"}, url: "http://c:4318/custom"},
		{name: "grpc keeps host and port", proto: "grpc", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://c:4317/ignored"}, url: "https://c:4317" + grpcExportPath},
		{name: "grpc without a scheme is TLS", proto: "grpc", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "c:4317"}, url: "https://c:4317" + grpcExportPath},
		{name: "grpc without a scheme, insecure", proto: "grpc", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "c:4317", "OTEL_EXPORTER_OTLP_INSECURE": "true"}, url: "http://c:4317" + grpcExportPath},
		{name: "not a URL", proto: "http/protobuf", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "c:4318"}, err: "not an http:// or https:// URL"},
		{name: "headers", proto: "http/protobuf", env: map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": " authorization = Bearer%20x%2Cy , broken, =v, k%3D=a=b "},
			headers: map[string]string{"authorization": "Bearer x,y", "k=": "a=b"}},
		{name: "traces headers replace the general ones", proto: "grpc",
			env:     map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "a=1,b=2", "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "b=3"},
			headers: map[string]string{"b": "3"}},
		{name: "timeout", proto: "grpc", env: map[string]string{"OTEL_EXPORTER_OTLP_TIMEOUT": "2500"}, timeout: 2500 * time.Millisecond},
		{name: "bad timeout", proto: "grpc", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "10s"}, err: "milliseconds"},
		{name: "gzip", proto: "http/protobuf", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "GZIP"}, gzip: true},
		{name: "unknown compression", proto: "http/protobuf", env: map[string]string{"OTEL_EXPORTER_OTLP_COMPRESSION": "zstd"}, err: "use gzip or none"},
		{name: "no CA file", proto: "grpc", env: map[string]string{"OTEL_EXPORTER_OTLP_CERTIFICATE": "/nonexistent/ca.pem"}, err: "OTEL_EXPORTER_OTLP_CERTIFICATE"},
		{name: "client certificate without its key", proto: "grpc", env: map[string]string{"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": "/c.pem"}, err: "set both or neither"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := readConfig(tc.proto, tc.setting, func(k string) string { return tc.env[k] })
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.url != "" && c.url != tc.url {
				t.Errorf("url = %q, want %q", c.url, tc.url)
			}
			if tc.headers != nil && !maps.Equal(c.headers, tc.headers) {
				t.Errorf("headers = %q, want %q", c.headers, tc.headers)
			}
			want := tc.timeout
			if want == 0 {
				want = defaultTimeout
			}
			if c.timeout != want {
				t.Errorf("timeout = %v, want %v", c.timeout, want)
			}
			if c.gzip != tc.gzip {
				t.Errorf("gzip = %v", c.gzip)
			}
		})
	}
}

// testExporter is an exporter of proto to the endpoint setting and env, whose first wait
// before sending a batch again is first; it is shut down when the test ends.
func testExporter(t *testing.T, proto, setting string, env map[string]string, first time.Duration) *otlpExporter {
	t.Helper()
	c, err := readConfig(proto, setting, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	x := newOTLPExporter(c, "test")
	x.retryFirst = first
	t.Cleanup(func() { _ = x.Shutdown(context.Background()) })
	return x
}

func testRequest() []byte {
	at := time.Now()
	msg, err := traceRequest([]attr{str("service.name", "toolsd")}, []*span{
		{name: "toolsd.call", trace: newTraceID(), id: newSpanID(), start: at, end: at},
		{name: "toolsd.call.start", trace: newTraceID(), id: newSpanID(), start: at, end: at},
	})
	if err != nil {
		panic(err)
	}
	return msg
}

// TestHTTPRetries: a batch the collector cannot take for now (503) is sent again until it
// is taken; one it refuses (400) is not, and the error says what the collector said.
func TestHTTPRetries(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Content-Type") != "application/x-protobuf" || r.URL.Path != "/v1/traces" {
			http.Error(w, "wrong request "+r.URL.Path, http.StatusBadRequest)
			return
		}
		switch n.Add(1) {
		case 1, 2:
			w.Header().Set("Retry-After", "0")
			http.Error(w, "busy", http.StatusServiceUnavailable)
		case 3:
		default:
			http.Error(w, "no such tenant", http.StatusBadRequest)
		}
	}))
	defer srv.Close()
	x := testExporter(t, "http/protobuf", srv.URL, nil, time.Millisecond)
	if err := x.export(context.Background(), testRequest()); err != nil || n.Load() != 3 {
		t.Fatalf("after two 503s: %v, %d requests", err, n.Load())
	}
	err := x.export(context.Background(), testRequest())
	if err == nil || !strings.Contains(err.Error(), "400 Bad Request: no such tenant") || n.Load() != 4 {
		t.Fatalf("a 400: %v, %d requests", err, n.Load())
	}
	if err := x.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := x.export(context.Background(), testRequest()); err == nil {
		t.Error("exported after Shutdown")
	}
}

// TestRetryStopsWithTheContext: a collector that is never ready does not hold the exporter
// past its context.
func TestRetryStopsWithTheContext(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "busy", http.StatusTooManyRequests)
	}))
	defer srv.Close()
	x := testExporter(t, "http/protobuf", srv.URL, nil, retryFirst)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := x.export(ctx, testRequest()) // the first retry would wait seconds
	if err == nil || !strings.Contains(err.Error(), "429") || ctx.Err() == nil {
		t.Fatalf("err = %v", err)
	}
}

// TestGRPCOverTLS: the gRPC request is a length-prefixed message over HTTP/2, trusted through
// OTEL_EXPORTER_OTLP_CERTIFICATE; UNAVAILABLE is retried, INVALID_ARGUMENT is not, and a
// status may come in the trailers or, with no message, in the headers.
func TestGRPCOverTLS(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.ProtoMajor != 2 || r.URL.Path != grpcExportPath || r.Header.Get("Content-Type") != "application/grpc" ||
			r.Header.Get("Te") != "trailers" || r.Header.Get("Authorization") != "k" ||
			len(body) < 5 || body[0] != 0 || int(binary.BigEndian.Uint32(body[1:])) != len(body)-5 {
			w.Header().Set("Grpc-Status", "13")
			w.Header().Set("Grpc-Message", "bad request")
			return
		}
		switch n.Add(1) {
		case 1: // trailers only
			w.Header().Set("Grpc-Status", "14")
			w.Header().Set("Grpc-Message", "not ready")
		case 2:
			w.Header().Set("Content-Type", "application/grpc")
			w.Header().Set("Trailer", "Grpc-Status, Grpc-Message")
			_, _ = w.Write([]byte{0, 0, 0, 0, 0}) // an empty ExportTraceServiceResponse
			w.Header().Set("Grpc-Status", "0")
		default:
			w.Header().Set("Trailer", "Grpc-Status, Grpc-Message")
			_, _ = w.Write([]byte{})
			w.Header().Set("Grpc-Status", "3")
			w.Header().Set("Grpc-Message", "span%20too%20big")
		}
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": strings.TrimPrefix(srv.URL, "https://"), "OTEL_EXPORTER_OTLP_CERTIFICATE": ca,
		"OTEL_EXPORTER_OTLP_HEADERS": "authorization=k"}
	x := testExporter(t, "grpc", "", env, time.Millisecond)
	if err := x.export(context.Background(), testRequest()); err != nil || n.Load() != 2 {
		t.Fatalf("after UNAVAILABLE: %v, %d requests", err, n.Load())
	}
	err := x.export(context.Background(), testRequest())
	if err == nil || !strings.Contains(err.Error(), "status 3: span too big") || n.Load() != 3 {
		t.Fatalf("INVALID_ARGUMENT: %v, %d requests", err, n.Load())
	}
}

func TestRetryAfter(t *testing.T) {
	for v, want := range map[string]time.Duration{"": 0, "3": 3 * time.Second, "600": retryMax, "-1": 0, "Wed, 21 Oct 2015 07:28:00 GMT": 0} {
		if got := retryAfter(v); got != want {
			t.Errorf("retryAfter(%q) = %v, want %v", v, got, want)
		}
	}
}

// TestStatusNamesTheCollector: the status names the collector as configured, not gRPC's
// method path.
func TestStatusNamesTheCollector(t *testing.T) {
	clearEnv(t)
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	e, err := New(context.Background(), Options{})
	if err != nil || e == nil {
		t.Fatal(e, err)
	}
	defer e.Close(context.Background())
	if s := e.Status(); s.Endpoint != "http://127.0.0.1:1" || s.Protocol != "grpc" {
		t.Errorf("status %+v", s)
	}
}
