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
	"github.com/toolsd/toolsd/permission"
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
	CanAsk    bool
	Notifier  Notifier
	// Changed receives tools/changed notifications; may be nil.
	Changed func(protocol.ChangedParams)
	// InitOptions are the editor's initializationOptions (user-level settings).
	InitOptions json.RawMessage
	Limits      Limits
	Logger      *slog.Logger
}

// Workspace is everything toolsd keeps for one workspace folder: the store, the catalogue,
// the permission engine and the calls in flight. It implements rpc.Backend. Safe for
// concurrent use.
type Workspace struct {
	folder string
	store  *store.Store
	reg    *registry.Registry
	perms  *permission.Engine
	svc    *Service
	log    *slog.Logger

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
	storePath := o.StorePath
	if storePath == "" {
		storePath = DefaultStorePath(real)
	}
	sopts := o.Store
	if sopts == nil {
		sopts = &store.Options{}
	}
	if sopts.Logger == nil {
		sopts.Logger = o.Logger
	}
	st, err := store.Open(storePath, sopts)
	if err != nil {
		return nil, fmt.Errorf("opening the store: %w", err)
	}
	w := &Workspace{folder: real, store: st, reg: registry.New(), log: o.Logger.With("component", "workspace")}
	w.closers = append(w.closers, st.Close)
	perms, err := permission.NewEngine(approvalStore{st})
	if err != nil {
		_ = st.Close()
		return nil, fmt.Errorf("loading remembered permissions: %w", err)
	}
	w.perms = perms

	w.reg.SetSource(registry.SourceBuiltin, builtin.Tools(nil), nil)

	w.svc = New(Options{
		Workspace: real, Registry: w.reg, Store: storeAdapter{st}, Policy: perms, Notifier: o.Notifier,
		CanAsk: o.CanAsk, Limits: o.Limits, Logger: o.Logger,
	})
	return w, nil
}

// Close cancels every call in flight, waits until they are recorded, and closes the store.
func (w *Workspace) Close() error {
	var errs []error
	w.closeOnce.Do(func() {
		w.svc.Close()
		for i := len(w.closers) - 1; i >= 0; i-- {
			if err := w.closers[i](); err != nil {
				errs = append(errs, err)
			}
		}
	})
	return errors.Join(errs...)
}

// Resolve implements rpc.Backend.
func (w *Workspace) Resolve(p protocol.ResolveParams) protocol.ResolveResult { return w.svc.Resolve(p) }

// Execute implements rpc.Backend.
func (w *Workspace) Execute(ctx context.Context, p protocol.ExecuteParams) (*protocol.ExecuteResult, error) {
	return w.svc.Execute(ctx, p)
}

// Cancel implements rpc.Backend.
func (w *Workspace) Cancel(sessionID, callID string) bool { return w.svc.Cancel(sessionID, callID) }

// Reply implements rpc.Backend.
func (w *Workspace) Reply(p protocol.ReplyParams) (*protocol.ReplyResult, error) {
	released, err := w.svc.Reply(p)
	if err != nil {
		return nil, err
	}
	return &protocol.ReplyResult{Released: nonNil(released)}, nil
}

// PendingAsks implements rpc.Backend.
func (w *Workspace) PendingAsks() []protocol.AskedParams { return w.svc.PendingAsks() }

// SetTrusted implements rpc.Backend.
func (w *Workspace) SetTrusted(trusted bool) (bool, error) {
	if err := w.store.SetTrusted(trusted); err != nil {
		return false, err
	}
	return w.store.Trusted()
}

// ListCalls implements rpc.Backend.
func (w *Workspace) ListCalls(p protocol.CallsListParams) (*protocol.CallsListResult, error) {
	calls, next, err := w.store.ListCalls(p.SessionID, p.Limit, p.Cursor)
	if err != nil {
		return nil, storeErr(err)
	}
	if calls == nil {
		calls = []protocol.CallSummary{}
	}
	return &protocol.CallsListResult{Calls: calls, NextCursor: next}, nil
}

// GetCall implements rpc.Backend.
func (w *Workspace) GetCall(p protocol.CallsGetParams) (*protocol.CallRecord, error) {
	rec, err := w.store.GetCall(p.SessionID, p.CallID)
	if err != nil {
		return nil, storeErr(err)
	}
	return rec, nil
}

// ReadOutput implements rpc.Backend.
func (w *Workspace) ReadOutput(p protocol.OutputsReadParams) (*protocol.OutputsReadResult, error) {
	res, err := w.store.ReadOutput(p.OutputID, p.Offset, p.Limit)
	if err != nil {
		return nil, storeErr(err)
	}
	return res, nil
}

// StorePath implements rpc.Backend.
func (w *Workspace) StorePath() string { return w.store.Path() }

// Permissions implements rpc.Backend: the permission keys of the catalogue.
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
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("%w: %v", ErrNotFound, err)
	case errors.Is(err, store.ErrExpired):
		return fmt.Errorf("%w: the output has expired and was pruned (outputs are kept for the configured retention)", ErrNotFound)
	case errors.Is(err, store.ErrBadCursor), errors.Is(err, store.ErrInvalid):
		return &ParamsError{Msg: err.Error()}
	}
	return err
}

// storeAdapter gives the pipeline the store.
type storeAdapter struct{ *store.Store }

func (a storeAdapter) NewOutput(sessionID, callID string) (OutputSink, error) {
	return a.Store.NewOutput(sessionID, callID)
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
