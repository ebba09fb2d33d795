package session

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"

	"github.com/toolsd/toolsd/audit"
	"github.com/toolsd/toolsd/permission"
	"github.com/toolsd/toolsd/protocol"
	"github.com/toolsd/toolsd/registry"
)

// ParamsError reports a malformed tools/execute request (a JSON-RPC error, not a result).
type ParamsError struct{ Msg string }

func (e *ParamsError) Error() string { return e.Msg }

// noTruncateCap bounds the output of tools that page their own output.
const noTruncateCap = 1 << 20

// Execute runs one tool call and returns its result. Unknown tools, invalid arguments,
// refused permissions and failing tools are results with status "error"; the error is a
// *ParamsError for a malformed request, ErrDuplicate for a callID already used in the
// session, ErrCancelled when the call was cancelled, and other errors for internal faults.
func (s *Service) Execute(ctx context.Context, p protocol.ExecuteParams) (*protocol.ExecuteResult, error) {
	return s.ExecuteFor(ctx, nil, p)
}

// ExecuteFor is Execute for a call that client made: the record, progress and asks name it.
func (s *Service) ExecuteFor(ctx context.Context, client *protocol.ClientRef, p protocol.ExecuteParams) (*protocol.ExecuteResult, error) {
	for _, f := range [][2]string{{"sessionID", p.SessionID}, {"messageID", p.MessageID}, {"callID", p.CallID}, {"tool", p.Tool}} {
		if strings.TrimSpace(f[1]) == "" {
			return nil, &ParamsError{fmt.Sprintf("tools/execute: %s is required and must be a non-empty string", f[0])}
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c := &callState{sessionID: p.SessionID, messageID: p.MessageID, callID: p.CallID, tool: p.Tool, agent: p.Agent, cancel: cancel, client: client}
	k := callKey{p.SessionID, p.CallID}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	if _, dup := s.calls[k]; dup {
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: call %q is already running in session %q", ErrDuplicate, p.CallID, p.SessionID)
	}
	s.calls[k] = c
	s.wg.Add(1)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.calls, k)
		s.mu.Unlock()
		s.wg.Done()
	}()

	args := p.Args
	if len(args) == 0 {
		args = json.RawMessage("null")
	}
	rec := &protocol.CallRecord{
		CallID: p.CallID, SessionID: p.SessionID, MessageID: p.MessageID, Tool: p.Tool, Agent: p.Agent, Model: p.Model,
		Status: protocol.StatusRunning, Args: append(json.RawMessage(nil), args...), Metadata: json.RawMessage("{}"),
		Attachments: []protocol.Attachment{}, Decisions: []protocol.Decision{}, StartedAt: s.opts.Now().UTC(), Client: client,
	}
	c.trace = s.opts.Audit.StartCall(audit.CallInfo{SessionID: p.SessionID, MessageID: p.MessageID, CallID: p.CallID, Tool: p.Tool, Agent: p.Agent}, rec.StartedAt)
	defer func() {
		end := s.opts.Now().UTC()
		if rec.EndedAt != nil {
			end = *rec.EndedAt
		}
		c.trace.End(rec.Tool, rec.Status, rec.Error, end)
	}()
	s.progress(c, protocol.StatusPending, "", nil)

	// Looking the tool up, validating the arguments and the before hooks (whose own doings
	// are not the call's) touch nothing of the call, so they come before the record, and a
	// call refused there is recorded once, in its final state. A call that
	// runs is recorded as running before it can change anything, so that a crash leaves it
	// interrupted, and again when it ends. A read-only built-in changes nothing: it is
	// recorded once, when it ends, unless it waits for a person first.
	e, args, refused := s.prepare(c, p, args)
	if refused == nil {
		if s.hooksActive() {
			c.hc = s.hookCall(c, p, e, args)
		}
		args, refused = s.before(ctx, c, p, e, args)
	}
	if c.modelArgs != nil {
		rec.ModelArgs, rec.Args = c.modelArgs, append(json.RawMessage(nil), c.hookArgs...)
	}
	if refused != nil {
		refused.fill(rec, c)
		rec.EndedAt = ptr(s.opts.Now().UTC())
		if err := s.opts.Store.CreateCall(rec); err != nil {
			return nil, s.recordError(p, err)
		}
	} else {
		rec.Tool = e.ID
		initial := *rec
		c.recordFn = func() error { return s.opts.Store.CreateCall(&initial) }
		if !c.readOnly {
			if err := c.record(); err != nil {
				return nil, s.recordError(p, err)
			}
		}
		r := s.run(ctx, c, p, e, args)
		// Close the record's window: no running record may appear after the final one, and
		// Do orders this goroutine after one made by an ask.
		c.recordOnce.Do(func() {})
		if err := c.recordErr; err != nil {
			return nil, s.recordError(p, err)
		}
		r.fill(rec, c)
		rec.EndedAt = ptr(s.opts.Now().UTC())
		var err error
		if c.recorded {
			err = s.opts.Store.UpdateCall(p.SessionID, p.CallID, func(stored *protocol.CallRecord) { *stored = *rec })
		} else {
			err = s.opts.Store.CreateCall(rec)
		}
		if err != nil {
			if isDuplicate(err) {
				return nil, s.recordError(p, err)
			}
			s.log.Error("recording the result failed", "call", p.CallID, "err", err)
			return nil, fmt.Errorf("the call ran, but its result could not be recorded: %w", err)
		}
	}
	s.progress(c, rec.Status, rec.Title, nil)
	if rec.Status == protocol.StatusCancelled {
		return nil, ErrCancelled
	}
	return &protocol.ExecuteResult{
		CallID: rec.CallID, Status: rec.Status, Title: rec.Title, Output: rec.Output, Metadata: rec.Metadata,
		Attachments: rec.Attachments, Truncated: rec.Truncated, OutputID: rec.OutputID, Error: rec.Error,
	}, nil
}

