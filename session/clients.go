package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/toolsd/toolsd/hook"
	"github.com/toolsd/toolsd/protocol"
)

// ClientSink is how the workspace reaches one attached client (rpc's connection to an
// editor, mcpserver's session with an agent). Its methods are called from many goroutines
// and must not block for long.
type ClientSink interface {
	// Progress reports a change of state of any call in the workspace; the sink keeps
	// what its client wants (an editor with the progress capability: every call; an MCP
	// client: its own calls).
	Progress(p protocol.ProgressParams)
	// Asked shows an ask that was routed to this client.
	Asked(p protocol.AskedParams)
	// Answered says that an ask shown to this client is no longer pending.
	Answered(p protocol.AnsweredParams)
	// Changed says that the catalogue changed.
	Changed(p protocol.ChangedParams)
	// Clients says which clients are attached, after each attach and detach.
	Clients(p protocol.ClientsParams)
}

// ClientOptions describe a client attaching to a workspace.
type ClientOptions struct {
	// Name and Version come from the client's initialize (clientInfo).
	Name, Version string
	// Kind is protocol.ClientEditor or protocol.ClientMCP.
	Kind string
	// CanAsk: the client can show asks to a person. An editor that can is shown the asks of
	// every client's calls; an MCP client only those of its own calls, when no editor can.
	CanAsk bool
	// InitOptions are an editor's initializationOptions: they become the workspace's editor
	// settings layer (the last editor to attach sets it). nil leaves the layer as it is.
	InitOptions json.RawMessage
	Sink        ClientSink
	// Hooks are the hook points the client subscribes to (an editor's hooks capability);
	// its Sink must then implement hook.Requester (hooks/run).
	Hooks []protocol.HookSubscription
	// Route keeps the asks of one ACP editor apart from every other client's: `toolsd acp`
	// attaches with a route R of its own, and the `toolsd mcp` it adds to an agent's session
	// with R/LABEL. The asks of a call made through a client with a route are shown only to
	// the editors of the same route (R's proxy), or else back to the calling client; an
	// editor with a route is shown no other asks. Empty: the workspace's editors without a
	// route show the client's asks.
	Route string
}

// Client is one client attached to a Workspace: the calls it makes are recorded as its
// calls, and it hears what the workspace tells its clients. It implements rpc.Backend. Safe
// for concurrent use.
type Client struct {
	w      *Workspace
	ref    protocol.ClientRef
	canAsk bool
	route  string // ClientOptions.Route
	sink   ClientSink
	owns   bool // Close closes the workspace too (a standalone daemon)

	hooks     []protocol.HookSubscription // the hooks it runs
	requester hook.Requester              // how they are asked (its Sink)

	mu     sync.Mutex // guards closed
	closed bool
	wg     sync.WaitGroup // calls in flight

	out *pump // delivers to sink, so that a client slow to read holds up only itself
}

// maxQueued bounds a client's undelivered notifications; past it, progress is dropped for
// that client (a client that stopped reading), never asks and answers.
const maxQueued = 4096

// pump delivers a client's notifications in order on a goroutine of its own. Started by
// Attach, stopped by Client.Close.
type pump struct {
	mu      sync.Mutex // guards q, latest, stopped and sends on wake
	q       []func()
	latest  func() // a notification that only its newest value matters for (clients/changed)
	stopped bool
	wake    chan struct{} // buffered 1
}

func newPump(wg *sync.WaitGroup) *pump {
	p := &pump{wake: make(chan struct{}, 1)}
	wg.Add(1)
	go func() {
		defer wg.Done()
		p.run()
	}()
	return p
}

func (p *pump) push(f func(), droppable bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped || (droppable && len(p.q) >= maxQueued) {
		return
	}
	p.q = append(p.q, f)
	p.signal()
}

// replace sets the latest-only notification, replacing one not yet delivered.
func (p *pump) replace(f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	p.latest = f
	p.signal()
}

// signal wakes run; called with mu held.
func (p *pump) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *pump) run() {
	for range p.wake {
		for {
			p.mu.Lock()
			if p.stopped {
				p.mu.Unlock()
				return
			}
			var f func()
			switch {
			case len(p.q) > 0:
				f = p.q[0]
				p.q[0] = nil
				p.q = p.q[1:]
			case p.latest != nil:
				f, p.latest = p.latest, nil
			}
			p.mu.Unlock()
			if f == nil {
				break
			}
			f()
		}
	}
}

