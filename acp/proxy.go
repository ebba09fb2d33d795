package acp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"strconv"
	"strings"
	"sync"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/toolsd/toolsd/protocol"
)

// MCPServer is the stdio MCP server added to every session/new and session/load.
type MCPServer struct {
	Name    string
	Command string
	Args    []string
}

// Options configure Run.
type Options struct {
	// Editor and EditorOut are the editor's side (the proxy's stdin and stdout).
	Editor    io.Reader
	EditorOut io.Writer
	// Agent and AgentIn are the agent's side (its stdout and stdin). AgentIn is closed
	// when the editor's side ends.
	Agent   io.Reader
	AgentIn io.WriteCloser
	// Daemon is a connection to the workspace's daemon (the toolsd protocol); nil, or one
	// that does not initialize, leaves every permission request to the editor.
	Daemon io.ReadWriteCloser
	// Folder is the workspace folder.
	Folder string
	// AgentID names the agent in the record and selects its rules ("agents" in the
	// settings); AgentName is how asks name it.
	AgentID, AgentName string
	// MCP is the server added to every session; nil adds none.
	MCP *MCPServer
	// Route is the ask route the proxy attached to the daemon with (attach.Hello.Route):
	// the MCP server added to a session gets Route/LABEL (its --route), so that its asks
	// come to this proxy alone, and its calls are in the daemon's session acp-LABEL.
	Route   string
	Version string
	Logger  *slog.Logger
}

// permissionSlots bounds the agent's permission requests being decided at once; past it the
// proxy stops reading the agent until one is answered.
const permissionSlots = 64

type proxy struct {
	o             Options
	editor, agent *writer
	daemon        *jsonrpc2.Conn
	log           *slog.Logger
	ctx           context.Context

	slots   chan struct{}
	records chan json.RawMessage

	mu          sync.Mutex
	pending     map[string]*pend        // the agent's permission requests, by request id
	waiters     map[string]chan *msg    // the proxy's requests to the editor, by id
	calls       map[string]*trackedCall // tool calls seen in session/update, by session and id
	nextID      int
	lastSession string
	cwd         string
	labels      map[string]string // the label of each session's MCP server -> its ACP session
	newLabels   map[string]string // session/new requests in flight, by id -> their label
	labelBase   string
	labelSeq    int
	seq         int                  // the proxy's own calls (client.go)
	terminals   map[string]*terminal // by terminalId, until released
	shown       map[string]string    // the output of released terminals, by terminalId (embed.go)
	initID      string               // the editor's initialize request, until the agent answers it
	advertised  bool                 // toolsd offered the agent fs and terminal (ACP v1)
	version     int                  // the protocol version the agent chose
	grants      []grant              // the person's once answers to the agent's requests, until used
	ending      bool                 // Run is stopping: bg takes no more goroutines but its own

	bg sync.WaitGroup // the client methods being served, and their terminals
}

// Run serves one agent until its side ends (it exited or closed its stdout). The editor's
// side ending closes the agent's stdin.
func Run(ctx context.Context, o Options) error {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p := &proxy{o: o, editor: &writer{w: o.EditorOut}, agent: &writer{w: o.AgentIn}, log: o.Logger, ctx: ctx, cwd: o.Folder,
		slots: make(chan struct{}, permissionSlots), records: make(chan json.RawMessage, 64),
		pending: map[string]*pend{}, waiters: map[string]chan *msg{}, calls: map[string]*trackedCall{},
		labels: map[string]string{}, newLabels: map[string]string{}, labelBase: randomHex(4), terminals: map[string]*terminal{}, shown: map[string]string{}}
	if o.Daemon != nil {
		p.daemon = p.connect(ctx)
		if p.daemon != nil {
			defer p.daemon.Close()
		}
	}
	recorded := make(chan struct{})
	go func() {
		defer close(recorded)
		for raw := range p.records {
			p.record(raw)
		}
	}()
	go p.fromEditor()
	err := p.fromAgent()
	close(p.records)
	<-recorded
	// The agent is gone: its pending requests have no one to answer, its terminals are
	// stopped. The calls it never reported the end of end as interrupted when the daemon's
	// connection closes (they are held by it).
	p.mu.Lock()
	for _, pd := range p.pending {
		pd.cancel()
	}
	p.ending = true // no goroutine joins bg from the editor's side now (stopSession)
	p.mu.Unlock()
	cancel()
	p.bg.Wait()
	return err
}