// recordError turns a failure to create a call's record into the error Execute returns.
func (s *Service) recordError(p protocol.ExecuteParams, err error) error {
	if isDuplicate(err) {
		return fmt.Errorf("%w: call %q was already made in session %q; use a new callID for a new call", ErrDuplicate, p.CallID, p.SessionID)
	}
	return fmt.Errorf("recording the call: %w", err)
}

// outcome is how a call ended.
type outcome struct {
	status      string
	tool        string // the repaired tool id
	title       string
	output      string
	errText     string
	metadata    map[string]any
	attachments []registry.Attachment
	truncated   bool
	outputID    string
	changes     int // paths of the workspace the call changed
}

func (o *outcome) fill(rec *protocol.CallRecord, c *callState) {
	rec.Status, rec.Title, rec.Output, rec.Error = o.status, o.title, o.output, o.errText
	rec.Truncated, rec.OutputID, rec.Changes = o.truncated, o.outputID, o.changes
	rec.Tool = cmp.Or(o.tool, rec.Tool)
	if o.metadata == nil {
		o.metadata = map[string]any{}
	}
	if b, err := json.Marshal(o.metadata); err == nil {
		rec.Metadata = b
	} else {
		rec.Metadata = json.RawMessage(`{}`)
	}
	rec.Decisions = c.takeDecisions()
	rec.Hooks = c.takeHookRuns()
	if len(c.contexts) > 0 {
		if rec.Status == protocol.StatusCompleted {
			rec.Output = withContext(rec.Output, c.contexts)
		} else {
			rec.Error = withContext(rec.Error, c.contexts)
		}
	}
	rec.Attachments = []protocol.Attachment{}
	for i, a := range o.attachments {
		rec.Attachments = append(rec.Attachments, protocol.Attachment{
			ID: "att_" + c.callID + "_" + strconv.Itoa(i+1), SessionID: c.sessionID, MessageID: c.messageID,
			Mime: a.Mime, Filename: a.Filename, Data: base64.StdEncoding.EncodeToString(a.Data),
		})
	}
}

func failed(msg string) outcome { return outcome{status: protocol.StatusError, errText: msg} }

