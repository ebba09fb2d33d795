package hook

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolsd/toolsd/internal/sandbox"
	"github.com/toolsd/toolsd/permission"
	"github.com/toolsd/toolsd/protocol"
)

// Layers a hook comes from, in the order their hooks run (see Runner). The settings'
// layers have the names of the permission layers.
const (
	LayerProject = permission.LayerProject // the workspace's .toolsd/config.json (only once trusted)
	LayerEditor  = permission.LayerEditor  // the editor's settings (initializationOptions)
	LayerClient  = "client"                // an attached editor's subscription (hooks/run)
	LayerUser    = permission.LayerUser    // the user's config file
)

// Default time-outs: a command hook gets Claude Code's default, an editor's request less.
const (
	DefaultTimeout       = 60 * time.Second
	DefaultClientTimeout = 10 * time.Second
	MaxTimeout           = 10 * time.Minute
)

// Spec is one hook as configured: where it runs, what it matches, and what runs.
type Spec struct {
	// Name names it in the call record, the provenance and the diagnostics.
	Name string
	// Point is one of protocol.HookPoint*.
	Point string
	// Layer is one of the Layer* constants; File, Line and Column say where it is written
	// (empty for the editor's settings and a client's subscription).
	Layer        string
	File         string
	Line, Column int
	// Match is the tools it runs for: ids or Claude Code names with "*" wildcards,
	// separated by "|"; empty or "*" is every tool. A Claude Code matcher's ".*" reads as
	// "*".
	Match string
	// Source keeps tools whose source matches this wildcard ("builtin", "mcp:*").
	Source string
	// If keeps calls that make a permission request the rule pattern names: `bash(git
	// push *)`, Claude Code's `Bash(git push:*)`.
	If string
	// Command is a command hook's argv, run without a shell (argv[0] found on PATH when it
	// has no slash); Env is added to its environment; Sandbox is handed to
	// Options.Confine.
	Command []string
	Env     map[string]string
	Sandbox any
	// Client and Requester make an editor's hook (hooks/run).
	Client    *protocol.ClientRef
	Requester Requester
	// Timeout bounds one run (0: DefaultTimeout, or DefaultClientTimeout for an editor's).
	Timeout time.Duration
	// FailClosed: a run that fails blocks what the hook guards (fail-closed); otherwise it
	// is passed over (fail-open).
	FailClosed bool
}

// Requester sends hooks/run to an editor and waits for its answer (the rpc layer's
// connection). It must return once ctx is done.
type Requester interface {
	Hook(ctx context.Context, p protocol.HookParams) (*protocol.HookResult, error)
}

// Request is one permission request a call makes (registry.AskRequest's key and patterns).
type Request struct {
	Permission string
	Patterns   []string
}

// Call is the call a hook runs for.
type Call struct {
	SessionID, MessageID, CallID string
	// Tool is the tool's id, Source its source ("builtin", "project", "mcp:<server>").
	Tool, Source string
	Agent        string
	Model        *protocol.Model
	Client       *protocol.ClientRef
	// Args are the arguments the model sent (after validation).
	Args json.RawMessage
	// Requests returns the permission requests the call makes with args, for Spec.If and
	// for the file paths Claude Code's tool_input names; nil makes none.
	Requests func(args json.RawMessage) []Request
}

// Options configure a Runner.
type Options struct {
	// Workspace is the real path of the workspace folder: the hooks' working folder.
	Workspace string
	Logger    *slog.Logger
	// Confine returns how a command hook's process runs; nil runs it unconfined. The
	// caller of the returned Confinement's Close is the Runner.
	Confine func(s *Spec) *sandbox.Confinement
	// Env is the hooks' base environment; nil is the daemon's.
	Env []string
	// OnDiagnostics is called with every hook's diagnostics when a hook starts failing,
	// fails in another way, or recovers. Calls are serialized; it must not block for long.
	OnDiagnostics func([]protocol.Diagnostic)
	// Grace is how long a timed-out hook's processes have between SIGTERM and SIGKILL
	// (default 1 s).
	Grace time.Duration
	Now   func() time.Time
}