// stop drops what is still queued; the goroutine ends after a delivery in progress (which
// the connection's end interrupts). Workspace.Close joins it.
func (p *pump) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.stopped {
		p.stopped = true
		p.q, p.latest = nil, nil
		close(p.wake)
	}
}

// hub is the set of clients attached to a workspace; it routes asks and fans out
// notifications. Safe for concurrent use.
type hub struct {
	prefix string // random per workspace, so connection ids differ across daemon restarts

	mu       sync.Mutex // guards clients, seq, closed and announcing
	clients  []*Client  // in the order they attached; replaced, never changed in place (snapshot)
	seq      uint64
	closed   bool
	announce *time.Timer // pending clients/changed, nil when none is
	pumps    sync.WaitGroup
}

// announceDelay gathers attaches and detaches into one clients/changed (a burst of clients
// connecting at once costs one list per client, not one per pair).
const announceDelay = 50 * time.Millisecond

func (h *hub) init() {
	var b [3]byte
	_, _ = rand.Read(b[:])
	h.prefix = hex.EncodeToString(b[:])
}

// snapshot is the clients attached now. The slice is shared (every notification of every
// call takes one): it must not be changed.
func (h *hub) snapshot() []*Client {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.clients
}

func (h *hub) byID(ids []string) []*Client {
	var out []*Client
	for _, c := range h.snapshot() {
		if slices.Contains(ids, c.ref.ID) {
			out = append(out, c)
		}
	}
	return out
}

// Targets implements AskRouter: the editors that can show asks and are of the caller's route
// (ClientOptions.Route; no route: every editor without one), or else the calling client when
// it can. A caller no longer attached has none: its calls are ending.
func (h *hub) Targets(caller *protocol.ClientRef) []string {
	clients := h.snapshot()
	route := ""
	if caller != nil {
		i := slices.IndexFunc(clients, func(c *Client) bool { return c.ref.ID == caller.ID })
		if i < 0 {
			return nil
		}
		route = routeGroup(clients[i].route)
	}
	var editors, self []string
	for _, c := range clients {
		switch {
		case !c.canAsk:
		case c.ref.Kind == protocol.ClientEditor && routeGroup(c.route) == route:
			editors = append(editors, c.ref.ID)
		case caller != nil && c.ref.ID == caller.ID:
			self = append(self, c.ref.ID)
		}
	}
	if len(editors) > 0 {
		return editors
	}
	return self
}

// routeGroup is the proxy's part of a route: R of R/LABEL.
func routeGroup(route string) string {
	if i := strings.IndexByte(route, '/'); i >= 0 {
		return route[:i]
	}
	return route
}

// Show implements AskRouter.
func (h *hub) Show(targets []string, p protocol.AskedParams) {
	for _, c := range h.byID(targets) {
		c.out.push(func() { c.sink.Asked(p) }, false)
	}
}

// Answered implements AskRouter.
func (h *hub) Answered(targets []string, p protocol.AnsweredParams) {
	for _, c := range h.byID(targets) {
		c.out.push(func() { c.sink.Answered(p) }, false)
	}
}

// Progress implements Notifier: every client hears of every call (its sink filters).
func (h *hub) Progress(p protocol.ProgressParams) {
	for _, c := range h.snapshot() {
		c.out.push(func() { c.sink.Progress(p) }, true)
	}
}

// Asked implements Notifier; asks go through the AskRouter methods instead.
func (h *hub) Asked(protocol.AskedParams) {}

func (h *hub) changed(p protocol.ChangedParams) {
	for _, c := range h.snapshot() {
		c.out.push(func() { c.sink.Changed(p) }, false)
	}
}

func (h *hub) list() protocol.ClientsParams {
	out := protocol.ClientsParams{Clients: []protocol.ClientRef{}}
	for _, c := range h.snapshot() {
		out.Clients = append(out.Clients, c.ref)
	}
	return out
}