// prepare looks the tool up (repairing its case) and validates the arguments. It returns
// the entry and the arguments to run with, or the outcome of a call refused before running.
func (s *Service) prepare(c *callState, p protocol.ExecuteParams, args json.RawMessage) (*registry.Entry, json.RawMessage, *outcome) {
	cat := s.opts.Registry.Catalog()
	e, ok := cat.Lookup(p.Tool)
	if ok && !s.visible(e, p.Agent, p.Model) {
		ok = false
	}
	if !ok {
		o := failed(s.unknownTool(cat, p))
		return nil, nil, &o
	}
	if _, hidden := s.definition(e, p.Agent, p.Model); hidden {
		o := failed(s.unknownTool(cat, p))
		return nil, nil, &o
	}
	c.tool = e.ID
	c.permKey = e.PermissionKey()
	c.readOnly = e.ReadOnly && e.Source == registry.SourceBuiltin
	if s.opts.PrepareArgs != nil {
		args = s.opts.PrepareArgs(e.Parameters, args)
	}
	if err := e.Validate(args); err != nil {
		var ve *registry.ValidationError
		if errors.As(err, &ve) {
			ve.Schema = e.Parameters
		}
		o := failed(err.Error())
		o.tool = e.ID
		return nil, nil, &o
	}
	return e, args, nil
}

// run executes a prepared call and truncates its output. It never returns a Go error:
// everything is an outcome.
func (s *Service) run(ctx context.Context, c *callState, p protocol.ExecuteParams, e *registry.Entry, args json.RawMessage) outcome {
	if s.opts.Observe != nil && s.opts.Observe(p.SessionID, e.ID, args) {
		_, err := s.ask(ctx, c, registry.AskRequest{
			Permission: "doom_loop", Patterns: []string{e.ID},
			Metadata: map[string]any{"tool": e.ID, "args": json.RawMessage(args), "reason": permission.DoomLoopText(e.ID)},
		})
		if err != nil {
			return s.ended(ctx, e.ID, err)
		}
	}

	s.progress(c, protocol.StatusRunning, "", nil)

	tr := newTruncator(s.opts.Limits, func() (sink, error) { return s.opts.Store.NewOutput(c.sessionID, c.callID) })
	w := &lockedWriter{w: tr}
	c.out.Store(w)
	call := &registry.Call{
		SessionID: c.sessionID, MessageID: c.messageID, CallID: c.callID, Agent: c.agent, Model: p.Model, Tool: e.ID,
		Workspace: s.opts.Workspace,
		Output:    w,
		Progress:  func(title string, md map[string]any) { s.progress(c, protocol.StatusRunning, title, md) },
		Ask: func(ctx context.Context, req registry.AskRequest) error {
			_, err := s.ask(ctx, c, req)
			return err
		},
		Outputs: s.opts.Store,
		State:   sessionState{s.opts.Store, c.sessionID},
	}
	win := s.window(c, e)
	if win != nil {
		call.Changes = win
	}
	res, err := s.safeExecute(ctx, e, call, args)
	w.close()
	o := s.finish(ctx, tr, w, e, res, err)
	// After hooks run while the checkpoint window is open: what they change (a formatter's
	// rewrite of the file the call edited) is part of the call's checkpoint, with a note
	// that says so.
	hooked := s.after(ctx, c, &o)
	if win != nil {
		if len(hooked) > 0 {
			win.Note(fmt.Sprintf("the after hooks %s ran before this checkpoint closed: what they changed is part of it", strings.Join(hooked, ", ")))
		}
		// The look after the call happens even when it was cancelled: its processes are
		// gone by now, and what they changed is on record.
		n, cerr := win.End(context.WithoutCancel(ctx))
		if cerr != nil {
			s.log.Error("recording a call's checkpoint failed", "call", c.callID, "err", cerr)
		}
		o.changes = n
	}
	return o
}

