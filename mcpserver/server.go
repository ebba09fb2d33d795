// Package mcpserver serves a workspace's toolsd catalogue as an MCP server to one client
// ("toolsd mcp"), for agents that speak MCP rather than the toolsd protocol (VS Code's own
// agent mode, registered by the extension with vscode.lm.registerMcpServerDefinitionProvider,
// or any MCP host). Serve runs one session: attached to the workspace's daemon (Options.
// Workspace), or on a workspace of its own.
//
// Every tool of the catalogue is an MCP tool, with its annotations; calls run through the same
// pipeline as the editor's (validation, permission, execution, truncation, the store), as this
// client's calls. Permission asks go to the editors attached to the workspace first; those that
// come back to this client go to the person as a form (allow once, always for this session, or
// reject, and an optional message): a multi round-trip input request for a client of protocol
// 2026-07-28 (mrtr.go), an elicitation during the call for older ones. A client that can do
// neither gets the refusal that says so. Progress of this client's calls goes out as MCP
// progress notifications when the call has a progress token, and a changed catalogue as
// notifications/tools/list_changed.
package mcpserver

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsd/toolsd/protocol"
	"github.com/toolsd/toolsd/session"
	"github.com/toolsd/toolsd/store"
)

// Options configure Serve.
type Options struct {
	// Workspace, when set, is the workspace to attach to (the daemon that owns the folder
	// serves every client); Folder, StorePath and Store are then unused. nil opens the
	// folder's workspace for this client alone.
	Workspace *session.Workspace
	// Folder is the workspace folder; empty means the current directory.
	Folder string
	// StorePath overrides the store file (session.DefaultStorePath of the folder).
	StorePath string
	Store     *store.Options
	// Agent is the agent whose catalogue and rules apply (config "agents"); empty means none.
	Agent string
	// Route is the ask route of the `toolsd acp` that added this server to its agent's
	// session (session.ClientOptions.Route). Its calls are recorded in the session
	// "acp-LABEL" (LABEL: the route's part after "/"), which the proxy knows.
	Route string
	// Version is reported to the client.
	Version string
	Logger  *slog.Logger
}

// protocolVersions are the MCP versions served: the newest the SDK speaks (2026-07-28: asks go
// back as multi round-trip input requests, see mrtr.go), and those in which a server sends
// elicitation/create while it handles tools/call.
var protocolVersions = []string{mrtrVersion, "2025-11-25", "2025-06-18", "2025-03-26"}

