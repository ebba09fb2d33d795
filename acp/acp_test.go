package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/toolsd/toolsd/internal/fspath"
	"github.com/toolsd/toolsd/protocol"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestSubject(t *testing.T) {
	cases := []struct {
		name, tc   string
		tool, call string // call: the first call's tool and args, "" for none
	}{
		{"a shell command", `{"toolCallId":"1","kind":"execute","rawInput":{"command":"git push"}}`, "Bash", `bash {"command":"git push","workdir":"/w"}`},
		{"Claude Code's tool name", `{"toolCallId":"1","kind":"edit","rawInput":{"file_path":"/w/a","content":"x"},"_meta":{"claudeCode":{"toolName":"Write"}}}`, "Write", `write {"content":"x","filePath":"/w/a"}`},
		{"an edit", `{"toolCallId":"1","kind":"edit","rawInput":{"file_path":"a.go","old_string":"a","new_string":"b"}}`, "Edit", `edit {"filePath":"/w/a.go","newString":"b","oldString":"a"}`},
		{"a read", `{"toolCallId":"1","kind":"read","rawInput":{"path":"/w/x"}}`, "Read", `read {"filePath":"/w/x"}`},
		{"an edit by its locations", `{"toolCallId":"1","kind":"delete","locations":[{"path":"/w/gone"}]}`, "edit", `edit {"filePath":"/w/gone"}`},
		{"a search by its locations", `{"toolCallId":"1","kind":"search","locations":[{"path":"/w/src"}]}`, "read", `read {"filePath":"/w/src"}`},
		{"a command it cannot read", `{"toolCallId":"1","kind":"execute","title":"run"}`, "bash", ""},
		{"a fetch", `{"toolCallId":"1","kind":"fetch","rawInput":{"url":"https://example.com"}}`, "WebFetch", `webfetch {"url":"https://example.com"}`},
		{"anything else", `{"toolCallId":"1","kind":"think","title":"Plan the work"}`, "Plan the work", ""},
	}
	for _, c := range cases {
		var tc toolCall
		if err := json.Unmarshal([]byte(c.tc), &tc); err != nil {
			t.Fatal(err)
		}
		tool, calls, err := subject(&tc, "/w")
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		call := ""
		if len(calls) > 0 {
			call = calls[0].Tool + " " + string(calls[0].Args)
		}
		if tool != c.tool || call != c.call {
			t.Errorf("%s: got %q %q, want %q %q", c.name, tool, call, c.tool, c.call)
		}
	}
}

// pipes runs a proxy without a daemon between a test editor and a test agent.
type pipes struct {
	editorW, agentW *io.PipeWriter
	editorR, agentR *bufio.Reader
	done            chan error
}

func start(t *testing.T) *pipes {
	t.Helper()
	edIn, edInW := io.Pipe()   // editor → proxy
	edOutR, edOut := io.Pipe() // proxy → editor
	agOutR, agOut := io.Pipe() // agent → proxy
	agInR, agIn := io.Pipe()   // proxy → agent
	p := &pipes{editorW: edInW, agentW: agOut, editorR: bufio.NewReader(edOutR), agentR: bufio.NewReader(agInR), done: make(chan error, 1)}
	go func() {
		p.done <- Run(context.Background(), Options{Editor: edIn, EditorOut: edOut, Agent: agOutR, AgentIn: agIn, Folder: "/w",
			AgentID: "test", AgentName: "test", MCP: &MCPServer{Name: "toolsd", Command: "/bin/toolsd", Args: []string{"mcp"}}})
	}()
	t.Cleanup(func() {
		_ = edInW.Close()
		_ = agOut.Close()
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			t.Error("the proxy did not end")
		}
		_ = edOutR.Close()
		_ = agInR.Close()
	})
	return p
}

