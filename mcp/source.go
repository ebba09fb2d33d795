// Package mcp makes the tools of MCP servers (Model Context Protocol, over stdio) a source of
// the catalogue: it starts each configured server, lists its tools, keeps them in step with
// the server's notifications/tools/list_changed, and runs calls through it.
//
// Each server becomes the registry source "mcp:<server>". Its tools are named
// "<server>_<tool>" made safe for every provider (see ToolID), ask permission under their own
// id (the default policy asks), and never count as read-only: a server's readOnlyHint is
// kept in the ask's metadata, not trusted. Results keep images and audio as attachments even
// when the server also sends structuredContent. A server that dies has its tools removed, a
// diagnostic naming it with the tail of its stderr, and is restarted with backoff a few times.
package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsd/toolsd/internal/proc"
	"github.com/toolsd/toolsd/internal/sandbox"
	"github.com/toolsd/toolsd/protocol"
	"github.com/toolsd/toolsd/registry"
)

// SourcePrefix starts the registry source name of a server: "mcp:<server>".
const SourcePrefix = registry.SourceMCPPrefix

// Server is an MCP server to start over stdio.
type Server struct {
	// Command is the argv: the program and its arguments.
	Command []string
	// Env is added to the daemon's environment.
	Env map[string]string
	// Sandbox are the server's own sandbox settings, handed to SourceOptions.Sandbox as
	// they are (a change restarts the server).
	Sandbox any
}

// SourceOptions configure a Source.
type SourceOptions struct {
	// Servers by name. The name becomes the prefix of the server's tool ids.
	Servers map[string]Server
	// Workspace is the folder servers run in.
	Workspace string
	// OnChange is called after a server's tools or diagnostics changed (it came up, its
	// list changed, it died), with what changed and the catalogue's diagnostics. Calls are
	// serialized; it must not block for long.
	OnChange func(registry.Change, []protocol.Diagnostic)
	// Logger; nil discards.
	Logger *slog.Logger
	// Sandbox, if set, says how a server's process is confined (called each time it
	// starts, with the server's Sandbox settings).
	Sandbox func(server string, settings any) *sandbox.Confinement

	// Debounce is how long a burst of list_changed notifications settles before the tools
	// are listed again; zero means 50 ms.
	Debounce time.Duration
	// Restarts is how many times a server that died is started again; zero means 3,
	// negative means never.
	Restarts int
	// Backoff is the wait before the first restart, doubled each time; zero means 1 s.
	Backoff time.Duration
	// StartTimeout bounds starting a server: initialize and the first listing; zero means 60 s.
	StartTimeout time.Duration
	// TerminateDuration is how long Close waits after closing a server's stdin before
	// SIGTERM, and after SIGTERM before SIGKILL; zero means 2 s.
	TerminateDuration time.Duration
}

// Source keeps one registry source per MCP server. Safe for concurrent use.
type Source struct {
	opts   SourceOptions
	reg    *registry.Registry
	log    *slog.Logger
	ctx    context.Context // done once Close starts
	cancel context.CancelFunc
	ready  chan struct{} // closed once every first server's first start has ended

	mu      sync.Mutex // guards servers
	servers map[string]*server

	changeMu sync.Mutex // serializes SetSource + OnChange
	diags    []protocol.Diagnostic

	closeOnce sync.Once
}

