package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sg "github.com/sourcegraph/jsonrpc2"

	"github.com/toolsd/toolsd/protocol"
)

// fakeBackend answers with canned values; Resolve panics on demand; Execute blocks until
// its context ends.
type fakeBackend struct {
	panicResolve atomic.Bool
	resolveBytes int // the size of a tool description in Resolve's result
	executing    chan struct{}
	closed       atomic.Bool
	initialized  atomic.Int32 // Initialized calls

	mu         sync.Mutex // guards started, running, maxRunning
	started    []string   // callIDs, in the order Execute was called
	running    int
	maxRunning int
}

func (f *fakeBackend) Resolve(protocol.ResolveParams) protocol.ResolveResult {
	if f.panicResolve.Load() {
		panic("resolve exploded")
	}
	tools := []protocol.ToolInfo{}
	if f.resolveBytes > 0 {
		tools = append(tools, protocol.ToolInfo{ID: "t", Description: strings.Repeat("d", f.resolveBytes)})
	}
	return protocol.ResolveResult{Tools: tools, Diagnostics: []protocol.Diagnostic{}}
}
func (f *fakeBackend) Execute(ctx context.Context, p protocol.ExecuteParams) (*protocol.ExecuteResult, error) {
	f.mu.Lock()
	f.started = append(f.started, p.CallID)
	f.running++
	f.maxRunning = max(f.maxRunning, f.running)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.running--
		f.mu.Unlock()
	}()
	f.executing <- struct{}{}
	<-ctx.Done()
	return nil, ctx.Err()
}
func (f *fakeBackend) Cancel(string, string) bool { return false }
func (f *fakeBackend) Reply(protocol.ReplyParams) (*protocol.ReplyResult, error) {
	return &protocol.ReplyResult{Released: []string{}}, nil
}
func (f *fakeBackend) PendingAsks() []protocol.AskedParams { return []protocol.AskedParams{} }
func (f *fakeBackend) SetTrusted(t bool) (bool, error)     { return t, nil }
func (f *fakeBackend) ListCalls(protocol.CallsListParams) (*protocol.CallsListResult, error) {
	return nil, errors.New("disk on fire")
}
func (f *fakeBackend) GetCall(p protocol.CallsGetParams) (*protocol.CallRecord, error) {
	return &protocol.CallRecord{CallID: p.CallID}, nil
}
func (f *fakeBackend) ReadOutput(protocol.OutputsReadParams) (*protocol.OutputsReadResult, error) {
	return nil, nil
}
func (f *fakeBackend) CallOutput(protocol.CallsOutputParams) (*protocol.CallsOutputResult, error) {
	return nil, nil
}
func (f *fakeBackend) Changes(context.Context, protocol.CallsChangesParams) (*protocol.CallsChangesResult, error) {
	return nil, nil
}
func (f *fakeBackend) Revert(context.Context, protocol.CallsRevertParams) (*protocol.CallsRevertResult, error) {
	return nil, nil
}
func (f *fakeBackend) StorePath() string     { return "/tmp/x.db" }
func (f *fakeBackend) Permissions() []string { return []string{"read"} }
func (f *fakeBackend) Close() error          { f.closed.Store(true); return nil }
func (f *fakeBackend) Shutdown()             {}
func (f *fakeBackend) Initialized()          { f.initialized.Add(1) }
func (f *fakeBackend) Clients() protocol.ClientsParams {
	return protocol.ClientsParams{Clients: []protocol.ClientRef{}}
}

// serve runs Serve on in-process pipes with an independent client.
func serve(t *testing.T) (*sg.Conn, *fakeBackend, io.Closer, <-chan int) {
	t.Helper()
	fb := &fakeBackend{executing: make(chan struct{}, 1)}
	cr, cw, code := serveRaw(t, fb, nil)
	conn := sg.NewConn(context.Background(), sg.NewBufferedStream(struct {
		io.Reader
		io.WriteCloser
	}{cr, cw}, sg.VSCodeObjectCodec{}), sg.HandlerWithError(func(context.Context, *sg.Conn, *sg.Request) (any, error) { return nil, nil }))
	t.Cleanup(func() { _ = conn.Close() })
	return conn, fb, cw, code
}

// serveRaw runs Serve on in-process pipes and returns the client's ends.
func serveRaw(t *testing.T, fb *fakeBackend, log *slog.Logger) (io.ReadCloser, io.WriteCloser, <-chan int) {
	t.Helper()
	cr, sw := io.Pipe() // server -> client
	sr, cw := io.Pipe() // client -> server
	code := make(chan int, 1)
	go func() {
		code <- Serve(context.Background(), sr, sw, func() error { _ = sr.Close(); return sw.Close() }, Options{
			Version: "test",
			Logger:  log,
			Open:    func(context.Context, protocol.InitializeParams, Notifier) (Backend, error) { return fb, nil },
		})
	}()
	return cr, cw, code
}