// connect initializes a session with the daemon as a client that shows asks: the asks of
// the agent's calls come to the proxy, which shows them in the editor.
func (p *proxy) connect(ctx context.Context) *jsonrpc2.Conn {
	conn := jsonrpc2.NewConn(ctx, jsonrpc2.NewBufferedStream(p.o.Daemon, jsonrpc2.VSCodeObjectCodec{}), jsonrpc2.HandlerWithError(
		func(_ context.Context, _ *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
			if req.Notif {
				if req.Method == protocol.MethodPermissionAsked && req.Params != nil {
					var a protocol.AskedParams
					if json.Unmarshal(*req.Params, &a) == nil {
						go p.showAsk(a)
					}
				}
				return nil, nil
			}
			return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "toolsd acp serves no requests"}
		}), jsonrpc2.SetLogger(log.New(io.Discard, "", 0)))
	init := protocol.InitializeParams{WorkspaceFolder: p.o.Folder, ClientInfo: &protocol.ClientInfo{Name: "toolsd acp (" + p.o.AgentName + ")", Version: p.o.Version},
		Capabilities: &protocol.ClientCapabilities{Ask: true}}
	if err := conn.Call(ctx, protocol.MethodInitialize, init, nil); err != nil {
		p.log.Warn("the workspace's daemon did not start a session: the editor decides every permission request", "err", err)
		_ = conn.Close()
		return nil
	}
	return conn
}

// fromEditor forwards the editor's messages to the agent.
func (p *proxy) fromEditor() {
	defer p.o.AgentIn.Close()
	r := newReader(p.o.Editor)
	for {
		line, tooLong, err := r.next()
		if err != nil {
			return
		}
		if tooLong {
			_ = p.editor.send(errorReply(nil, codeInvalidRequest, fmt.Sprintf("toolsd acp: a message from the editor is longer than %d bytes; it was not passed to the agent", maxLine)))
			continue
		}
		m, err := parse(line)
		if err != nil {
			var id json.RawMessage
			code := codeParse
			if m != nil {
				id, code = m.ID, codeInvalidRequest
			}
			if m == nil || m.Method == "" || len(id) > 0 { // a notification gets no answer
				_ = p.editor.send(errorReply(id, code, "toolsd acp: the editor's message is not JSON-RPC 2.0: "+err.Error()+"; it was not passed to the agent"))
			}
			continue
		}
		if m.isResponse() {
			if id := ownID(m.ID); id != "" {
				p.mu.Lock()
				ch := p.waiters[id]
				delete(p.waiters, id)
				p.mu.Unlock()
				if ch != nil {
					ch <- m
				}
				continue
			}
		}
		p.noteSession(m)
		switch m.Method {
		case "session/new", "session/load":
			if out, ok := p.withTools(m); ok {
				line = out
			}
		case "initialize":
			if out, ok := p.advertise(m); ok {
				line = out
			}
		}
		if err := p.agent.line(line); err != nil {
			return
		}
		if m.Method == "session/cancel" {
			p.cancelSession(m.Params)
		}
	}
}

