package audit

// The OTLP exporter: spans in protobuf (otlpproto.go) over HTTP (POST …/v1/traces) or over
// gRPC's unary TraceService/Export, both carried by net/http. It is toolsd's own rather than
// the official otlptracegrpc and otlptracehttp because those link the gRPC and grpc-gateway
// runtimes into the daemon, whose binary and package initialisation every start would pay
// for a feature that most people run with export off. It reads
// the standard settings as the official exporters do (see the OpenTelemetry specification,
// "OTLP Exporter Configuration"), and internal/otlptest checks it against the official gRPC
// server and protobuf decoder.

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The retry schedule of a batch the collector could not take for now, as the official
// exporters have it: 5 s, growing to 30 s, for at most a minute (and never past the
// export's own deadline).
const (
	retryFirst = 5 * time.Second
	retryMax   = 30 * time.Second
	retryFor   = time.Minute
)

// defaultTimeout bounds one attempt at sending a batch (OTEL_EXPORTER_OTLP_TIMEOUT).
const defaultTimeout = 10 * time.Second

// grpcExportPath is TraceService/Export's gRPC method.
const grpcExportPath = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"

// otlpConfig is where and how spans are sent.
type otlpConfig struct {
	url     string // the request's URL
	grpc    bool
	headers map[string]string
	timeout time.Duration
	gzip    bool
	tls     *tls.Config // nil: the system's roots, no client certificate
}

// readConfig reads the exporter's settings for proto ("grpc" or "http/protobuf"): the
// endpoint setting (a base URL) first, then the environment, whose traces-specific
// variables win over the general ones.
func readConfig(proto, endpoint string, getenv func(string) string) (otlpConfig, error) {
	env := func(name string) string {
		return firstSet(getenv, "OTEL_EXPORTER_OTLP_TRACES_"+name, "OTEL_EXPORTER_OTLP_"+name)
	}
	c := otlpConfig{grpc: proto == "grpc", timeout: defaultTimeout}
	u, err := endpointURL(c.grpc, endpoint, getenv, env("INSECURE"))
	if err != nil {
		return c, err
	}
	c.url = u

	if h := getenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS"); strings.TrimSpace(h) != "" {
		c.headers = parseHeaders(h)
	} else {
		c.headers = parseHeaders(getenv("OTEL_EXPORTER_OTLP_HEADERS"))
	}
	if v := env("TIMEOUT"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			return c, fmt.Errorf("OTEL_EXPORTER_OTLP_TIMEOUT=%q is not a number of milliseconds above 0", v)
		}
		c.timeout = time.Duration(ms) * time.Millisecond
	}
	switch v := strings.ToLower(env("COMPRESSION")); v {
	case "gzip":
		c.gzip = true
	case "", "none":
	default:
		return c, fmt.Errorf("OTEL_EXPORTER_OTLP_COMPRESSION=%q is not supported: use gzip or none", v)
	}
	c.tls, err = tlsConfig(env("CERTIFICATE"), env("CLIENT_CERTIFICATE"), env("CLIENT_KEY"))
	return c, err
}

// endpointURL is the URL a batch is sent to. Over HTTP a base URL (the setting,
// OTEL_EXPORTER_OTLP_ENDPOINT) gets /v1/traces, and OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is
// taken as it is; over gRPC only the scheme, host and port count, and an endpoint without a
// scheme is TLS unless insecure says "true".
func endpointURL(grpc bool, setting string, getenv func(string) string, insecure string) (string, error) {
	raw, base := setting, true
	if raw == "" {
		if raw = strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")); raw != "" {
			base = false
		} else {
			raw = strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT"))
		}
	}
	if raw == "" {
		raw = "http://localhost:4318"
		if grpc {
			raw = "http://localhost:4317"
		}
	}
	if grpc && !strings.Contains(raw, "://") {
		scheme := "https://"
		if strings.EqualFold(strings.TrimSpace(insecure), "true") {
			scheme = "http://"
		}
		raw = scheme + raw
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("the OTLP endpoint %q is not an http:// or https:// URL with a host", raw)
	}
	if grpc {
		return u.Scheme + "://" + u.Host + grpcExportPath, nil
	}
	if base && !strings.HasSuffix(strings.TrimSuffix(u.Path, "/"), "/v1/traces") {
		u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/traces"
	}
	return u.String(), nil
}