// Serve serves MCP on t until the client goes away or ctx is done. The workspace opens once
// the client has initialized (its capabilities decide whether asks are possible) and closes,
// cancelling calls in flight, when Serve returns.
func Serve(ctx context.Context, t sdk.Transport, o Options) error {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	var folder string
	if o.Workspace != nil {
		folder = o.Workspace.Folder()
	} else {
		var err error
		if folder, err = Folder(o.Folder); err != nil {
			return err
		}
	}
	s := &server{opts: o, folder: folder, log: o.Logger.With("component", "mcpserver"),
		calls: map[string]*callInfo{}, tools: map[string]string{}, elicits: map[string]context.CancelFunc{}, resumables: map[string]*resumable{},
		opened: make(chan struct{}), schemas: map[string]json.RawMessage{}}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.ctx = ctx
	s.srv = sdk.NewServer(&sdk.Implementation{Name: "toolsd", Version: o.Version}, &sdk.ServerOptions{
		Instructions:              "Tools of the workspace " + folder + ", run by toolsd: permission asks, truncation (read toolsd://output/<id> with the read tool for a full output) and a record of every call.",
		Capabilities:              &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{ListChanged: true}},
		SupportedProtocolVersions: protocolVersions,
		InitializedHandler: func(_ context.Context, req *sdk.InitializedRequest) {
			if err := s.open(req.Session); err != nil {
				s.log.Error("opening the workspace failed", "err", err)
				s.openErr.Store(&err)
				cancel()
				return
			}
			// The client has its initialize result: the work the workspace put off so as
			// not to delay it can start (a client of protocol 2026-07-28 sends no
			// initialize, and its first confined process starts it).
			s.mu.Lock()
			ws := s.ws
			s.mu.Unlock()
			if ws != nil {
				ws.Initialized()
			}
		},
	})
	// A client of protocol 2026-07-28 sends no initialize: its name and capabilities come with
	// its first request, which opens the workspace.
	s.srv.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if ss, ok := req.GetSession().(*sdk.ServerSession); ok && method != "initialize" && usesMRTR(ss) {
				if err := s.open(ss); err != nil {
					return nil, err
				}
			}
			if method == "tools/list" {
				// The list is the workspace's catalogue: wait until it is registered.
				select {
				case <-s.opened:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return next(ctx, method, req)
		}
	})
	s.srv.AddSendingMiddleware(s.sendListChangedOnlyOnChange)
	runErr := s.srv.Run(ctx, t)
	stopped := ctx.Err() != nil
	cancel() // calls waiting for this client's answer end with it
	s.mu.Lock()
	ws := s.ws
	s.closed = true
	for _, r := range s.resumables {
		if r.timer != nil {
			r.timer.Stop()
		}
	}
	s.mu.Unlock()
	if ws != nil {
		if err := ws.Close(); err != nil {
			s.log.Warn("closing the workspace", "err", err)
		}
	}
	s.wg.Wait()
	if p := s.openErr.Load(); p != nil {
		return *p
	}
	if runErr != nil && !errors.Is(runErr, context.Canceled) && !errors.Is(runErr, io.EOF) && !stopped {
		return runErr
	}
	return nil
}

// Folder resolves the --workspace flag: empty means the current directory. It must be a
// folder.
func Folder(flag string) (string, error) {
	folder := flag
	if folder == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		folder = wd
	}
	folder, err := filepath.Abs(folder)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(folder); err != nil {
		return "", fmt.Errorf("workspace: %w", err)
	} else if !fi.IsDir() {
		return "", fmt.Errorf("workspace %s is not a folder", folder)
	}
	return folder, nil
}

// server is one MCP session's state (one client).
type server struct {
	opts    Options
	folder  string
	log     *slog.Logger
	srv     *sdk.Server
	ctx     context.Context
	openErr atomic.Pointer[error]
	seq     atomic.Uint64
	wg      sync.WaitGroup // elicitations in flight

	mu        sync.Mutex // guards ws, ref, sessionID, closed, calls, tools, canAsk, elicits
	ws        *session.Client
	ref       protocol.ClientRef
	sessionID string // the toolsd session of this client's calls: "mcp-" and its connection id
	closed    bool
	calls     map[string]*callInfo          // by callID
	tools     map[string]string             // id -> fingerprint of what the client was given
	elicits   map[string]context.CancelFunc // ask id -> cancels its elicitation
	canAsk    bool
	syncing   sync.Mutex                 // serializes syncTools
	opened    chan struct{}              // closed once the tools of the workspace are registered (face.go)
	announce  atomic.Bool                // a catalogue change asked for the next list_changed (face.go)
	schemas   map[string]json.RawMessage // tool id -> input schema; guarded by mu

	openOnce   sync.Once
	resumables map[string]*resumable // requestState -> a call waiting for the client's answer
}

// callInfo is a tools/call in flight.
type callInfo struct {
	ctx      context.Context
	session  *sdk.ServerSession
	token    any // progress token, nil when the client gave none
	progress atomic.Int64
	// asks receives the asks routed to this client for the call, for a client that answers
	// them by retrying the call (multi round-trip, protocol 2026-07-28); nil when they go
	// out as elicitations.
	asks chan protocol.AskedParams
}

