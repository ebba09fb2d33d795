package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/toolsd/toolsd/builtin"
	"github.com/toolsd/toolsd/checkpoint"
	"github.com/toolsd/toolsd/internal/textdiff"
	"github.com/toolsd/toolsd/mcp"
	"github.com/toolsd/toolsd/permission"
	"github.com/toolsd/toolsd/protocol"
	"github.com/toolsd/toolsd/registry"
	"github.com/toolsd/toolsd/store"
)

// An agent's own tool call (Claude Code's Bash, Codex's apply_patch), reported by the agent's
// hook (`toolsd hook`, docs/agents.md): agents/before decides it through the broker, as the
// toolsd tool it stands for would ask, and opens its record and its checkpoint window;
// agents/after closes them with what the tool returned. Between the two the call is open
// here; it ends when its after comes, when it has been open for maxAgentCall (no after will
// come: the agent was stopped), or when the service closes (interrupted).

// maxAgentCall bounds how long an agent's call stays open without its after.
const maxAgentCall = 15 * time.Minute

// agentCalls are the agents' calls open between their before and their after.
type agentCalls struct {
	mu   sync.Mutex // guards open
	open map[callKey]*agentCall
}

type agentCall struct {
	c     *callState
	rec   protocol.CallRecord // the running record
	win   *checkpoint.Window  // nil: the call changes nothing
	timer *time.Timer
	// allowed: toolsd allowed it, so it runs and its after will come. A call left to the
	// agent's own prompt may never run: it does not keep the owner alive (if the owner
	// exits meanwhile, the record reads interrupted until its after comes).
	allowed bool
	// heldBy is the connection that reports the call's end (AgentBeforeParams.Held): when it
	// detaches first, the call ends interrupted. Empty: none.
	heldBy string
}

// AgentCallsOpen is the number of agents' calls that toolsd allowed and that are open
// between their before and after.
func (s *Service) AgentCallsOpen() int {
	s.agents.mu.Lock()
	defer s.agents.mu.Unlock()
	n := 0
	for _, ac := range s.agents.open {
		if ac.allowed {
			n++
		}
	}
	return n
}

func agentRef(agent, name string) *protocol.ClientRef {
	if name == "" {
		name = agent
	}
	return &protocol.ClientRef{ID: "agent-" + agent, Name: name, Kind: protocol.ClientAgent}
}

func checkAgentIDs(agent, sessionID, callID, tool string) error {
	for _, f := range [][2]string{{"agent", agent}, {"sessionID", sessionID}, {"callID", callID}, {"tool", tool}} {
		if strings.TrimSpace(f[1]) == "" {
			return &ParamsError{fmt.Sprintf("%s is required and must be a non-empty string", f[0])}
		}
	}
	return nil
}

