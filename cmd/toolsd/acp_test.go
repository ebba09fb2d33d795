//go:build unix

package main_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsd/toolsd/internal/harness"
	"github.com/toolsd/toolsd/protocol"
)

// acpPeer is one side of an ACP connection the test plays: the editor (toolsd acp's stdin
// and stdout) or the agent (the relay's socket).
type acpPeer struct {
	t    *testing.T
	name string
	w    io.Writer
	in   chan []byte
}

func newACPPeer(t *testing.T, name string, r io.Reader, w io.Writer) *acpPeer {
	p := &acpPeer{t: t, name: name, w: w, in: make(chan []byte, 16)}
	go func() {
		defer close(p.in)
		s := bufio.NewScanner(r)
		s.Buffer(nil, 1<<20)
		for s.Scan() {
			p.in <- append([]byte(nil), s.Bytes()...)
		}
	}()
	return p
}

func (p *acpPeer) sendRaw(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.w, line+"\n"); err != nil {
		p.t.Fatalf("%s: writing: %v", p.name, err)
	}
}

func (p *acpPeer) send(v any) {
	p.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		p.t.Fatal(err)
	}
	p.sendRaw(string(b))
}

// next is the next message this side receives, raw and decoded.
func (p *acpPeer) next() ([]byte, map[string]any) {
	p.t.Helper()
	select {
	case line, ok := <-p.in:
		if !ok {
			p.t.Fatalf("%s: the stream ended", p.name)
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			p.t.Fatalf("%s received a line that is not JSON: %q", p.name, line)
		}
		return line, m
	case <-time.After(20 * time.Second):
		p.t.Fatalf("%s: no message within 20s", p.name)
	}
	return nil, nil
}

// startACP runs `toolsd acp -- agent...` on the workspace's daemon, the test being its
// editor.
func startACP(t *testing.T, e *env, env []string, agent ...string) (*acpPeer, io.WriteCloser, *acpExit) {
	t.Helper()
	cmd := exec.CommandContext(e.ctx, harness.Binary(t), append([]string{"acp", "--store", e.st, "--grace=200ms", "--workspace", e.ws, "--"}, agent...)...)
	cmd.Env = append(append(os.Environ(), "XDG_RUNTIME_DIR="+harness.RuntimeDir(e.t), "GORACE=atexit_sleep_ms=0"), env...)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	stderr := &bytes.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := &acpExit{done: make(chan struct{}), proc: cmd.Process}
	go func() { exited.err = cmd.Wait(); close(exited.done) }()
	t.Cleanup(func() {
		_ = stdin.Close()
		select {
		case <-exited.done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			t.Error("toolsd acp did not exit after its editor left")
		}
		if t.Failed() {
			t.Logf("toolsd acp's stderr:\n%s", stderr.String())
		}
	})
	return newACPPeer(t, "the editor", stdout, stdin), stdin, exited
}

var relays atomic.Int64

// startRelayACP runs `toolsd acp` on the workspace's daemon with a relay process as its
// agent: the test is the editor (ed, on stdin) and the agent (ag, on the relay's socket).
func startRelayACP(t *testing.T, e *env) (ed *acpPeer, stdin io.WriteCloser, exited *acpExit, ag *acpPeer, conn net.Conn) {
	t.Helper()
	rt := harness.RuntimeDir(e.t)
	relay := filepath.Join(t.TempDir(), "acprelay")
	if out, err := exec.CommandContext(e.ctx, "go", "build", "-o", relay, "./testdata/acprelay").CombinedOutput(); err != nil {
		t.Fatalf("building the relay: %v\n%s", err, out)
	}
	sock := filepath.Join(rt, fmt.Sprintf("agent%d.sock", relays.Add(1)))
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	ed, stdin, exited = startACP(t, e, []string{"ACPRELAY_SOCKET=" + sock}, relay)
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	select {
	case conn = <-accepted:
	case <-exited.done:
		t.Fatalf("toolsd acp exited before starting its agent: %v", exited.err)
	case <-e.ctx.Done():
		t.Fatal("the agent did not start")
	}
	t.Cleanup(func() { conn.Close() })
	return ed, stdin, exited, newACPPeer(t, "the agent", conn, conn), conn
}

// mcpCommand is the toolsd mcp command toolsd acp adds to a session.
type mcpCommand struct {
	Command string   `json:"command"`
	Args    []string `json:"args"`
}

