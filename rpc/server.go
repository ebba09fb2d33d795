// Package rpc serves the toolsd protocol over JSON-RPC 2.0 with LSP framing on a pair of
// streams (the daemon's stdin and stdout).
//
// It wraps go.lsp.dev/jsonrpc2 v1.0.1 and fixes what that library leaves to its users (see
// the design's JSONRPC.md): its Stream (stream.go) answers bad frames without failing the
// connection (a malformed header ends it), and bounds the requests in flight on the
// connection, telling a client of a call it holds back; end of input cancels every running
// call and ends the server; $/cancelRequest and tools/cancel cancel a call, which is
// answered -32800; every error carries a real code; a panic fails only its own request;
// handlers that wait run concurrently so permission/reply can answer an ask that a
// tools/execute waits on.
package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.lsp.dev/jsonrpc2"

	"github.com/toolsd/toolsd/internal/jsondec"
	"github.com/toolsd/toolsd/protocol"
)

// Backend is the workspace the server fronts; session.Workspace implements it. Its methods
// are called concurrently.
type Backend interface {
	Resolve(p protocol.ResolveParams) protocol.ResolveResult
	Execute(ctx context.Context, p protocol.ExecuteParams) (*protocol.ExecuteResult, error)
	Cancel(sessionID, callID string) bool
	Reply(p protocol.ReplyParams) (*protocol.ReplyResult, error)
	PendingAsks() []protocol.AskedParams
	SetTrusted(trusted bool) (bool, error)
	ListCalls(p protocol.CallsListParams) (*protocol.CallsListResult, error)
	GetCall(p protocol.CallsGetParams) (*protocol.CallRecord, error)
	ReadOutput(p protocol.OutputsReadParams) (*protocol.OutputsReadResult, error)
	// CallOutput is the output so far of a call in flight (calls/output).
	CallOutput(p protocol.CallsOutputParams) (*protocol.CallsOutputResult, error)
	Changes(ctx context.Context, p protocol.CallsChangesParams) (*protocol.CallsChangesResult, error)
	Revert(ctx context.Context, p protocol.CallsRevertParams) (*protocol.CallsRevertResult, error)
	StorePath() string
	Permissions() []string
	// Clients lists the clients attached to the workspace (clients/list).
	Clients() protocol.ClientsParams
	// Shutdown cancels the calls this connection made (shutdown).
	Shutdown()
	// Close cancels this connection's calls, waits for them to be recorded, and detaches
	// from the workspace (closing it when nobody else shares it).
	Close() error
}

// Notifier is handed to the backend to reach the editor. Safe for concurrent use.
type Notifier interface {
	Progress(p protocol.ProgressParams)
	Asked(p protocol.AskedParams)
	Answered(p protocol.AnsweredParams)
	Changed(p protocol.ChangedParams)
	Clients(p protocol.ClientsParams)
	// Hook sends hooks/run, a request, to an editor that subscribed to a hook point.
	Hook(ctx context.Context, p protocol.HookParams) (*protocol.HookResult, error)
}

// OpenFunc builds the backend for the workspace named in initialize.
type OpenFunc func(ctx context.Context, p protocol.InitializeParams, n Notifier) (Backend, error)

// Options configure Serve.
type Options struct {
	Version string
	// MaxMessage is the largest frame body accepted, in bytes. Zero means the workspace's
	// setting (limits.maxMessageBytes) once initialized, and DefaultMaxMessage before.
	MaxMessage int
	Open       OpenFunc
	Logger     *slog.Logger
}

// closeTimeout bounds how long teardown waits for calls to end and be recorded.
const closeTimeout = 5 * time.Second

// DefaultMaxMessage is the default frame body limit.
const DefaultMaxMessage = 8 << 20

const (
	stateNew = iota
	stateReady
	stateShutdown
)

// server is one connection's state.
type server struct {
	opts   Options
	log    *slog.Logger
	conn   jsonrpc2.Conn
	ctx    context.Context // cancelled when the connection ends
	cancel context.CancelFunc

	mu      sync.Mutex // guards state and backend
	state   int
	backend Backend

	reqMu sync.Mutex // guards reqs
	reqs  map[string]*request

	exitOnce sync.Once
	exit     chan int // the exit code, once the client says exit

	progress *progressQueue

	stream     *stream
	fixedLimit bool // --max-message was given: the settings do not change it

	// wantsProgress is the client's progress capability: without it, no tools/progress.
	wantsProgress atomic.Bool
}