// AgentBefore decides an agent's tool call before it runs (agents/before): every request of
// every toolsd call it stands for goes through the broker, as that tool's own would; an ask
// goes to the editors of the connection it came through (via; see AskRouter), naming the
// agent. A call that may go on is recorded as running, with a checkpoint window open when it
// may change the workspace. A call already running (p.Running) is recorded, not decided.
func (s *Service) AgentBefore(ctx context.Context, via *protocol.ClientRef, p protocol.AgentBeforeParams) (*protocol.AgentBeforeResult, error) {
	if err := checkAgentIDs(p.Agent, p.SessionID, p.CallID, p.Tool); err != nil {
		return nil, err
	}
	if p.NoEditor != "" && p.NoEditor != protocol.AgentAsk && p.NoEditor != protocol.AgentDeny {
		return nil, &ParamsError{fmt.Sprintf("noEditor must be %q or %q, not %q", protocol.AgentAsk, protocol.AgentDeny, p.NoEditor)}
	}
	k := callKey{p.SessionID, p.CallID}
	s.agents.mu.Lock()
	open := s.agents.open[k]
	s.agents.mu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c := &callState{sessionID: p.SessionID, messageID: p.CallID, callID: p.CallID, tool: p.Tool, agent: p.Agent, client: agentRef(p.Agent, p.AgentName), via: via, cancel: cancel}
	if open != nil && len(p.Calls) > 0 {
		// The open call takes the input this report names (an ACP agent reports a call
		// before its input is complete).
		s.agents.mu.Lock()
		open.rec.Title, open.rec.Args = agentTitle(p.Tool, p.Calls), rawOr(p.Input, "{}")
		s.agents.mu.Unlock()
	}
	if open != nil && p.Running {
		// Reported again while it runs: nothing to decide or open.
		s.progress(open.c, protocol.StatusRunning, agentTitle(p.Tool, p.Calls), nil)
		return &protocol.AgentBeforeResult{Decision: protocol.AgentAllow, Decisions: []protocol.Decision{}}, nil
	}
	if open != nil {
		// Decided again (the agent's permission prompt, or a second hook entry): the
		// decisions join the open call's record.
		c = open.c
	}
	// While it is decided, the call is in flight like any: tools/cancel (the editor's Stop)
	// and the service's Close cancel its asks.
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	_, dup := s.calls[k]
	if !dup {
		s.calls[k] = &callState{cancel: cancel, via: via}
	}
	s.wg.Add(1)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if !dup {
			delete(s.calls, k)
		}
		s.mu.Unlock()
		s.wg.Done()
	}()
	now := s.opts.Now().UTC()
	rec := protocol.CallRecord{
		CallID: p.CallID, SessionID: p.SessionID, MessageID: p.CallID, Tool: p.Tool, Agent: p.Agent, Status: protocol.StatusRunning,
		Title: agentTitle(p.Tool, p.Calls), Args: rawOr(p.Input, "{}"), Metadata: json.RawMessage(`{"agentCall":true}`),
		Attachments: []protocol.Attachment{}, Decisions: []protocol.Decision{}, StartedAt: now, Client: c.client,
	}
	if open == nil {
		initial := rec
		c.recordFn = func() error { return s.opts.Store.CreateCall(&initial) }
	}
	first := len(c.takeDecisions())
	decision, reason := protocol.AgentAllow, ""
	if !p.Running {
		var err error
		if decision, reason, err = s.agentDecide(ctx, c, p); err != nil {
			return nil, err
		}
	}
	decs := c.takeDecisions()[first:]
	res := &protocol.AgentBeforeResult{Decision: decision, Reason: reason, Decisions: decs}
	if open != nil {
		return res, nil
	}
	if decision == protocol.AgentDeny {
		rec.Status, rec.Error, rec.Decisions = protocol.StatusError, reason, c.takeDecisions()
		rec.EndedAt = ptr(s.opts.Now().UTC())
		if err := s.putRecord(c, &rec); err != nil {
			return nil, err
		}
		s.progress(c, protocol.StatusError, rec.Title, nil)
		return res, nil
	}
	if err := c.record(); err != nil {
		if isDuplicate(err) {
			// The agent reused the id of a call already on record (a resumed session):
			// decided, but not recorded twice.
			return res, nil
		}
		return nil, fmt.Errorf("recording the agent's call: %w", err)
	}
	ac := &agentCall{c: c, rec: rec, allowed: decision == protocol.AgentAllow}
	if p.Held && via != nil {
		ac.heldBy = via.ID
	}
	if s.opts.Checkpoints != nil && agentChanges(p.Calls) {
		ac.win = s.opts.Checkpoints.NewWindow(store.CallRef{SessionID: p.SessionID, CallID: p.CallID, Tool: p.Tool}, false)
		if err := ac.win.Begin(context.WithoutCancel(ctx)); err != nil {
			s.log.Error("opening an agent call's checkpoint failed", "call", p.CallID, "err", err)
		}
	}
	ac.timer = time.AfterFunc(maxAgentCall, func() {
		s.agentEnd(k, protocol.AgentAfterParams{Error: fmt.Sprintf("%s did not report the end of this call within %v (it was stopped, or the call was refused at its own prompt)", c.client.Name, maxAgentCall)}, protocol.StatusInterrupted)
	})
	s.agents.mu.Lock()
	if s.agents.open == nil {
		s.agents.open = map[callKey]*agentCall{}
	}
	s.agents.open[k] = ac
	s.agents.mu.Unlock()
	s.progress(c, protocol.StatusRunning, rec.Title, nil)
	return res, nil
}

