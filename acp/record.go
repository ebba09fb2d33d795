package acp

import (
	"encoding/json"
	"strings"

	"github.com/toolsd/toolsd/protocol"
)

// maxTracked bounds the tool calls followed between their first update and their end.
const maxTracked = 4096

// trackedCall is what the updates of one tool call said so far.
type trackedCall struct {
	tc      toolCall
	session string
	mapped  bool // the daemon was told what toolsd calls it stands for
}

// record follows the agent's tool calls through session/update (tool_call, then
// tool_call_update with the fields that changed) into the daemon's record: running from the
// first update (agents/before with running, which opens the call unless its permission
// request did; again when its input, often streamed after, first says what it runs), ended
// by the update that says completed or failed (agents/after). The calls
// are held by the proxy's connection: when it ends first, they end interrupted. Called on
// one goroutine, in the order of the updates.
func (p *proxy) record(raw json.RawMessage) {
	if p.daemon == nil {
		return
	}
	var u struct {
		SessionID string `json:"sessionId"`
		Update    struct {
			SessionUpdate string `json:"sessionUpdate"`
		} `json:"update"`
	}
	if json.Unmarshal(raw, &u) != nil {
		return
	}
	switch u.Update.SessionUpdate {
	case "tool_call", "tool_call_update":
	case "tool_call_content_chunk":
		p.appendContent(u.SessionID, raw)
		return
	default:
		return
	}
	var w struct {
		Update toolCall `json:"update"`
	}
	if json.Unmarshal(raw, &w) != nil || w.Update.ToolCallID == "" {
		return
	}
	up := w.Update
	key := u.SessionID + "\x00" + up.ToolCallID
	p.mu.Lock()
	t := p.calls[key]
	first := t == nil
	if first {
		if len(p.calls) >= maxTracked {
			p.mu.Unlock()
			return
		}
		t = &trackedCall{session: u.SessionID}
		p.calls[key] = t
	}
	merge(&t.tc, &up)
	done := t.tc.Status == "completed" || t.tc.Status == "failed"
	if done {
		delete(p.calls, key)
	}
	cwd := p.cwd
	tc := t.tc
	p.mu.Unlock()
	tool, calls, _ := subject(&tc, cwd)
	p.mu.Lock()
	remap := !t.mapped && len(calls) > 0
	t.mapped = t.mapped || remap
	p.mu.Unlock()
	if first || (remap && !done) {
		// Running from its first update; told again once its input says what it runs.
		bp := protocol.AgentBeforeParams{Agent: p.o.AgentID, AgentName: p.o.AgentName, SessionID: t.session, CallID: tc.ToolCallID, Tool: tool,
			Input: tc.RawInput, Calls: calls, Running: true, Held: true}
		if err := p.daemon.Call(p.ctx, protocol.MethodAgentsBefore, bp, nil); err != nil {
			p.log.Warn("recording the agent's tool call failed", "call", tc.ToolCallID, "err", err)
		}
	}
	if !done {
		return
	}
	p.dropGrants(t.session, tc.ToolCallID)
	ap := protocol.AgentAfterParams{Agent: p.o.AgentID, AgentName: p.o.AgentName, SessionID: t.session, CallID: tc.ToolCallID, Tool: tool,
		Input: tc.RawInput, Output: output(&tc)}
	if tc.Status == "failed" {
		ap.Error = "the tool call failed"
		if ap.Output != "" {
			ap.Error = ap.Output
		}
	}
	if err := p.daemon.Call(p.ctx, protocol.MethodAgentsAfter, ap, nil); err != nil {
		p.log.Warn("recording the agent's tool call failed", "call", ap.CallID, "err", err)
	}
}

// appendContent adds a v2 tool_call_content_chunk to its call's content.
func (p *proxy) appendContent(session string, raw json.RawMessage) {
	var w struct {
		Update struct {
			ToolCallID string `json:"toolCallId"`
		} `json:"update"`
	}
	var c struct {
		Update struct {
			Content json.RawMessage `json:"content"`
		} `json:"update"`
	}
	if json.Unmarshal(raw, &w) != nil || json.Unmarshal(raw, &c) != nil {
		return
	}
	var tc toolCall
	if json.Unmarshal([]byte(`{"content":[`+string(c.Update.Content)+`]}`), &tc) != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if t := p.calls[session+"\x00"+w.Update.ToolCallID]; t != nil {
		t.tc.Content = append(t.tc.Content, tc.Content...)
	}
}

// merge applies an update: the fields it sets replace the call's.
func merge(t, up *toolCall) {
	t.ToolCallID = up.ToolCallID
	if up.Title != "" {
		t.Title = up.Title
	}
	if up.Kind != "" {
		t.Kind = up.Kind
	}
	if up.Status != "" {
		t.Status = up.Status
	}
	if up.RawInput != nil {
		t.RawInput = up.RawInput
	}
	if up.RawOutput != nil {
		t.RawOutput = up.RawOutput
	}
	if up.Content != nil {
		t.Content = up.Content
	}
	if up.Locations != nil {
		t.Locations = up.Locations
	}
	if up.Meta.ClaudeCode.ToolName != "" {
		t.Meta = up.Meta
	}
}

// output is the call's result as text: its text content, the paths of its diffs, else its
// raw output.
func output(t *toolCall) string {
	var b strings.Builder
	for _, c := range t.Content {
		switch {
		case c.Type == "content" && c.Content != nil && c.Content.Type == "text":
			b.WriteString(c.Content.Text)
		case c.Type == "diff":
			b.WriteString("diff of " + c.Path + "\n")
		case c.Type == "terminal":
			b.WriteString("terminal " + c.TerminalID + "\n")
		}
	}
	if b.Len() == 0 && len(t.RawOutput) > 0 && string(t.RawOutput) != "null" {
		var s string
		if json.Unmarshal(t.RawOutput, &s) == nil {
			return s
		}
		return string(t.RawOutput)
	}
	return b.String()
}