// fromAgent forwards the agent's messages to the editor, but for its permission requests,
// which toolsd decides.
func (p *proxy) fromAgent() error {
	r := newReader(p.o.Agent)
	for {
		line, tooLong, err := r.next()
		if err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
		if tooLong {
			_ = p.agent.send(errorReply(nil, codeInvalidRequest, fmt.Sprintf("toolsd acp: a message from the agent is longer than %d bytes; it was not passed to the editor", maxLine)))
			continue
		}
		m, err := parse(line)
		if err != nil {
			var id json.RawMessage
			code := codeParse
			if m != nil {
				id, code = m.ID, codeInvalidRequest
			}
			if m == nil || m.Method == "" || len(id) > 0 {
				_ = p.agent.send(errorReply(id, code, "toolsd acp: the agent's message is not JSON-RPC 2.0: "+err.Error()+"; it was not passed to the editor"))
			}
			continue
		}
		if _, ok := clientMethods[m.Method]; ok && m.isRequest() && p.daemon != nil && p.served() {
			select {
			case p.slots <- struct{}{}:
			case <-p.ctx.Done():
				return nil
			}
			p.bg.Add(1)
			go func() {
				defer p.bg.Done()
				defer func() { <-p.slots }()
				p.serveClient(m)
			}()
			continue
		}
		if m.Method == "session/request_permission" && m.isRequest() && p.daemon != nil {
			select {
			case p.slots <- struct{}{}:
			case <-p.ctx.Done():
				return nil
			}
			go func() {
				defer func() { <-p.slots }()
				p.permission(m, line)
			}()
			continue
		}
		if m.isResponse() {
			p.sessionCreated(m)
			p.initialized(m)
		}
		if m.Method == "session/update" && p.daemon != nil {
			if out, params, ok := p.showTerminals(m); ok {
				line, m.Params = out, params
			}
		}
		if err := p.editor.line(line); err != nil {
			return err
		}
		if m.Method == "session/update" && m.Params != nil {
			select {
			case p.records <- m.Params:
			case <-p.ctx.Done():
				return nil
			}
		}
	}
}

// ownID is the proxy's id of a request it sent the editor, or "".
func ownID(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil || !strings.HasPrefix(s, idPrefix) {
		return ""
	}
	return s
}

// idPrefix marks the ids of the proxy's own requests to the editor, apart from the agent's.
const idPrefix = "toolsd-acp:"

// noteSession keeps the session and folder the editor last spoke of.
func (p *proxy) noteSession(m *msg) {
	if m.Params == nil {
		return
	}
	var s struct {
		SessionID string `json:"sessionId"`
		Cwd       string `json:"cwd"`
	}
	if json.Unmarshal(m.Params, &s) != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if s.SessionID != "" {
		p.lastSession = s.SessionID
	}
	if s.Cwd != "" && (m.Method == "session/new" || m.Method == "session/load") {
		p.cwd = s.Cwd
	}
}

// advertise is the editor's initialize with toolsd's fs and terminal client capabilities
// added, which toolsd serves (client.go): only for ACP v1, where they exist, and only with a
// daemon to serve them. ok is false when it is left as it is. Either way the agent's answer
// tells the version chosen (initialized).
func (p *proxy) advertise(m *msg) ([]byte, bool) {
	if !m.isRequest() {
		return nil, false
	}
	p.mu.Lock()
	p.initID, p.advertised = string(m.ID), false // initialized notes the version chosen
	p.mu.Unlock()
	if p.daemon == nil {
		return nil, false
	}
	var params map[string]json.RawMessage
	if json.Unmarshal(m.Params, &params) != nil || params == nil {
		return nil, false
	}
	var version int
	if json.Unmarshal(params["protocolVersion"], &version) != nil || version != 1 {
		return nil, false // v2 has no client fs or terminal: passed as it is
	}
	var caps map[string]json.RawMessage
	if raw, ok := params["clientCapabilities"]; ok && string(raw) != "null" {
		if json.Unmarshal(raw, &caps) != nil {
			return nil, false
		}
	}
	if caps == nil {
		caps = map[string]json.RawMessage{}
	}
	var fs map[string]json.RawMessage
	_ = json.Unmarshal(caps["fs"], &fs)
	if fs == nil {
		fs = map[string]json.RawMessage{}
	}
	fs["readTextFile"], fs["writeTextFile"] = json.RawMessage("true"), json.RawMessage("true")
	caps["fs"], _ = json.Marshal(fs)
	caps["terminal"] = json.RawMessage("true")
	params["clientCapabilities"], _ = json.Marshal(caps)
	out, err := rewrite(m, params)
	if err != nil {
		return nil, false
	}
	p.mu.Lock()
	p.advertised = true
	p.mu.Unlock()
	return out, true
}

