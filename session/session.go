// Package session runs tool calls: validate the untrusted arguments, ask permission, execute,
// truncate, persist, answer.
//
// A Service owns every call in flight for one workspace. Each call gets a context bound to
// its session, message and call id; cancelling it (tools/cancel, $/cancelRequest, the editor
// going away) withdraws its pending asks, kills its processes and ends it "cancelled". The
// call record is written to the store at every state change, and its final state is
// committed before the result is returned, so a result the editor got survives a crash.
//
// A call that can change the workspace gets a checkpoint window (package checkpoint): its
// record says how many paths it changed, calls/changes shows them, and calls/revert (Service.
// Revert, itself a recorded call) puts them back.
package session

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolsd/toolsd/audit"
	"github.com/toolsd/toolsd/checkpoint"
	"github.com/toolsd/toolsd/hook"
	"github.com/toolsd/toolsd/protocol"
	"github.com/toolsd/toolsd/registry"
)

// Store is what the pipeline needs of the store (store.Store through StoreAdapter).
type Store interface {
	CreateCall(rec *protocol.CallRecord) error
	UpdateCall(sessionID, callID string, fn func(*protocol.CallRecord)) error
	NewOutput(sessionID, callID string) (OutputSink, error)
	ReadLines(ctx context.Context, outputID string, offset, limit int) (string, int, int64, error)
	SessionGet(sessionID, key string) ([]byte, error)
	SessionPut(sessionID, key string, value []byte) error
}

// OutputSink is a full output being written to the store.
type OutputSink = sink

// Notifier sends notifications to the editor. Its methods are called from many goroutines
// and must not block for long (the rpc layer queues and coalesces).
type Notifier interface {
	Progress(p protocol.ProgressParams)
	Asked(p protocol.AskedParams)
}

// Options configure a Service.
type Options struct {
	// Workspace is the real absolute path of the workspace folder.
	Workspace string
	Registry  *registry.Registry
	Store     Store
	Policy    Policy
	Notifier  Notifier
	// CanAsk is the editor's ask capability; without it an ask is a rejection. It applies
	// when Asks is nil.
	CanAsk bool
	// Asks routes asks to the clients that can answer them; nil sends them to Notifier.Asked
	// when CanAsk is set.
	Asks   AskRouter
	Limits Limits
	Logger *slog.Logger
	Now    func() time.Time
	// Visible reports whether a tool is in the catalogue of a round (agent rules, model,
	// permission rules that deny it outright). nil shows every tool that its Models allows.
	Visible func(e *registry.Entry, agent string, model *protocol.Model) bool
	// AdaptSchema adapts a tool's schema to a model provider for tools/resolve. nil sends
	// the schema as it is.
	AdaptSchema func(providerID string, schema json.RawMessage) (json.RawMessage, error)
	// PrepareArgs rewrites the model's arguments before validation against the tool's
	// original schema (dropping the nulls a strict-mode model sends for absent optional
	// properties, say). nil leaves them as they are.
	PrepareArgs func(schema, args json.RawMessage) json.RawMessage
	// Observe reports whether a call repeats the session's previous calls often enough to
	// be a loop (doom_loop). nil never does.
	Observe func(sessionID, tool string, args []byte) bool
	// Audit exports every call's start and end and every decision; nil exports nothing.
	Audit *audit.Exporter
	// Checkpoints records what each changing call does to the workspace; nil records
	// nothing.
	Checkpoints *checkpoint.Tracker
	// Hooks runs the hooks at the points of each call; nil runs none.
	Hooks *hook.Runner
}

// Service runs the calls of one workspace. Safe for concurrent use.
type Service struct {
	opts   Options
	log    *slog.Logger
	broker *broker

	mu     sync.Mutex // guards calls and closed
	calls  map[callKey]*callState
	closed bool
	wg     sync.WaitGroup // one per call in flight

	agents agentCalls // agents' own calls between their before and after (external.go)
}

type callKey struct{ session, call string }

// callState is a call in flight.
type callState struct {
	sessionID, messageID, callID, tool, agent string
	permKey                                   string
	client                                    *protocol.ClientRef // who made the call; nil for none
	via                                       *protocol.ClientRef // the connection an agent's call came through (client names the agent); nil: client
	readOnly                                  bool                // a built-in that changes nothing
	cancel                                    context.CancelFunc
	out                                       atomic.Pointer[lockedWriter] // the tool's output while it runs (calls/output); nil before

	mu        sync.Mutex // guards decisions, hookRuns and personAnswered
	decisions []protocol.Decision
	hookRuns  []protocol.HookRun
	// personAnswered: a person allowed a request of this call (a before hook's ask is
	// then satisfied).
	personAnswered bool
	trace          *audit.Call // the call's audit trace (nil: none)

	// Set by the before hooks, before the call runs; read-only afterwards.
	hc        *hook.Call      // the call as its hooks see it (nil until a hook needs it)
	verdict   *hook.Verdict   // the before hooks' allow or ask, combined with the rules
	modelArgs json.RawMessage // the model's arguments, when a hook changed them
	hookArgs  json.RawMessage // the arguments the hooks changed them into
	contexts  []hook.Context  // what the hooks said for the model (also after ones)

	// record creates the call's running record, once (see Service.Execute); nil until the
	// call is prepared.
	recordOnce sync.Once
	recordFn   func() error
	recordErr  error
	recorded   bool // written under recordOnce, read after it
}