// open opens the workspace once the client's capabilities are known, and lists its tools. It
// runs once; later calls return its error.
func (s *server) open(ss *sdk.ServerSession) error {
	var err error
	ran := false
	s.openOnce.Do(func() {
		ran = true
		err = s.doOpen(ss)
		if err != nil {
			s.openErr.Store(&err)
		}
	})
	if !ran {
		if p := s.openErr.Load(); p != nil {
			return *p
		}
	}
	return err
}

func (s *server) doOpen(ss *sdk.ServerSession) error {
	canAsk := false
	co := session.ClientOptions{Kind: protocol.ClientMCP, Sink: notifier{s}, Route: s.opts.Route}
	if p := ss.InitializeParams(); p != nil {
		if p.Capabilities != nil && p.Capabilities.Elicitation != nil {
			e := p.Capabilities.Elicitation
			canAsk = e.Form != nil || e.URL == nil // no mode given means form (older clients)
		}
		if p.ClientInfo != nil {
			co.Name, co.Version = p.ClientInfo.Name, p.ClientInfo.Version
		}
	}
	co.CanAsk = canAsk
	var ws *session.Client
	var err error
	if s.opts.Workspace != nil {
		ws, err = s.opts.Workspace.Attach(co)
	} else {
		ws, err = session.Open(s.ctx, session.WorkspaceOptions{
			Folder: s.folder, StorePath: s.opts.StorePath, Store: s.opts.Store, Logger: s.opts.Logger,
		}, co)
	}
	if err != nil {
		return err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ws.Close()
	}
	s.ws, s.canAsk, s.ref = ws, canAsk, ws.Ref()
	s.sessionID = "mcp-" + s.ref.ID
	if _, label, ok := strings.Cut(s.opts.Route, "/"); ok && label != "" {
		s.sessionID = "acp-" + label
	}
	s.mu.Unlock()
	version := ""
	if p := ss.InitializeParams(); p != nil {
		version = p.ProtocolVersion
	}
	s.log.Info("workspace open", "folder", s.folder, "client", s.ref.Name, "protocol", version, "elicitation", canAsk)
	s.syncTools(false)
	close(s.opened)
	return nil
}