// initialized notes the protocol version the agent chose in its answer to initialize.
func (p *proxy) initialized(m *msg) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.initID == "" || string(m.ID) != p.initID {
		return
	}
	p.initID = ""
	var r struct {
		ProtocolVersion int `json:"protocolVersion"`
	}
	if m.Result == nil || json.Unmarshal(m.Result, &r) != nil {
		p.advertised = false // refused: the editor may initialize again
		return
	}
	p.version = r.ProtocolVersion
}

// rewrite is a request m with params replaced.
func rewrite(m *msg, params map[string]json.RawMessage) ([]byte, error) {
	return json.Marshal(struct {
		JSONRPC string                     `json:"jsonrpc"`
		ID      json.RawMessage            `json:"id,omitempty"`
		Method  string                     `json:"method"`
		Params  map[string]json.RawMessage `json:"params"`
	}{"2.0", m.ID, m.Method, params})
}

// sessionCreated notes the session a session/new made, for the asks of its MCP server.
func (p *proxy) sessionCreated(m *msg) {
	p.mu.Lock()
	defer p.mu.Unlock()
	label, ok := p.newLabels[string(m.ID)]
	if !ok {
		return
	}
	delete(p.newLabels, string(m.ID))
	var r struct {
		SessionID string `json:"sessionId"`
	}
	if json.Unmarshal(m.Result, &r) == nil && r.SessionID != "" {
		p.labels[label] = r.SessionID
	}
}

// askSession is the ACP session an ask of the daemon belongs to: the session whose MCP
// server made the call (acp-LABEL), or the session of the proxy's own call; "" when none is
// known.
func (p *proxy) askSession(a protocol.AskedParams) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if label, ok := strings.CutPrefix(a.SessionID, "acp-"); ok && strings.HasPrefix(label, p.labelBase+"-") {
		if s := p.labels[label]; s != "" {
			return s
		}
		return p.lastSession // its session/new is still being answered
	}
	return a.SessionID
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// withTools is a session/new or session/load with toolsd's MCP server added to its
// mcpServers (unless one named so is there); ok is false when it is left as it is.
func (p *proxy) withTools(m *msg) ([]byte, bool) {
	if p.o.MCP == nil {
		return nil, false
	}
	var params map[string]json.RawMessage
	if json.Unmarshal(m.Params, &params) != nil || params == nil {
		return nil, false
	}
	var servers []json.RawMessage
	if raw, ok := params["mcpServers"]; ok && string(raw) != "null" {
		if json.Unmarshal(raw, &servers) != nil {
			return nil, false
		}
	}
	for _, s := range servers {
		var named struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(s, &named) == nil && named.Name == p.o.MCP.Name {
			return nil, false
		}
	}
	args := append([]string{}, p.o.MCP.Args...)
	if p.o.Route != "" {
		var load struct {
			SessionID string `json:"sessionId"`
		}
		_ = json.Unmarshal(m.Params, &load)
		p.mu.Lock()
		p.labelSeq++
		label := p.labelBase + "-" + strconv.Itoa(p.labelSeq)
		if m.Method == "session/load" && load.SessionID != "" {
			p.labels[label] = load.SessionID
		} else if len(m.ID) > 0 {
			p.newLabels[string(m.ID)] = label
		}
		p.mu.Unlock()
		args = append(args, "--route", p.o.Route+"/"+label)
	}
	add, _ := json.Marshal(map[string]any{"name": p.o.MCP.Name, "command": p.o.MCP.Command, "args": args, "env": []any{}})
	servers = append(servers, add)
	params["mcpServers"], _ = json.Marshal(servers)
	out, err := rewrite(m, params)
	return out, err == nil
}