// NewSource starts every server in the background and returns at once; the servers' tools
// join the registry (and OnChange is called) as each comes up. WaitReady waits for that.
func NewSource(reg *registry.Registry, opts SourceOptions) (*Source, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Debounce <= 0 {
		opts.Debounce = 50 * time.Millisecond
	}
	if opts.Restarts == 0 {
		opts.Restarts = 3
	}
	if opts.Backoff <= 0 {
		opts.Backoff = time.Second
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 60 * time.Second
	}
	if opts.TerminateDuration <= 0 {
		opts.TerminateDuration = 2 * time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Source{opts: opts, reg: reg, log: opts.Logger.With("component", "mcp"), ctx: ctx, cancel: cancel,
		servers: map[string]*server{}, ready: make(chan struct{})}
	var first sync.WaitGroup
	s.mu.Lock()
	for _, name := range slices.Sorted(maps.Keys(opts.Servers)) {
		s.start(name, opts.Servers[name], &first, false)
	}
	s.mu.Unlock()
	go func() {
		first.Wait()
		close(s.ready)
	}()
	return s, nil
}

// start starts one server's goroutine; s.mu is held. first, if set, is done when the
// server's first start has ended.
func (s *Source) start(name string, cfg Server, first *sync.WaitGroup, notify bool) {
	ctx, cancel := context.WithCancel(s.ctx)
	sv := &server{src: s, name: name, cfg: cfg, log: s.log.With("server", name), ctx: ctx, cancel: cancel,
		done: make(chan struct{}), progress: map[string]func(*sdk.ProgressNotificationParams){}}
	s.servers[name] = sv
	if len(cfg.Command) == 0 || cfg.Command[0] == "" {
		close(sv.done)
		s.set(name, nil, []protocol.Diagnostic{{Path: SourcePrefix + name, Severity: "error",
			Message: fmt.Sprintf("MCP server %q has no command: set \"command\" to the program and its arguments, e.g. [\"npx\", \"-y\", \"some-mcp-server\"]", name)}}, notify)
		return
	}
	firstDone := func() {}
	if first != nil {
		first.Add(1)
		firstDone = first.Done
	}
	go func() {
		defer close(sv.done)
		sv.run(firstDone)
	}()
}

// SetServers replaces the configured servers (after a config change, or when the person
// trusts the workspace): servers no longer configured are stopped and their tools removed,
// new ones are started, and those whose command or environment changed are restarted.
// Unchanged servers keep running. OnChange reports the resulting catalogue changes.
func (s *Source) SetServers(servers map[string]Server) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx.Err() != nil {
		return
	}
	for _, name := range slices.Sorted(maps.Keys(s.servers)) {
		sv := s.servers[name]
		if cfg, ok := servers[name]; ok && reflect.DeepEqual(cfg, sv.cfg) {
			continue
		}
		sv.stop()
		delete(s.servers, name)
		s.set(name, nil, nil, true)
	}
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		if _, running := s.servers[name]; !running {
			s.start(name, servers[name], nil, true)
		}
	}
}

// WaitReady waits until every server given to NewSource has either listed its tools or
// failed its first start.
func (s *Source) WaitReady(ctx context.Context) error {
	select {
	case <-s.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops every server (closing its stdin, then SIGTERM, then SIGKILL, as the MCP spec
// says for stdio), waits for every goroutine, and removes the servers' tools.
func (s *Source) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.cancel()
		for _, sv := range s.servers {
			sv.stop()
		}
		<-s.ready
		s.changeMu.Lock()
		defer s.changeMu.Unlock()
		for name := range s.servers {
			s.reg.SetSource(SourcePrefix+name, nil, nil)
		}
	})
	return nil
}

// set replaces a server's registry source and, when anything changed and notify is set,
// calls OnChange.
func (s *Source) set(name string, tools []*registry.Tool, diags []protocol.Diagnostic, notify bool) {
	s.changeMu.Lock()
	defer s.changeMu.Unlock()
	if s.ctx.Err() != nil {
		return // closing: Close removes everything
	}
	ch := s.reg.SetSource(SourcePrefix+name, tools, diags)
	all := s.reg.Catalog().Diagnostics()
	changed := !ch.Empty() || !slices.Equal(all, s.diags)
	s.diags = all
	if changed && notify && s.opts.OnChange != nil {
		s.opts.OnChange(ch, all)
	}
}

// server is one configured MCP server and its current connection.
type server struct {
	src    *Source
	name   string
	cfg    Server
	log    *slog.Logger
	ctx    context.Context // done when the server is stopped
	cancel context.CancelFunc
	done   chan struct{} // closed when its goroutine has ended

	mu       sync.Mutex // guards cs, down, progress, seq
	cs       *sdk.ClientSession
	down     string // why the server is not running, for calls that arrive meanwhile
	progress map[string]func(*sdk.ProgressNotificationParams)
	seq      uint64
}

// stop stops the server and waits until its process is gone.
func (sv *server) stop() {
	sv.cancel()
	<-sv.done
}