// connect starts the toolsd mcp as the agent starts it, as an MCP client; it ends with the test.
func (server mcpCommand) connect(t *testing.T, e *env) *sdk.ClientSession {
	t.Helper()
	cmd := exec.Command(server.Command, server.Args...)
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+harness.RuntimeDir(e.t), "GORACE=atexit_sleep_ms=0")
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "zed-agent", Version: "1"}, nil).Connect(e.ctx, &sdk.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, nil)
	if err != nil {
		t.Fatalf("starting the session's toolsd mcp (%v): %v", server, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// openRelaySession starts toolsd acp with the test as its editor and its agent, both at ACP
// v1, and opens the session sess1 in the workspace: the agent sees toolsd mcp alone among
// its servers, which it returns.
func openRelaySession(t *testing.T, e *env) (ed, ag *acpPeer, server mcpCommand) {
	t.Helper()
	ed, _, _, ag, _ = startRelayACP(t, e)
	ed.send(rpcReq(1, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}}))
	ag.next()
	ag.send(rpcResult(1, map[string]any{"protocolVersion": 1, "agentCapabilities": map[string]any{}}))
	ed.next()
	ed.send(rpcReq(2, "session/new", map[string]any{"cwd": e.ws, "mcpServers": []any{}}))
	_, m := ag.next()
	servers, _ := m["params"].(map[string]any)["mcpServers"].([]any)
	if len(servers) != 1 {
		t.Fatalf("session/new as the agent sees it: %v", m)
	}
	b, _ := json.Marshal(servers[0])
	_ = json.Unmarshal(b, &server)
	ag.send(rpcResult(2, map[string]any{"sessionId": "sess1"}))
	ed.next()
	return ed, ag, server
}

// acpExit is toolsd acp's exit: done closes when it has exited, with err.
type acpExit struct {
	done chan struct{}
	err  error
	proc *os.Process
}

func rpcReq(id any, method string, params any) map[string]any {
	return map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}
}

func rpcResult(id any, result any) map[string]any {
	return map[string]any{"jsonrpc": "2.0", "id": id, "result": result}
}

var acpOptions = []map[string]string{
	{"optionId": "yes", "name": "Allow", "kind": "allow_once"},
	{"optionId": "yes-always", "name": "Always", "kind": "allow_always"},
	{"optionId": "no", "name": "Reject", "kind": "reject_once"},
	{"optionId": "no-always", "name": "Never", "kind": "reject_always"},
}

func askPermission(id int, callID, command string) map[string]any {
	return rpcReq(id, "session/request_permission", map[string]any{"sessionId": "sess1",
		"toolCall": map[string]any{"toolCallId": callID, "title": command, "kind": "execute", "status": "pending", "rawInput": map[string]any{"command": command}},
		"options":  acpOptions})
}

// outcomeOf is a permission response's outcome and option.
func outcomeOf(t *testing.T, m map[string]any, id int) (string, string) {
	t.Helper()
	if got, _ := m["id"].(float64); int(got) != id || m["result"] == nil {
		t.Fatalf("want the response to request %d, got %v", id, m)
	}
	o, _ := m["result"].(map[string]any)["outcome"].(map[string]any)
	kind, _ := o["outcome"].(string)
	opt, _ := o["optionId"].(string)
	return kind, opt
}