// syncTools makes the server's tools the workspace's catalogue; the SDK sends
// notifications/tools/list_changed for what it adds and removes.
func (s *server) syncTools(announce bool) {
	s.syncing.Lock()
	defer s.syncing.Unlock()
	s.mu.Lock()
	ws, sessionID := s.ws, s.sessionID
	s.mu.Unlock()
	if ws == nil {
		return
	}
	res := ws.Resolve(protocol.ResolveParams{SessionID: sessionID, Agent: s.opts.Agent})
	for _, d := range res.Diagnostics {
		s.log.Warn("catalogue diagnostic", "path", d.Path, "line", d.Line, "message", d.Message)
	}
	want := map[string]protocol.ToolInfo{}
	for _, ti := range res.Tools {
		want[ti.ID] = ti
	}
	s.mu.Lock()
	have := maps.Clone(s.tools)
	s.mu.Unlock()
	var removed []string
	for id := range have {
		if _, ok := want[id]; !ok {
			removed = append(removed, id)
		}
	}
	changed := len(removed) > 0
	for id, ti := range want {
		if have[id] == "" || have[id] != toolPrint(ti) {
			changed = true
		}
	}
	if announce && changed {
		s.announce.Store(true)
	}
	if len(removed) > 0 {
		s.srv.RemoveTools(removed...)
	}
	next := map[string]string{}
	for _, id := range slices.Sorted(maps.Keys(want)) {
		ti := want[id]
		fp := toolPrint(ti)
		next[id] = fp
		if have[id] == fp {
			continue
		}
		schema := ti.InputSchema
		if len(bytes.TrimSpace(schema)) == 0 {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		s.srv.AddTool(&sdk.Tool{Name: id, Description: ti.Description, InputSchema: schema, Annotations: mcpAnnotations(ti.Annotations)}, s.handle)
	}
	s.mu.Lock()
	s.tools = next
	for id, ti := range want {
		s.schemas[id] = ti.InputSchema
	}
	s.mu.Unlock()
}

// toolPrint is what a tool's registration depends on.
func toolPrint(ti protocol.ToolInfo) string {
	hints, _ := json.Marshal(ti.Annotations)
	return ti.Description + "\x00" + string(ti.InputSchema) + "\x00" + ti.Source + "\x00" + string(hints)
}

// handle runs one tools/call through the workspace.
func (s *server) handle(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	s.mu.Lock()
	ws, sessionID := s.ws, s.sessionID
	s.mu.Unlock()
	if ws == nil {
		return errorResult("toolsd is not ready: the workspace is not open"), nil
	}
	callID := sessionID + "-" + strconv.FormatUint(s.seq.Add(1), 10)
	ci := &callInfo{ctx: ctx, session: req.Session, token: req.Params.GetProgressToken()}
	s.mu.Lock()
	s.calls[callID] = ci
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.calls, callID)
		s.mu.Unlock()
	}()
	args := req.Params.Arguments
	if len(bytes.TrimSpace(args)) == 0 || string(bytes.TrimSpace(args)) == "null" {
		args = json.RawMessage("{}")
	}
	s.mu.Lock()
	schema := s.schemas[req.Params.Name]
	s.mu.Unlock()
	args, dropped := dropInjected(args, schema)
	if len(dropped) > 0 {
		s.log.Info("dropped arguments the client's harness injected", "call", callID, "tool", req.Params.Name, "client", s.ref.Name, "args", dropped)
	}
	if usesMRTR(req.Session) {
		s.mu.Lock()
		delete(s.calls, callID) // registered again by the multi round-trip call itself
		s.mu.Unlock()
		out, err := s.handleMRTR(ctx, req, ws, protocol.ExecuteParams{SessionID: sessionID, MessageID: callID, CallID: callID, Tool: req.Params.Name, Args: args, Agent: s.opts.Agent})
		return faced(out, dropped), err
	}
	res, err := ws.Execute(ctx, protocol.ExecuteParams{SessionID: sessionID, MessageID: callID, CallID: callID, Tool: req.Params.Name, Args: args, Agent: s.opts.Agent})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return faced(errorResult(err.Error()), dropped), nil
	}
	return faced(toResult(res), dropped), nil
}

// toResult maps a toolsd result to MCP: output to text, attachments to image, audio or
// embedded resources, an error or cancelled status to isError with the error text.
func toResult(res *protocol.ExecuteResult) *sdk.CallToolResult {
	out := &sdk.CallToolResult{Content: []sdk.Content{}}
	text := res.Output
	if res.Status != protocol.StatusCompleted {
		out.IsError = true
		msg := res.Error
		if msg == "" {
			msg = "the call ended " + res.Status
		}
		if text != "" {
			text += "\n\n" + msg
		} else {
			text = msg
		}
	}
	if text != "" || len(res.Attachments) == 0 {
		out.Content = append(out.Content, &sdk.TextContent{Text: text})
	}
	for _, a := range res.Attachments {
		data, err := base64.StdEncoding.DecodeString(a.Data)
		if err != nil {
			continue
		}
		switch {
		case strings.HasPrefix(a.Mime, "image/"):
			out.Content = append(out.Content, &sdk.ImageContent{Data: data, MIMEType: a.Mime})
		case strings.HasPrefix(a.Mime, "audio/"):
			out.Content = append(out.Content, &sdk.AudioContent{Data: data, MIMEType: a.Mime})
		default:
			out.Content = append(out.Content, &sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "toolsd://attachment/" + a.ID, MIMEType: a.Mime, Blob: data}})
		}
	}
	meta := sdk.Meta{"toolsd/callID": res.CallID, "toolsd/status": res.Status}
	if res.Title != "" {
		meta["toolsd/title"] = res.Title
	}
	if res.Truncated {
		meta["toolsd/outputID"] = res.OutputID
	}
	if len(res.Metadata) > 0 && string(res.Metadata) != "{}" && string(res.Metadata) != "null" {
		meta["toolsd/metadata"] = res.Metadata
	}
	out.Meta = meta
	return out
}