// agentDecide asks for every request of the call's toolsd calls, and returns the strictest
// outcome: deny (with the reason for the model) at the first request refused, ask when a
// request needed a person and no editor could show it, else allow.
func (s *Service) agentDecide(ctx context.Context, c *callState, p protocol.AgentBeforeParams) (string, string, error) {
	calls := p.Calls
	if len(calls) == 0 {
		calls = []protocol.AgentCall{{}}
	}
	decision, reason := protocol.AgentAllow, ""
	for _, ac := range calls {
		reqs, readOnly, err := s.agentRequests(p, ac)
		if err != nil {
			return protocol.AgentDeny, fmt.Sprintf("toolsd cannot check this %s call: %v. Nothing ran; fix the call.", p.Tool, err), nil
		}
		c.tool, c.permKey, c.readOnly = ac.Tool, ac.Tool, readOnly
		// What a rule denies is decided first: a person is not asked about a path of a
		// call that another of its requests denies anyway.
		sort.SliceStable(reqs, func(i, j int) bool { return s.denied(c, reqs[i]) && !s.denied(c, reqs[j]) })
		for _, req := range reqs {
			_, err := s.ask(ctx, c, req)
			var pe *registry.PermissionError
			switch {
			case err == nil:
			case errors.As(err, &pe) && pe.Kind == "no-ui":
				if p.NoEditor == protocol.AgentDeny {
					return protocol.AgentDeny, pe.Message, nil
				}
				decision = protocol.AgentAsk
				reason = fmt.Sprintf("toolsd: no editor is attached to approve %s %s; approve it here, or open the workspace in an editor with toolsd to be asked there.", req.Permission, strings.Join(req.Patterns, ", "))
			case errors.As(err, &pe):
				return protocol.AgentDeny, pe.Message, nil
			case ctx.Err() != nil:
				// Cancelled while it asked (tools/cancel: ACP's session/cancel, the
				// editor's Stop): the request's answer, not a fault.
				return "", "", fmt.Errorf("%w: %v", ErrCancelled, err)
			default:
				return "", "", err
			}
		}
	}
	return decision, reason, nil
}

// denied reports whether the rules deny req outright.
func (s *Service) denied(c *callState, req registry.AskRequest) bool {
	q := permission.Query{SessionID: c.sessionID, Agent: c.agent, Tool: c.tool, Permission: req.Permission, Patterns: req.Patterns, Opaque: req.Opaque, ExactOnly: req.ExactOnly, Reasons: req.Reasons}
	return s.opts.Policy.Decide(q).Action == permission.Deny
}