// `toolsd acp` between an editor and an agent the test plays, both over real processes
// (toolsd acp, its owner, and a relay process that is the agent's command): messages pass
// unchanged, the workspace's rules answer the agent's permission requests, asks reach the
// editor with toolsd's options and "always" is kept by toolsd, cancel answers cancelled,
// toolsd mcp is in the session's servers and the tool calls are in the record.
func TestACPProxy(t *testing.T) {
	e := newEnv(t, envOpts{noAsk: true, options: agentRules})
	ctx := e.ctx
	ed, stdin, exited, ag, conn := startRelayACP(t, e)

	// Pass-through, byte for byte, both ways; initialize gains the client methods toolsd
	// serves (fs, terminal), and keeps the rest.
	ed.sendRaw(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":false},"_meta":{"y":1}},"_meta":{"x":[1,2]}}}`)
	if _, m := ag.next(); true {
		got, _ := json.Marshal(m["params"])
		if string(got) != `{"_meta":{"x":[1,2]},"clientCapabilities":{"_meta":{"y":1},"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true},"protocolVersion":1}` {
			t.Fatalf("initialize as the agent sees it: %s", got)
		}
	}
	odd := `{"jsonrpc":"2.0", "method":"_zed/notice","params":{"weird":  [1, 2.50, "\u00e9"]}}`
	ed.sendRaw(odd)
	if got, _ := ag.next(); string(got) != odd {
		t.Fatalf("a notification changed on its way:\n got %s\nwant %s", got, odd)
	}
	initRes := `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true},"authMethods":[]}}`
	ag.sendRaw(initRes)
	if got, _ := ed.next(); string(got) != initRes {
		t.Fatalf("the initialize result changed on its way: %s", got)
	}

	// session/new: toolsd mcp is added to the agent's MCP servers, after the editor's own.
	ed.send(rpcReq(2, "session/new", map[string]any{"cwd": e.ws, "mcpServers": []any{map[string]any{"name": "other", "command": "x", "args": []string{}, "env": []any{}}}}))
	_, m := ag.next()
	servers, _ := m["params"].(map[string]any)["mcpServers"].([]any)
	if len(servers) != 2 {
		t.Fatalf("session/new's mcpServers: %v", m)
	}
	s, _ := servers[1].(map[string]any)
	args, _ := s["args"].([]any)
	if s["name"] != "toolsd" || s["command"] != harness.Binary(t) || len(args) == 0 || args[0] != "mcp" || servers[0].(map[string]any)["name"] != "other" {
		t.Fatalf("toolsd mcp is not the added server: %v", servers)
	}
	ag.send(rpcResult(2, map[string]any{"sessionId": "sess1"}))
	ed.next()
	ed.send(rpcReq(3, "session/prompt", map[string]any{"sessionId": "sess1", "prompt": []any{map[string]any{"type": "text", "text": "go"}}}))
	ag.next()

	// marker checks that nothing reached the editor before it.
	marker := func(n int) {
		t.Helper()
		ag.send(map[string]any{"jsonrpc": "2.0", "method": "session/update", "params": map[string]any{"sessionId": "sess1",
			"update": map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": "marker"}}, "n": n}})
		if _, m := ed.next(); m["method"] != "session/update" || m["params"].(map[string]any)["n"] != float64(n) {
			t.Fatalf("the editor received %v before marker %d", m, n)
		}
	}

	// A deny rule: reject_once, never the editor.
	ag.send(askPermission(100, "tc-deny", "rm -rf build"))
	if _, m := ag.next(); true {
		if k, opt := outcomeOf(t, m, 100); k != "selected" || opt != "no" {
			t.Fatalf("a denied command: %s %s", k, opt)
		}
	}
	// An allow rule: allow_once (never allow_always), never the editor.
	ag.send(askPermission(101, "tc-echo", "echo hi"))
	if _, m := ag.next(); true {
		if k, opt := outcomeOf(t, m, 101); k != "selected" || opt != "yes" {
			t.Fatalf("an allowed command: %s %s", k, opt)
		}
	}
	marker(1)
	if rec := e.agentRecord("sess1", "tc-deny"); rec.Status != protocol.StatusError || !strings.Contains(rec.Error, "rm *") {
		t.Fatalf("the denied call's record: %+v", rec)
	}

	// An ask: the editor is asked with toolsd's options; "always" allows this one, and is
	// toolsd's: the next identical request is allowed without the editor.
	ag.send(askPermission(102, "tc-make", "make build"))
	_, m = ed.next()
	if m["method"] != "session/request_permission" {
		t.Fatalf("the editor should be asked, got %v", m)
	}
	p := m["params"].(map[string]any)
	tc, _ := p["toolCall"].(map[string]any)
	opts, _ := json.Marshal(p["options"])
	if p["sessionId"] != "sess1" || tc["toolCallId"] != "tc-make" || !strings.Contains(string(opts), `"optionId":"always"`) {
		t.Fatalf("the ask the editor sees: %v", p)
	}
	ed.send(rpcResult(m["id"], map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "always"}}))
	if _, m := ag.next(); true {
		if k, opt := outcomeOf(t, m, 102); k != "selected" || opt != "yes" {
			t.Fatalf("an ask answered always: %s %s", k, opt)
		}
	}
	ag.send(askPermission(103, "tc-make2", "make build"))
	if _, m := ag.next(); true {
		if k, opt := outcomeOf(t, m, 103); k != "selected" || opt != "yes" {
			t.Fatalf("the request after always: %s %s", k, opt)
		}
	}
	marker(2)

	// session/cancel answers a pending request cancelled.
	ag.send(askPermission(104, "tc-publish", "npm publish"))
	_, m = ed.next()
	if m["method"] != "session/request_permission" {
		t.Fatalf("the editor should be asked, got %v", m)
	}
	ed.send(map[string]any{"jsonrpc": "2.0", "method": "session/cancel", "params": map[string]any{"sessionId": "sess1"}})
	got := map[string]bool{}
	for range 2 {
		_, c := ag.next()
		switch {
		case c["method"] == "session/cancel":
			got["cancel"] = true
		case c["id"] == float64(104):
			if k, _ := outcomeOf(t, c, 104); k == "cancelled" {
				got["cancelled"] = true
			}
		}
	}
	if !got["cancel"] || !got["cancelled"] {
		t.Fatalf("after session/cancel the agent should get it and the request answered cancelled: %v", got)
	}
	ed.send(rpcResult(m["id"], map[string]any{"outcome": map[string]any{"outcome": "cancelled"}}))

	// The agent's tool call, through its updates, into the record.
	mark := e.d.Mark()
	ag.send(map[string]any{"jsonrpc": "2.0", "method": "session/update", "params": map[string]any{"sessionId": "sess1",
		"update": map[string]any{"sessionUpdate": "tool_call", "toolCallId": "tc-echo", "title": "echo hi", "kind": "execute", "status": "in_progress", "rawInput": map[string]any{"command": "echo hi"}}}})
	ed.next()
	ag.send(map[string]any{"jsonrpc": "2.0", "method": "session/update", "params": map[string]any{"sessionId": "sess1",
		"update": map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "tc-echo", "status": "completed", "content": []any{map[string]any{"type": "content", "content": map[string]any{"type": "text", "text": "hi\n"}}}}}})
	ed.next()
	if _, _, err := e.d.WaitFor(ctx, mark, "tools/progress", func(raw json.RawMessage) bool {
		var p protocol.ProgressParams
		return json.Unmarshal(raw, &p) == nil && p.CallID == "tc-echo" && p.Status == protocol.StatusCompleted
	}); err != nil {
		t.Fatalf("the agent's call did not end in the record: %v", err)
	}
	if rec := e.agentRecord("sess1", "tc-echo"); rec.Status != protocol.StatusCompleted || rec.Output != "hi\n" || rec.Tool != "Bash" {
		t.Fatalf("the recorded call: %+v", rec)
	}
	var list protocol.CallsListResult
	if err := e.d.Call(ctx, protocol.MethodCallsList, protocol.CallsListParams{SessionID: "sess1"}, &list); err != nil || len(list.Calls) < 4 {
		t.Fatalf("calls/list of the session: %v %+v", err, list)
	}

	// Malformed lines: a clear error to their sender, and the proxy goes on.
	ed.sendRaw("this is not json")
	if _, m := ed.next(); m["error"] == nil || m["id"] != nil || !strings.Contains(m["error"].(map[string]any)["message"].(string), "not JSON-RPC") {
		t.Fatalf("a malformed line from the editor: %v", m)
	}
	ag.sendRaw(`{"jsonrpc":"2.0","id":7}`)
	if _, m := ag.next(); m["error"] == nil || m["id"] != float64(7) {
		t.Fatalf("a malformed message from the agent: %v", m)
	}
	// Out of order: an answer to a request the proxy never sent, or sent and forgot (the
	// cancelled ask above), is dropped; client requests toolsd serves, malformed or naming
	// what does not exist, get an error naming the problem.
	ed.send(rpcResult("toolsd-acp:999", map[string]any{"outcome": map[string]any{"outcome": "cancelled"}}))
	ag.sendRaw(`{"jsonrpc":"2.0","id":8,"method":"fs/read_text_file","params":{"sessionId":"sess1","path":"relative.txt"}}`)
	if _, m := ag.next(); m["id"] != float64(8) || !strings.Contains(fmt.Sprint(m["error"]), "absolute path") {
		t.Fatalf("a read of a relative path: %v", m)
	}
	ag.sendRaw(`{"jsonrpc":"2.0","id":9,"method":"terminal/wait_for_exit","params":{"sessionId":"sess1","terminalId":"t-none"}}`)
	if _, m := ag.next(); m["id"] != float64(9) || !strings.Contains(fmt.Sprint(m["error"]), "no terminal") {
		t.Fatalf("waiting for a terminal that does not exist: %v", m)
	}
	ed.send(rpcReq(5, "session/prompt", map[string]any{"sessionId": "sess1", "prompt": []any{}}))
	if _, m := ag.next(); m["id"] != float64(5) {
		t.Fatalf("after malformed lines: %v", m)
	}

	// The editor leaves: the agent's stdin ends, and toolsd acp exits with the agent.
	_ = stdin.Close()
	if _, ok := <-ag.in; ok {
		t.Fatal("the agent received more after the editor left")
	}
	_ = conn.Close()
	select {
	case <-exited.done:
		if exited.err != nil {
			t.Fatalf("toolsd acp exited: %v", exited.err)
		}
	case <-ctx.Done():
		t.Fatal("toolsd acp did not exit after its agent")
	}
}

// The official ACP TypeScript SDK's agent (testdata/acpagent) behind `toolsd acp`: an
// independent implementation reads toolsd's answers to its permission requests, and its
// session lists toolsd mcp.
func TestACPProxyOfficialSDK(t *testing.T) {
	e := newEnv(t, envOpts{noAsk: true, options: agentRules})
	ed, done := sdkAgent(t, e)

	ed.send(rpcReq(1, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}}))
	if _, m := ed.next(); m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	ed.send(rpcReq(2, "session/new", map[string]any{"cwd": e.ws, "mcpServers": []any{}}))
	_, m := ed.next()
	res, _ := m["result"].(map[string]any)
	meta, _ := res["_meta"].(map[string]any)
	servers, _ := json.Marshal(meta["mcpServers"])
	if res["sessionId"] != "ts-session" || !strings.Contains(string(servers), `"name":"toolsd"`) || !strings.Contains(string(servers), `"args":["mcp",`) {
		t.Fatalf("the agent's session/new did not get toolsd mcp: %v", m)
	}

	steps, _ := json.Marshal([]map[string]string{
		{"id": "ts-deny", "command": "rm -rf build"}, {"id": "ts-echo", "command": "echo hi"},
		{"id": "ts-make", "command": "make all"}, {"id": "ts-make2", "command": "make all"},
	})
	mark := e.d.Mark()
	ed.send(rpcReq(3, "session/prompt", map[string]any{"sessionId": "ts-session", "prompt": []any{map[string]any{"type": "text", "text": string(steps)}}}))
	outcomes := map[string]string{}
	asks := 0
	for {
		_, m := ed.next()
		if m["id"] == float64(3) {
			if r, _ := m["result"].(map[string]any); r["stopReason"] != "end_turn" {
				t.Fatalf("the prompt ended with %v", m)
			}
			break
		}
		switch m["method"] {
		case "session/request_permission":
			asks++
			tc, _ := m["params"].(map[string]any)["toolCall"].(map[string]any)
			if tc["toolCallId"] != "ts-make" {
				t.Fatalf("only the first make should ask the editor, got %v", m)
			}
			ed.send(rpcResult(m["id"], map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "always"}}))
		case "session/update":
			u, _ := m["params"].(map[string]any)["update"].(map[string]any)
			if u["sessionUpdate"] == "agent_message_chunk" {
				text, _ := u["content"].(map[string]any)["text"].(string)
				if f := strings.Fields(text); len(f) == 4 && f[0] == "outcome" {
					outcomes[f[1]] = f[2] + " " + f[3]
				}
			}
		}
	}
	want := map[string]string{"ts-deny": "selected no", "ts-echo": "selected yes", "ts-make": "selected yes", "ts-make2": "selected yes"}
	for id, w := range want {
		if outcomes[id] != w {
			t.Errorf("%s: the agent read %q, want %q", id, outcomes[id], w)
		}
	}
	if asks != 1 {
		t.Errorf("the editor was asked %d times, want once", asks)
	}
	if rec := e.agentRecord("ts-session", "ts-deny"); rec.Status != protocol.StatusError {
		t.Errorf("the denied call's record: %+v", rec)
	}
	// The record is written after the update is forwarded: wait for the call to end there.
	if _, _, err := e.d.WaitFor(e.ctx, mark, "tools/progress", func(raw json.RawMessage) bool {
		var p protocol.ProgressParams
		return json.Unmarshal(raw, &p) == nil && p.CallID == "ts-make2" && p.Status == protocol.StatusCompleted
	}); err != nil {
		t.Fatalf("ts-make2 did not end in the record: %v", err)
	}
	if rec := e.agentRecord("ts-session", "ts-make2"); rec.Output != "ran make all\n" || rec.Agent != "node" {
		t.Errorf("the recorded call: %+v", rec)
	}
	done()
}

