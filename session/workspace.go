package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/toolsd/toolsd/audit"
	"github.com/toolsd/toolsd/builtin"
	"github.com/toolsd/toolsd/checkpoint"
	"github.com/toolsd/toolsd/config"
	"github.com/toolsd/toolsd/hook"
	"github.com/toolsd/toolsd/internal/sandbox"
	"github.com/toolsd/toolsd/mcp"
	"github.com/toolsd/toolsd/permission"
	"github.com/toolsd/toolsd/policy"
	"github.com/toolsd/toolsd/project"
	"github.com/toolsd/toolsd/protocol"
	"github.com/toolsd/toolsd/registry"
	"github.com/toolsd/toolsd/store"
)

// WorkspaceOptions configure OpenWorkspace.
type WorkspaceOptions struct {
	// Folder is the workspace folder (absolute).
	Folder string
	// StorePath overrides the store file; empty means DefaultStorePath(Folder).
	StorePath string
	Store     *store.Options
	// InitOptions are the editor's initializationOptions (user-level settings).
	InitOptions json.RawMessage
	Limits      Limits
	Logger      *slog.Logger
	// LogLevel, if set, is the logger's level: the settings' logLevel sets it, at open and
	// on every reload.
	LogLevel *slog.LevelVar
	// Client names the editor (initialize's clientInfo.name): the call record says an ask
	// was answered through it.
	Client string
	// ManagedDir is the folder of the administrator's policy ("" for the system's,
	// config.ManagedDir). Tests set it; nothing a user controls may.
	ManagedDir string
	// Version is toolsd's version, for the audit trail.
	Version string
	// NoCheckpoints turns checkpoints off (benchmarks compare with it).
	NoCheckpoints bool
	// Checkpoint tunes checkpoints (nil: the defaults); its Workspace, Store and Logger
	// are set by OpenWorkspace.
	Checkpoint *checkpoint.Options
}

// Workspace is everything toolsd keeps for one workspace folder: the store, the catalogue,
// the permission engine, the calls in flight and the clients attached to it (Attach; each
// attached Client implements rpc.Backend). Safe for concurrent use.
type Workspace struct {
	folder      string
	store       *store.Store
	reg         *registry.Registry
	perms       *permission.Engine
	svc         *Service
	settingsSrc *config.Source
	audit       *audit.Exporter // nil: export is off
	auditErr    string          // why export could not start
	logLevel    *slog.LevelVar  // nil: the command line fixed the level
	log         *slog.Logger

	sandbox *sandboxer
	hooks   *hook.Runner

	hub hub // the attached clients

	clientHooksMu sync.Mutex // serializes clientHooksChanged, so that the newest list of clients wins

	hookMu      sync.Mutex                       // guards hookDiags and clientDiags
	hookDiags   []protocol.Diagnostic            // the failing hooks
	clientDiags map[string][]protocol.Diagnostic // refused subscriptions, by client id

	mu     sync.Mutex // guards rules, layers and mcp
	rules  *policy.Rules
	mcp    *mcp.Source
	layers *config.Layers

	closeOnce sync.Once
	closers   []func() error // run in reverse order by Close

	checkpoints *checkpoint.Tracker // nil when off
}

// Checkpoints is the workspace's checkpoint tracker, nil when checkpoints are off.
func (w *Workspace) Checkpoints() *checkpoint.Tracker { return w.checkpoints }

// CheckpointsCheck is `toolsd checkpoints check`: whether the change journal fits in the
// kernel's inotify limits for the workspace folder ws (checkpoint.Check).
func CheckpointsCheck(ws string) (string, error) { return checkpoint.Check(ws) }

// DefaultStorePath is the store file of a workspace (store.DefaultPath).
func DefaultStorePath(folder string) string { return store.DefaultPath(folder) }