// agentRequests are the permission requests of one toolsd call an agent's call stands for,
// with the diff of an edit, and whether the tool changes nothing.
func (s *Service) agentRequests(p protocol.AgentBeforeParams, ac protocol.AgentCall) ([]registry.AskRequest, bool, error) {
	switch ac.Tool {
	case "":
		return []registry.AskRequest{{Permission: p.Tool, Patterns: []string{"*"}, Metadata: map[string]any{"tool": p.Tool, "args": rawOr(p.Input, "{}")}}}, false, nil
	case "mcp":
		id := mcp.ToolID(ac.MCPServer, ac.MCPTool)
		return []registry.AskRequest{{Permission: id, Patterns: []string{"*"}, Metadata: map[string]any{"server": ac.MCPServer, "tool": ac.MCPTool, "args": rawOr(ac.Args, "{}")}}}, false, nil
	}
	var reqs []registry.AskRequest
	var err error
	ok := false
	if ac.Tool == "edit" && hasEdits(ac.Args) {
		// MultiEdit: one file, edit asked once.
		var a struct {
			FilePath string `json:"filePath"`
		}
		_ = json.Unmarshal(ac.Args, &a)
		one, _ := json.Marshal(map[string]string{"filePath": a.FilePath})
		reqs, ok, err = builtin.Requests(s.opts.Workspace, "write", one)
	} else {
		reqs, ok, err = builtin.Requests(s.opts.Workspace, ac.Tool, ac.Args)
	}
	if err != nil {
		return nil, false, err
	}
	if !ok {
		return []registry.AskRequest{{Permission: ac.Tool, Patterns: []string{"*"}}}, false, nil
	}
	readOnly := false
	if e, found := s.opts.Registry.Catalog().Lookup(ac.Tool); found && e.Source == registry.SourceBuiltin {
		readOnly = e.ReadOnly
	}
	for i := range reqs {
		if reqs[i].Permission == "edit" {
			if md := agentDiff(ac); md != nil {
				reqs[i].Metadata = md
			}
		}
	}
	return reqs, readOnly, nil
}

func hasEdits(args json.RawMessage) bool {
	var a struct {
		Edits []json.RawMessage `json:"edits"`
	}
	return json.Unmarshal(args, &a) == nil && a.Edits != nil
}

// agentDiff is the ask's metadata of an edit an agent is about to make: the unified diff of
// the file, as toolsd's own edit tools show it. nil when it cannot be made (the file is
// unreadable; the ask then shows the path alone).
func agentDiff(ac protocol.AgentCall) map[string]any {
	var a struct {
		FilePath   string `json:"filePath"`
		Content    *string
		OldString  string `json:"oldString"`
		NewString  string `json:"newString"`
		ReplaceAll bool   `json:"replaceAll"`
		Edits      []struct {
			OldString  string `json:"oldString"`
			NewString  string `json:"newString"`
			ReplaceAll bool   `json:"replaceAll"`
		} `json:"edits"`
	}
	if json.Unmarshal(ac.Args, &a) != nil {
		return nil
	}
	if ac.Diff != "" {
		return map[string]any{"diff": ac.Diff, "filePath": a.FilePath}
	}
	if a.FilePath == "" {
		return nil
	}
	old, err := os.ReadFile(a.FilePath)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil
	}
	var updated string
	switch {
	case ac.Tool == "write" && a.Content != nil:
		updated = *a.Content
	case ac.Tool == "edit" && a.Edits != nil:
		updated = string(old)
		for _, e := range a.Edits {
			updated = replace(updated, e.OldString, e.NewString, e.ReplaceAll)
		}
	case ac.Tool == "edit":
		updated = replace(string(old), a.OldString, a.NewString, a.ReplaceAll)
	default:
		return nil
	}
	d := textdiff.Unified(a.FilePath, old, []byte(updated))
	return map[string]any{"diff": d.Text, "filePath": a.FilePath, "additions": d.Additions, "deletions": d.Deletions}
}

func replace(text, old, new string, all bool) string {
	if old == "" {
		return new + text
	}
	if all {
		return strings.ReplaceAll(text, old, new)
	}
	return strings.Replace(text, old, new, 1)
}

// agentChanges reports whether a call may change the workspace (any of its calls is not a
// read).
func agentChanges(calls []protocol.AgentCall) bool {
	if len(calls) == 0 {
		return true
	}
	for _, c := range calls {
		switch c.Tool {
		case "read", "list", "glob", "grep", "webfetch", "todowrite":
		default:
			return true
		}
	}
	return false
}