func code(err error) int64 {
	var e *sg.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

func TestServeRecoversAndMapsErrors(t *testing.T) {
	conn, fb, stdin, exit := serve(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := conn.Call(ctx, "initialize", map[string]any{"workspaceFolder": "/w"}, nil); err != nil {
		t.Fatal(err)
	}
	fb.panicResolve.Store(true)
	err := conn.Call(ctx, "tools/resolve", map[string]any{"sessionID": "s"}, nil)
	if code(err) != -32603 || !strings.Contains(err.Error(), "resolve exploded") {
		t.Fatalf("panicking handler: %v", err)
	}
	fb.panicResolve.Store(false)
	if err := conn.Call(ctx, "tools/resolve", map[string]any{"sessionID": "s"}, nil); err != nil {
		t.Fatalf("after a panic the daemon must keep serving: %v", err)
	}
	// A plain error from below is an internal error with a real code, never code 0.
	if err := conn.Call(ctx, "calls/list", map[string]any{}, nil); code(err) != -32603 {
		t.Fatalf("plain error: %v", err)
	}

	// $/cancelRequest of a running execute: -32800.
	id := sg.ID{Num: 77}
	w, err := conn.DispatchCall(ctx, "tools/execute", map[string]any{"sessionID": "s", "messageID": "m", "callID": "c", "tool": "t"}, sg.PickID(id))
	if err != nil {
		t.Fatal(err)
	}
	<-fb.executing
	if err := conn.Notify(ctx, "$/cancelRequest", map[string]any{"id": 77}); err != nil {
		t.Fatal(err)
	}
	if err := w.Wait(ctx, nil); code(err) != protocol.CodeRequestCancelled {
		t.Fatalf("cancelled execute: %v", err)
	}

	if err := conn.Call(ctx, "shutdown", nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := conn.Call(ctx, "tools/resolve", map[string]any{"sessionID": "s"}, nil); code(err) != -32600 {
		t.Fatalf("request after shutdown: %v", err)
	}
	_ = conn.Notify(ctx, "exit", nil)
	select {
	case c := <-exit:
		if c != 0 {
			t.Fatalf("exit after shutdown: %d", c)
		}
	case <-ctx.Done():
		t.Fatal("Serve did not return after exit")
	}
	if !fb.closed.Load() {
		t.Fatal("the backend was not closed")
	}
	_ = stdin.Close()
}

// End of input cancels a running execute and ends Serve with code 1.
func TestServeEndOfInput(t *testing.T) {
	conn, fb, stdin, exit := serve(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := conn.Call(ctx, "initialize", map[string]any{"workspaceFolder": "/w"}, nil); err != nil {
		t.Fatal(err)
	}
	var raw json.RawMessage
	go func() {
		_ = conn.Call(ctx, "tools/execute", map[string]any{"sessionID": "s", "messageID": "m", "callID": "c", "tool": "t"}, &raw)
	}()
	<-fb.executing
	_ = stdin.Close()
	select {
	case c := <-exit:
		if c != 1 {
			t.Fatalf("exit code %d after end of input, want 1", c)
		}
	case <-ctx.Done():
		t.Fatal("Serve did not return after end of input")
	}
	if !fb.closed.Load() {
		t.Fatal("the backend was not closed")
	}
}

// The initialized notification tells a backend that wants to know that the client has its
// initialize result (the workspace starts the sandbox's namespace probe then); initialize
// does not.
func TestInitializedNotifiesTheBackend(t *testing.T) {
	conn, fb, _, _ := serve(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := conn.Call(ctx, "initialize", map[string]any{"workspaceFolder": "/w"}, nil); err != nil {
		t.Fatal(err)
	}
	if n := fb.initialized.Load(); n != 0 {
		t.Fatalf("Initialized was called %d times before the initialized notification", n)
	}
	if err := conn.Notify(ctx, "initialized", map[string]any{}); err != nil {
		t.Fatal(err)
	}
	// permission/list is answered on the read loop, after the notification before it.
	if err := conn.Call(ctx, "permission/list", map[string]any{}, nil); err != nil {
		t.Fatal(err)
	}
	if n := fb.initialized.Load(); n != 1 {
		t.Fatalf("Initialized was called %d times after the initialized notification, want once", n)
	}
}

// Requests that arrive together are each answered for their own method and params: a
// handler released with Async must not read the library's recycled read buffer.
func TestPipelinedRequests(t *testing.T) {
	conn, _, stdin, exit := serve(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := conn.Call(ctx, "initialize", map[string]any{"workspaceFolder": "/w"}, nil); err != nil {
		t.Fatal(err)
	}
	type pending struct {
		method, callID string
		w              sg.Waiter
	}
	var ps []pending
	for i := range 400 {
		p := pending{method: "calls/get", callID: fmt.Sprintf("call-%d-%s", i, strings.Repeat("x", i%97))}
		params := any(map[string]any{"callID": p.callID})
		if i%3 == 1 {
			p.method, params = "permission/list", nil
		}
		w, err := conn.DispatchCall(ctx, p.method, params)
		if err != nil {
			t.Fatal(err)
		}
		p.w = w
		ps = append(ps, p)
	}
	for i, p := range ps {
		var rec protocol.CallRecord
		if err := p.w.Wait(ctx, &rec); err != nil {
			t.Fatalf("request %d (%s): %v", i, p.method, err)
		}
		if p.method == "calls/get" && rec.CallID != p.callID {
			t.Fatalf("request %d read another request's params: callID %q, want %q", i, rec.CallID, p.callID)
		}
	}
	_ = stdin.Close()
	<-exit
}