// parseHeaders reads OTEL_EXPORTER_OTLP_HEADERS: comma-separated key=value pairs whose
// keys and values are percent-encoded. A pair that is not one is left out.
func parseHeaders(s string) map[string]string {
	h := map[string]string{}
	for pair := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(pair, "=")
		if !ok {
			continue
		}
		k, kerr := url.PathUnescape(strings.TrimSpace(k))
		v, verr := url.PathUnescape(strings.TrimSpace(v))
		if kerr != nil || verr != nil || k == "" {
			continue
		}
		h[k] = v
	}
	return h
}

// tlsConfig reads the PEM files the environment names: the roots to trust instead of the
// system's, and a client certificate.
func tlsConfig(caFile, certFile, keyFile string) (*tls.Config, error) {
	if caFile == "" && certFile == "" && keyFile == "" {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CERTIFICATE: %w", err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CERTIFICATE: %s holds no PEM certificate", caFile)
		}
	}
	if certFile != "" || keyFile != "" {
		if certFile == "" || keyFile == "" {
			return nil, errors.New("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and OTEL_EXPORTER_OTLP_CLIENT_KEY go together: set both or neither")
		}
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// otlpExporter sends batches of spans to a collector.
type otlpExporter struct {
	c          otlpConfig
	client     *http.Client
	userAgent  string
	retryFirst time.Duration // the first wait before sending a batch again

	mu      sync.Mutex
	stopped bool
}

func newOTLPExporter(c otlpConfig, version string) *otlpExporter {
	t := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:     c.tls,
		TLSHandshakeTimeout: 10 * time.Second,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   true,
	}
	if c.grpc {
		// gRPC is HTTP/2 only: over TLS as negotiated, over plain TCP with prior knowledge.
		var p http.Protocols
		p.SetHTTP2(true)
		p.SetUnencryptedHTTP2(true)
		t.Protocols = &p
		if strings.HasPrefix(c.url, "http://") {
			// A proxy is asked for http:// URLs without a tunnel, which HTTP/2 with prior
			// knowledge cannot go through: plain gRPC goes straight to the collector.
			t.Proxy = nil
		}
	}
	return &otlpExporter{c: c, client: &http.Client{Transport: t}, userAgent: "toolsd/" + version, retryFirst: retryFirst}
}

// export sends one encoded ExportTraceServiceRequest, again while the collector says it
// cannot take it for now, until ctx is done or retryFor has passed.
func (x *otlpExporter) export(ctx context.Context, msg []byte) error {
	x.mu.Lock()
	stopped := x.stopped
	x.mu.Unlock()
	if stopped {
		return errors.New("the OTLP exporter is shut down")
	}
	body := x.body(msg)
	giveUp := time.Now().Add(retryFor)
	wait := x.retryFirst
	for {
		err := x.send(ctx, body)
		var tr *transientError
		if err == nil || !errors.As(err, &tr) {
			return err
		}
		next := wait/2 + rand.N(wait) // jittered around wait
		if tr.after > 0 {
			next = tr.after
		}
		if time.Now().Add(next).After(giveUp) {
			return err
		}
		t := time.NewTimer(next)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (gave up: %w)", err, ctx.Err())
		case <-t.C:
		}
		wait = min(2*wait, retryMax)
	}
}

// body is what a request carries: the message, compressed if asked, and over gRPC in a
// length-prefixed message frame.
func (x *otlpExporter) body(msg []byte) []byte {
	if x.c.gzip {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		_, _ = zw.Write(msg)
		_ = zw.Close()
		msg = b.Bytes()
	}
	if !x.c.grpc {
		return msg
	}
	framed := make([]byte, 5, 5+len(msg))
	if x.c.gzip {
		framed[0] = 1
	}
	binary.BigEndian.PutUint32(framed[1:], uint32(len(msg)))
	return append(framed, msg...)
}