// agentTitle names a call in the record: the command, the file or the pattern.
func agentTitle(tool string, calls []protocol.AgentCall) string {
	if len(calls) == 0 {
		return tool
	}
	var a map[string]any
	_ = json.Unmarshal(calls[0].Args, &a)
	for _, k := range []string{"command", "filePath", "pattern", "path", "url"} {
		if v, ok := a[k].(string); ok && v != "" {
			if i := strings.IndexByte(v, '\n'); i >= 0 {
				v = v[:i] + " …"
			}
			if len(calls) > 1 {
				v += fmt.Sprintf(" (+%d more)", len(calls)-1)
			}
			return tool + " " + v
		}
	}
	return tool
}

// AgentAfter closes an agent's tool call with what it returned (agents/after): the output,
// truncated for display and whole in the store, the status, and its checkpoint. A call
// whose before this daemon did not see (it was restarted meanwhile) is recorded all the
// same.
func (s *Service) AgentAfter(ctx context.Context, p protocol.AgentAfterParams) (*protocol.AgentAfterResult, error) {
	if err := checkAgentIDs(p.Agent, p.SessionID, p.CallID, p.Tool); err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	status := protocol.StatusCompleted
	switch {
	case p.Interrupted:
		status = protocol.StatusCancelled
	case p.Error != "":
		status = protocol.StatusError
	}
	k := callKey{p.SessionID, p.CallID}
	if res, ok := s.agentEnd(k, p, status); ok {
		return res, nil
	}
	// Not open here: a record of it may be on file (interrupted by a daemon that stopped),
	// or none.
	now := s.opts.Now().UTC()
	c := &callState{sessionID: p.SessionID, messageID: p.CallID, callID: p.CallID, tool: p.Tool, agent: p.Agent, client: agentRef(p.Agent, p.AgentName)}
	rec := protocol.CallRecord{
		CallID: p.CallID, SessionID: p.SessionID, MessageID: p.CallID, Tool: p.Tool, Agent: p.Agent, Title: p.Tool,
		Args: rawOr(p.Input, "{}"), Metadata: json.RawMessage(`{"agentCall":true,"beforeUnseen":true}`), Attachments: []protocol.Attachment{},
		Decisions: []protocol.Decision{}, StartedAt: now, Client: c.client,
	}
	s.agentOutcome(&rec, p, status)
	err := s.opts.Store.UpdateCall(p.SessionID, p.CallID, func(stored *protocol.CallRecord) {
		stored.Status, stored.Output, stored.Error, stored.Truncated, stored.OutputID, stored.EndedAt = rec.Status, rec.Output, rec.Error, rec.Truncated, rec.OutputID, rec.EndedAt
	})
	if err != nil {
		err = s.opts.Store.CreateCall(&rec)
	}
	if err != nil {
		return nil, fmt.Errorf("recording the agent's call: %w", err)
	}
	s.progress(c, rec.Status, rec.Title, nil)
	return &protocol.AgentAfterResult{Status: rec.Status}, nil
}

// agentEnd closes an open call; ok is false when none is open under k.
func (s *Service) agentEnd(k callKey, p protocol.AgentAfterParams, status string) (*protocol.AgentAfterResult, bool) {
	s.agents.mu.Lock()
	ac := s.agents.open[k]
	delete(s.agents.open, k)
	var rec protocol.CallRecord
	if ac != nil {
		rec = ac.rec
	}
	s.agents.mu.Unlock()
	if ac == nil {
		return nil, false
	}
	ac.timer.Stop()
	if len(p.Input) > 0 {
		// What the agent said at the end (an ACP agent completes its input in its updates).
		rec.Args = rawOr(p.Input, "{}")
	}
	s.agentOutcome(&rec, p, status)
	rec.Decisions = ac.c.takeDecisions()
	if ac.win != nil {
		n, err := ac.win.End(context.Background())
		if err != nil {
			s.log.Error("recording an agent call's checkpoint failed", "call", k.call, "err", err)
		}
		rec.Changes = n
	}
	if err := s.opts.Store.UpdateCall(k.session, k.call, func(stored *protocol.CallRecord) { *stored = rec }); err != nil {
		s.log.Error("recording the end of an agent's call failed", "call", k.call, "err", err)
	}
	s.progress(ac.c, rec.Status, rec.Title, nil)
	return &protocol.AgentAfterResult{Status: rec.Status, Changes: rec.Changes, Opened: true}, true
}