// Asks go only to the editor whose client made the call: with a VS Code window (the
// harness, which shows asks) and a Zed window (toolsd acp) on one workspace, the ACP agent's
// asks and those of the toolsd mcp that toolsd acp added to its session are shown in the Zed
// window alone, in that session; the VS Code window's own asks in it alone; and neither
// window can list or answer the other's.
func TestACPAsksStayWithTheirEditor(t *testing.T) {
	e := newEnv(t, envOpts{options: agentRules})
	ctx := e.ctx
	mark := e.d.Mark()
	ed, ag, server := openRelaySession(t, e)
	// seen: what the VS Code window shows.
	seenAsks := func() []string {
		var list protocol.ListAsksResult
		if err := e.d.Call(ctx, "permission/list", nil, &list); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, a := range list.Asks {
			ids = append(ids, a.ID+" "+strings.Join(a.Patterns, ","))
		}
		return ids
	}

	// The toolsd mcp, started as the agent starts it, makes a call that asks.
	cs := server.connect(t, e)
	done := make(chan string, 1)
	go func() {
		r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "bash", Arguments: map[string]any{"command": "make from-mcp"}})
		if err != nil {
			done <- err.Error()
			return
		}
		done <- text(r)
	}()
	_, m := ed.next()
	p, _ := m["params"].(map[string]any)
	tc, _ := p["toolCall"].(map[string]any)
	id, _ := tc["toolCallId"].(string)
	title, _ := tc["title"].(string)
	if m["method"] != "session/request_permission" || p["sessionId"] != "sess1" || !strings.HasPrefix(id, "toolsd-ask_") || !strings.Contains(title, "make from-mcp") {
		t.Fatalf("the Zed window should be asked about the MCP call in its session: %v", m)
	}
	if asks := seenAsks(); len(asks) != 0 {
		t.Fatalf("the VS Code window lists the Zed window's ask: %v", asks)
	}
	if err := e.reply(strings.TrimPrefix(id, "toolsd-"), "once", ""); err == nil || !strings.Contains(err.Error(), "not shown to this client") {
		t.Fatalf("the VS Code window answered the Zed window's ask: %v", err)
	}
	ed.send(rpcResult(m["id"], map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "once"}}))
	if out := <-done; strings.Contains(out, "permission") || strings.Contains(out, "rejected") {
		t.Fatalf("the MCP call allowed in the Zed window: %q", out)
	}

	// A request the editor drops (its session cancelled) refuses the call: it does not wait.
	go func() {
		r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "bash", Arguments: map[string]any{"command": "make dropped"}})
		if err != nil {
			done <- err.Error()
			return
		}
		done <- text(r)
	}()
	if _, m = ed.next(); m["method"] != "session/request_permission" {
		t.Fatalf("the Zed window should be asked about the second MCP call: %v", m)
	}
	ed.send(rpcResult(m["id"], map[string]any{"outcome": map[string]any{"outcome": "cancelled"}}))
	if out := <-done; !strings.Contains(out, "cancelled in the editor") {
		t.Fatalf("the MCP call whose request the editor dropped: %q", out)
	}

	// The agent's own permission request asks in the Zed window alone.
	ag.send(askPermission(100, "tc-make", "make all"))
	_, m = ed.next()
	if tc, _ := m["params"].(map[string]any)["toolCall"].(map[string]any); m["method"] != "session/request_permission" || tc["toolCallId"] != "tc-make" {
		t.Fatalf("the Zed window should be asked about its agent's call: %v", m)
	}
	if asks := seenAsks(); len(asks) != 0 {
		t.Fatalf("the VS Code window lists the Zed agent's ask: %v", asks)
	}
	ed.send(rpcResult(m["id"], map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "reject"}}))
	if _, m := ag.next(); true {
		if k, opt := outcomeOf(t, m, 100); k != "selected" || opt != "no" {
			t.Fatalf("rejected in the Zed window: %s %s", k, opt)
		}
	}

	// The VS Code window's own call asks there, and never in the Zed window.
	_, wait := e.start(protocol.ExecuteParams{Tool: "bash", CallID: "vs1", Args: args("command", "make from-vscode")})
	raw, _, err := e.d.WaitFor(ctx, mark, "permission/asked", func(raw json.RawMessage) bool {
		var a protocol.AskedParams
		return json.Unmarshal(raw, &a) == nil && a.CallID == "vs1"
	})
	if err != nil {
		t.Fatalf("the VS Code window was not asked about its own call: %v", err)
	}
	// Asks reach a client in order: had either of the Zed window's asks been shown here, it
	// would have come before this one.
	if n := e.d.Count(mark, "permission/asked"); n != 1 {
		t.Fatalf("the VS Code window was shown %d asks, want only its own", n)
	}
	var ask protocol.AskedParams
	_ = json.Unmarshal(raw, &ask)
	if err := e.reply(ask.ID, "reject", "not now"); err != nil {
		t.Fatal(err)
	}
	if res, err := wait(); err != nil || res.Status != protocol.StatusError {
		t.Fatalf("the rejected call: %+v %v", res, err)
	}
	// Nothing reached the Zed window meanwhile: the next thing it reads is the agent's.
	ag.send(map[string]any{"jsonrpc": "2.0", "method": "session/update", "params": map[string]any{"sessionId": "sess1",
		"update": map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": "marker"}}}})
	if _, m := ed.next(); m["method"] != "session/update" {
		t.Fatalf("the Zed window received %v", m)
	}
}

// The agent's tool calls are in the record as they happen: running from their first
// update (also one the agent asked no permission for), completed at their end; and a call
// whose end never comes, because the agent or toolsd acp died, ends interrupted.
func TestACPCallsRecordedAsTheyHappen(t *testing.T) {
	e := newEnv(t, envOpts{noAsk: true, options: agentRules})
	ctx := e.ctx
	progress := func(mark int, callID, status string) {
		t.Helper()
		if _, _, err := e.d.WaitFor(ctx, mark, "tools/progress", func(raw json.RawMessage) bool {
			var p protocol.ProgressParams
			return json.Unmarshal(raw, &p) == nil && p.CallID == callID && p.Status == status
		}); err != nil {
			t.Fatalf("%s did not become %s in the record: %v", callID, status, err)
		}
	}
	update := func(ag, ed *acpPeer, u map[string]any) {
		ag.send(map[string]any{"jsonrpc": "2.0", "method": "session/update", "params": map[string]any{"sessionId": "sess1", "update": u}})
		ed.next()
	}
	for _, end := range []string{"completed", "agent dies", "toolsd acp dies"} {
		t.Run(end, func(t *testing.T) {
			ed, _, exited, ag, conn := startRelayACP(t, e)
			id := "tc-" + strings.ReplaceAll(end, " ", "-")
			mark := e.d.Mark()
			update(ag, ed, map[string]any{"sessionUpdate": "tool_call", "toolCallId": id, "title": "Run tests", "kind": "execute", "status": "pending", "rawInput": map[string]any{}})
			progress(mark, id, protocol.StatusRunning)
			if rec := e.agentRecord("sess1", id); rec.Status != protocol.StatusRunning {
				t.Fatalf("the call after its first update: %+v", rec)
			}
			update(ag, ed, map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": id, "status": "in_progress", "rawInput": map[string]any{"command": "go test ./..."}})
			mark = e.d.Mark()
			switch end {
			case "completed":
				update(ag, ed, map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": id, "status": "completed", "rawOutput": "ok"})
				progress(mark, id, protocol.StatusCompleted)
				if rec := e.agentRecord("sess1", id); rec.Output != "ok" || !strings.Contains(string(rec.Args), "go test") {
					t.Fatalf("the completed call: %+v", rec)
				}
				return
			case "agent dies":
				_ = conn.Close()
			case "toolsd acp dies":
				_ = exited.proc.Kill()
			}
			progress(mark, id, protocol.StatusInterrupted)
			_ = conn.Close() // the relay, orphaned, holds toolsd acp's stderr until then
			<-exited.done
		})
	}
}

// A person's "once" on an agent's permission request allows one call: an agent that carried
// the call out itself (claude-agent-acp runs its Bash itself) cannot later run the same
// command unasked, neither through toolsd's MCP tools (what its model can do alone) nor
// through toolsd's terminal. The grant that spares the person a second ask lasts only while
// the tool call it was given for runs.
func TestACPOnceIsOnce(t *testing.T) {
	e := newEnv(t, envOpts{noAsk: true, options: agentRules})
	ctx := e.ctx
	ed, ag, server := openRelaySession(t, e)
	update := func(v map[string]any) {
		t.Helper()
		ag.send(map[string]any{"jsonrpc": "2.0", "method": "session/update", "params": map[string]any{"sessionId": "sess1", "update": v}})
		ed.next()
	}

	// The person allows the agent's mkdir once; the agent runs it itself and says it ended.
	mark := e.d.Mark()
	ag.send(askPermission(100, "tc-1", "mkdir made"))
	_, m := ed.next()
	if m["method"] != "session/request_permission" {
		t.Fatalf("the editor should be asked, got %v", m)
	}
	ed.send(rpcResult(m["id"], map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "once"}}))
	if _, m := ag.next(); true {
		if k, opt := outcomeOf(t, m, 100); k != "selected" || opt != "yes" {
			t.Fatalf("the request allowed once: %s %s", k, opt)
		}
	}
	update(map[string]any{"sessionUpdate": "tool_call", "toolCallId": "tc-1", "title": "mkdir made", "kind": "execute", "status": "in_progress", "rawInput": map[string]any{"command": "mkdir made"}})
	update(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "tc-1", "status": "completed"})
	if _, _, err := e.d.WaitFor(ctx, mark, "tools/progress", func(raw json.RawMessage) bool {
		var p protocol.ProgressParams
		return json.Unmarshal(raw, &p) == nil && p.CallID == "tc-1" && p.Status == protocol.StatusCompleted
	}); err != nil {
		t.Fatalf("the agent's call did not end in the record: %v", err)
	}

	// askedUntil answers reject to every permission request the editor gets until done
	// closes, and reports whether there was one.
	askedUntil := func(done <-chan struct{}) bool {
		t.Helper()
		asked := false
		for {
			select {
			case line, ok := <-ed.in:
				if !ok {
					t.Fatal("the editor's stream ended")
				}
				var m map[string]any
				_ = json.Unmarshal(line, &m)
				if m["method"] == "session/request_permission" {
					asked = true
					ed.send(rpcResult(m["id"], map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "reject"}}))
				}
			case <-done:
				return asked
			case <-ctx.Done():
				t.Fatal("the call did not end")
			}
		}
	}

	// Later, the model runs the same command through toolsd's MCP bash: asked again.
	cs := server.connect(t, e)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = cs.CallTool(ctx, &sdk.CallToolParams{Name: "bash", Arguments: map[string]any{"command": "mkdir made"}})
	}()
	if !askedUntil(done) {
		t.Error("toolsd mcp ran the command the person allowed once, for a call that had ended, without asking")
	}

	// And through toolsd's terminal: asked again.
	ag.send(rpcReq(200, "terminal/create", map[string]any{"sessionId": "sess1", "command": "mkdir", "args": []string{"made"}}))
	_, m = ag.next()
	tid, _ := m["result"].(map[string]any)["terminalId"].(string)
	if tid == "" {
		t.Fatalf("terminal/create: %v", m)
	}
	ag.send(rpcReq(201, "terminal/wait_for_exit", map[string]any{"sessionId": "sess1", "terminalId": tid}))
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		for line := range ag.in {
			var m map[string]any
			if json.Unmarshal(line, &m) == nil && m["id"] == float64(201) {
				return
			}
		}
	}()
	if !askedUntil(exited) {
		t.Error("the terminal ran the command the person allowed once, for a call that had ended, without asking")
	}
	if _, err := os.Stat(filepath.Join(e.ws, "made")); err == nil {
		t.Error("the command ran a second time on one \"once\"")
	}
}