// mcpAnnotations maps toolsd's tool hints to the SDK's.
func mcpAnnotations(a *protocol.ToolAnnotations) *sdk.ToolAnnotations {
	if a == nil {
		return nil
	}
	return &sdk.ToolAnnotations{Title: a.Title, ReadOnlyHint: a.ReadOnlyHint, DestructiveHint: a.DestructiveHint,
		IdempotentHint: a.IdempotentHint, OpenWorldHint: a.OpenWorldHint}
}

func errorResult(msg string) *sdk.CallToolResult {
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: msg}}}
}

func (s *server) call(callID string) *callInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[callID]
}

// notifier turns the workspace's notifications into MCP ones.
type notifier struct{ s *server }

// Progress sends an MCP progress notification when the call is this client's and has a
// progress token.
func (n notifier) Progress(p protocol.ProgressParams) {
	n.s.mu.Lock()
	mine := p.Client != nil && p.Client.ID == n.s.ref.ID
	n.s.mu.Unlock()
	if !mine {
		return
	}
	ci := n.s.call(p.CallID)
	if ci == nil || ci.token == nil {
		return
	}
	msg := p.Title
	if msg == "" {
		msg = p.Tool + ": " + p.Status
	}
	step := ci.progress.Add(1)
	if err := ci.session.NotifyProgress(ci.ctx, &sdk.ProgressNotificationParams{ProgressToken: ci.token, Progress: float64(step), Message: msg}); err != nil {
		n.s.log.Debug("progress notification failed", "err", err)
	}
}

// Answered ends the elicitation of an ask that was answered elsewhere (an editor attached
// after the ask was shown here) or withdrawn.
func (n notifier) Answered(p protocol.AnsweredParams) {
	n.s.mu.Lock()
	cancel := n.s.elicits[p.ID]
	n.s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// Changed brings the client's tool list up to date.
func (n notifier) Changed(protocol.ChangedParams) { n.s.syncTools(true) }

// Clients is not shown to MCP clients.
func (n notifier) Clients(protocol.ClientsParams) {}

// Asked asks the person through an elicitation, in the background, and answers the ask.
func (n notifier) Asked(p protocol.AskedParams) {
	s := n.s
	ci := s.call(p.CallID)
	s.mu.Lock()
	ws, closed := s.ws, s.closed
	if !closed {
		s.wg.Add(1)
	}
	s.mu.Unlock()
	if closed {
		return
	}
	go func() {
		defer s.wg.Done()
		if ws == nil {
			return
		}
		if ci != nil && ci.asks != nil {
			// A multi round-trip call: it returns the ask to the client, which retries
			// with the answer.
			select {
			case ci.asks <- p:
			case <-ci.ctx.Done():
			}
			return
		}
		if ci == nil { // not a call of ours: nobody to ask
			_, _ = ws.Reply(protocol.ReplyParams{ID: p.ID, Reply: protocol.ReplyReject, Message: "toolsd mcp had no client request to ask through"})
			return
		}
		reply := s.elicit(ci, p)
		if reply == nil {
			return // the call went away; its ask was withdrawn
		}
		if _, err := ws.Reply(*reply); err != nil && !errors.Is(err, session.ErrUnknownAsk) {
			s.log.Warn("answering an ask failed", "ask", p.ID, "err", err)
		}
	}()
}

// Answers of the elicitation form.
const (
	answerOnce   = "once"
	answerAlways = "always"
	answerReject = "reject"
)

// askForm is the elicitation of an ask: a form with the answers it allows and a message.
func askForm(p protocol.AskedParams) *sdk.ElicitParams {
	enum := []any{answerOnce, answerAlways, answerReject}
	names := []any{"Allow once", "Always allow (this session)", "Reject"}
	if len(p.Always) == 0 {
		enum = []any{answerOnce, answerReject}
		names = []any{"Allow once", "Reject"}
	}
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"answer":  map[string]any{"type": "string", "title": "Answer", "enum": enum, "enumNames": names, "default": answerOnce},
			"message": map[string]any{"type": "string", "title": "Message to the agent (optional; say what to do instead when you reject)"},
		},
		"required": []string{"answer"},
	}
	return &sdk.ElicitParams{Mode: "form", Message: askText(p), RequestedSchema: schema}
}

