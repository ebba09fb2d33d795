package session

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolsd/toolsd/protocol"
)

// fakeSink records what a client was told.
type fakeSink struct {
	mu       sync.Mutex
	asked    []protocol.AskedParams
	answered []protocol.AnsweredParams
	progress []protocol.ProgressParams
	clients  []protocol.ClientsParams
	changed  []protocol.ChangedParams
	more     chan struct{}
}

func newSink() *fakeSink { return &fakeSink{more: make(chan struct{}, 1000)} }

func (s *fakeSink) note(f func()) {
	s.mu.Lock()
	f()
	s.mu.Unlock()
	s.more <- struct{}{}
}
func (s *fakeSink) Progress(p protocol.ProgressParams) {
	s.note(func() { s.progress = append(s.progress, p) })
}
func (s *fakeSink) Asked(p protocol.AskedParams) { s.note(func() { s.asked = append(s.asked, p) }) }
func (s *fakeSink) Answered(p protocol.AnsweredParams) {
	s.note(func() { s.answered = append(s.answered, p) })
}
func (s *fakeSink) Changed(p protocol.ChangedParams) {
	s.note(func() { s.changed = append(s.changed, p) })
}
func (s *fakeSink) Clients(p protocol.ClientsParams) {
	s.note(func() { s.clients = append(s.clients, p) })
}

// waitFor waits until cond holds over what the sink got.
func (s *fakeSink) waitFor(t *testing.T, what string, cond func(*fakeSink) bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		s.mu.Lock()
		ok := cond(s)
		s.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-s.more:
		case <-deadline:
			t.Fatalf("waiting for %s", what)
		}
	}
}