// An agent's whole process tree is stopped when the editor leaves: a child the agent left
// behind (holding the agent's stdout, as a background process does) neither outlives toolsd
// acp nor keeps it from exiting.
func TestACPStopsTheAgentsTree(t *testing.T) {
	e := newEnv(t, envOpts{noAsk: true, options: agentRules})
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	_, stdin, exited := startACP(t, e, nil, "sh", "-c", `sleep 600 & echo $! > "$0"; exec cat >/dev/null`, pidFile)
	var pid int
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, err := os.ReadFile(pidFile)
		if _, serr := fmt.Sscan(string(b), &pid); err == nil && serr == nil && pid > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the agent did not start its child")
		}
		time.Sleep(10 * time.Millisecond) // polling a file the agent's child writes: no signal to wait on
	}
	alive := func() bool {
		// A zombie (killed, its parent gone, not yet reaped by init) counts as ended.
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return syscall.Kill(pid, 0) == nil
		}
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		return len(f) > 0 && f[0] != "Z"
	}
	t.Cleanup(func() {
		if alive() {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	_ = stdin.Close()
	select {
	case <-exited.done:
	case <-time.After(15 * time.Second):
		t.Fatal("toolsd acp did not exit after its editor left: the agent's child holds its stdout")
	}
	// Polling the process table (not toolsd's own child, so no wait returns its end).
	for end := time.Now().Add(5 * time.Second); alive(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the agent's child outlived toolsd acp")
		}
	}
}

// fs/read_text_file is decided where the path really leads: a link in the workspace to a
// file outside, a path through "..", /proc/self/root and /proc/self/cwd all ask about the
// file outside (the person refuses here), and its text never reaches the agent.
func TestACPReadsDecidedWhereTheyLead(t *testing.T) {
	e := newEnv(t, envOpts{noAsk: true, options: map[string]any{"permission": map[string]any{"read": "allow"}}, files: map[string]string{"in.txt": "inside\n"}})
	outside := t.TempDir()
	const secret = "SECRET-0a7e"
	if err := os.WriteFile(filepath.Join(outside, "key"), []byte(secret+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "key"), filepath.Join(e.ws, "link")); err != nil {
		t.Fatal(err)
	}
	ed, ag, _ := openRelaySession(t, e)
	rel, err := filepath.Rel(e.ws, filepath.Join(outside, "key"))
	if err != nil {
		t.Fatal(err)
	}
	cwd, err := os.Getwd() // toolsd acp's (startACP)
	if err != nil {
		t.Fatal(err)
	}
	fromCwd, err := filepath.Rel(cwd, filepath.Join(outside, "key"))
	if err != nil {
		t.Fatal(err)
	}
	read := func(id int, path string) (content string, asked bool) {
		t.Helper()
		ag.send(rpcReq(id, "fs/read_text_file", map[string]any{"sessionId": "sess1", "path": path}))
		for {
			select {
			case line := <-ed.in:
				var m map[string]any
				_ = json.Unmarshal(line, &m)
				if m["method"] == "session/request_permission" {
					asked = true
					ed.send(rpcResult(m["id"], map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "reject"}}))
				}
			case line := <-ag.in:
				var m map[string]any
				_ = json.Unmarshal(line, &m)
				if m["id"] != float64(id) {
					continue
				}
				r, _ := m["result"].(map[string]any)
				c, _ := r["content"].(string)
				return c, asked
			case <-e.ctx.Done():
				t.Fatalf("no answer to the read of %s", path)
			}
		}
	}
	if c, asked := read(10, filepath.Join(e.ws, "in.txt")); c != "inside\n" || asked {
		t.Fatalf("a read in the workspace: %q asked %v", c, asked)
	}
	for i, p := range []string{
		filepath.Join(e.ws, "link"),
		filepath.Join(e.ws, rel),
		"/proc/self/root" + filepath.Join(outside, "key"),
		"/proc/self/cwd/" + fromCwd,
	} {
		c, asked := read(20+i, p)
		if strings.Contains(c, secret) {
			t.Errorf("%s: the agent read the file outside the workspace", p)
		}
		if !asked {
			t.Errorf("%s: the person was not asked about the file outside", p)
		}
	}
}

