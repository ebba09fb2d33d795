package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/toolsd/toolsd/protocol"
)

// option is a PermissionOption.
type option struct {
	OptionID string `json:"optionId"`
	Name     string `json:"name"`
	Kind     string `json:"kind"`
}

// pend is one of the agent's permission requests being decided.
type pend struct {
	id      json.RawMessage
	session string
	callID  string
	params  json.RawMessage // the agent's request's params, shown again with toolsd's options
	ctx     context.Context
	cancel  context.CancelFunc
	once    sync.Once
}

type outcome struct {
	Outcome  string `json:"outcome"`
	OptionID string `json:"optionId,omitempty"`
}

// answer answers the agent's request once: the first of the decision and a cancel wins.
func (p *proxy) answer(pd *pend, v any) {
	pd.once.Do(func() { _ = p.agent.send(resultReply(pd.id, v)) })
}

func (p *proxy) selected(pd *pend, optionID string) {
	p.answer(pd, map[string]any{"outcome": outcome{Outcome: "selected", OptionID: optionID}})
}

// permission decides one session/request_permission by the workspace's rules: allow
// answers the agent's allow_once option, deny its reject_once (the daemon records the
// reason); an ask goes to the editor while the daemon waits (showAsk). A call that may go on
// is open in the record until the agent's session/update ends it (record), or the proxy's
// connection to the daemon ends (interrupted).
//
// The subject is ACP v1's toolCall, or v2's subject: a tool call, or a command with its cwd.
// A request with another subject (or none) goes to the editor unchanged.
func (p *proxy) permission(m *msg, line []byte) {
	var rp struct {
		SessionID string          `json:"sessionId"`
		ToolCall  json.RawMessage `json:"toolCall"`
		Subject   *struct {
			Type       string          `json:"type"`
			ToolCall   json.RawMessage `json:"toolCall"`
			Command    string          `json:"command"`
			Cwd        string          `json:"cwd"`
			ToolCallID string          `json:"toolCallId"`
		} `json:"subject"`
		Title   string   `json:"title"`
		Options []option `json:"options"`
	}
	if err := json.Unmarshal(m.Params, &rp); err != nil || rp.SessionID == "" {
		_ = p.agent.send(errorReply(m.ID, codeInvalidParams, "toolsd acp: session/request_permission needs sessionId, its subject (toolCall with its toolCallId), and options"))
		return
	}
	var tc toolCall
	p.mu.Lock()
	cwd := p.cwd
	p.mu.Unlock()
	raw := rp.ToolCall
	switch {
	case raw != nil:
	case rp.Subject != nil && rp.Subject.Type == "tool_call":
		raw = rp.Subject.ToolCall
	case rp.Subject != nil && rp.Subject.Type == "command" && rp.Subject.Command != "":
		id := rp.Subject.ToolCallID
		if id == "" {
			id = p.callID("command")
		}
		input, _ := json.Marshal(map[string]string{"command": rp.Subject.Command})
		raw, _ = json.Marshal(toolCall{ToolCallID: id, Title: rp.Title, Kind: "execute", RawInput: input})
		if filepath.IsAbs(rp.Subject.Cwd) {
			cwd = rp.Subject.Cwd
		}
	default:
		// A subject toolsd does not know: the person decides it in the editor, as it is.
		ctx, cancel := context.WithCancel(p.ctx)
		defer cancel()
		p.relay(&pend{id: m.ID, session: rp.SessionID, ctx: ctx, cancel: cancel}, line)
		return
	}
	if json.Unmarshal(raw, &tc) != nil || tc.ToolCallID == "" {
		_ = p.agent.send(errorReply(m.ID, codeInvalidParams, "toolsd acp: session/request_permission's tool call needs its toolCallId"))
		return
	}
	ctx, cancel := context.WithCancel(p.ctx)
	defer cancel()
	pd := &pend{id: m.ID, session: rp.SessionID, callID: tc.ToolCallID, params: m.Params, ctx: ctx, cancel: cancel}
	key := string(m.ID)
	p.mu.Lock()
	p.pending[key] = pd
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.pending, key)
		p.mu.Unlock()
	}()
	optionOf := func(kind string) string {
		for _, o := range rp.Options {
			if o.Kind == kind {
				return o.OptionID
			}
		}
		return ""
	}
	tool, calls, err := subject(&tc, cwd)
	if err != nil {
		// The daemon asks under the tool's name and records the call.
		p.log.Debug("the tool call's input does not fit its tool", "call", tc.ToolCallID, "err", err)
		calls = nil
	}
	bp := protocol.AgentBeforeParams{Agent: p.o.AgentID, AgentName: p.o.AgentName, SessionID: rp.SessionID, CallID: tc.ToolCallID,
		Tool: tool, Input: tc.RawInput, Calls: calls, NoEditor: protocol.AgentAsk, Held: true}
	var res protocol.AgentBeforeResult
	if err := p.daemon.Call(ctx, protocol.MethodAgentsBefore, bp, &res); err != nil {
		if ctx.Err() != nil {
			return // cancelled: answered already
		}
		p.log.Warn("the daemon could not decide a permission request: the editor decides it", "call", tc.ToolCallID, "err", err)
		p.relay(pd, line)
		return
	}
	switch res.Decision {
	case protocol.AgentAllow:
		if id := optionOf("allow_once"); id != "" {
			p.selected(pd, id)
			return
		}
	case protocol.AgentDeny:
		if id := optionOf("reject_once"); id != "" {
			p.selected(pd, id)
			return
		}
		// The agent offers no reject_once: refuse the request itself.
		pd.once.Do(func() {
			_ = p.agent.send(errorReply(pd.id, codeInternal, "toolsd refused this tool call: "+res.Reason))
		})
		return
	}
	// An ask nobody could show, or an agent that offers no once option: the person decides
	// in the editor, on the agent's own request.
	p.relay(pd, line)
}