// replyFor turns the person's answer to askForm into the reply to the ask.
func replyFor(p protocol.AskedParams, res *sdk.ElicitResult) *protocol.ReplyParams {
	if res == nil || res.Action != "accept" {
		return &protocol.ReplyParams{ID: p.ID, Reply: protocol.ReplyReject}
	}
	answer, _ := res.Content["answer"].(string)
	message, _ := res.Content["message"].(string)
	switch answer {
	case answerOnce:
		return &protocol.ReplyParams{ID: p.ID, Reply: protocol.ReplyOnce}
	case answerAlways:
		return &protocol.ReplyParams{ID: p.ID, Reply: protocol.ReplyAlways, Scope: protocol.ScopeSession}
	}
	return &protocol.ReplyParams{ID: p.ID, Reply: protocol.ReplyReject, Message: message}
}

// elicit shows the ask as a form and returns the reply, or nil when the call went away.
func (s *server) elicit(ci *callInfo, p protocol.AskedParams) *protocol.ReplyParams {
	ctx, cancel := context.WithCancel(ci.ctx)
	defer cancel()
	s.mu.Lock()
	s.elicits[p.ID] = cancel
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.elicits, p.ID)
		s.mu.Unlock()
	}()
	res, err := ci.session.Elicit(ctx, askForm(p))
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		s.log.Warn("elicitation failed", "ask", p.ID, "err", err)
		return &protocol.ReplyParams{ID: p.ID, Reply: protocol.ReplyReject, Message: "the permission prompt failed (" + err.Error() + "); nothing ran"}
	}
	return replyFor(p, res)
}

// askText is the elicitation's message: what the call wants to do, in a few lines.
func askText(p protocol.AskedParams) string {
	var b strings.Builder
	fmt.Fprintf(&b, "toolsd: allow %s (permission %q)", p.Tool, p.Permission)
	if len(p.Patterns) > 0 && !(len(p.Patterns) == 1 && p.Patterns[0] == "*") {
		fmt.Fprintf(&b, " for %s", strings.Join(p.Patterns, ", "))
	}
	b.WriteString("?")
	var md map[string]any
	_ = json.Unmarshal(p.Metadata, &md)
	for _, k := range []string{"command", "description", "workdir", "filepath", "path", "url", "reason", "diff"} {
		v, ok := md[k].(string)
		if !ok || v == "" {
			continue
		}
		if len(v) > 2000 {
			v = v[:2000] + "\n…"
		}
		fmt.Fprintf(&b, "\n%s: %s", k, v)
	}
	if server, ok := md["server"].(string); ok {
		fmt.Fprintf(&b, "\nMCP server %s, tool %v", server, md["tool"])
	}
	if args, ok := md["args"]; ok {
		if j, err := json.Marshal(args); err == nil && string(j) != "{}" {
			v := string(j)
			if len(v) > 2000 {
				v = v[:2000] + "…"
			}
			fmt.Fprintf(&b, "\narguments: %s", v)
		}
	}
	if r := p.Rule; r != nil {
		fmt.Fprintf(&b, "\n(rule %s %s → %s", r.Permission, r.Pattern, r.Action)
		if r.Source != "" {
			b.WriteString(" from " + r.Source)
		}
		b.WriteString(")")
	}
	return b.String()
}