// run starts the server, serves it until it dies, and restarts it with backoff.
// firstDone is called once the first start has ended, either way.
func (sv *server) run(firstDone func()) {
	var once sync.Once
	markFirst := func() { once.Do(firstDone) }
	defer markFirst()
	s := sv.src
	restarts := 0
	for {
		started := time.Now()
		err := sv.serve(markFirst)
		if sv.ctx.Err() != nil {
			return
		}
		if time.Since(started) > time.Minute {
			restarts = 0 // it ran fine for a while: a fresh budget
		}
		msg := err.Error()
		if restarts < s.opts.Restarts {
			msg += fmt.Sprintf("; restarting it (attempt %d of %d)", restarts+1, s.opts.Restarts)
		} else {
			msg += "; not restarting it again (fix the server or its configuration and reload the workspace)"
		}
		sv.log.Warn("MCP server stopped", "err", err)
		sv.mu.Lock()
		sv.down = err.Error()
		sv.mu.Unlock()
		s.set(sv.name, nil, []protocol.Diagnostic{{Path: SourcePrefix + sv.name, Severity: "error", Message: msg}}, true)
		markFirst()
		if restarts >= s.opts.Restarts {
			return
		}
		wait := s.opts.Backoff << restarts
		restarts++
		t := time.NewTimer(wait)
		select {
		case <-sv.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// serve runs one connection to the server: start, list, follow list_changed, until the
// server dies or the source closes. The error says why the server is gone.
func (sv *server) serve(listed func()) error {
	s := sv.src
	stderr := &tail{max: 4096}
	// The process gets no context: Close ends it the way the MCP spec asks (stdin closed,
	// then SIGTERM, then SIGKILL), through the transport, and then kills its tree. The
	// transport's SIGTERM and SIGKILL reach the guard; the guard must have killed the
	// server's tree (whose orphans are its children) before that SIGKILL, or they would be
	// orphaned to init: so its own grace is half of the transport's.
	cmd := proc.Command(context.Background(), max(s.opts.TerminateDuration/2, time.Millisecond), sv.cfg.Command[0], sv.cfg.Command[1:]...)
	cmd.Dir = s.opts.Workspace
	cmd.Env = os.Environ()
	for k, v := range sv.cfg.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stderr = stderr
	cmd.Stdin = nil // the transport makes a pipe
	defer proc.KillGroup(cmd)
	if s.opts.Sandbox != nil {
		conf := s.opts.Sandbox(sv.name, sv.cfg.Sandbox)
		defer conf.Close()
		if conf.Confined() {
			if err := proc.Confine(cmd, conf.Policy); err != nil {
				return sv.failure("could not be confined", err, stderr)
			}
		}
	}

	changed := make(chan struct{}, 1)
	client := sdk.NewClient(&sdk.Implementation{Name: "toolsd", Version: "1"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			key := fmt.Sprint(req.Params.ProgressToken)
			sv.mu.Lock()
			f := sv.progress[key]
			sv.mu.Unlock()
			if f != nil {
				f(req.Params)
			}
		},
	})
	startCtx, cancelStart := context.WithTimeout(sv.ctx, s.opts.StartTimeout)
	defer cancelStart()
	cs, err := client.Connect(startCtx, &sdk.CommandTransport{Command: cmd, TerminateDuration: s.opts.TerminateDuration},
		&sdk.ClientSessionOptions{ProtocolVersion: protocolVersion})
	if err != nil {
		if cmd.Process != nil {
			proc.KillGroup(cmd)
		}
		return sv.failure("failed to start", err, stderr)
	}
	ended := make(chan struct{})
	go func() {
		_ = cs.Wait()
		close(ended)
	}()
	defer func() {
		sv.mu.Lock()
		sv.cs = nil
		sv.mu.Unlock()
		_ = cs.Close() // closes stdin, waits, SIGTERM, SIGKILL
		<-ended
	}()

	relist := func(ctx context.Context) error {
		tools, diags, err := sv.list(ctx, cs)
		if err != nil {
			return err
		}
		sv.mu.Lock()
		sv.cs, sv.down = cs, ""
		sv.mu.Unlock()
		s.set(sv.name, tools, diags, true)
		return nil
	}
	if err := relist(startCtx); err != nil {
		if sv.ctx.Err() != nil {
			return err
		}
		return sv.failure("failed to list its tools", err, stderr)
	}
	cancelStart()
	sv.log.Info("MCP server started", "command", sv.cfg.Command)
	listed()

	var debounce <-chan time.Time
	for {
		select {
		case <-sv.ctx.Done():
			return sv.ctx.Err()
		case <-ended:
			return sv.failure("exited", exitErr(cs, cmd), stderr)
		case <-changed:
			if debounce == nil {
				debounce = time.After(s.opts.Debounce)
			}
		case <-debounce:
			debounce = nil
			ctx, cancel := context.WithTimeout(sv.ctx, s.opts.StartTimeout)
			err := relist(ctx)
			cancel()
			if err != nil && sv.ctx.Err() == nil {
				select {
				case <-ended:
					return sv.failure("exited", exitErr(cs, cmd), stderr)
				default:
				}
				sv.log.Warn("listing the tools again failed", "err", err)
			}
		}
	}
}

// protocolVersion is the MCP version toolsd speaks to servers: the last one before the
// stateless protocol, which every current server understands and which keeps server-initiated
// notifications (list_changed, progress) on the one stdio stream.
const protocolVersion = "2025-11-25"

// failure describes why the server is gone, with the tail of its stderr.
func (sv *server) failure(what string, err error, stderr *tail) error {
	msg := fmt.Sprintf("MCP server %q (%s) %s", sv.name, strings.Join(sv.cfg.Command, " "), what)
	if err != nil && !errors.Is(err, context.Canceled) {
		msg += ": " + err.Error()
	}
	if t := strings.TrimSpace(stderr.String()); t != "" {
		msg += "\nstderr (last lines):\n" + t
	}
	return errors.New(msg)
}

// exitErr closes the connection of a server that went away (which waits for the process)
// and reports how the process ended.
func exitErr(cs *sdk.ClientSession, cmd *exec.Cmd) error {
	_ = cs.Close()
	if cmd.ProcessState == nil {
		return errors.New("the connection closed")
	}
	return errors.New(cmd.ProcessState.String())
}

// list lists the server's tools with cursor paging and turns them into catalogue tools.
func (sv *server) list(ctx context.Context, cs *sdk.ClientSession) ([]*registry.Tool, []protocol.Diagnostic, error) {
	var all []*sdk.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, nil, err
		}
		all = append(all, t)
	}
	names := make([]string, 0, len(all))
	for _, t := range all {
		names = append(names, t.Name)
	}
	ids, diags := assignIDs(sv.name, names)
	var tools []*registry.Tool
	for _, t := range all {
		id, ok := ids[t.Name]
		if !ok {
			continue
		}
		schema, err := json.Marshal(t.InputSchema)
		if err == nil && (t.InputSchema == nil || string(schema) == "null") {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		if err == nil {
			_, err = registry.CompileSchema(id, schema)
		}
		if err != nil {
			diags = append(diags, protocol.Diagnostic{Path: SourcePrefix + sv.name, Severity: "error",
				Message: fmt.Sprintf("MCP server %q: tool %q has an input schema toolsd cannot use (%v); it is left out", sv.name, t.Name, err)})
			continue
		}
		tools = append(tools, sv.tool(id, t, schema))
	}
	return tools, diags, nil
}

// tool makes the catalogue tool of one MCP tool.
func (sv *server) tool(id string, t *sdk.Tool, schema json.RawMessage) *registry.Tool {
	desc := t.Description
	if desc == "" {
		desc = t.Title
	}
	if desc == "" {
		desc = "Tool " + t.Name + " of the MCP server " + sv.name + "."
	}
	var annotations map[string]any
	var hints *protocol.ToolAnnotations
	if t.Annotations != nil {
		if b, err := json.Marshal(t.Annotations); err == nil {
			_ = json.Unmarshal(b, &annotations)
			hints = new(protocol.ToolAnnotations)
			_ = json.Unmarshal(b, hints) // passed through to clients as they are
		}
	}
	fp, _ := json.Marshal(struct {
		D string
		S json.RawMessage
		A any
		N string
	}{desc, schema, annotations, t.Name})
	mcpName := t.Name
	changes := registry.ChangesFound
	if t.Annotations != nil && t.Annotations.ReadOnlyHint {
		// Its checkpoint trusts the claim: a server that writes anyway is seen by the next
		// look at the workspace, as a change made outside toolsd.
		changes = registry.ChangesNone
	}
	return &registry.Tool{
		ID:          id,
		Description: desc,
		Parameters:  schema,
		Permission:  id,
		ReadOnly:    false, // a server's readOnlyHint is a claim, not a guarantee
		Changes:     changes,
		Annotations: hints,
		Source:      SourcePrefix + sv.name,
		Fingerprint: string(fp),
		Execute: func(ctx context.Context, call *registry.Call, args json.RawMessage) (*registry.Result, error) {
			return sv.call(ctx, call, id, mcpName, annotations, args)
		},
	}
}

// tail keeps the last bytes written to it (a server's stderr). Safe for concurrent use.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append([]byte{}, t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := string(t.buf)
	if len(t.buf) == t.max {
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		}
	}
	return s
}
