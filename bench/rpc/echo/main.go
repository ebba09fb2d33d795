// Command echo is the floor for toolsd's benchmarks: a JSON-RPC 2.0 server on stdin and
// stdout with LSP framing, built on the same library as the daemon (go.lsp.dev/jsonrpc2
// v1.0.1), that does no work at all.
//
// It answers initialize with a small serverInfo, shutdown with null and exits on exit or at
// the end of stdin. bench/setResult stores its params; from then on every other request is
// answered with exactly those bytes, so a driver can make the echo's answer to a
// tools/execute the same size as toolsd's answer to the same request. Before any
// bench/setResult, requests are answered with their own params.
//
// Package main is a benchmark peer, not part of the daemon.
package main

import (
	"context"
	"os"
	"sync/atomic"

	"go.lsp.dev/jsonrpc2"
)

type stdio struct{}

func (stdio) Read(p []byte) (int, error)  { return os.Stdin.Read(p) }
func (stdio) Write(p []byte) (int, error) { return os.Stdout.Write(p) }
func (stdio) Close() error {
	_ = os.Stdin.Close()
	return os.Stdout.Close()
}

func main() {
	var canned atomic.Pointer[jsonrpc2.RawMessage]
	handler := func(ctx context.Context, req *jsonrpc2.Request) (any, error) {
		switch req.Method() {
		case "initialize":
			return jsonrpc2.RawMessage(`{"serverInfo":{"name":"echo","version":"0"},"capabilities":{}}`), nil
		case "initialized":
			return nil, nil
		case "shutdown":
			return nil, nil
		case "exit":
			os.Exit(0)
		case "bench/setResult":
			// Params point into the read buffer and are only valid until we return.
			r := append(jsonrpc2.RawMessage(nil), req.Params()...)
			canned.Store(&r)
			return nil, nil
		}
		if !req.IsCall() {
			return nil, nil
		}
		if r := canned.Load(); r != nil {
			return *r, nil
		}
		return append(jsonrpc2.RawMessage(nil), req.Params()...), nil
	}
	conn := jsonrpc2.NewConn(jsonrpc2.NewHeaderStream(stdio{}))
	conn.Go(context.Background(), handler)
	<-conn.Done()
}
