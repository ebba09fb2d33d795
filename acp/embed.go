package acp

import (
	"bytes"
	"encoding/json"
	"strings"
)

// An agent may embed a terminal it created in a tool call's content ({"type":"terminal",
// "terminalId"}) for the editor to show. The terminals toolsd serves are not the editor's:
// an editor looks the id up among its own terminals and fails the update (Zed: "Terminal
// with id … not found"), so the tool call would never show its end. The proxy gives the
// editor the terminal's output instead, as text in a code block: what it printed so far
// when the update passes, all of it once the command ended.

// maxShown bounds the released terminals whose output is kept for an update that embeds
// them after terminal/release.
const maxShown = 256

// showTerminals is a session/update with the terminals toolsd serves in its tool call's
// content replaced by their output; ok is false when it has none (and is left as it is).
func (p *proxy) showTerminals(m *msg) ([]byte, json.RawMessage, bool) {
	if !bytes.Contains(m.Params, []byte(`"terminal"`)) || !p.served() {
		return nil, nil, false
	}
	var params map[string]json.RawMessage
	var update map[string]json.RawMessage
	var content []map[string]json.RawMessage
	if json.Unmarshal(m.Params, &params) != nil || json.Unmarshal(params["update"], &update) != nil || json.Unmarshal(update["content"], &content) != nil {
		return nil, nil, false
	}
	changed := false
	for i, c := range content {
		var kind, id string
		if json.Unmarshal(c["type"], &kind) != nil || kind != "terminal" || json.Unmarshal(c["terminalId"], &id) != nil {
			continue
		}
		text, ok := p.terminalText(id)
		if !ok {
			continue
		}
		b, _ := json.Marshal(map[string]any{"type": "content", "content": map[string]string{"type": "text", "text": codeBlock(text)}})
		content[i] = nil
		_ = json.Unmarshal(b, &content[i])
		changed = true
	}
	if !changed {
		return nil, nil, false
	}
	update["content"], _ = json.Marshal(content)
	params["update"], _ = json.Marshal(update)
	out, err := rewrite(m, params)
	raw, err2 := json.Marshal(params)
	if err != nil || err2 != nil {
		return nil, nil, false
	}
	return out, raw, true
}

// terminalText is the output of a terminal toolsd serves, or of one it released; ok is
// false for an id it does not know (the editor's own terminal, say).
func (p *proxy) terminalText(id string) (string, bool) {
	p.mu.Lock()
	t := p.terminals[id]
	text, released := p.shown[id]
	p.mu.Unlock()
	if t == nil {
		return text, released
	}
	select {
	case <-t.done:
		out, _ := t.output()
		return out, true
	default:
	}
	return p.sofar(p.ctx, t).Output, true
}

// keepShown keeps a released terminal's output for the updates that embed it later.
func (p *proxy) keepShown(t *terminal) {
	select {
	case <-t.done:
	default:
		return // not stopped (the proxy is ending)
	}
	out, _ := t.output()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.shown) >= maxShown {
		for id := range p.shown {
			delete(p.shown, id)
			break
		}
	}
	p.shown[t.callID] = out
}

// codeBlock is text in a Markdown code block whose fence no line of it closes.
func codeBlock(text string) string {
	fence := "```"
	for strings.Contains(text, fence) {
		fence += "`"
	}
	if text != "" && !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	return fence + "\n" + text + fence
}