// agentOutcome fills the end of a record: the output, truncated with the whole in the store.
func (s *Service) agentOutcome(rec *protocol.CallRecord, p protocol.AgentAfterParams, status string) {
	rec.Status, rec.Error = status, p.Error
	if p.Output != "" {
		tr := newTruncator(s.opts.Limits, func() (sink, error) { return s.opts.Store.NewOutput(rec.SessionID, rec.CallID) })
		_, _ = tr.Write([]byte(p.Output))
		text, truncated, outputID, err := tr.finish()
		if err != nil {
			s.log.Error("keeping an agent call's output failed", "call", rec.CallID, "err", err)
		}
		rec.Output, rec.Truncated, rec.OutputID = text, truncated, outputID
	}
	rec.EndedAt = ptr(s.opts.Now().UTC())
}

// endHeld ends as interrupted the open calls a connection that went away held (Held).
func (s *Service) endHeld(clientID string) {
	s.agents.mu.Lock()
	var keys []callKey
	for k, ac := range s.agents.open {
		if ac.heldBy == clientID {
			keys = append(keys, k)
		}
	}
	s.agents.mu.Unlock()
	for _, k := range keys {
		s.agentEnd(k, protocol.AgentAfterParams{Error: "interrupted: the connection that reported this call (toolsd acp) ended before the agent reported its end"}, protocol.StatusInterrupted)
	}
}

// closeAgentCalls ends the open calls as interrupted (the service is closing).
func (s *Service) closeAgentCalls() {
	s.agents.mu.Lock()
	keys := make([]callKey, 0, len(s.agents.open))
	for k := range s.agents.open {
		keys = append(keys, k)
	}
	s.agents.mu.Unlock()
	for _, k := range keys {
		s.agentEnd(k, protocol.AgentAfterParams{Error: "interrupted: the toolsd daemon stopped before the agent reported the end of the call"}, protocol.StatusInterrupted)
	}
}

// putRecord writes a call's final record: over its running one when an ask made it, new
// otherwise.
func (s *Service) putRecord(c *callState, rec *protocol.CallRecord) error {
	c.recordOnce.Do(func() {})
	var err error
	if c.recorded {
		err = s.opts.Store.UpdateCall(c.sessionID, c.callID, func(stored *protocol.CallRecord) { *stored = *rec })
	} else {
		err = s.opts.Store.CreateCall(rec)
	}
	if err != nil && !isDuplicate(err) {
		return fmt.Errorf("recording the agent's call: %w", err)
	}
	return nil
}

func rawOr(raw json.RawMessage, def string) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage(def)
	}
	return append(json.RawMessage(nil), raw...)
}

// AgentBefore implements agents/before for the client's connection (a `toolsd hook`, `toolsd
// acp`): the call's asks follow this client's route.
func (c *Client) AgentBefore(ctx context.Context, p protocol.AgentBeforeParams) (*protocol.AgentBeforeResult, error) {
	ref := c.ref
	return c.w.svc.AgentBefore(ctx, &ref, p)
}

// AgentAfter implements agents/after.
func (c *Client) AgentAfter(ctx context.Context, p protocol.AgentAfterParams) (*protocol.AgentAfterResult, error) {
	return c.w.svc.AgentAfter(ctx, p)
}

// AgentCallsOpen is the number of agents' calls open in the workspace: the owner stays while
// there are any.
func (w *Workspace) AgentCallsOpen() int { return w.svc.AgentCallsOpen() }