// transientError is a failure the collector may get over: the batch is sent again.
type transientError struct {
	err   error
	after time.Duration // the collector's Retry-After, if it gave one
}

func (e *transientError) Error() string { return e.err.Error() }
func (e *transientError) Unwrap() error { return e.err }

// send makes one attempt, bounded by the configured timeout.
func (x *otlpExporter) send(ctx context.Context, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, x.c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, x.c.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	for k, v := range x.c.headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("User-Agent", x.userAgent)
	if x.c.grpc {
		req.Header.Set("Content-Type", "application/grpc")
		req.Header.Set("Te", "trailers")
		if x.c.gzip {
			req.Header.Set("Grpc-Encoding", "gzip")
		}
	} else {
		req.Header.Set("Content-Type", "application/x-protobuf")
		if x.c.gzip {
			req.Header.Set("Content-Encoding", "gzip")
		}
	}
	resp, err := x.client.Do(req)
	if err != nil {
		// The collector is not there (yet), or did not answer in time.
		return &transientError{err: err}
	}
	defer resp.Body.Close()
	// The answer (an ExportTraceServiceResponse, perhaps with a partial success) is read to
	// the end, so that a gRPC answer's trailers arrive, and the connection is kept; what it
	// says beyond the status is not used.
	respBody, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if x.c.grpc {
		return grpcStatus(resp)
	}
	return httpStatus(resp, respBody)
}

// httpStatus is the outcome an OTLP/HTTP answer gives.
func httpStatus(resp *http.Response, body []byte) error {
	if resp.StatusCode/100 == 2 {
		return nil
	}
	err := fmt.Errorf("the collector answered %s", resp.Status)
	if msg := strings.TrimSpace(string(body)); msg != "" && utf8Text(msg) {
		err = fmt.Errorf("%w: %.200s", err, msg)
	}
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return &transientError{err: err, after: retryAfter(resp.Header.Get("Retry-After"))}
	}
	return err
}

// grpcStatus is the outcome a gRPC answer gives: its grpc-status, in the trailers (or, for
// an answer with no message, in the headers).
func grpcStatus(resp *http.Response) error {
	if resp.StatusCode != http.StatusOK {
		err := fmt.Errorf("the collector answered %s to gRPC", resp.Status)
		switch resp.StatusCode {
		case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return &transientError{err: err}
		}
		return err
	}
	code, msg := resp.Trailer.Get("Grpc-Status"), resp.Trailer.Get("Grpc-Message")
	if code == "" {
		code, msg = resp.Header.Get("Grpc-Status"), resp.Header.Get("Grpc-Message")
	}
	if code == "0" {
		return nil
	}
	if code == "" {
		return errors.New("the collector's gRPC answer has no status")
	}
	if m, err := url.PathUnescape(msg); err == nil {
		msg = m
	}
	err := fmt.Errorf("the collector answered gRPC status %s: %.200s", code, msg)
	switch code {
	// CANCELLED, DEADLINE_EXCEEDED, ABORTED, OUT_OF_RANGE, UNAVAILABLE, DATA_LOSS: the
	// codes OTLP says may be retried.
	case "1", "4", "10", "11", "14", "15":
		return &transientError{err: err}
	}
	return err
}

// retryAfter reads a Retry-After of seconds (0 when absent or a date).
func retryAfter(v string) time.Duration {
	if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && s > 0 {
		return time.Duration(min(s, int(retryMax/time.Second))) * time.Second
	}
	return 0
}

// utf8Text reports whether s is printable enough to quote in an error.
func utf8Text(s string) bool {
	for _, r := range s {
		if r == '\uFFFD' || r < ' ' && r != '\n' && r != '\t' {
			return false
		}
	}
	return true
}

// Shutdown stops export and lets idle connections go; a batch being sent is cut short when
// its context is done (Exporter.Close cancels it).
func (x *otlpExporter) Shutdown(ctx context.Context) error {
	x.mu.Lock()
	x.stopped = true
	x.mu.Unlock()
	x.client.CloseIdleConnections()
	return ctx.Err()
}