// relay passes the agent's request to the editor, under the proxy's id, and its answer back.
func (p *proxy) relay(pd *pend, line []byte) {
	var m msg
	_ = json.Unmarshal(line, &m)
	resp, ok := p.ask(pd.ctx, "session/request_permission", m.Params)
	if !ok {
		return
	}
	pd.once.Do(func() {
		out := struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Result  json.RawMessage `json:"result,omitempty"`
			Error   json.RawMessage `json:"error,omitempty"`
		}{"2.0", pd.id, resp.Result, resp.Error}
		_ = p.agent.send(out)
	})
}

// ask sends the editor a request and waits for its response; ok is false when ctx ended
// first or the editor cannot be written to.
func (p *proxy) ask(ctx context.Context, method string, params any) (*msg, bool) {
	ch := make(chan *msg, 1)
	p.mu.Lock()
	p.nextID++
	id := idPrefix + strconv.Itoa(p.nextID)
	p.waiters[id] = ch
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.waiters, id)
		p.mu.Unlock()
	}()
	if err := p.editor.send(request{JSONRPC: "2.0", ID: id, Method: method, Params: params}); err != nil {
		return nil, false
	}
	select {
	case m := <-ch:
		return m, true
	case <-ctx.Done():
		return nil, false
	}
}

// The options toolsd offers when it asks: "always" is stored by toolsd, never by the agent.
var askOptions = []option{
	{OptionID: "once", Name: "Allow once", Kind: "allow_once"},
	{OptionID: "always", Name: "Always allow in this session (toolsd)", Kind: "allow_always"},
	{OptionID: "always-workspace", Name: "Always allow in this workspace (toolsd)", Kind: "allow_always"},
	{OptionID: "reject", Name: "Reject", Kind: "reject_once"},
}

// showAsk shows the editor one of the daemon's asks, as a session/request_permission, and
// gives the daemon the person's answer (permission/reply: once, always or reject). The
// daemon sends the proxy only the asks of its route: those of the agent's permission
// requests (shown on the agent's own tool call) and of the calls of the toolsd mcp the proxy
// added to a session (shown in that session).
func (p *proxy) showAsk(a protocol.AskedParams) {
	var pd *pend
	p.mu.Lock()
	for _, q := range p.pending {
		if q.session == a.SessionID && q.callID == a.CallID {
			pd = q
		}
	}
	p.mu.Unlock()
	var params map[string]any
	ctx, session := p.ctx, ""
	if pd != nil {
		// The agent's own request (v1 or v2 alike), with toolsd's options.
		ctx, session = pd.ctx, pd.session
		_ = json.Unmarshal(pd.params, &params)
	} else {
		if session = p.askSession(a); session == "" {
			p.reject(a, "toolsd acp: the editor has opened no session to show this request in")
			return
		}
		if p.takeGrant(session, a) {
			// The person allowed exactly this a moment ago, on the agent's permission
			// request for the tool call that now writes or runs it through toolsd.
			reply := protocol.ReplyParams{ID: a.ID, Reply: protocol.ReplyOnce, Message: "allowed once in the editor on the agent's permission request for this call"}
			if err := p.daemon.Call(p.ctx, protocol.MethodPermissionReply, reply, nil); err != nil {
				p.log.Debug("permission/reply", "ask", a.ID, "err", err)
			}
			return
		}
		tc := map[string]any{"toolCallId": "toolsd-" + a.ID, "title": askTitle(a), "kind": "other", "status": "pending"}
		params = map[string]any{"sessionId": session, "toolCall": tc}
		if p.v2() {
			params = map[string]any{"sessionId": session, "title": askTitle(a), "subject": map[string]any{"type": "tool_call", "toolCall": tc}}
		}
	}
	if params == nil {
		params = map[string]any{}
	}
	params["options"] = askOptions
	if len(a.Always) == 0 {
		// Nothing this ask may remember (a protected path, a line toolsd cannot read): no
		// "always" is offered, as in every editor.
		params["options"] = []option{askOptions[0], askOptions[3]}
	}
	resp, ok := p.ask(ctx, "session/request_permission", params)
	if !ok {
		return
	}
	var r struct {
		Outcome outcome `json:"outcome"`
	}
	reply := protocol.ReplyParams{ID: a.ID, Reply: protocol.ReplyReject}
	switch {
	case resp.Error != nil:
		reply.Message = "the editor could not show the request: " + string(resp.Error)
	case json.Unmarshal(resp.Result, &r) != nil:
		reply.Message = "the editor's answer was not a permission outcome"
	case r.Outcome.Outcome == "cancelled" && pd != nil:
		return // session/cancel ends the agent's request (cancelSession)
	case r.Outcome.Outcome == "cancelled":
		// The editor dropped the request (the session was cancelled): nobody is left to
		// answer it there, so the call is refused rather than left waiting.
		reply.Message = "the request was cancelled in the editor"
	case r.Outcome.OptionID == "once":
		reply.Reply = protocol.ReplyOnce
		if pd != nil {
			p.addGrant(pd, a)
		}
	case r.Outcome.OptionID == "always":
		reply.Reply, reply.Scope = protocol.ReplyAlways, protocol.ScopeSession
	case r.Outcome.OptionID == "always-workspace":
		reply.Reply, reply.Scope = protocol.ReplyAlways, protocol.ScopeWorkspace
	}
	if err := p.daemon.Call(p.ctx, protocol.MethodPermissionReply, reply, nil); err != nil {
		// Answered meanwhile on another client, or withdrawn.
		p.log.Debug("permission/reply", "ask", a.ID, "err", err)
	}
}