func readLine(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	ch := make(chan string, 1)
	go func() {
		s, _ := r.ReadString('\n')
		ch <- s
	}()
	select {
	case s := <-ch:
		return strings.TrimSuffix(s, "\n")
	case <-time.After(10 * time.Second):
		t.Fatal("no line within 10s")
	}
	return ""
}

func TestPassThroughWithoutDaemon(t *testing.T) {
	p := start(t)
	// Unknown methods, fields and ACP versions pass byte for byte, both ways.
	in := `{"jsonrpc":"2.0","id":"x","method":"_zed/unknown","params":{"b":1,"a":[true]}}`
	_, _ = io.WriteString(p.editorW, in+"\n")
	if got := readLine(t, p.agentR); got != in {
		t.Fatalf("the agent got %s", got)
	}
	out := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[]}}}`
	_, _ = io.WriteString(p.agentW, out+"\n")
	if got := readLine(t, p.editorR); got != out {
		t.Fatalf("the editor got %s", got)
	}
	// Without a daemon the editor decides a permission request, unchanged.
	perm := `{"jsonrpc":"2.0","id":9,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"t"},"options":[]}}`
	_, _ = io.WriteString(p.agentW, perm+"\n")
	if got := readLine(t, p.editorR); got != perm {
		t.Fatalf("the editor got %s", got)
	}
	// session/load gets toolsd mcp; one already named toolsd is not added twice.
	_, _ = io.WriteString(p.editorW, `{"jsonrpc":"2.0","id":2,"method":"session/load","params":{"sessionId":"s","cwd":"/w","mcpServers":[]}}`+"\n")
	var m struct {
		ID     int `json:"id"`
		Params struct {
			SessionID  string `json:"sessionId"`
			MCPServers []struct {
				Name    string   `json:"name"`
				Command string   `json:"command"`
				Args    []string `json:"args"`
			} `json:"mcpServers"`
		} `json:"params"`
	}
	if err := json.Unmarshal([]byte(readLine(t, p.agentR)), &m); err != nil || m.ID != 2 || m.Params.SessionID != "s" || len(m.Params.MCPServers) != 1 ||
		m.Params.MCPServers[0].Command != "/bin/toolsd" || m.Params.MCPServers[0].Args[0] != "mcp" {
		t.Fatalf("session/load as the agent got it: %+v %v", m, err)
	}
	again := `{"jsonrpc":"2.0","id":3,"method":"session/new","params":{"cwd":"/w","mcpServers":[{"name":"toolsd","command":"x","args":[],"env":[]}]}}`
	_, _ = io.WriteString(p.editorW, again+"\n")
	if got := readLine(t, p.agentR); got != again {
		t.Fatalf("a session that has toolsd already: %s", got)
	}
	// Malformed lines: an error to their sender, and the proxy goes on.
	_, _ = io.WriteString(p.editorW, "{\n")
	if got := readLine(t, p.editorR); !strings.Contains(got, `"code":-32700`) || !strings.Contains(got, "not passed to the agent") {
		t.Fatalf("the editor's malformed line: %s", got)
	}
	_, _ = io.WriteString(p.agentW, `{"jsonrpc":"2.0","id":4}`+"\n")
	if got := readLine(t, p.agentR); !strings.Contains(got, `"id":4`) || !strings.Contains(got, `"code":-32600`) {
		t.Fatalf("the agent's malformed message: %s", got)
	}
	_, _ = io.WriteString(p.editorW, in+"\n")
	if got := readLine(t, p.agentR); got != in {
		t.Fatalf("after the malformed lines the agent got %s", got)
	}
	// The editor leaving closes the agent's stdin.
	_ = p.editorW.Close()
	if _, err := p.agentR.ReadString('\n'); err != io.EOF {
		t.Fatalf("the agent's stdin should end: %v", err)
	}
}

// A terminal's command line is what toolsd's shell analysis decides: sh -c LINE is LINE, an
// argument vector is quoted, a lone command is a line.
func TestCommandLine(t *testing.T) {
	for _, c := range []struct {
		command string
		args    []string
		want    string
	}{
		{"sh", []string{"-c", "go test ./... && echo ok"}, "go test ./... && echo ok"},
		{"/bin/bash", []string{"-lc", "make"}, "make"},
		{"git", []string{"commit", "-m", "it's done"}, `git commit -m 'it'\''s done'`},
		{"ls", []string{"-la", "a b"}, "ls -la 'a b'"},
		{"npm test -- --watch=false", nil, "npm test -- --watch=false"},
		{"sh", []string{"script.sh"}, "sh script.sh"},
	} {
		if got := commandLine(c.command, c.args); got != c.want {
			t.Errorf("%s %q: %q, want %q", c.command, c.args, got, c.want)
		}
	}
}