// An ask about a protected path offers no "always" in an ACP editor either (docs/security.md,
// invariant 4): the agent's request to write .vscode/settings.json is shown with toolsd's
// once and reject alone.
func TestACPProtectedAskOffersNoAlways(t *testing.T) {
	e := newEnv(t, envOpts{noAsk: true, options: map[string]any{"permission": map[string]any{"edit": "allow"}}})
	ed, ag, _ := openRelaySession(t, e)
	ag.send(rpcReq(100, "session/request_permission", map[string]any{"sessionId": "sess1",
		"toolCall": map[string]any{"toolCallId": "tc-w", "title": "Write settings", "kind": "edit", "status": "pending",
			"rawInput": map[string]any{"file_path": filepath.Join(e.ws, ".vscode", "settings.json"), "content": "{}"}},
		"options": acpOptions}))
	_, m := ed.next()
	if m["method"] != "session/request_permission" {
		t.Fatalf("the editor should be asked, got %v", m)
	}
	opts, _ := json.Marshal(m["params"].(map[string]any)["options"])
	if strings.Contains(string(opts), "allow_always") || !strings.Contains(string(opts), `"optionId":"once"`) {
		t.Errorf("the ask about a protected path offers %s", opts)
	}
	ed.send(rpcResult(m["id"], map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "reject"}}))
	if _, m := ag.next(); true {
		if k, opt := outcomeOf(t, m, 100); k != "selected" || opt != "no" {
			t.Fatalf("rejected: %s %s", k, opt)
		}
	}
}