// A grant is a person's "once" for an agent's permission request: ACP agents then carry the
// call out through the client methods toolsd serves (fs/write_text_file, terminal/create) or
// toolsd's MCP tools, whose own request is the same (permission and patterns) and is not
// asked twice. Each grant is used once, in its session, and only while the agent's tool call
// it was given for runs: once the agent says it ended (an agent that ran the call itself, as
// claude-agent-acp runs its Bash), or its session is cancelled, the grant is gone, and
// "once" did not become "once more, later".
type grant struct{ session, callID, key string }

// maxGrants bounds the grants not yet used; the oldest go first.
const maxGrants = 64

func grantKey(a protocol.AskedParams) string {
	return a.Permission + "\x00" + strings.Join(a.Patterns, "\x00")
}

func (p *proxy) addGrant(pd *pend, a protocol.AskedParams) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.grants) >= maxGrants {
		p.grants = p.grants[1:]
	}
	p.grants = append(p.grants, grant{pd.session, pd.callID, grantKey(a)})
}

func (p *proxy) takeGrant(session string, a protocol.AskedParams) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := grantKey(a)
	for i, g := range p.grants {
		if g.session == session && g.key == k {
			p.grants = append(p.grants[:i:i], p.grants[i+1:]...)
			return true
		}
	}
	return false
}

// dropGrants forgets the grants given for the agent's tool call callID in session (every
// grant of the session when callID is "").
func (p *proxy) dropGrants(session, callID string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.grants = slices.DeleteFunc(p.grants, func(g grant) bool {
		return g.session == session && (callID == "" || g.callID == callID)
	})
}

// reject answers an ask that cannot be shown.
func (p *proxy) reject(a protocol.AskedParams, why string) {
	if err := p.daemon.Call(p.ctx, protocol.MethodPermissionReply, protocol.ReplyParams{ID: a.ID, Reply: protocol.ReplyReject, Message: why}, nil); err != nil {
		p.log.Debug("permission/reply", "ask", a.ID, "err", err)
	}
}

func askTitle(a protocol.AskedParams) string {
	who := "a toolsd call"
	if a.Client != nil && a.Client.Name != "" {
		who = a.Client.Name
	}
	return fmt.Sprintf("%s: %s %v", who, a.Permission, a.Patterns)
}

// cancelSession answers the session's pending permission requests cancelled (ACP's
// session/cancel) and ends their asks in the daemon.
func (p *proxy) cancelSession(params json.RawMessage) {
	var c struct {
		SessionID string `json:"sessionId"`
	}
	if json.Unmarshal(params, &c) != nil {
		return
	}
	var cancelled []*pend
	p.mu.Lock()
	for _, pd := range p.pending {
		if pd.session == c.SessionID {
			cancelled = append(cancelled, pd)
		}
	}
	p.mu.Unlock()
	p.dropGrants(c.SessionID, "")
	for _, pd := range cancelled {
		p.answer(pd, map[string]any{"outcome": outcome{Outcome: "cancelled"}})
		pd.cancel()
		if p.daemon != nil {
			go func() {
				_ = p.daemon.Call(p.ctx, protocol.MethodToolsCancel, protocol.CancelParams{SessionID: pd.session, CallID: pd.callID}, nil)
			}()
		}
	}
}
