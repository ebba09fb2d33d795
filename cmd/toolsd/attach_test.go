//go:build unix

package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsd/toolsd/internal/harness"
	"github.com/toolsd/toolsd/protocol"
)

// agent is the official MCP TypeScript client (testdata/mcpclient) driving `toolsd mcp`, as
// VS Code's agent or any other MCP host does: an independent client.
type agent struct {
	t     *testing.T
	cmd   *exec.Cmd
	stdin interface{ Write([]byte) (int, error) }
	mu    sync.Mutex // guards lines
	lines []map[string]json.RawMessage
	more  chan struct{}
	done  chan struct{}
	id    int
}

// startAgent starts the MCP client on `toolsd mcp --workspace ws --store st` with the
// test's runtime folder. env adds to its environment (ELICIT=once makes it answer asks).
func startAgent(t *testing.T, ws, st string, env ...string) *agent {
	t.Helper()
	dir := filepath.Join(moduleRoot(t), "testdata", "mcpclient")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		t.Fatalf("the MCP TypeScript client is not installed: run npm ci in %s (scripts/test.sh does)", dir)
	}
	cmd := exec.Command("node", filepath.Join(dir, "client.mjs"), "mcp", "--workspace", ws, "--store", st, "--grace=200ms")
	// These tests are about asks: commands run confined, but ask as without a sandbox.
	cfg := t.TempDir()
	if err := os.MkdirAll(filepath.Join(cfg, "toolsd"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfg, "toolsd", "config.json"), []byte(`{"sandbox": {"autoAllow": false}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(os.Environ(), "TOOLSD_BIN="+harness.Binary(t), "XDG_RUNTIME_DIR="+harness.RuntimeDir(t), "GORACE=atexit_sleep_ms=0", "XDG_CONFIG_HOME="+cfg)
	cmd.Env = append(cmd.Env, env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = &logWriter{t: t, prefix: "agent"}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	a := &agent{t: t, cmd: cmd, stdin: stdin, more: make(chan struct{}), done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			var m map[string]json.RawMessage
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				continue
			}
			a.mu.Lock()
			a.lines = append(a.lines, m)
			close(a.more)
			a.more = make(chan struct{})
			a.mu.Unlock()
		}
		_ = cmd.Wait()
		close(a.done)
	}()
	t.Cleanup(func() {
		_ = stdin.Close()
		select {
		case <-a.done:
		case <-time.After(10 * time.Second):
			t.Errorf("the MCP client did not exit within 10 s of its input closing")
			_ = cmd.Process.Kill()
			<-a.done
		}
	})
	ready := a.wait(harness.Deadline(t, 60*time.Second), func(m map[string]json.RawMessage) bool { return m["ready"] != nil })
	if string(ready["ready"]) != "true" {
		t.Fatalf("the MCP client did not connect: %s", ready["error"])
	}
	return a
}

func moduleRoot(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

type logWriter struct {
	t      *testing.T
	prefix string
	mu     sync.Mutex
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.t.Logf("%s: %s", w.prefix, strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// wait waits for a line that match accepts.
func (a *agent) wait(ctx context.Context, match func(map[string]json.RawMessage) bool) map[string]json.RawMessage {
	a.t.Helper()
	seen := 0
	for {
		a.mu.Lock()
		for ; seen < len(a.lines); seen++ {
			if match(a.lines[seen]) {
				m := a.lines[seen]
				a.mu.Unlock()
				return m
			}
		}
		more := a.more
		a.mu.Unlock()
		select {
		case <-more:
		case <-a.done:
			a.t.Fatalf("the MCP client exited")
		case <-ctx.Done():
			a.t.Fatalf("no matching line from the MCP client: %v", ctx.Err())
		}
	}
}

// call starts a tools/call and returns a function that waits for its result.
func (a *agent) call(ctx context.Context, tool string, args map[string]any) func() *sdk.CallToolResult {
	a.t.Helper()
	a.id++
	id := a.id
	b, _ := json.Marshal(map[string]any{"id": id, "op": "call", "tool": tool, "args": args})
	if _, err := a.stdin.Write(append(b, '\n')); err != nil {
		a.t.Fatal(err)
	}
	return func() *sdk.CallToolResult {
		a.t.Helper()
		m := a.wait(ctx, func(m map[string]json.RawMessage) bool { return string(m["id"]) == fmt.Sprint(id) })
		if m["error"] != nil {
			a.t.Fatalf("tools/call %s: %s", tool, m["error"])
		}
		var r sdk.CallToolResult
		if err := json.Unmarshal(m["result"], &r); err != nil {
			a.t.Fatal(err)
		}
		return &r
	}
}

func text(r *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// The scenario: an agent's call asks in the editor, naming the agent; the editor's
// answer completes it; the editor's history shows it; "always" in the editor holds for the
// agent's next call; a second window sees the same history; the editors leaving does not
// stop the agent; the last client leaving ends the daemon.
func TestAgentAsksInTheEditor(t *testing.T) {
	ws, st := t.TempDir(), filepath.Join(t.TempDir(), "store.db")
	ed := newEnv(t, envOpts{ws: ws, store: st})
	mark := ed.d.Mark()
	ag := startAgent(t, ws, st)
	if pids := harness.OwnerPIDs(harness.RuntimeDir(t)); len(pids) != 1 {
		t.Fatalf("want one owner for the editor and the agent, have %v", pids)
	}
	// The editor hears that the agent attached.
	if _, _, err := ed.d.WaitFor(ed.ctx, mark, "clients/changed", func(r json.RawMessage) bool {
		var p protocol.ClientsParams
		return json.Unmarshal(r, &p) == nil && len(p.Clients) == 2 && p.Clients[1].Name == "node-agent" && p.Clients[1].Kind == "mcp"
	}); err != nil {
		t.Fatalf("clients/changed naming the agent: %v", err)
	}

	wait := ag.call(ed.ctx, "bash", map[string]any{"command": "echo from-the-agent"})
	raw, _, err := ed.d.WaitFor(ed.ctx, mark, "permission/asked", nil)
	if err != nil {
		t.Fatal(err)
	}
	var ask protocol.AskedParams
	_ = json.Unmarshal(raw, &ask)
	if ask.Client == nil || ask.Client.Name != "node-agent" || ask.Client.Version != "1.2.3" || ask.Client.Kind != "mcp" || !strings.HasPrefix(ask.SessionID, "mcp-") {
		t.Fatalf("the ask does not name the agent and its session: %s", raw)
	}
	// The Running view: the agent's call is live on the editor's connection.
	if _, _, err := ed.d.WaitFor(ed.ctx, mark, "tools/progress", func(r json.RawMessage) bool {
		var p protocol.ProgressParams
		return json.Unmarshal(r, &p) == nil && p.CallID == ask.CallID && p.Client != nil && p.Client.Name == "node-agent"
	}); err != nil {
		t.Fatalf("no tools/progress of the agent's call on the editor: %v", err)
	}
	if err := ed.reply(ask.ID, "once", ""); err != nil {
		t.Fatal(err)
	}
	if r := wait(); r.IsError || !strings.Contains(text(r), "from-the-agent") {
		t.Fatalf("the agent's call after the editor allowed it: %+v %q", r, text(r))
	}
	if _, _, err := ed.d.WaitFor(ed.ctx, mark, "permission/answered", func(r json.RawMessage) bool {
		var p protocol.AnsweredParams
		return json.Unmarshal(r, &p) == nil && p.ID == ask.ID && p.By == "person" && p.Reply == "once"
	}); err != nil {
		t.Fatalf("permission/answered: %v", err)
	}
	// The editor's history has it, with the agent as its client and the editor as where the
	// person answered.
	var cl protocol.CallsListResult
	if err := ed.d.Call(ed.ctx, "calls/list", protocol.CallsListParams{Client: "node-agent"}, &cl); err != nil || len(cl.Calls) != 1 || cl.Calls[0].CallID != ask.CallID {
		t.Fatalf("calls/list of the agent: %+v %v", cl, err)
	}
	var rec protocol.CallRecord
	if err := ed.d.Call(ed.ctx, "calls/get", protocol.CallsGetParams{CallID: ask.CallID, SessionID: ask.SessionID}, &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Client == nil || rec.Client.Name != "node-agent" || len(rec.Decisions) == 0 || rec.Decisions[len(rec.Decisions)-1].Client == nil || rec.Decisions[len(rec.Decisions)-1].Client.Name != "harness" {
		b, _ := json.Marshal(rec)
		t.Fatalf("the record does not name the agent and the answering editor: %s", b)
	}

	// "Always" for the agent's session, answered in the editor, holds for its next call.
	mark = ed.d.Mark()
	wait = ag.call(ed.ctx, "bash", map[string]any{"command": "echo second"})
	raw, _, err = ed.d.WaitFor(ed.ctx, mark, "permission/asked", nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal(raw, &ask)
	if err := ed.d.Call(ed.ctx, "permission/reply", protocol.ReplyParams{ID: ask.ID, Reply: "always", Scope: "session"}, nil); err != nil {
		t.Fatal(err)
	}
	if r := wait(); r.IsError {
		t.Fatalf("second call: %q", text(r))
	}
	mark = ed.d.Mark()
	if r := ag.call(ed.ctx, "bash", map[string]any{"command": "echo third"})(); r.IsError || !strings.Contains(text(r), "third") {
		t.Fatalf("third call, covered by always: %q", text(r))
	}
	if n := ed.d.Count(mark, "permission/asked"); n != 0 {
		t.Fatalf("the third call asked again (%d asks) although always was answered", n)
	}

	// A second window sees the same history.
	ed2 := newEnv(t, envOpts{ws: ws, store: st})
	var cl2 protocol.CallsListResult
	if err := ed2.d.Call(ed2.ctx, "calls/list", protocol.CallsListParams{Client: "node-agent"}, &cl2); err != nil || len(cl2.Calls) != 3 {
		t.Fatalf("the second window's calls/list: %+v %v", cl2, err)
	}

	// Both editors leave; the agent keeps working (asks come back to it: it cannot show
	// them, so a call that asks is refused, and one that does not runs).
	for _, e := range []*env{ed, ed2} {
		if _, err := e.d.Shutdown(e.ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(ws, "left.txt"), []byte("still here\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := ag.call(harness.Deadline(t, 30*time.Second), "read", map[string]any{"filePath": "left.txt"})(); r.IsError || !strings.Contains(text(r), "still here") {
		t.Fatalf("the agent after the editors left: %q", text(r))
	}
	if r := ag.call(harness.Deadline(t, 30*time.Second), "bash", map[string]any{"command": "date +%s"})(); !r.IsError || !strings.Contains(text(r), "no one was there to approve") {
		t.Fatalf("an ask with no editor and a client that cannot show it: %q", text(r))
	}
	// The last client leaves: the daemon ends.
	_ = ag.stdin.(interface{ Close() error }).Close()
	<-ag.done
	if err := harness.WaitOwnersGone(harness.Deadline(t, 10*time.Second), harness.RuntimeDir(t)); err != nil {
		t.Fatal(err)
	}
}

// With no editor attached, an ask goes back to the agent that made the call (MCP
// elicitation), and its answer decides.
func TestAgentAlonePromptsItself(t *testing.T) {
	ws, st := t.TempDir(), filepath.Join(t.TempDir(), "store.db")
	ag := startAgent(t, ws, st, "ELICIT=once")
	ctx := harness.Deadline(t, 60*time.Second)
	r := ag.call(ctx, "bash", map[string]any{"command": "echo asked-myself"})()
	if r.IsError || !strings.Contains(text(r), "asked-myself") {
		t.Fatalf("call: %q", text(r))
	}
	m := ag.wait(ctx, func(m map[string]json.RawMessage) bool { return m["elicit"] != nil })
	if !strings.Contains(string(m["elicit"]), "bash") {
		t.Fatalf("elicitation: %s", m["elicit"])
	}
}

// The MCP face: every built-in carries its annotations (issue 9, finding 13).
func TestMCPAnnotations(t *testing.T) {
	ws, st := t.TempDir(), filepath.Join(t.TempDir(), "store.db")
	ag := startAgent(t, ws, st)
	ctx := harness.Deadline(t, 30*time.Second)
	b, _ := json.Marshal(map[string]any{"id": 99, "op": "list"})
	_, _ = ag.stdin.Write(append(b, '\n'))
	m := ag.wait(ctx, func(m map[string]json.RawMessage) bool { return string(m["id"]) == "99" })
	var tools []sdk.Tool
	if err := json.Unmarshal(m["tools"], &tools); err != nil {
		t.Fatal(err)
	}
	hints := map[string]*sdk.ToolAnnotations{}
	for _, tl := range tools {
		hints[tl.Name] = tl.Annotations
	}
	for _, id := range []string{"read", "glob", "grep", "list", "todoread"} {
		if a := hints[id]; a == nil || !a.ReadOnlyHint || a.OpenWorldHint == nil || *a.OpenWorldHint {
			t.Errorf("%s: want readOnlyHint and a closed world, got %+v", id, a)
		}
	}
	for _, id := range []string{"bash", "write", "edit"} {
		if a := hints[id]; a == nil || a.ReadOnlyHint || a.DestructiveHint == nil || !*a.DestructiveHint {
			t.Errorf("%s: want destructiveHint, got %+v", id, a)
		}
	}
	if a := hints["webfetch"]; a == nil || a.OpenWorldHint == nil || !*a.OpenWorldHint {
		t.Errorf("webfetch: want openWorldHint, got %+v", a)
	}
}

// Several `toolsd mcp` started at the same instant elect one owner between them.
func TestAgentsStartedAtOnceShareOneOwner(t *testing.T) {
	ws, st := t.TempDir(), filepath.Join(t.TempDir(), "store.db")
	bin := harness.Binary(t)
	ctx := harness.Deadline(t, 60*time.Second)
	rt := harness.RuntimeDir(t)
	const n = 4
	var wg sync.WaitGroup
	sessions := make([]*sdk.ClientSession, n)
	errs := make([]error, n)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(bin, "mcp", "--workspace", ws, "--store", st, "--grace=200ms")
			cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+rt, "GORACE=atexit_sleep_ms=0")
			cmd.Stderr = &logWriter{t: t, prefix: fmt.Sprint("mcp ", i)}
			<-start
			cl := sdk.NewClient(&sdk.Implementation{Name: fmt.Sprint("agent-", i), Version: "1"}, nil)
			sessions[i], errs[i] = cl.Connect(ctx, &sdk.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, nil)
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("client %d: %v", i, err)
		}
		defer sessions[i].Close()
	}
	if pids := harness.OwnerPIDs(harness.RuntimeDir(t)); len(pids) != 1 {
		t.Fatalf("%d clients started at once: owners %v, want one", n, pids)
	}
	for i, s := range sessions {
		r, err := s.CallTool(ctx, &sdk.CallToolParams{Name: "list", Arguments: map[string]any{}})
		if err != nil || r.IsError {
			t.Fatalf("client %d: %v %+v", i, err, r)
		}
	}
}

// The last client leaving ends the daemon and every tool process it ran.
func TestLastClientLeavingEndsEverything(t *testing.T) {
	e := newEnv(t, envOpts{})
	marker := fmt.Sprint(7000 + os.Getpid()%1000)
	e.startAllowed("long", fmt.Sprintf("sleep %s & sleep %s", marker, marker))
	waitProcs(t, e.ctx, 2, "sleep", marker)
	_ = e.d.Stdin.Close()
	<-e.d.Exited()
	if err := harness.WaitOwnersGone(harness.Deadline(t, 10*time.Second), harness.RuntimeDir(t)); err != nil {
		t.Fatal(err)
	}
	waitNoProcs(t, harness.Deadline(t, 5*time.Second), "sleep", marker)
}

// kill -9 of the owner with two clients attached: no tool process survives, and neither
// client hangs: the editor's toolsd exits (the extension restarts it) and toolsd mcp says
// what happened.
func TestOwnerKilledWithTwoClients(t *testing.T) {
	ws, st := t.TempDir(), filepath.Join(t.TempDir(), "store.db")
	ed := newEnv(t, envOpts{ws: ws, store: st})
	ag := startAgent(t, ws, st)
	marker := fmt.Sprint(8000 + os.Getpid()%1000)
	ed.startAllowed("long", fmt.Sprintf("sleep %s & sleep %s", marker, marker))
	waitProcs(t, ed.ctx, 2, "sleep", marker)
	pids := harness.OwnerPIDs(harness.RuntimeDir(t))
	if len(pids) != 1 || pids[0] <= 0 {
		t.Fatalf("owners: %v", pids)
	}
	if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ed.d.Exited():
	case <-harness.Deadline(t, 5*time.Second).Done():
		t.Fatal("the editor's toolsd still runs 5 s after its daemon was killed")
	}
	if c := ed.d.ExitCode(); c != 1 || !strings.Contains(ed.d.Stderr(), "went away") {
		t.Fatalf("the editor's toolsd exited %d:\n%s", c, ed.d.Stderr())
	}
	ag.wait(harness.Deadline(t, 5*time.Second), func(m map[string]json.RawMessage) bool { return string(m["event"]) == `"closed"` })
	waitNoProcs(t, harness.Deadline(t, 5*time.Second), "sleep", marker)
}
