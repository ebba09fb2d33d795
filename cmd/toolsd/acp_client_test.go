//go:build unix

package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolsd/toolsd/internal/harness"
	"github.com/toolsd/toolsd/internal/sandbox"
	"github.com/toolsd/toolsd/protocol"
)

// sdkAgent starts `toolsd acp` in front of the official SDK's agent (testdata/acpagent),
// the test being the editor; it skips when the SDK or node is not installed.
func sdkAgent(t *testing.T, e *env) (*acpPeer, func()) {
	t.Helper()
	dir, err := filepath.Abs("../../testdata/acpagent")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@agentclientprotocol", "sdk")); err != nil {
		t.Skip("the ACP TypeScript SDK is not installed: run `npm ci --no-audit --no-fund` in testdata/acpagent (scripts/test.sh does)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the ACP TypeScript agent needs it")
	}
	ed, stdin, exited := startACP(t, e, nil, node, filepath.Join(dir, "agent.mjs"))
	return ed, func() {
		_ = stdin.Close()
		select {
		case <-exited.done:
		case <-e.ctx.Done():
			t.Fatal("toolsd acp did not exit after the editor left")
		}
	}
}

// prompt sends the SDK agent its steps and returns what it told of each ("result <id>
// <JSON>"; and each tool call update the editor saw, as "update <toolCallId> <status>"),
// answering the permission requests that reach the editor with answer (by the
// tool call's id). The editor must never be sent fs/* or terminal/*: toolsd serves them.
func prompt(t *testing.T, ed *acpPeer, id int, steps []map[string]any, answer func(toolCallID string) string) (map[string]json.RawMessage, []string) {
	t.Helper()
	text, _ := json.Marshal(steps)
	ed.send(rpcReq(id, "session/prompt", map[string]any{"sessionId": "ts-session", "prompt": []any{map[string]any{"type": "text", "text": string(text)}}}))
	results := map[string]json.RawMessage{}
	var asked []string
	for {
		_, m := ed.next()
		if m["id"] == float64(id) {
			if r, _ := m["result"].(map[string]any); r["stopReason"] != "end_turn" {
				t.Fatalf("the prompt ended with %v", m)
			}
			return results, asked
		}
		method, _ := m["method"].(string)
		switch {
		case strings.HasPrefix(method, "fs/") || strings.HasPrefix(method, "terminal/"):
			t.Fatalf("the editor was sent %s: toolsd serves it", method)
		case method == "session/request_permission":
			tc, _ := m["params"].(map[string]any)["toolCall"].(map[string]any)
			tcID, _ := tc["toolCallId"].(string)
			title, _ := tc["title"].(string)
			asked = append(asked, tcID+" "+title)
			ed.send(rpcResult(m["id"], map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": answer(tcID)}}))
		case method == "session/update":
			u, _ := m["params"].(map[string]any)["update"].(map[string]any)
			if kind := u["sessionUpdate"]; kind == "tool_call" || kind == "tool_call_update" {
				results[fmt.Sprintf("update %v %v", u["toolCallId"], u["status"])], _ = json.Marshal(u)
			}
			if u["sessionUpdate"] != "agent_message_chunk" {
				continue
			}
			text, _ := u["content"].(map[string]any)["text"].(string)
			if rest, ok := strings.CutPrefix(text, "result "); ok {
				id, v, _ := strings.Cut(rest, " ")
				results[id] = json.RawMessage(v)
			}
		}
	}
}

// ACP v1's client methods, served by toolsd and not the editor: reads obey the read rules
// and return the file exactly; writes are toolsd's write (its rules, a deny refused, an
// ask asked once with the agent's own request, revertible); terminals run toolsd's bash
// (its rules, its sandbox), can be killed, are cut to their byte limit and released.
func TestACPServesClientMethods(t *testing.T) {
	long := strings.Repeat("x", 3000)
	opts := map[string]any{
		"sandbox": map[string]any{"autoAllow": false},
		"permission": map[string]any{
			"read": map[string]any{"*": "allow", "secret/*": "deny"},
			"bash": map[string]any{"*": "ask", "echo *": "allow", "sleep *": "allow", "./probe.sh": "allow", "rm *": "deny"},
			"edit": map[string]any{"*": "ask", "out/*": "allow", "secret/*": "deny"},
		},
	}
	e := newEnv(t, envOpts{noAsk: true, options: opts, files: map[string]string{
		"a.txt": long + "\nsecond\nthird", "secret/key": "k", "build/keep": "",
		".vscode/settings.json": "{}\n", "probe.sh": "#!/bin/sh\necho pwned > .vscode/settings.json\n",
	}})
	if err := os.Chmod(filepath.Join(e.ws, "probe.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	ed, done := sdkAgent(t, e)

	// toolsd offers the agent fs and terminal, whatever the editor offers.
	ed.send(rpcReq(1, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{"fs": map[string]any{"readTextFile": false}}}))
	_, m := ed.next()
	offered, _ := m["result"].(map[string]any)["_meta"].(map[string]any)["clientCapabilities"].(map[string]any)
	if fs, _ := offered["fs"].(map[string]any); fs["readTextFile"] != true || fs["writeTextFile"] != true || offered["terminal"] != true {
		t.Fatalf("the agent was offered %v", offered)
	}
	ed.send(rpcReq(2, "session/new", map[string]any{"cwd": e.ws, "mcpServers": []any{}}))
	ed.next()

	in := func(p string) string { return filepath.Join(e.ws, p) }
	steps := []map[string]any{
		{"id": "read-all", "read": in("a.txt")},
		{"id": "read-line", "read": in("a.txt"), "line": 2, "limit": 1},
		{"id": "read-denied", "read": in("secret/key")},
		{"id": "write", "write": in("out/new.txt"), "content": "made\n"},
		{"id": "write-denied", "write": in("secret/x"), "content": "x"},
		{"id": "write-asked", "write": in("notes.txt"), "content": "n\n", "ask": true},
		{"id": "echo", "run": "echo", "args": []string{"hi"}},
		{"id": "cut", "run": "sh", "args": []string{"-c", "echo one; echo two"}, "limit": 4},
		{"id": "rm", "run": "rm", "args": []string{"-rf", "build"}},
		{"id": "sleep", "run": "sleep", "args": []string{"30"}, "kill": true},
		{"id": "probe", "run": "./probe.sh"},
	}
	// The person allows the agent's write, and refuses to run the probe outside the sandbox.
	res, asked := prompt(t, ed, 3, steps, func(id string) string {
		if id == "write-asked" {
			return "once"
		}
		return "reject"
	})
	getRaw := func(id string, v any) {
		t.Helper()
		if err := json.Unmarshal(res[id], v); err != nil {
			t.Fatalf("%s: the agent told %q", id, res[id])
		}
	}
	type answer struct {
		Content string `json:"content"`
		Error   string `json:"error"`
	}
	answerOf := func(id string) (a answer) {
		t.Helper()
		getRaw(id, &a)
		return a
	}
	if a := answerOf("read-all"); a.Content != long+"\nsecond\nthird" {
		t.Errorf("read-all: %d bytes, %q…, want the file exactly", len(a.Content), a.Error)
	}
	if a := answerOf("read-line"); a.Content != "second\n" {
		t.Errorf("read-line: %+v", a)
	}
	if a := answerOf("read-denied"); a.Content != "" || !strings.Contains(a.Error, "denied") {
		t.Errorf("read-denied: %+v", a)
	}
	if a := answerOf("write"); a.Error != "" {
		t.Errorf("write: %+v", a)
	} else if b, _ := os.ReadFile(in("out/new.txt")); string(b) != "made\n" {
		t.Errorf("out/new.txt: %q", b)
	}
	if a := answerOf("write-denied"); !strings.Contains(a.Error, "denied") {
		t.Errorf("write-denied: %+v", a)
	}
	if _, err := os.Stat(in("secret/x")); !os.IsNotExist(err) {
		t.Errorf("secret/x was written: %v", err)
	}
	// The write the person allowed once on the agent's request is not asked again.
	if a := answerOf("write-asked"); a.Error != "" {
		t.Errorf("write-asked: %+v", a)
	}
	n := 0
	for _, a := range asked {
		if strings.Contains(a, "notes.txt") {
			n++
		}
	}
	if n != 1 || !strings.HasPrefix(asked[0], "write-asked ") {
		t.Errorf("the editor was asked %v: want the agent's own request for write-asked, and no second ask for its write", asked)
	}

	type run struct {
		Exit struct {
			ExitCode *int    `json:"exitCode"`
			Signal   *string `json:"signal"`
		} `json:"exit"`
		Out struct {
			Output    string `json:"output"`
			Truncated bool   `json:"truncated"`
		} `json:"out"`
		After struct {
			Error string `json:"error"`
		} `json:"after"`
	}
	runOf := func(id string) (r run) {
		t.Helper()
		getRaw(id, &r)
		return r
	}
	if r := runOf("echo"); r.Exit.ExitCode == nil || *r.Exit.ExitCode != 0 || r.Out.Output != "hi\n" || !strings.Contains(r.After.Error, "no terminal") {
		t.Errorf("echo: %s", res["echo"])
	}
	if r := runOf("cut"); r.Out.Output != "two\n" || !r.Out.Truncated {
		t.Errorf("cut to 4 bytes: %s", res["cut"])
	}
	if r := runOf("rm"); r.Exit.ExitCode == nil || *r.Exit.ExitCode == 0 || !strings.Contains(r.Out.Output, "rm *") {
		t.Errorf("rm under a deny rule: %s", res["rm"])
	}
	if _, err := os.Stat(in("build/keep")); err != nil {
		t.Errorf("the denied rm ran: %v", err)
	}
	if r := runOf("sleep"); r.Exit.Signal == nil || r.Exit.ExitCode != nil {
		t.Errorf("a killed terminal: %s", res["sleep"])
	}
	if sandbox.Probe("").Available() {
		if r := runOf("probe"); r.Exit.ExitCode == nil || *r.Exit.ExitCode == 0 {
			t.Errorf("the sandbox let the terminal write a protected path: %s", res["probe"])
		}
		if b, _ := os.ReadFile(in(".vscode/settings.json")); string(b) != "{}\n" {
			t.Errorf(".vscode/settings.json after the terminal: %q", b)
		}
	}

	// In the record: toolsd acp's own calls, and the write is revertible.
	var list protocol.CallsListResult
	if err := e.d.Call(e.ctx, protocol.MethodCallsList, protocol.CallsListParams{SessionID: "ts-session"}, &list); err != nil {
		t.Fatal(err)
	}
	writeID := ""
	tools := map[string]int{}
	for _, c := range list.Calls {
		tools[c.Tool]++
		if c.Tool == "write" && strings.Contains(c.Title, "new.txt") {
			writeID = c.CallID
		}
	}
	if tools["fs/read_text_file"] != 3 || tools["write"] != 3 || tools["bash"] != 5 || writeID == "" {
		t.Fatalf("the session's record: %v", tools)
	}
	write := e.agentRecord("ts-session", writeID)
	if write.Client == nil || !strings.HasPrefix(write.Client.Name, "toolsd acp") || write.Agent != "node" {
		t.Errorf("the write's record does not say toolsd acp served it for the agent: %+v %q", write.Client, write.Agent)
	}
	if rv := e.revert(protocol.CallsRevertParams{SessionID: "ts-session", CallID: writeID}); rv.Status != protocol.RevertDone {
		t.Errorf("calls/revert of the write: %+v", rv)
	}
	if _, err := os.Stat(in("out/new.txt")); !os.IsNotExist(err) {
		t.Errorf("out/new.txt after the revert: %v", err)
	}
	done()
}

// ACP v2 side by side with v1: an editor that asks for v2 gets its initialize passed as it is,
// and toolsd serves no client method v2 does not have. Permission requests name their
// subject: a command with its cwd is decided by the bash rules (a deny never reaches the
// editor; an ask does, as the agent's v2 request with toolsd's options), a tool call as in
// v1, and a subject toolsd does not know goes to the editor unchanged.
func TestACPVersion2(t *testing.T) {
	e := newEnv(t, envOpts{noAsk: true, options: agentRules})
	ed, _, _, ag, _ := startRelayACP(t, e)
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"ed","version":"1"},"capabilities":{}}}`
	ed.sendRaw(init)
	if got, _ := ag.next(); string(got) != init {
		t.Fatalf("a v2 initialize changed on its way:\n got %s\nwant %s", got, init)
	}
	ag.send(rpcResult(1, map[string]any{"protocolVersion": 2, "agentCapabilities": map[string]any{}}))
	ed.next()
	// A method toolsd does not serve under v2 goes to the editor.
	read := `{"jsonrpc":"2.0","id":9,"method":"fs/read_text_file","params":{"sessionId":"s","path":"/etc/hostname"}}`
	ag.sendRaw(read)
	if got, _ := ed.next(); string(got) != read {
		t.Fatalf("under v2 the editor should get the agent's request as it is: %s", got)
	}

	command := func(id int, cmd string) map[string]any {
		return rpcReq(id, "session/request_permission", map[string]any{"sessionId": "s2", "title": "Run " + cmd,
			"subject": map[string]any{"type": "command", "command": cmd, "cwd": e.ws}, "options": acpOptions})
	}
	ag.send(command(20, "rm -rf build"))
	if _, m := ag.next(); true {
		if k, opt := outcomeOf(t, m, 20); k != "selected" || opt != "no" {
			t.Fatalf("a denied v2 command: %s %s", k, opt)
		}
	}
	ag.send(command(21, "make all"))
	_, m := ed.next()
	p, _ := m["params"].(map[string]any)
	subject, _ := p["subject"].(map[string]any)
	opts, _ := json.Marshal(p["options"])
	if m["method"] != "session/request_permission" || p["title"] != "Run make all" || subject["command"] != "make all" || !strings.Contains(string(opts), `"optionId":"always"`) {
		t.Fatalf("the v2 ask the editor sees: %v", m)
	}
	ed.send(rpcResult(m["id"], map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "reject"}}))
	if _, m := ag.next(); true {
		if k, opt := outcomeOf(t, m, 21); k != "selected" || opt != "no" {
			t.Fatalf("a v2 command rejected in the editor: %s %s", k, opt)
		}
	}
	// v2's tool calls: tool_call_update is an upsert, content comes in chunks.
	mark := e.d.Mark()
	for _, u := range []map[string]any{
		{"sessionUpdate": "tool_call_update", "toolCallId": "v2-call", "title": "Say", "kind": "execute", "status": "in_progress", "rawInput": map[string]any{"command": "echo v2"}},
		{"sessionUpdate": "tool_call_content_chunk", "toolCallId": "v2-call", "content": map[string]any{"type": "content", "content": map[string]any{"type": "text", "text": "part one, "}}},
		{"sessionUpdate": "tool_call_content_chunk", "toolCallId": "v2-call", "content": map[string]any{"type": "content", "content": map[string]any{"type": "text", "text": "part two"}}},
		{"sessionUpdate": "tool_call_update", "toolCallId": "v2-call", "status": "completed"},
	} {
		ag.send(map[string]any{"jsonrpc": "2.0", "method": "session/update", "params": map[string]any{"sessionId": "s2", "update": u}})
		ed.next()
	}
	if _, _, err := e.d.WaitFor(e.ctx, mark, "tools/progress", func(raw json.RawMessage) bool {
		var p protocol.ProgressParams
		return json.Unmarshal(raw, &p) == nil && p.CallID == "v2-call" && p.Status == protocol.StatusCompleted
	}); err != nil {
		t.Fatalf("the v2 call did not end in the record: %v", err)
	}
	if rec := e.agentRecord("s2", "v2-call"); rec.Output != "part one, part two" || rec.Title != "Bash echo v2" {
		t.Fatalf("the v2 call's record: %q %q", rec.Title, rec.Output)
	}

	custom := `{"jsonrpc":"2.0","id":22,"method":"session/request_permission","params":{"sessionId":"s2","title":"Use the GPU","subject":{"type":"_gpu","units":2},"options":[{"optionId":"yes","name":"Allow","kind":"allow_once"}]}}`
	ag.sendRaw(custom)
	_, m = ed.next()
	if got, _ := json.Marshal(m["params"]); m["method"] != "session/request_permission" || !strings.Contains(string(got), `"subject":{"type":"_gpu","units":2}`) || !strings.Contains(string(got), `"optionId":"yes"`) {
		t.Fatalf("an unknown subject should reach the editor as it is: %v", m)
	}
	ed.send(rpcResult(m["id"], map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "yes"}}))
	if _, m := ag.next(); true {
		if k, opt := outcomeOf(t, m, 22); k != "selected" || opt != "yes" {
			t.Fatalf("the editor's answer to an unknown subject: %s %s", k, opt)
		}
	}
}

// The official SDK's client as the editor and its agent behind `toolsd acp`: both sides are
// independent implementations that validate what toolsd sends them. A denied command is
// rejected and an allowed one allowed without the editor; an ask reaches the editor with
// toolsd's options, its "always" is toolsd's, and the next identical request is not asked;
// a write the person allowed once is carried out by toolsd without a second ask.
func TestACPOfficialSDKClientAndAgent(t *testing.T) {
	dir, err := filepath.Abs("../../testdata/acpagent")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@agentclientprotocol", "sdk")); err != nil {
		t.Skip("the ACP TypeScript SDK is not installed: run `npm ci --no-audit --no-fund` in testdata/acpagent (scripts/test.sh does)")
	}
	e := newEnv(t, envOpts{noAsk: true, options: agentRules})
	steps, _ := json.Marshal([]map[string]any{
		{"id": "c-deny", "command": "rm -rf build"}, {"id": "c-echo", "command": "echo hi"},
		{"id": "c-make", "command": "make all"}, {"id": "c-make2", "command": "make all"},
		{"id": "c-write", "write": filepath.Join(e.ws, "notes.txt"), "content": "n\n", "ask": true},
	})
	cmd := exec.CommandContext(e.ctx, "node", filepath.Join(dir, "client.mjs"), "acp", "--store", e.st, "--grace=200ms", "--workspace", e.ws, "--", "node", filepath.Join(dir, "agent.mjs"))
	cmd.Env = append(os.Environ(), "TOOLSD_BIN="+harness.Binary(t), "XDG_RUNTIME_DIR="+harness.RuntimeDir(e.t), "GORACE=atexit_sleep_ms=0",
		"WORKSPACE="+e.ws, "STEPS="+string(steps), "ANSWER_c-make=always")
	cmd.Stderr = &logWriter{t: t, prefix: "client"}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the SDK client: %v\n%s", err, out)
	}
	var got struct {
		StopReason string `json:"stopReason"`
		Asked      []struct {
			ID      string   `json:"id"`
			Options []string `json:"options"`
		} `json:"asked"`
		Said []string `json:"said"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("the SDK client printed %q", out)
	}
	said := strings.Join(got.Said, "\n")
	for _, want := range []string{"outcome c-deny selected no", "outcome c-echo selected yes", "outcome c-make selected yes", "outcome c-make2 selected yes", "result c-write {}"} {
		if !strings.Contains(said, want) {
			t.Errorf("the agent did not say %q; it said:\n%s", want, said)
		}
	}
	var ids []string
	for _, a := range got.Asked {
		ids = append(ids, a.ID)
		if strings.Join(a.Options, ",") != "once,always,always-workspace,reject" {
			t.Errorf("%s was asked with options %v, not toolsd's", a.ID, a.Options)
		}
	}
	if strings.Join(ids, ",") != "c-make,c-write" || got.StopReason != "end_turn" {
		t.Errorf("the editor was asked about %v (want c-make and c-write, once each); stop reason %q", ids, got.StopReason)
	}
	if b, _ := os.ReadFile(filepath.Join(e.ws, "notes.txt")); string(b) != "n\n" {
		t.Errorf("notes.txt: %q", b)
	}
}