// Runner runs the workspace's hooks. It is owned by the workspace and safe for concurrent
// use; it starts no goroutine of its own (a command hook's process is started and waited for
// by the call that runs it).
type Runner struct {
	opts Options
	log  *slog.Logger
	snap atomic.Pointer[snapshot]

	mu      sync.Mutex // guards config, clients, health and defs
	config  []Spec
	clients []Spec
	health  map[string]*health
	defs    map[string]definitionResult

	notifyMu sync.Mutex            // serializes OnDiagnostics; guards told
	told     []protocol.Diagnostic // what OnDiagnostics was last given
}

// snapshot is the hooks in force, by point, in the order they run.
type snapshot struct {
	points map[string][]*entry
}

// New returns a Runner without hooks.
func New(o Options) *Runner {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Grace <= 0 {
		o.Grace = time.Second
	}
	r := &Runner{opts: o, log: o.Logger.With("component", "hook"), health: map[string]*health{}, defs: map[string]definitionResult{}}
	r.snap.Store(&snapshot{points: map[string][]*entry{}})
	return r
}

// SetConfig replaces the hooks from the settings (every point, any order of layers).
func (r *Runner) SetConfig(specs []Spec) {
	r.mu.Lock()
	r.config = append([]Spec(nil), specs...)
	r.rebuildLocked()
	r.mu.Unlock()
	r.notify()
}

// SetClients replaces the hooks of the attached editors, oldest editor first.
func (r *Runner) SetClients(specs []Spec) {
	r.mu.Lock()
	r.clients = append([]Spec(nil), specs...)
	r.rebuildLocked()
	r.mu.Unlock()
	r.notify()
}

// Active reports whether any hook runs at point.
func (r *Runner) Active(point string) bool {
	return r != nil && len(r.snap.Load().points[point]) > 0
}

// rebuildLocked makes the snapshot: for each point the workspace's hooks, then the
// editor's settings', then the attached editors' (oldest first, a name once), then the
// user's, each layer in the order written. r.mu is held.
func (r *Runner) rebuildLocked() {
	s := &snapshot{points: map[string][]*entry{}}
	keys := map[string]bool{}
	add := func(sp Spec) {
		e := compile(sp)
		keys[e.key] = true
		s.points[sp.Point] = append(s.points[sp.Point], e)
	}
	for _, layer := range []string{LayerProject, LayerEditor} {
		for _, sp := range r.config {
			if sp.Layer == layer {
				add(sp)
			}
		}
	}
	seen := map[string]bool{}
	for _, sp := range r.clients {
		if k := sp.Point + "\x00" + sp.Name; !seen[k] {
			seen[k] = true
			add(sp)
		}
	}
	for _, sp := range r.config {
		if sp.Layer != LayerProject && sp.Layer != LayerEditor {
			add(sp)
		}
	}
	for k := range r.health {
		if !keys[k] {
			delete(r.health, k)
		}
	}
	r.defs = map[string]definitionResult{}
	r.snap.Store(s)
}

// entry is a hook ready to run. Immutable.
type entry struct {
	spec   Spec
	key    string   // identifies the hook across reloads, for its health
	match  []string // alternatives; nil matches every tool
	source string
	ifPerm string // "" without If
	ifPat  string
}

func compile(sp Spec) *entry {
	if sp.Timeout <= 0 {
		sp.Timeout = DefaultTimeout
		if sp.Requester != nil {
			sp.Timeout = DefaultClientTimeout
		}
	}
	sp.Timeout = min(sp.Timeout, MaxTimeout)
	e := &entry{spec: sp, source: sp.Source}
	e.key = fmt.Sprintf("%s\x00%s:%d:%d\x00%s\x00%s", sp.Layer, sp.File, sp.Line, sp.Column, sp.Point, sp.Name)
	if sp.Client != nil {
		e.key += "\x00" + sp.Client.ID
	}
	for _, alt := range strings.Split(sp.Match, "|") {
		alt = strings.ReplaceAll(strings.TrimSpace(alt), ".*", "*")
		if alt == "" || alt == "*" {
			e.match = nil
			break
		}
		e.match = append(e.match, alt)
	}
	if sp.If != "" {
		e.ifPerm, e.ifPat, _ = ParseIf(sp.If)
	}
	return e
}