// finish makes a call's outcome from what its tool returned: the output truncated, the
// status.
func (s *Service) finish(ctx context.Context, tr *truncator, w *lockedWriter, e *registry.Entry, res *registry.Result, err error) outcome {
	if res != nil && res.NoTruncate && !w.wrote {
		// The tool pages its own output (read): keep it whole up to a hard cap.
		tr = newTruncator(Limits{Lines: 1 << 30, Bytes: noTruncateCap}, tr.open)
	}
	var text, outputID string
	var truncated bool
	if res != nil && !w.wrote && tr.fits(res.Output) {
		// The usual case, a result that needs no cut: the truncator would copy it twice
		// to return it as it is.
		text = res.Output
	} else {
		if res != nil && res.Output != "" {
			if w.wrote && !w.endsInNewline {
				_, _ = tr.Write([]byte("\n"))
			}
			_, _ = tr.Write([]byte(res.Output))
		}
		text, truncated, outputID, _ = tr.finish()
	}
	o := outcome{status: protocol.StatusCompleted, tool: e.ID, output: text, truncated: truncated, outputID: outputID}
	if res != nil {
		o.title, o.metadata, o.attachments = res.Title, res.Metadata, res.Attachments
	}
	if ctx.Err() != nil {
		o.status = protocol.StatusCancelled
		o.errText = "the call was cancelled"
		return o
	}
	if err != nil {
		o.status = protocol.StatusError
		o.errText = err.Error()
	}
	return o
}

// ended turns an error from an ask before execution into an outcome.
func (s *Service) ended(ctx context.Context, tool string, err error) outcome {
	o := failed(err.Error())
	o.tool = tool
	if ctx.Err() != nil {
		o.status = protocol.StatusCancelled
	}
	return o
}

func (s *Service) ask(ctx context.Context, c *callState, req registry.AskRequest) (protocol.Decision, error) {
	dec, err := s.broker.ask(ctx, c, req)
	c.addDecision(dec)
	return dec, err
}

func (s *Service) unknownTool(cat *registry.Catalog, p protocol.ExecuteParams) string {
	allowed := func(e *registry.Entry) bool { return s.offered(e, p.Agent, p.Model) }
	var b strings.Builder
	fmt.Fprintf(&b, "Unknown tool %q: no such tool is available", p.Tool)
	if p.Agent != "" {
		fmt.Fprintf(&b, " to agent %q", p.Agent)
	}
	b.WriteString(".")
	if near := cat.Closest(p.Tool, 3, allowed); len(near) > 0 {
		fmt.Fprintf(&b, " Did you mean %s?", strings.Join(quoteAll(near), " or "))
	}
	var ids []string
	for _, e := range cat.Entries() {
		if allowed(e) {
			ids = append(ids, e.ID)
		}
	}
	fmt.Fprintf(&b, " Call one of the available tools: %s.", strings.Join(ids, ", "))
	return b.String()
}

// safeExecute runs the tool, turning a panic into an error for this call only.
func (s *Service) safeExecute(ctx context.Context, e *registry.Entry, call *registry.Call, args json.RawMessage) (res *registry.Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("tool panicked", "tool", e.ID, "call", call.CallID, "panic", r, "stack", string(debug.Stack()))
			res = nil
			err = fmt.Errorf("tool %q failed with an internal error (%v); this is a bug in the tool, not in your call", e.ID, r)
		}
	}()
	return e.Execute(ctx, call, args)
}

func (s *Service) progress(c *callState, status, title string, md map[string]any) {
	if s.opts.Notifier == nil {
		return
	}
	var raw json.RawMessage
	if md != nil {
		if b, err := json.Marshal(md); err == nil {
			raw = b
		}
	}
	s.opts.Notifier.Progress(protocol.ProgressParams{SessionID: c.sessionID, MessageID: c.messageID, CallID: c.callID, Tool: c.tool, Status: status, Title: title, Metadata: raw, Client: c.client})
}

// lockedWriter serializes a tool's writes to call.Output and stops them after Execute
// returned (a goroutine the tool forgot cannot write into a finished result).
type lockedWriter struct {
	mu            sync.Mutex // guards the fields below
	w             *truncator
	closed        bool
	wrote         bool
	endsInNewline bool
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, errors.New("the call has ended")
	}
	if len(p) > 0 {
		l.wrote = true
		l.endsInNewline = p[len(p)-1] == '\n'
	}
	return l.w.Write(p)
}

func (l *lockedWriter) close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
}

// sessionState adapts the store to registry.SessionState.
type sessionState struct {
	st      Store
	session string
}

func (s sessionState) Get(_ context.Context, key string) ([]byte, error) {
	return s.st.SessionGet(s.session, key)
}
func (s sessionState) Put(_ context.Context, key string, v []byte) error {
	return s.st.SessionPut(s.session, key, v)
}

func ptr[T any](v T) *T { return &v }