// announced schedules clients/changed to every client.
func (h *hub) announced() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || h.announce != nil {
		return
	}
	h.announce = time.AfterFunc(announceDelay, func() {
		h.mu.Lock()
		h.announce = nil
		h.mu.Unlock()
		p := h.list()
		for _, c := range h.snapshot() {
			c.out.replace(func() { c.sink.Clients(p) })
		}
	})
}

// close stops announcing and waits for every client's deliveries to end.
func (h *hub) close() {
	h.mu.Lock()
	h.closed = true
	if h.announce != nil {
		h.announce.Stop()
		h.announce = nil
	}
	for _, c := range h.clients {
		c.out.stop()
	}
	h.mu.Unlock()
	h.pumps.Wait()
}

// Attach adds a client to the workspace and tells every client (the new one too) who is
// attached. The client's Close detaches it.
func (w *Workspace) Attach(o ClientOptions) (*Client, error) {
	if o.Sink == nil {
		return nil, fmt.Errorf("session: attach: no sink")
	}
	if o.Kind == "" {
		o.Kind = protocol.ClientEditor
	}
	if o.Name == "" {
		o.Name = "unknown " + o.Kind + " client"
	}
	w.hub.mu.Lock()
	if w.hub.closed {
		w.hub.mu.Unlock()
		return nil, ErrClosed
	}
	w.hub.seq++
	c := &Client{w: w, canAsk: o.CanAsk, route: o.Route, sink: o.Sink, out: newPump(&w.hub.pumps), ref: protocol.ClientRef{
		ID: w.hub.prefix + "-" + strconv.FormatUint(w.hub.seq, 10), Name: o.Name, Version: o.Version, Kind: o.Kind,
	}}
	var bad []string
	if len(o.Hooks) > 0 && o.Kind == protocol.ClientEditor {
		var subs []protocol.HookSubscription
		subs, bad = checkSubscriptions(o.Hooks)
		r, ok := o.Sink.(hook.Requester)
		if !ok {
			subs, bad = nil, append(bad, "the client cannot be sent hooks/run")
		}
		c.hooks, c.requester = subs, r
	}
	w.hub.clients = append(slices.Clip(w.hub.clients), c) // a new array: snapshots share the old
	w.hub.mu.Unlock()
	if len(bad) > 0 {
		w.log.Warn("hook subscriptions refused", "client", c.ref.ID, "name", c.ref.Name, "why", strings.Join(bad, "; "))
		w.setClientDiags(c.ref.ID, c.ref.Name, bad)
	}
	if len(c.hooks) > 0 {
		w.clientHooksChanged()
	}
	if o.InitOptions != nil && o.Kind == protocol.ClientEditor {
		w.settingsSrc.SetEditor(o.InitOptions)
	}
	w.log.Info("client attached", "client", c.ref.ID, "name", c.ref.Name, "kind", c.ref.Kind, "ask", c.canAsk)
	w.hub.announced()
	return c, nil
}

// Clients is the number of attached clients.
func (w *Workspace) Clients() int {
	w.hub.mu.Lock()
	defer w.hub.mu.Unlock()
	return len(w.hub.clients)
}

// Open opens a workspace for one client (a standalone daemon): closing the client closes
// the workspace.
func Open(ctx context.Context, wo WorkspaceOptions, co ClientOptions) (*Client, error) {
	w, err := OpenWorkspace(ctx, wo)
	if err != nil {
		return nil, err
	}
	c, err := w.Attach(co)
	if err != nil {
		_ = w.Close()
		return nil, err
	}
	c.owns = true
	return c, nil
}

// Ref names the client.
func (c *Client) Ref() protocol.ClientRef { return c.ref }

// Workspace is the workspace the client is attached to.
func (c *Client) Workspace() *Workspace { return c.w }

// Close cancels the client's calls in flight, waits until they are recorded, and detaches
// it: asks only it was showing go to whoever can answer them now. A client opened by Open
// closes its workspace too.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	h := &c.w.hub
	h.mu.Lock()
	h.clients = slices.DeleteFunc(slices.Clone(h.clients), func(x *Client) bool { return x == c })
	h.mu.Unlock()
	if len(c.hooks) > 0 {
		c.w.clientHooksChanged()
	}
	c.w.setClientDiags(c.ref.ID, "", nil)
	c.w.svc.Detached(c.ref.ID)
	c.w.svc.CancelClient(c.ref.ID)
	c.w.svc.endHeld(c.ref.ID)
	c.wg.Wait()
	c.out.stop()
	c.w.log.Info("client detached", "client", c.ref.ID, "name", c.ref.Name)
	h.announced()
	if c.owns {
		return c.w.Close()
	}
	return nil
}