// ParseIf reads a rule pattern over a call: `perm(pattern)`, perm a permission key or a
// Claude Code tool name (Bash is bash; Edit, Write and MultiEdit are edit), pattern a
// wildcard pattern as the rules write it (Claude Code's trailing ":*" is " *", a leading
// "./" is dropped). Without parentheses it is a permission key alone (every pattern).
func ParseIf(s string) (perm, pattern string, err error) {
	s = strings.TrimSpace(s)
	open := strings.IndexByte(s, '(')
	if open < 0 {
		if s == "" || strings.ContainsAny(s, ")") {
			return "", "", fmt.Errorf("%q is not a rule pattern: write permission(pattern), like bash(git push *)", s)
		}
		return permissionOf(s), "*", nil
	}
	if !strings.HasSuffix(s, ")") || open == 0 {
		return "", "", fmt.Errorf("%q is not a rule pattern: write permission(pattern), like bash(git push *)", s)
	}
	perm, pattern = permissionOf(strings.TrimSpace(s[:open])), strings.TrimSpace(s[open+1:len(s)-1])
	if p, ok := strings.CutSuffix(pattern, ":*"); ok {
		pattern = p + " *"
	}
	pattern = strings.TrimPrefix(pattern, "./")
	if pattern == "" {
		pattern = "*"
	}
	return perm, pattern, nil
}

// matchesTool reports whether the hook runs for a tool.
func (e *entry) matchesTool(tool, source string) bool {
	if e.source != "" && !permission.Match(e.source, source) {
		return false
	}
	if e.match == nil {
		return true
	}
	cc := ClaudeName(tool, source)
	for _, m := range e.match {
		if permission.Match(m, tool) || permission.Match(m, cc) {
			return true
		}
	}
	return false
}

// matches reports whether the hook runs for a call with args.
func (e *entry) matches(c *Call, args json.RawMessage) bool {
	if !e.matchesTool(c.Tool, c.Source) {
		return false
	}
	if e.ifPerm == "" {
		return true
	}
	if c.Requests == nil {
		return false
	}
	for _, q := range c.Requests(args) {
		if !permission.Match(e.ifPerm, q.Permission) {
			continue
		}
		for _, p := range q.Patterns {
			if permission.Match(e.ifPat, p) {
				return true
			}
		}
	}
	return false
}

// Ref says which hook decided, for a Decision's provenance.
type Ref struct {
	Name, Layer, File string
	Line, Column      int
	Client            *protocol.ClientRef
}

func (e *entry) ref() Ref {
	s := e.spec
	return Ref{Name: s.Name, Layer: s.Layer, File: s.File, Line: s.Line, Column: s.Column, Client: s.Client}
}

// Where says where the hook is configured, for a person: as a rule of its layer says it
// ("user config /home/u/.config/toolsd/config.json:6:7"), or the editor that subscribed.
func (h Ref) Where() string {
	if h.Layer == LayerClient {
		if h.Client != nil {
			return "the editor " + h.Client.Name
		}
		return "the editor"
	}
	return permission.Rule{Source: h.Layer, File: h.File, Line: h.Line, Column: h.Column}.Where()
}

// Provenance is the provenance of a decision the hook made, text saying it for a person.
func (h Ref) Provenance(text string) protocol.Provenance {
	p := protocol.Provenance{Kind: protocol.ProvenanceHook, Text: text, Hook: h.Name, Layer: h.Layer, File: h.File, Line: h.Line, Column: h.Column}
	if h.Layer == LayerClient {
		p.Layer = "client"
		if h.Client != nil {
			p.Layer = "client:" + h.Client.Name
		}
	}
	return p
}

// Verdict is a hook's decision about a call: Action allow, ask or deny, and why (Reason, the
// hook's words or what failed; Message, for a block, what the model reads).
type Verdict struct {
	Action  string
	Reason  string
	Message string
	Hook    Ref
}

// Provenance is the verdict's provenance.
func (v *Verdict) Provenance(text string) protocol.Provenance { return v.Hook.Provenance(text) }

// Context is what a hook added for the model to read.
type Context struct {
	Hook Ref
	Text string
}

// permissionOf maps a Claude Code tool name to the permission key its calls ask under.
func permissionOf(name string) string {
	switch name {
	case "Edit", "Write", "MultiEdit", "NotebookEdit":
		return "edit"
	}
	if id, ok := fromClaude[name]; ok {
		return id
	}
	return name
}