// messageLimiter is implemented by backends whose settings name a message limit.
type messageLimiter interface {
	MaxMessageBytes() int64
}

// clientNamer is implemented by backends that name the client in progress (session.Client).
type clientNamer interface {
	Ref() protocol.ClientRef
}

// initializedObserver is implemented by backends that put work off until the client has
// its initialize result: Initialized is called on the initialized notification, on the
// read loop (it must not block).
type initializedObserver interface {
	Initialized()
}

// request is an incoming call that $/cancelRequest may cancel.
type request struct {
	cancelled bool
	cancel    context.CancelFunc
}

// Serve runs the protocol on in and out until the client sends exit or in ends, and returns
// the process exit code: 0 after shutdown then exit, 1 otherwise.
func Serve(ctx context.Context, in io.Reader, out io.Writer, closeFn func() error, opts Options) int {
	fixedLimit := opts.MaxMessage > 0
	if !fixedLimit {
		opts.MaxMessage = DefaultMaxMessage
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if closeFn == nil {
		closeFn = func() error { return nil }
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := &server{opts: opts, log: opts.Logger.With("component", "rpc"), ctx: ctx, cancel: cancel, reqs: map[string]*request{}, exit: make(chan int, 1), fixedLimit: fixedLimit}

	ended := make(chan error, 1)
	st := newStream(ctx, in, out, closeFn, opts.MaxMessage, s.log)
	s.stream = st
	st.onEnd = func(err error) {
		// End of stdin: the editor is gone. Cancel everything at once; the read loop
		// cannot be relied on to do it (JSONRPC.md).
		cancel()
		ended <- err
	}
	st.onHold = func(c *jsonrpc2.Call) { s.heldCall(c, protocol.StatusQueued) }
	st.onDrop = func(c *jsonrpc2.Call) { s.heldCall(c, protocol.StatusCancelled) }
	s.conn = jsonrpc2.NewConn(st, jsonrpc2.WithCodec(codec{}), jsonrpc2.WithPreempter(s))
	s.progress = newProgressQueue(func(p protocol.ProgressParams) {
		_ = s.conn.Notify(s.ctx, protocol.MethodToolsProgress, &p)
	}, progressHold)
	s.conn.Go(ctx, s.handle)

	code := 1
	select {
	case code = <-s.exit:
	case err := <-ended:
		if err != nil && !errors.Is(err, io.EOF) {
			s.log.Info("input ended", "err", err)
		}
	case <-s.conn.Done():
	case <-ctx.Done():
	}
	s.teardown()
	return code
}

// teardown cancels everything and waits, within bounds, for it to end.
func (s *server) teardown() {
	s.cancel()
	s.mu.Lock()
	b := s.backend
	s.backend = nil
	s.mu.Unlock()
	if b != nil {
		// Calls were cancelled with the context; a tool that ignores it must not keep the
		// daemon alive after the editor is gone.
		closed := make(chan struct{})
		go func() {
			if err := b.Close(); err != nil {
				s.log.Error("closing the workspace", "err", err)
			}
			close(closed)
		}()
		select {
		case <-closed:
		case <-time.After(closeTimeout):
			s.log.Error("the workspace did not close in time; exiting anyway", "timeout", closeTimeout)
		}
	}
	s.progress.close()
	done := make(chan struct{})
	go func() {
		_ = s.conn.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		s.log.Warn("connection did not close in time; exiting anyway")
		return
	}
	// Closing the connection closed the stream's input and output: its reader ends.
	select {
	case <-s.stream.inputDone:
	case <-time.After(2 * time.Second):
		s.log.Warn("input did not close in time; exiting anyway")
	}
}

// Preempt runs inline on the read loop, in wire order, before dispatch. It registers each
// incoming call so that a $/cancelRequest that follows it can cancel it even before its
// handler starts, and handles $/cancelRequest itself.
func (s *server) Preempt(ctx context.Context, req *jsonrpc2.Request) (any, error) {
	if req.Method() == protocol.MethodCancelRequest {
		var p protocol.CancelRequestParams
		if err := json.Unmarshal(req.Params(), &p); err == nil {
			s.cancelRequest(rawIDKey(p.ID))
		}
		return nil, nil // handled (a notification: nothing is sent)
	}
	if req.IsCall() {
		s.reqMu.Lock()
		s.reqs[idKey(req.ID())] = &request{}
		s.reqMu.Unlock()
	}
	return nil, jsonrpc2.ErrNotHandled
}

func (s *server) cancelRequest(key string) {
	s.reqMu.Lock()
	defer s.reqMu.Unlock()
	if r, ok := s.reqs[key]; ok {
		r.cancelled = true
		if r.cancel != nil {
			r.cancel()
		}
	}
}

// track binds a handler's context to its request's cancellation.
func (s *server) track(ctx context.Context, id jsonrpc2.ID) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	key := idKey(id)
	s.reqMu.Lock()
	r, ok := s.reqs[key]
	if !ok {
		r = &request{}
		s.reqs[key] = r
	}
	r.cancel = cancel
	if r.cancelled {
		cancel()
	}
	s.reqMu.Unlock()
	return ctx, func() {
		cancel()
		s.reqMu.Lock()
		delete(s.reqs, key)
		s.reqMu.Unlock()
	}
}

func idKey(id jsonrpc2.ID) string {
	if n, ok := id.Number(); ok {
		return "n:" + strconv.FormatInt(n, 10)
	}
	if v, ok := id.StringValue(); ok {
		return "s:" + v
	}
	return "null"
}

func rawIDKey(raw json.RawMessage) string {
	if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil { // a JSON integer
		return "n:" + strconv.FormatInt(n, 10)
	}
	var v string
	if json.Unmarshal(raw, &v) == nil {
		return "s:" + v
	}
	return "invalid"
}

// handle dispatches one request. It never panics and never returns an error for a
// notification (either would end the connection).
func (s *server) handle(ctx context.Context, req *jsonrpc2.Request) (result any, err error) {
	// The stream's messages own their bytes, so method and params outlive the read loop.
	method, params := req.Method(), json.RawMessage(req.Params())
	if !req.IsCall() {
		s.notification(ctx, method, params)
		return nil, nil
	}
	// A request answered on the read loop holds it until its answer is written; every
	// other request runs concurrently with the ones after it, and holds one of the
	// connection's in-flight slots until the stream has written its answer.
	if !inline(method) {
		jsonrpc2.Async(ctx)
	}
	// The library pools the request context and recycles it when the handler returns, so
	// nothing may derive from it; the detached context keeps the connection's lifetime,
	// and track adds this request's own cancellation.
	ctx, done := s.track(jsonrpc2.DetachContext(ctx), req.ID())
	defer done()
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("handler panicked", "method", method, "panic", r, "stack", string(debug.Stack()))
			result, err = nil, jsonrpc2.Errorf(jsonrpc2.InternalError, "internal error in %s: %v (the daemon keeps running; please report this)", method, r)
		}
	}()
	res, err := s.call(ctx, method, params)
	if err != nil {
		return nil, s.toRPCError(ctx, method, err)
	}
	return res, nil
}