// Initialized is called once the client has its initialize result (the initialized
// notification): the workspace starts the work it put off so as not to delay that answer,
// the sandbox's namespace probe. Later calls, and those of other clients, do nothing.
func (c *Client) Initialized() { c.w.sandbox.startProbe() }

// Shutdown cancels the client's calls in flight (the toolsd protocol's shutdown); the client
// stays attached until Close.
func (c *Client) Shutdown() { c.w.svc.CancelClient(c.ref.ID) }

// Resolve implements rpc.Backend.
func (c *Client) Resolve(p protocol.ResolveParams) protocol.ResolveResult { return c.w.Resolve(p) }

// Execute implements rpc.Backend: the call is recorded as this client's.
func (c *Client) Execute(ctx context.Context, p protocol.ExecuteParams) (*protocol.ExecuteResult, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	c.wg.Add(1)
	c.mu.Unlock()
	defer c.wg.Done()
	ref := c.ref
	return c.w.svc.ExecuteFor(ctx, &ref, p)
}

// Cancel implements rpc.Backend: any client may cancel any call of the workspace (the
// editor's Stop button on an agent's call).
func (c *Client) Cancel(sessionID, callID string) bool { return c.w.svc.Cancel(sessionID, callID) }

// Reply implements rpc.Backend: the decision records this client as where the person answered.
func (c *Client) Reply(p protocol.ReplyParams) (*protocol.ReplyResult, error) {
	ref := c.ref
	released, err := c.w.svc.ReplyFrom(&ref, p)
	if err != nil {
		return nil, err
	}
	return &protocol.ReplyResult{Released: nonNil(released)}, nil
}

// PendingAsks implements rpc.Backend: the asks waiting for a person that were shown to this
// client (those of its route; see Targets).
func (c *Client) PendingAsks() []protocol.AskedParams { return c.w.svc.broker.list(c.ref.ID) }

// SetTrusted implements rpc.Backend.
func (c *Client) SetTrusted(trusted bool) (bool, error) { return c.w.SetTrusted(trusted) }

// ListCalls implements rpc.Backend.
func (c *Client) ListCalls(p protocol.CallsListParams) (*protocol.CallsListResult, error) {
	return c.w.ListCalls(p)
}

// GetCall implements rpc.Backend.
func (c *Client) GetCall(p protocol.CallsGetParams) (*protocol.CallRecord, error) {
	return c.w.GetCall(p)
}

// CallOutput implements rpc.Backend.
func (c *Client) CallOutput(p protocol.CallsOutputParams) (*protocol.CallsOutputResult, error) {
	return c.w.svc.CallOutput(p)
}

// ReadOutput implements rpc.Backend.
func (c *Client) ReadOutput(p protocol.OutputsReadParams) (*protocol.OutputsReadResult, error) {
	return c.w.ReadOutput(p)
}

// StorePath implements rpc.Backend.
func (c *Client) StorePath() string { return c.w.StorePath() }

// Permissions implements rpc.Backend.
func (c *Client) Permissions() []string { return c.w.Permissions() }

// MaxMessageBytes is the message limit the settings name.
func (c *Client) MaxMessageBytes() int64 { return c.w.MaxMessageBytes() }

// Changes implements rpc.Backend (calls/changes).
func (c *Client) Changes(ctx context.Context, p protocol.CallsChangesParams) (*protocol.CallsChangesResult, error) {
	return c.w.Changes(ctx, p)
}

// Revert implements rpc.Backend (calls/revert).
func (c *Client) Revert(ctx context.Context, p protocol.CallsRevertParams) (*protocol.CallsRevertResult, error) {
	return c.w.Revert(ctx, p)
}

// Clients implements rpc.Backend: every client attached to the workspace.
func (c *Client) Clients() protocol.ClientsParams { return c.w.hub.list() }