// from is the client the call came through: where its asks are routed (AskRouter.Targets).
func (c *callState) from() *protocol.ClientRef {
	if c.via != nil {
		return c.via
	}
	return c.client
}

// record makes sure the call's running record exists, creating it the first time.
func (c *callState) record() error {
	c.recordOnce.Do(func() {
		if c.recordFn == nil {
			return
		}
		c.recordErr = c.recordFn()
		c.recorded = c.recordErr == nil
	})
	return c.recordErr
}

func (c *callState) addDecision(d protocol.Decision) {
	c.mu.Lock()
	c.decisions = append(c.decisions, d)
	c.mu.Unlock()
	c.trace.Decision(d)
}

// answered reports whether a person allowed a request of the call.
func (c *callState) answered() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.personAnswered
}

func (c *callState) setAnswered() {
	c.mu.Lock()
	c.personAnswered = true
	c.mu.Unlock()
}

func (c *callState) addHookRuns(runs []protocol.HookRun) {
	if len(runs) == 0 {
		return
	}
	c.mu.Lock()
	c.hookRuns = append(c.hookRuns, runs...)
	c.mu.Unlock()
}

func (c *callState) takeHookRuns() []protocol.HookRun {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.hookRuns) == 0 {
		return nil
	}
	return append([]protocol.HookRun{}, c.hookRuns...)
}

func (c *callState) takeDecisions() []protocol.Decision {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]protocol.Decision{}, c.decisions...)
}

// New returns a Service.
func New(opts Options) *Service {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	opts.Limits = opts.Limits.withDefaults()
	s := &Service{opts: opts, log: opts.Logger.With("component", "session"), calls: map[callKey]*callState{}}
	router := opts.Asks
	if router == nil {
		router = singleRouter{canAsk: opts.CanAsk, n: opts.Notifier}
	}
	s.broker = &broker{policy: opts.Policy, router: router, now: opts.Now, hooks: opts.Hooks, pending: map[string]*pendingAsk{}}
	return s
}

// Cancel cancels a call in flight. With an empty sessionID it cancels every call with that
// callID. It reports whether a call was found.
func (s *Service) Cancel(sessionID, callID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	found := false
	for k, c := range s.calls {
		if k.call == callID && (sessionID == "" || k.session == sessionID) {
			c.cancel()
			found = true
		}
	}
	return found
}

// CancelClient cancels every call in flight that client made.
func (s *Service) CancelClient(clientID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.calls {
		if from := c.from(); from != nil && from.ID == clientID {
			c.cancel()
		}
	}
}

// Reply answers a pending ask (permission/reply) and returns the other asks it settled.
func (s *Service) Reply(p protocol.ReplyParams) ([]string, error) { return s.broker.reply(p, nil) }

// ReplyFrom is Reply for an answer given on a client, which the decision records.
func (s *Service) ReplyFrom(by *protocol.ClientRef, p protocol.ReplyParams) ([]string, error) {
	return s.broker.reply(p, by)
}

// Detached takes a client that went away off the asks shown to it (see AskRouter).
func (s *Service) Detached(clientID string) { s.broker.detached(clientID) }

// PendingAsks returns the asks waiting for a person (permission/list).
func (s *Service) PendingAsks() []protocol.AskedParams { return s.broker.list("") }

// Close cancels every call in flight and waits until they have ended and been recorded.
// Execute refuses new calls afterwards.
func (s *Service) Close() {
	s.mu.Lock()
	s.closed = true
	for _, c := range s.calls {
		c.cancel()
	}
	s.mu.Unlock()
	s.wg.Wait()
	s.closeAgentCalls()
}

// Resolve returns the catalogue of a round (tools/resolve).
func (s *Service) Resolve(p protocol.ResolveParams) protocol.ResolveResult {
	cat := s.opts.Registry.Catalog()
	res := protocol.ResolveResult{Tools: []protocol.ToolInfo{}, Diagnostics: cat.Diagnostics()}
	provider := ""
	if p.Model != nil {
		provider = p.Model.ProviderID
	}
	for _, e := range cat.Entries() {
		if !s.visible(e, p.Agent, p.Model) {
			continue
		}
		t, hidden := s.definition(e, p.Agent, p.Model)
		if hidden {
			continue
		}
		schema := t.Parameters
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		if s.opts.AdaptSchema != nil {
			adapted, err := s.opts.AdaptSchema(provider, schema)
			if err != nil {
				res.Diagnostics = append(res.Diagnostics, protocol.Diagnostic{Path: e.Path, Message: "tool " + e.ID + ": schema cannot be adapted for provider " + provider + ": " + err.Error(), Severity: "warning"})
			} else {
				schema = adapted
			}
		}
		res.Tools = append(res.Tools, protocol.ToolInfo{ID: e.ID, Description: t.Description, InputSchema: schema, Source: e.Source, Annotations: e.Annotations})
	}
	return res
}

// offered reports whether a tool is in the catalogue of a round and no definition hook hides
// it: what a call may name.
func (s *Service) offered(e *registry.Entry, agent string, model *protocol.Model) bool {
	if !s.visible(e, agent, model) {
		return false
	}
	_, hidden := s.definition(e, agent, model)
	return !hidden
}

func (s *Service) visible(e *registry.Entry, agent string, model *protocol.Model) bool {
	if s.opts.Visible != nil {
		return s.opts.Visible(e, agent, model)
	}
	return e.Models == nil || e.Models(model)
}