// heldCall tells the client, as its call's progress, of a tools/execute held back for want
// of a slot (queued) or cancelled while held. It is called on the read loop. A call that
// will be refused before it runs gets no progress.
func (s *server) heldCall(c *jsonrpc2.Call, status string) {
	if c.Method() != protocol.MethodToolsExecute || !s.wantsProgress.Load() {
		return
	}
	var p protocol.ExecuteParams
	if decodeParams(json.RawMessage(c.Params()), &p) != nil || checkIDs("sessionID", p.SessionID, "messageID", p.MessageID, "callID", p.CallID) != nil {
		return
	}
	for _, v := range []string{p.SessionID, p.MessageID, p.CallID, p.Tool} {
		if strings.TrimSpace(v) == "" {
			return
		}
	}
	pp := protocol.ProgressParams{SessionID: p.SessionID, MessageID: p.MessageID, CallID: p.CallID, Tool: p.Tool, Status: status}
	s.mu.Lock()
	b := s.backend
	s.mu.Unlock()
	if n, ok := b.(clientNamer); ok {
		ref := n.Ref()
		pp.Client = &ref
	}
	s.progress.push(pp)
}

func (s *server) notification(ctx context.Context, method string, params json.RawMessage) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("notification handler panicked", "method", method, "panic", r)
		}
	}()
	switch method {
	case protocol.MethodInitialized:
		s.mu.Lock()
		b := s.backend
		s.mu.Unlock()
		if o, ok := b.(initializedObserver); ok {
			o.Initialized()
		}
	case protocol.MethodExit:
		s.mu.Lock()
		code := 1
		if s.state == stateShutdown {
			code = 0
		}
		s.mu.Unlock()
		s.exitOnce.Do(func() { s.exit <- code })
	default:
		s.log.Debug("ignoring notification", "method", method)
	}
}

