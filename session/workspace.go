package session

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/toolsd/toolsd/builtin"
	"github.com/toolsd/toolsd/config"
	"github.com/toolsd/toolsd/mcp"
	"github.com/toolsd/toolsd/permission"
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
	logLevel    *slog.LevelVar // nil: the command line fixed the level
	log         *slog.Logger

	hub hub // the attached clients

	mu     sync.Mutex // guards agents, layers and mcp
	agents map[string]bool
	mcp    *mcp.Source
	layers *config.Layers

	closeOnce sync.Once
	closers   []func() error // run in reverse order by Close
}

// DefaultStorePath is the store file of a workspace: one per workspace folder under the
// user's XDG state folder, never inside the workspace.
func DefaultStorePath(folder string) string {
	base := os.Getenv("XDG_STATE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = os.TempDir()
		}
		base = filepath.Join(home, ".local", "state")
	}
	sum := sha256.Sum256([]byte(folder))
	name := strings.Map(func(r rune) rune {
		if r < 128 && (r == '-' || r == '_' || r == '.' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9')) {
			return r
		}
		return '_'
	}, filepath.Base(folder))
	return filepath.Join(base, "toolsd", name+"-"+hex.EncodeToString(sum[:6])+".db")
}

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
		Workspace: real, InitOptions: o.InitOptions, Logger: o.Logger,
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
	sopts := store.Options{}
	if o.Store != nil {
		sopts = *o.Store
	}
	if sopts.Logger == nil {
		sopts.Logger = o.Logger
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
	})
	w.reg.SetSource(registry.SourceBuiltin, builtins, nil)
	reserved := []string{permission.KeyExternalDirectory, permission.KeyDoomLoop, "invalid"}
	for _, t := range builtins {
		reserved = append(reserved, t.ID)
	}
	ps, err := project.NewSource(w.reg, project.SourceOptions{
		Options: project.Options{Workspace: real, UserDir: config.UserDir(), Builtins: reserved},
		Logger:  o.Logger,
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
	layers := map[string]permission.Ruleset{}
	agents := map[string]bool{}
	for _, x := range l.List() {
		for name := range x.Settings.Agents {
			agents[name] = true
		}
	}
	add := func(layer, source, path string, raw json.RawMessage) {
		if len(raw) == 0 {
			return
		}
		rs, err := permission.ParseConfig(raw, source)
		if err != nil {
			diags = append(diags, protocol.Diagnostic{Path: path, Message: "permission rules: " + err.Error(), Severity: "error"})
			return
		}
		layers[layer] = append(layers[layer], rs...)
	}
	for _, x := range l.List() {
		add(x.Source, x.Source, x.Path, x.Settings.Permission)
	}
	for name := range agents {
		for _, x := range l.List() {
			if a, ok := x.Settings.Agents[name]; ok {
				// The project's agent rules have a layer of their own, which follows the
				// workspace's trust like the project layer does.
				layer := permission.LayerAgentPrefix + name
				if x.Source == config.SourceProject {
					layer = permission.LayerProjectAgentPrefix + name
				}
				add(layer, permission.LayerAgentPrefix+name, x.Path, a.Permission)
			}
		}
	}
	for _, name := range []string{permission.LayerUser, permission.LayerEditor, permission.LayerProject} {
		_ = w.perms.SetLayer(name, layers[name])
	}
	w.mu.Lock()
	prevAgents := w.agents
	w.agents = agents
	w.layers = l
	w.mu.Unlock()
	for name := range prevAgents {
		if !agents[name] {
			_ = w.perms.SetLayer(permission.LayerAgentPrefix+name, nil)
			_ = w.perms.SetLayer(permission.LayerProjectAgentPrefix+name, nil)
		}
	}
	for name := range agents {
		_ = w.perms.SetLayer(permission.LayerAgentPrefix+name, layers[permission.LayerAgentPrefix+name])
		_ = w.perms.SetLayer(permission.LayerProjectAgentPrefix+name, layers[permission.LayerProjectAgentPrefix+name])
	}
	ch := w.reg.SetSource("config", nil, diags)
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

// mcpServers are the MCP servers the settings name. The workspace's own config names
// programs the repository wants run: they start only once the person trusts the workspace.
func (w *Workspace) mcpServers(l *config.Layers) map[string]mcp.Server {
	layers := []*config.Layer{l.User, l.Editor}
	if w.perms.Trusted() {
		layers = append(layers, l.Project)
	}
	out := map[string]mcp.Server{}
	for name, m := range config.Merge(layers...).MCP {
		out[name] = mcp.Server{Command: m.Command, Env: m.Env}
	}
	return out
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
		w.hub.close()
		for i := len(w.closers) - 1; i >= 0; i-- {
			if err := w.closers[i](); err != nil {
				errs = append(errs, err)
			}
		}
	})
	return errors.Join(errs...)
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
		out = append(out, permission.Rule{Permission: x.Permission, Pattern: x.Pattern, Action: permission.Allow, Source: "workspace"})
	}
	return out, nil
}

func (a approvalStore) AddApprovals(rules []permission.Rule) error {
	as := make([]store.Approval, 0, len(rules))
	for _, r := range rules {
		as = append(as, store.Approval{Permission: r.Permission, Pattern: r.Pattern, At: time.Now().UTC()})
	}
	return a.st.AddApprovals(as)
}

func (a approvalStore) Trusted() (bool, error)  { return a.st.Trusted() }
func (a approvalStore) SetTrusted(t bool) error { return a.st.SetTrusted(t) }