// fs/read_text_file's line and limit count lines from 1; the text comes back exactly.
func TestReadLines(t *testing.T) {
	p := t.TempDir() + "/f.txt"
	if err := os.WriteFile(p, []byte("one\ntwo\nthree"), 0o644); err != nil {
		t.Fatal(err)
	}
	real, err := fspath.Real(p)
	if err != nil {
		t.Fatal(err)
	}
	n := func(i int) *int { return &i }
	for _, c := range []struct {
		line, limit *int
		want        string
	}{
		{nil, nil, "one\ntwo\nthree"},
		{n(2), nil, "two\nthree"},
		{n(2), n(1), "two\n"},
		{nil, n(2), "one\ntwo\n"},
		{n(3), n(5), "three"},
		{n(9), nil, ""},
		{n(1), n(0), ""},
	} {
		got, err := readLines(real, c.line, c.limit)
		if err != nil || got != c.want {
			t.Errorf("line %v limit %v: %q %v, want %q", c.line, c.limit, got, err, c.want)
		}
	}
	if err := os.Symlink(real, real+".link"); err != nil {
		t.Fatal(err)
	}
	if _, err := readLines(real+".link", nil, nil); err == nil {
		t.Error("a link where the decided real path was is followed")
	}
}

// A terminal's output is cut from its start to its byte limit, at a character boundary.
func TestTerminalOutputCut(t *testing.T) {
	tm := &terminal{limit: 4, res: &protocol.ExecuteResult{Status: protocol.StatusCompleted, Output: "aé€b", Metadata: json.RawMessage(`{"exit":0}`)}}
	if out, cut := tm.output(); out != "€b" || !cut {
		t.Errorf("cut to 4 bytes: %q %v", out, cut)
	}
	if st := tm.status(); st.ExitCode == nil || *st.ExitCode != 0 || st.Signal != nil {
		t.Errorf("exit status: %+v", st)
	}
	tm = &terminal{res: &protocol.ExecuteResult{Status: protocol.StatusCancelled, Output: "(no output)"}}
	if out, _ := tm.output(); out != "" {
		t.Errorf("no output: %q", out)
	}
	if st := tm.status(); st.Signal == nil || st.ExitCode != nil {
		t.Errorf("a killed terminal: %+v", st)
	}
}

// A terminal stopped at the bash tool's time limit ended by a signal, as a killed one did.
func TestTerminalTimedOut(t *testing.T) {
	tm := &terminal{res: &protocol.ExecuteResult{Status: protocol.StatusCompleted, Output: "x\n[timed out]", Metadata: json.RawMessage(`{"exit":143,"timedOut":true}`)}}
	if st := tm.status(); st.Signal == nil || *st.Signal != "SIGTERM" || st.ExitCode != nil {
		t.Errorf("a timed-out terminal: %+v", st)
	}
}

// The output shown for an embedded terminal is a code block that no line of it closes.
func TestCodeBlock(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "```\n```"},
		{"a\nb", "```\na\nb\n```"},
		{"x\n```\ny\n", "````\nx\n```\ny\n````"},
		{"````", "`````\n````\n`````"},
	} {
		if got := codeBlock(c.in); got != c.want {
			t.Errorf("codeBlock(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