func openTestWorkspace(t *testing.T) *Workspace {
	t.Helper()
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	w, err := OpenWorkspace(context.Background(), WorkspaceOptions{Folder: t.TempDir(), StorePath: filepath.Join(t.TempDir(), "s.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return w
}

func attach(t *testing.T, w *Workspace, name, kind string, canAsk bool) (*Client, *fakeSink) {
	t.Helper()
	s := newSink()
	c, err := w.Attach(ClientOptions{Name: name, Kind: kind, CanAsk: canAsk, Sink: s})
	if err != nil {
		t.Fatal(err)
	}
	return c, s
}

func bash(id string) protocol.ExecuteParams {
	return protocol.ExecuteParams{SessionID: "s-" + id, MessageID: "m", CallID: id, Tool: "bash", Args: json.RawMessage(`{"command":"date +%s"}`)}
}

// Asks go to every editor that can show them, naming the caller; the first answer wins and
// the other editors are told; an MCP client that can elicit gets its own asks only when no
// editor can; nobody left to answer refuses.
func TestAskRouting(t *testing.T) {
	w := openTestWorkspace(t)
	ed1, s1 := attach(t, w, "window 1", protocol.ClientEditor, true)
	_, s2 := attach(t, w, "window 2", protocol.ClientEditor, true)
	agent, sa := attach(t, w, "agent", protocol.ClientMCP, true)
	_, sq := attach(t, w, "quiet", protocol.ClientEditor, false)

	type result struct {
		res *protocol.ExecuteResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := agent.Execute(context.Background(), bash("c1"))
		done <- result{r, err}
	}()
	for _, s := range []*fakeSink{s1, s2} {
		s.waitFor(t, "the ask in both windows", func(s *fakeSink) bool {
			return len(s.asked) == 1 && s.asked[0].Client != nil && s.asked[0].Client.Name == "agent"
		})
	}
	ask := s1.asked[0]
	if _, err := ed1.Reply(protocol.ReplyParams{ID: ask.ID, Reply: protocol.ReplyOnce}); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.err != nil || r.res.Status != protocol.StatusCompleted {
		t.Fatalf("the agent's call: %+v %v", r.res, r.err)
	}
	s2.waitFor(t, "permission/answered in the other window", func(s *fakeSink) bool {
		return len(s.answered) == 1 && s.answered[0].ID == ask.ID && s.answered[0].By == "person" && s.answered[0].Client.Name == "window 1"
	})
	sa.mu.Lock()
	sq.mu.Lock()
	if len(sa.asked) != 0 || len(sq.asked) != 0 {
		t.Errorf("asked the agent (%d) or a window that cannot show asks (%d) while an editor could", len(sa.asked), len(sq.asked))
	}
	sq.mu.Unlock()
	sa.mu.Unlock()
	rec, err := w.GetCall(protocol.CallsGetParams{SessionID: "s-c1", CallID: "c1"})
	if err != nil || rec.Client == nil || rec.Client.Name != "agent" {
		t.Fatalf("record: %+v %v", rec, err)
	}
	if d := rec.Decisions[len(rec.Decisions)-1]; d.By != "person" || d.Client == nil || d.Client.Name != "window 1" {
		t.Fatalf("decision: %+v", d)
	}

	// Without editors that can ask, the agent is asked itself.
	if err := ed1.Close(); err != nil {
		t.Fatal(err)
	}
	var ed2 *Client
	w.hub.mu.Lock()
	for _, c := range w.hub.clients {
		if c.ref.Name == "window 2" {
			ed2 = c
		}
	}
	w.hub.mu.Unlock()
	if err := ed2.Close(); err != nil {
		t.Fatal(err)
	}
	go func() {
		r, err := agent.Execute(context.Background(), bash("c2"))
		done <- result{r, err}
	}()
	sa.waitFor(t, "the agent's own ask", func(s *fakeSink) bool { return len(s.asked) == 1 })
	if _, err := agent.Reply(protocol.ReplyParams{ID: sa.asked[0].ID, Reply: protocol.ReplyReject, Message: "no"}); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.err != nil || r.res.Status != protocol.StatusError {
		t.Fatalf("rejected call: %+v %v", r.res, r.err)
	}

	// A client that cannot be asked, with nobody else: refused.
	quiet := func() *Client {
		w.hub.mu.Lock()
		defer w.hub.mu.Unlock()
		for _, c := range w.hub.clients {
			if c.ref.Name == "quiet" {
				return c
			}
		}
		return nil
	}()
	r, err := quiet.Execute(context.Background(), bash("c3"))
	if err != nil || r.Status != protocol.StatusError || !strings.Contains(r.Error, "no one was there to approve") {
		t.Fatalf("a call nobody can be asked about: %+v %v", r, err)
	}
	_ = agent.Close()
	_ = quiet.Close()
}

// Editors with the progress capability hear every call of the workspace, with its client;
// clients/changed lists who is attached.
func TestProgressAndClientsFanOut(t *testing.T) {
	w := openTestWorkspace(t)
	ed, se := attach(t, w, "window", protocol.ClientEditor, true)
	agent, _ := attach(t, w, "agent", protocol.ClientMCP, false)
	se.waitFor(t, "clients/changed with both", func(s *fakeSink) bool {
		return len(s.clients) > 0 && len(s.clients[len(s.clients)-1].Clients) == 2
	})
	if _, err := agent.Execute(context.Background(), protocol.ExecuteParams{SessionID: "a", MessageID: "m", CallID: "r1", Tool: "list", Args: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	se.waitFor(t, "the agent's progress", func(s *fakeSink) bool {
		for _, p := range s.progress {
			if p.CallID == "r1" && p.Status == protocol.StatusCompleted && p.Client != nil && p.Client.Name == "agent" {
				return true
			}
		}
		return false
	})
	_ = agent.Close()
	se.waitFor(t, "clients/changed after the agent left", func(s *fakeSink) bool {
		return len(s.clients[len(s.clients)-1].Clients) == 1
	})
	if res, err := w.ListCalls(protocol.CallsListParams{Client: "agent"}); err != nil || len(res.Calls) != 1 {
		t.Fatalf("calls of the agent: %+v %v", res, err)
	}
	_ = ed.Close()
}

// An ACP editor's clients share an ask route: the asks of their calls go to that editor
// alone, it is shown no other client's, and nobody else's asks reach it.
func TestAskRoutesKeepACPEditorsApart(t *testing.T) {
	w := openTestWorkspace(t)
	mk := func(name, kind, route string, canAsk bool) *Client {
		c, err := w.Attach(ClientOptions{Name: name, Kind: kind, CanAsk: canAsk, Route: route, Sink: newSink()})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	vscode := mk("vscode", protocol.ClientEditor, "", true)
	hook := mk("toolsd hook", protocol.ClientEditor, "", false)
	plain := mk("copilot", protocol.ClientMCP, "", false)
	zed := mk("zed", protocol.ClientEditor, "r1", true)
	zedMCP := mk("zed's toolsd mcp", protocol.ClientMCP, "r1/a-1", false)
	eliciting := mk("zed's other toolsd mcp", protocol.ClientMCP, "r1/a-2", true)
	jetbrains := mk("jetbrains", protocol.ClientEditor, "r2", true)
	ids := func(cs ...*Client) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.ref.ID)
		}
		return out
	}
	gone := protocol.ClientRef{ID: "gone-1", Kind: protocol.ClientEditor}
	for _, c := range []struct {
		name   string
		caller *protocol.ClientRef
		want   []string
	}{
		{"the VS Code window's own call", ptr(vscode.Ref()), ids(vscode)},
		{"a hook's agent call", ptr(hook.Ref()), ids(vscode)},
		{"an MCP client without a route", ptr(plain.Ref()), ids(vscode)},
		{"no client", nil, ids(vscode)},
		{"the ACP agent's call", ptr(zed.Ref()), ids(zed)},
		{"the ACP session's toolsd mcp", ptr(zedMCP.Ref()), ids(zed)},
		{"another ACP session's toolsd mcp", ptr(eliciting.Ref()), ids(zed)},
		{"another ACP editor's agent", ptr(jetbrains.Ref()), ids(jetbrains)},
		{"a client no longer attached", &gone, nil},
	} {
		if got := w.hub.Targets(c.caller); !slices.Equal(got, c.want) {
			t.Errorf("%s: shown to %v, want %v", c.name, got, c.want)
		}
	}
	// Without its editor, an ACP session's server asks back by elicitation, or nobody: never
	// another editor.
	_ = zed.Close()
	if got := w.hub.Targets(ptr(eliciting.Ref())); !slices.Equal(got, ids(eliciting)) {
		t.Errorf("an eliciting server without its editor: %v", got)
	}
	if got := w.hub.Targets(ptr(zedMCP.Ref())); len(got) != 0 {
		t.Errorf("a server that cannot elicit, without its editor: %v", got)
	}
}

// An agent's call whose ask is cancelled (ACP's session/cancel, the editor's Stop) ends as a
// cancelled request, not an internal error.
func TestAgentCallCancelledWhileAsking(t *testing.T) {
	w := openTestWorkspace(t)
	zed, sink := attach(t, w, "zed", protocol.ClientEditor, true)
	done := make(chan error, 1)
	go func() {
		_, err := zed.AgentBefore(context.Background(), protocol.AgentBeforeParams{Agent: "acp", SessionID: "s1", CallID: "c1", Tool: "Bash",
			Calls: []protocol.AgentCall{{Tool: "bash", Args: json.RawMessage(`{"command":"make all"}`)}}})
		done <- err
	}()
	sink.waitFor(t, "the ask", func(s *fakeSink) bool { return len(s.asked) == 1 })
	if !zed.Cancel("s1", "c1") {
		t.Fatal("the call was not in flight")
	}
	if err := <-done; !errors.Is(err, ErrCancelled) {
		t.Fatalf("agents/before after its cancel: %v, want ErrCancelled", err)
	}
}