// inline reports whether a request is answered on the read loop, in wire order, before the
// next frame is read: the lifecycle, and the quick requests that free calls waiting for a
// person (the stream lets them overtake requests it holds back).
func inline(method string) bool {
	switch method {
	case protocol.MethodInitialize, protocol.MethodShutdown, protocol.MethodPermissionReply, protocol.MethodPermissionList:
		return true
	}
	return false
}

// handlers maps methods (other than the lifecycle) to their handlers.
var handlers = map[string]func(s *server, ctx context.Context, b Backend, params json.RawMessage) (any, error){
	protocol.MethodToolsResolve:    handler((*server).resolve),
	protocol.MethodToolsExecute:    handler((*server).execute),
	protocol.MethodToolsCancel:     handler((*server).cancelCall),
	protocol.MethodPermissionReply: handler((*server).reply),
	protocol.MethodPermissionList:  handler((*server).listAsks),
	protocol.MethodClientsList:     handler((*server).listClients),
	protocol.MethodPermissionTrust: handler((*server).trust),
	protocol.MethodCallsList:       handler((*server).listCalls),
	protocol.MethodCallsGet:        handler((*server).getCall),
	protocol.MethodOutputsRead:     handler((*server).readOutput),
	protocol.MethodCallsOutput:     handler((*server).callOutput),
	protocol.MethodCallsChanges:    handler((*server).changes),
	protocol.MethodCallsRevert:     handler((*server).revert),
}

// handler adapts a typed handler: it decodes the params and reports a type mismatch with the
// field it happened in.
func handler[P, R any](f func(s *server, ctx context.Context, b Backend, p P) (R, error)) func(*server, context.Context, Backend, json.RawMessage) (any, error) {
	return func(s *server, ctx context.Context, b Backend, raw json.RawMessage) (any, error) {
		var p P
		if err := decodeParams(raw, &p); err != nil {
			return nil, err
		}
		return f(s, ctx, b, p)
	}
}

func (s *server) call(ctx context.Context, method string, params json.RawMessage) (any, error) {
	switch method {
	case protocol.MethodInitialize:
		return s.initialize(ctx, params)
	case protocol.MethodShutdown:
		return s.shutdown()
	}
	h, known := handlers[method]
	s.mu.Lock()
	state, b := s.state, s.backend
	s.mu.Unlock()
	switch {
	case state == stateNew:
		return nil, jsonrpc2.Errorf(protocol.CodeServerNotInitialized, "server not initialized: send initialize first (got %s)", method)
	case state == stateShutdown:
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidRequest, "server is shutting down: only exit is accepted (got %s)", method)
	case !known:
		return nil, jsonrpc2.Errorf(jsonrpc2.MethodNotFound, "method not found: %s", method)
	}
	return h(s, ctx, b, params)
}

// checkIDs refuses ids (given as name, value pairs) longer than maxIDBytes: a client names
// sessions, messages, calls and outputs, and some of those names become store keys.
func checkIDs(nameValues ...string) error {
	for i := 0; i+1 < len(nameValues); i += 2 {
		if n := len(nameValues[i+1]); n > maxIDBytes {
			return jsonrpc2.Errorf(jsonrpc2.InvalidParams, "invalid params: %s is %d bytes long; an id is at most %d bytes", nameValues[i], n, maxIDBytes)
		}
	}
	return nil
}

func decodeParams(raw json.RawMessage, v any) error {
	if len(raw) == 0 {
		return nil
	}
	if err := jsondec.Unmarshal(raw, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			field := te.Field
			if field == "" {
				field = "params"
			}
			return jsonrpc2.Errorf(jsonrpc2.InvalidParams, "invalid params: %s must be %s, not JSON %s", field, typeName(te.Type.Kind().String()), te.Value)
		}
		return jsonrpc2.Errorf(jsonrpc2.InvalidParams, "invalid params: %v", err)
	}
	return nil
}