// OpenWorkspace opens the store and builds the catalogue for a workspace folder.
func OpenWorkspace(ctx context.Context, o WorkspaceOptions) (*Workspace, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if !filepath.IsAbs(o.Folder) {
		return nil, fmt.Errorf("workspaceFolder must be an absolute path, got %q", o.Folder)
	}
	fi, err := os.Stat(o.Folder)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a folder", o.Folder)
	}
	real, err := filepath.EvalSymlinks(o.Folder)
	if err != nil {
		return nil, err
	}
	w := &Workspace{folder: real, reg: registry.New(), log: o.Logger.With("component", "workspace"), logLevel: o.LogLevel}
	w.hub.init()
	ok := false
	defer func() {
		if !ok {
			_ = w.Close()
		}
	}()

	// Settings first: they shape the store (retention) and the built-ins (limits).
	cs, err := config.NewSource(config.SourceOptions{
		Workspace: real, InitOptions: o.InitOptions, Logger: o.Logger, ManagedDir: o.ManagedDir,
		OnChange: func(l *config.Layers, diags []protocol.Diagnostic) { w.applySettings(l, diags, true) },
	})
	if err != nil {
		return nil, fmt.Errorf("watching config: %w", err)
	}
	w.closers = append(w.closers, cs.Close)
	settings := cs.Layers().Effective

	storePath := o.StorePath
	if storePath == "" {
		storePath = DefaultStorePath(real)
	}
	w.sandbox = newSandboxer(real, storePath)
	w.closers = append(w.closers, w.sandbox.settle)
	w.hooks = hook.New(hook.Options{
		Workspace: real, Logger: o.Logger,
		Confine: func(sp *hook.Spec) *sandbox.Confinement {
			over, _ := sp.Sandbox.(*config.SandboxTool)
			return w.sandbox.confine("hook:"+sp.Name, over)
		},
		OnDiagnostics: func(d []protocol.Diagnostic) {
			w.hookMu.Lock()
			w.hookDiags = d
			w.hookMu.Unlock()
			w.publishHookDiags()
		},
	})
	sopts := store.Options{}
	if o.Store != nil {
		sopts = *o.Store
	}
	if sopts.Logger == nil {
		sopts.Logger = o.Logger
	}
	if abs, err := filepath.Abs(storePath); err == nil {
		if r, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
			storePath = filepath.Join(r, filepath.Base(abs))
		}
	}
	if sopts.Retention == 0 && settings.RetentionDays > 0 {
		sopts.Retention = time.Duration(settings.RetentionDays) * 24 * time.Hour
	}
	st, err := store.Open(storePath, &sopts)
	if err != nil {
		return nil, fmt.Errorf("opening the store: %w", err)
	}
	w.store = st
	w.closers = append(w.closers, st.Close)
	// The audit trail: before any call, closed after the last one (Close).
	if w.audit, err = audit.New(ctx, audit.Options{Endpoint: settings.Audit.OTLPEndpoint, Protocol: settings.Audit.OTLPProtocol,
		Version: o.Version, Workspace: real, Logger: o.Logger}); err != nil {
		w.auditErr = err.Error() + "; calls run without the audit trail"
		w.log.Warn("audit export is off", "err", err)
	}
	// Checkpoints: the first look at the workspace runs in the background; the first
	// changing call waits for it.
	var cps *checkpoint.Tracker
	if !o.NoCheckpoints {
		copts := checkpoint.Options{}
		if o.Checkpoint != nil {
			copts = *o.Checkpoint
		}
		copts.Workspace, copts.Store, copts.Logger = real, st, o.Logger
		copts.OnJournal = w.journalChanged
		// The store's own files, should the person keep them in the workspace.
		stAbs := st.Path()
		ext := filepath.Ext(storePath)
		base := strings.TrimSuffix(storePath, ext)
		copts.Skip = func(abs string) bool {
			return abs == stAbs || strings.HasPrefix(abs, base) && strings.HasSuffix(abs, ext)
		}
		if cps, err = checkpoint.Open(copts); err != nil {
			return nil, fmt.Errorf("opening checkpoints: %w", err)
		}
		w.closers = append(w.closers, cps.Close)
		w.checkpoints = cps
		w.sandbox.follow(cps)
	}
	if w.perms, err = permission.NewEngine(approvalStore{st}); err != nil {
		return nil, fmt.Errorf("loading remembered permissions: %w", err)
	}
	w.settingsSrc = cs
	w.applySettings(cs.Layers(), cs.Diagnostics(), false)

	lim := settings.Limits
	builtins := builtin.Tools(&builtin.Options{
		BashDefaultTimeout: time.Duration(lim.BashTimeoutMs) * time.Millisecond,
		BashMaxTimeout:     time.Duration(lim.BashMaxTimeoutMs) * time.Millisecond,
		UsePatch:           func(m *protocol.Model) bool { s := w.settings(); return s.UsePatch(m) },
		Sandbox:            func(tool string) *sandbox.Confinement { return w.sandbox.confine(tool, nil) },
	})
	w.reg.SetSource(registry.SourceBuiltin, builtins, nil)
	reserved := []string{permission.KeyExternalDirectory, permission.KeyDoomLoop, "invalid"}
	for _, t := range builtins {
		reserved = append(reserved, t.ID)
	}
	ps, err := project.NewSource(w.reg, project.SourceOptions{
		Options: project.Options{Workspace: real, UserDir: config.UserDir(), Builtins: reserved,
			Sandbox: func(tool string) *sandbox.Confinement { return w.sandbox.confine(tool, nil) }},
		Logger: o.Logger,
		OnChange: func(ch registry.Change, diags []protocol.Diagnostic) {
			w.notifyChanged(ch)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("watching project tools: %w", err)
	}
	w.closers = append(w.closers, ps.Close)

	// MCP servers start in the background; their tools arrive with tools/changed.
	ms, err := mcp.NewSource(w.reg, mcp.SourceOptions{
		Servers: w.mcpServers(cs.Layers()), Workspace: real, Logger: o.Logger,
		Sandbox: func(server string, settings any) *sandbox.Confinement {
			over, _ := settings.(*config.SandboxTool)
			return w.sandbox.confine("mcp:"+server, over)
		},
		OnChange: func(ch registry.Change, _ []protocol.Diagnostic) { w.notifyChanged(ch) },
	})
	if err != nil {
		return nil, fmt.Errorf("starting MCP servers: %w", err)
	}
	w.mu.Lock()
	w.mcp = ms
	w.mu.Unlock()
	w.closers = append(w.closers, ms.Close)

	w.svc = New(Options{
		Workspace: real, Registry: w.reg, Store: storeAdapter{st}, Policy: w.perms, Notifier: &w.hub, Asks: &w.hub,
		Logger:      o.Logger,
		Limits:      Limits{Lines: lim.TruncateLines, Bytes: lim.TruncateBytes},
		Visible:     w.visible,
		Observe:     w.perms.Observe,
		AdaptSchema: adaptSchema,
		PrepareArgs: registry.StripNulls,
		Audit:       w.audit,
		Checkpoints: cps,
		Hooks:       w.hooks,
	})
	ok = true
	return w, nil
}

// adaptSchema adapts a schema to a provider. A schema that OpenAI's strict mode cannot take
// is sent in its best non-strict form.
func adaptSchema(providerID string, schema json.RawMessage) (json.RawMessage, error) {
	out, err := registry.AdaptSchema(providerID, schema)
	var ns *registry.NotStrictError
	if errors.As(err, &ns) && out != nil {
		return out, nil
	}
	return out, err
}

// settings returns the effective settings.
func (w *Workspace) settings() config.Settings {
	return w.settingsSrc.Layers().Effective
}

// visible decides whether a tool is in an agent's catalogue for a model.
func (w *Workspace) visible(e *registry.Entry, agent string, m *protocol.Model) bool {
	s := w.settings()
	if !s.AgentEnabled(agent, e.ID) {
		return false
	}
	if e.Models != nil && !e.Models(m) {
		return false
	}
	return !w.perms.Hidden(e.PermissionKey(), agent)
}

// applySettings hands each config layer's permission rules to the engine and publishes the
// config diagnostics. With notify, the editor hears that the catalogue may have changed.
func (w *Workspace) applySettings(l *config.Layers, diags []protocol.Diagnostic, notify bool) {
	if w.perms == nil {
		return
	}
	if w.logLevel != nil && l.Effective.LogLevel != "" {
		_ = w.logLevel.UnmarshalText([]byte(l.Effective.LogLevel)) // validated by config
	}
	if w.sandbox != nil {
		w.sandbox.set(w.sandboxSettings(l))
		diags = append(diags, w.sandbox.diagnostics()...)
		if l.Project != nil && !w.perms.Trusted() && !reflect.DeepEqual(l.Project.Settings.Sandbox, config.Sandbox{}) {
			diags = append(diags, protocol.Diagnostic{Path: l.Project.Path, Severity: "warning",
				Message: "the workspace's sandbox settings are ignored until you trust the workspace: a repository cannot loosen its own sandbox"})
		}
	}
	defsChanged := false
	if w.hooks != nil {
		trusted := w.perms.Trusted()
		had := w.hooks.Active(protocol.HookPointDefinition)
		w.hooks.SetConfig(hookSpecs(l, trusted, w.folder))
		defsChanged = had || w.hooks.Active(protocol.HookPointDefinition)
		if !trusted && hookCount(l.Project) > 0 {
			diags = append(diags, protocol.Diagnostic{Path: l.Project.Path, Severity: "warning",
				Message: "the workspace's hooks do not run until you trust the workspace: a repository cannot run its own commands on your calls"})
		}
	}
	w.mu.Lock()
	prev := w.rules
	w.mu.Unlock()
	rules, ds := policy.CheckSettings(l, prev, w.folder)
	diags = append(diags, ds...)
	policy.Apply(w.perms, rules, prev)
	w.mu.Lock()
	w.rules = rules
	w.layers = l
	w.mu.Unlock()
	ch := w.reg.SetSource("config", nil, diags)
	if defsChanged {
		// Definition hooks may change what every tool looks like.
		ch.Changed = w.allTools()
	}
	if notify {
		w.notifyChanged(ch)
	}
	w.mu.Lock()
	ms := w.mcp
	w.mu.Unlock()
	if ms != nil {
		ms.SetServers(w.mcpServers(l)) // reports its own changes through OnChange
	}
}

// sandboxSettings are the sandbox settings in force: the workspace's own only once trusted.
func (w *Workspace) sandboxSettings(l *config.Layers) config.Sandbox {
	layers := []*config.Layer{l.User, l.Editor}
	if w.perms.Trusted() {
		layers = append(layers, l.Project)
	}
	return config.Merge(layers...).Sandbox
}

// mcpServers are the MCP servers the settings name. The workspace's own config names
// programs the repository wants run: they start only once the person trusts the workspace.
func (w *Workspace) mcpServers(l *config.Layers) map[string]mcp.Server {
	layers := []*config.Layer{l.User, l.Editor}
	if w.perms.Trusted() {
		layers = append(layers, l.Project)
	}
	out := map[string]mcp.Server{}
	for name, m := range config.Merge(layers...).MCP {
		out[name] = mcp.Server{Command: m.Command, Env: m.Env, Sandbox: m.Sandbox}
	}
	return out
}

// allTools are the ids of the catalogue.
func (w *Workspace) allTools() []string {
	ids := []string{}
	for _, e := range w.reg.Catalog().Entries() {
		ids = append(ids, e.ID)
	}
	return ids
}

// publishHookDiags makes the hooks' diagnostics (failing hooks, refused subscriptions) part
// of the catalogue's, and tells the clients.
func (w *Workspace) publishHookDiags() {
	w.hookMu.Lock()
	all := append([]protocol.Diagnostic{}, w.hookDiags...)
	ids := make([]string, 0, len(w.clientDiags))
	for id := range w.clientDiags {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		all = append(all, w.clientDiags[id]...)
	}
	w.hookMu.Unlock()
	w.notifyChanged(w.reg.SetSource("hooks", nil, all))
}

// setClientDiags sets the diagnostics of a client's refused hook subscriptions (none: nil).
func (w *Workspace) setClientDiags(id, name string, bad []string) {
	w.hookMu.Lock()
	_, had := w.clientDiags[id]
	if len(bad) == 0 {
		delete(w.clientDiags, id)
	} else {
		if w.clientDiags == nil {
			w.clientDiags = map[string][]protocol.Diagnostic{}
		}
		var ds []protocol.Diagnostic
		for _, b := range bad {
			ds = append(ds, protocol.Diagnostic{Path: "hooks", Severity: "warning", Message: fmt.Sprintf("the editor %s subscribed to a hook toolsd cannot run: %s; it is left out", name, b)})
		}
		w.clientDiags[id] = ds
	}
	w.hookMu.Unlock()
	if had || len(bad) > 0 {
		w.publishHookDiags()
	}
}

// clientHooksChanged gives the runner the hooks of the attached editors, oldest first.
func (w *Workspace) clientHooksChanged() {
	w.clientHooksMu.Lock()
	defer w.clientHooksMu.Unlock()
	var specs []hook.Spec
	defs := w.hooks.Active(protocol.HookPointDefinition)
	for _, c := range w.hub.snapshot() {
		specs = append(specs, clientHookSpecs(c)...)
	}
	w.hooks.SetClients(specs)
	if defs || w.hooks.Active(protocol.HookPointDefinition) {
		w.notifyChanged(registry.Change{Added: []string{}, Removed: []string{}, Changed: w.allTools()})
	}
}

// journalChanged makes the checkpoints' journal status a diagnostic of the catalogue (none
// while the journal serves) and tells the clients at once.
func (w *Workspace) journalChanged(s checkpoint.JournalStatus) {
	var diags []protocol.Diagnostic
	if s.Off != "" {
		diags = []protocol.Diagnostic{{Path: protocol.DiagnosticCheckpoints, Severity: "warning", Message: s.Message, Fix: s.Fix}}
	}
	w.notifyChanged(w.reg.SetSource("checkpoints", nil, diags))
}

// notifyChanged sends tools/changed with the catalogue's diagnostics.
func (w *Workspace) notifyChanged(ch registry.Change) {
	w.hub.changed(protocol.ChangedParams{Added: nonNil(ch.Added), Removed: nonNil(ch.Removed), Changed: nonNil(ch.Changed), Diagnostics: nonNilDiags(w.reg.Catalog().Diagnostics())})
}

// Close cancels every call in flight, waits until they are recorded, and closes the store.
// Clients still attached hear nothing more; Attach fails afterwards.
func (w *Workspace) Close() error {
	var errs []error
	w.closeOnce.Do(func() {
		if w.svc != nil {
			w.svc.Close()
		}
		// Every call has ended: flush the audit trail, within a bound (a collector that is
		// down must not hold the editor's shutdown).
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if err := w.audit.Close(ctx); err != nil {
			errs = append(errs, err)
		}
		cancel()
		w.hub.close()
		for i := len(w.closers) - 1; i >= 0; i-- {
			if err := w.closers[i](); err != nil {
				errs = append(errs, err)
			}
		}
	})
	return errors.Join(errs...)
}

// Resolve is the catalogue for a round (tools/resolve). The diagnostics say when the audit trail could not start
// or lost spans.
func (w *Workspace) Resolve(p protocol.ResolveParams) protocol.ResolveResult {
	res := w.svc.Resolve(p)
	if w.auditErr != "" {
		res.Diagnostics = append(res.Diagnostics, protocol.Diagnostic{Path: "audit", Message: w.auditErr, Severity: "warning"})
	}
	if lost := w.audit.Status().Lost(); lost != "" {
		res.Diagnostics = append(res.Diagnostics, protocol.Diagnostic{Path: "audit", Message: lost, Severity: "warning"})
	}
	return res
}

// SetTrusted trusts (or stops trusting) the workspace's own config (permission/trust).
func (w *Workspace) SetTrusted(trusted bool) (bool, error) {
	if err := w.perms.SetTrusted(trusted); err != nil {
		return false, err
	}
	// The project's MCP servers start only in a trusted workspace: apply the settings again.
	w.mu.Lock()
	l := w.layers
	w.mu.Unlock()
	if l != nil {
		w.applySettings(l, w.settingsSrc.Diagnostics(), true)
	}
	return w.perms.Trusted(), nil
}

// ListCalls lists the calls on record (calls/list), of one client when p.Client names one
// (by connection id or name).
func (w *Workspace) ListCalls(p protocol.CallsListParams) (*protocol.CallsListResult, error) {
	var keep []func(*protocol.CallSummary) bool
	if p.Client != "" {
		keep = append(keep, func(s *protocol.CallSummary) bool {
			return s.Client != nil && (s.Client.ID == p.Client || s.Client.Name == p.Client)
		})
	}
	calls, next, err := w.store.ListCalls(p.SessionID, p.Limit, p.Cursor, keep...)
	if err != nil {
		return nil, storeErr(err)
	}
	if calls == nil {
		calls = []protocol.CallSummary{}
	}
	return &protocol.CallsListResult{Calls: calls, NextCursor: next}, nil
}

// GetCall returns a call's whole record (calls/get).
func (w *Workspace) GetCall(p protocol.CallsGetParams) (*protocol.CallRecord, error) {
	rec, err := w.store.GetCall(p.SessionID, p.CallID)
	if err != nil {
		return nil, storeErr(err)
	}
	return rec, nil
}

// Changes is what a call changed (calls/changes).
func (w *Workspace) Changes(ctx context.Context, p protocol.CallsChangesParams) (*protocol.CallsChangesResult, error) {
	return w.svc.Changes(ctx, p)
}

// Revert reverts calls (calls/revert).
func (w *Workspace) Revert(ctx context.Context, p protocol.CallsRevertParams) (*protocol.CallsRevertResult, error) {
	return w.svc.Revert(ctx, p)
}

// ReadOutput reads a page of a stored output (outputs/read).
func (w *Workspace) ReadOutput(p protocol.OutputsReadParams) (*protocol.OutputsReadResult, error) {
	res, err := w.store.ReadOutput(p.OutputID, p.Offset, p.Limit)
	if err != nil {
		return nil, storeErr(err)
	}
	return res, nil
}

// Folder is the workspace's folder (its real path).
func (w *Workspace) Folder() string { return w.folder }

// MaxMessageBytes is the message limit the settings name (limits.maxMessageBytes).
func (w *Workspace) MaxMessageBytes() int64 { return w.settings().Limits.MaxMessageBytes }

// StorePath is the store file in use.
func (w *Workspace) StorePath() string { return w.store.Path() }

// Permissions are the permission keys of the catalogue.
func (w *Workspace) Permissions() []string {
	seen := map[string]bool{"external_directory": true, "doom_loop": true}
	out := []string{"doom_loop", "external_directory"}
	for _, e := range w.reg.Catalog().Entries() {
		if k := e.PermissionKey(); !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// ErrNotFound is returned for unknown calls and outputs.
var ErrNotFound = errors.New("session: not found")

func storeErr(err error) error {
	switch {
	case errors.Is(err, store.ErrExpired): // before ErrNotFound, which it also matches
		return fmt.Errorf("%w: the output has expired and was pruned (outputs are kept for retentionDays, 7 by default)", ErrNotFound)
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("%w: %v", ErrNotFound, err)
	case errors.Is(err, store.ErrBadCursor), errors.Is(err, store.ErrInvalid):
		return &ParamsError{Msg: err.Error()}
	}
	return err
}

func nonNilDiags(d []protocol.Diagnostic) []protocol.Diagnostic {
	if d == nil {
		return []protocol.Diagnostic{}
	}
	return d
}

// storeAdapter gives the pipeline the store.
type storeAdapter struct{ *store.Store }

func (a storeAdapter) NewOutput(sessionID, callID string) (OutputSink, error) {
	return a.Store.NewOutput(sessionID, callID)
}

// ReadLines reads a stored output for the tools; an unknown or expired id is
// registry.ErrOutputNotFound, as the OutputReader contract says.
func (a storeAdapter) ReadLines(ctx context.Context, outputID string, offset, limit int) (string, int, int64, error) {
	content, lines, size, err := a.Store.ReadLines(ctx, outputID, offset, limit)
	if errors.Is(err, store.ErrNotFound) {
		err = fmt.Errorf("%w: %v", registry.ErrOutputNotFound, err)
	}
	return content, lines, size, err
}

func isDuplicate(err error) bool { return errors.Is(err, store.ErrDuplicate) }

// approvalStore persists workspace answers for the permission engine.
type approvalStore struct{ st *store.Store }

func (a approvalStore) Approvals() ([]permission.Rule, error) {
	as, err := a.st.Approvals()
	if err != nil {
		return nil, err
	}
	out := make([]permission.Rule, 0, len(as))
	for _, x := range as {
		out = append(out, permission.Rule{Permission: x.Permission, Pattern: x.Pattern, Action: permission.Allow, Source: permission.SourceWorkspace, At: x.At, By: x.By})
	}
	return out, nil
}

func (a approvalStore) AddApprovals(rules []permission.Rule) error {
	as := make([]store.Approval, 0, len(rules))
	for _, r := range rules {
		as = append(as, store.Approval{Permission: r.Permission, Pattern: r.Pattern, At: r.At, By: r.By})
	}
	return a.st.AddApprovals(as)
}

func (a approvalStore) Trusted() (bool, error)  { return a.st.Trusted() }
func (a approvalStore) SetTrusted(t bool) error { return a.st.SetTrusted(t) }