func typeName(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "int", "int64", "float64", "int32":
		return "a number"
	case "slice":
		return "an array"
	case "struct", "map", "ptr":
		return "an object"
	}
	return kind
}

func (s *server) initialize(ctx context.Context, raw json.RawMessage) (any, error) {
	s.mu.Lock()
	state := s.state
	s.mu.Unlock()
	if state != stateNew {
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidRequest, "initialize was already called")
	}
	var p protocol.InitializeParams
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	if p.WorkspaceFolder == "" {
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "invalid params: workspaceFolder is required (an absolute path)")
	}
	if s.opts.Open == nil {
		return nil, jsonrpc2.Errorf(jsonrpc2.InternalError, "no workspace backend configured")
	}
	b, err := s.opts.Open(s.ctx, p, (*notifier)(s))
	if err != nil {
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "cannot open workspace %q: %v", p.WorkspaceFolder, err)
	}
	s.mu.Lock()
	s.state, s.backend = stateReady, b
	s.mu.Unlock()
	s.wantsProgress.Store(p.Capabilities != nil && p.Capabilities.Progress)
	if ml, ok := b.(messageLimiter); ok && !s.fixedLimit && ml.MaxMessageBytes() > 0 {
		s.stream.limit.Store(ml.MaxMessageBytes())
	}
	return protocol.InitializeResult{
		ServerInfo: protocol.ServerInfo{Name: "toolsd", Version: s.opts.Version},
		Capabilities: protocol.ServerCapabilities{
			Cancel: true, Progress: true, Ask: true, HotReload: true, MaxMessage: s.stream.limit.Load(),
			Permissions: b.Permissions(), Hooks: true,
		},
		StorePath: b.StorePath(),
	}, nil
}

func (s *server) shutdown() (any, error) {
	s.mu.Lock()
	if s.state == stateNew {
		s.mu.Unlock()
		return nil, jsonrpc2.Errorf(protocol.CodeServerNotInitialized, "server not initialized")
	}
	s.state = stateShutdown
	b := s.backend
	s.mu.Unlock()
	if b != nil {
		// Cancel what this connection runs; the store stays open until exit so records
		// complete.
		b.Shutdown()
	}
	return nil, nil
}

// notifier sends notifications to the client.
type notifier server

func (n *notifier) Progress(p protocol.ProgressParams) {
	if n.wantsProgress.Load() {
		n.progress.push(p)
	}
}

func (n *notifier) Asked(p protocol.AskedParams) {
	if err := n.conn.Notify(n.ctx, protocol.MethodPermissionAsked, p); err != nil {
		n.log.Debug("sending permission/asked failed", "err", err)
	}
}

func (n *notifier) Answered(p protocol.AnsweredParams) {
	if err := n.conn.Notify(n.ctx, protocol.MethodPermissionAnswered, p); err != nil {
		n.log.Debug("sending permission/answered failed", "err", err)
	}
}

func (n *notifier) Clients(p protocol.ClientsParams) {
	if err := n.conn.Notify(n.ctx, protocol.MethodClientsChanged, p); err != nil {
		n.log.Debug("sending clients/changed failed", "err", err)
	}
}

// Hook sends hooks/run to the editor and waits for its answer (hook.Requester). The request
// ends with ctx or with the connection; an answer that comes too late is dropped, and the
// editor is told with $/cancelRequest that it is no longer wanted.
func (n *notifier) Hook(ctx context.Context, p protocol.HookParams) (*protocol.HookResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(n.ctx, cancel)
	defer stop()
	var res protocol.HookResult
	id, err := n.conn.Call(ctx, protocol.MethodHooksRun, p, &res)
	if err != nil {
		if ctx.Err() != nil && n.ctx.Err() == nil {
			raw, _ := json.Marshal(id)
			_ = n.conn.Notify(n.ctx, protocol.MethodCancelRequest, protocol.CancelRequestParams{ID: raw})
		}
		return nil, err
	}
	return &res, nil
}

func (n *notifier) Changed(p protocol.ChangedParams) {
	if err := n.conn.Notify(n.ctx, protocol.MethodToolsChanged, p); err != nil {
		n.log.Debug("sending tools/changed failed", "err", err)
	}
}
