package config

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/toolsd/toolsd/protocol"
	"github.com/toolsd/toolsd/watcher"
)

// SourceOptions configure a Source.
type SourceOptions struct {
	// Workspace is the workspace folder; its .toolsd/config.json is the project layer.
	Workspace string
	// InitOptions are the editor's initializationOptions (the editor layer).
	InitOptions json.RawMessage
	// UserPath is the user's config file; "" means UserPath().
	UserPath string
	// ManagedDir is the folder of the administrator's policy; "" means ManagedDir(). It is
	// for tests: nothing a user controls (no flag, no environment variable) may set it, or
	// the tier could be removed by anyone it binds.
	ManagedDir string
	// OnChange is called after a reload changed the layers or their diagnostics, once per
	// settled burst of file changes. It is called sequentially from the watcher's goroutine
	// and must not block for long.
	OnChange func(*Layers, []protocol.Diagnostic)
	// Debounce is the watcher's debounce; zero means watcher.DefaultDebounce.
	Debounce time.Duration
	// Logger; nil means slog.Default().
	Logger *slog.Logger
}

// Source keeps the settings in step with the config files. A file that becomes invalid
// JSON keeps its last good settings (with a diagnostic), so that half-typed rules never
// drop a deny. It owns a watcher; Close stops it. Safe for concurrent use.
type Source struct {
	opts  SourceOptions
	paths paths
	w     *watcher.Watcher

	reloadMu sync.Mutex // serializes reloads and their OnChange calls

	mu     sync.Mutex // guards layers, diags and editor
	layers *Layers
	diags  []protocol.Diagnostic
	editor json.RawMessage
}

// NewSource loads the settings and starts watching the files.
func NewSource(opts SourceOptions) (*Source, error) {
	s := &Source{opts: opts, paths: paths{managed: ManagedPath(opts.ManagedDir), user: opts.UserPath, project: ProjectPath(opts.Workspace)}, editor: opts.InitOptions}
	if s.paths.user == "" {
		s.paths.user = UserPath()
	}
	watch := []string{s.paths.project, s.paths.managed}
	if s.paths.user != "" {
		watch = append(watch, s.paths.user)
	}
	s.layers, s.diags = load(s.paths, s.editor, nil)
	w, err := watcher.New(watcher.Options{
		Paths:    watch,
		Debounce: opts.Debounce,
		Logger:   opts.Logger,
		OnChange: func([]string) { s.reload(nil) },
	})
	if err != nil {
		return nil, err
	}
	s.w = w
	return s, nil
}

// Layers returns the current layers; they must not be modified.
func (s *Source) Layers() *Layers {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.layers
}

// Diagnostics returns the current diagnostics of the config files.
func (s *Source) Diagnostics() []protocol.Diagnostic {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.diags)
}

// SetEditor replaces the editor layer (new initializationOptions) and reloads, calling
// OnChange if something changed.
func (s *Source) SetEditor(raw json.RawMessage) {
	s.reload(&raw)
}

func (s *Source) reload(editor *json.RawMessage) {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	// The files are read without s.mu: a request reading the settings meanwhile gets the
	// last ones rather than waiting on the disk. reloadMu keeps the reloads in order.
	s.mu.Lock()
	if editor != nil {
		s.editor = *editor
	}
	prev, ed := s.layers, s.editor
	s.mu.Unlock()
	layers, diags := load(s.paths, ed, prev)
	s.mu.Lock()
	changed := !sameLayers(layers, s.layers) || !slices.Equal(diags, s.diags)
	s.layers, s.diags = layers, diags
	s.mu.Unlock()
	if changed && s.opts.OnChange != nil {
		s.opts.OnChange(layers, slices.Clone(diags))
	}
}

func sameLayers(a, b *Layers) bool {
	la, lb := append(a.List(), a.Managed), append(b.List(), b.Managed)
	return slices.EqualFunc(la, lb, func(x, y *Layer) bool {
		if x == nil || y == nil {
			return x == y
		}
		return x.Source == y.Source && bytes.Equal(x.Raw, y.Raw)
	})
}

// Close stops watching.
func (s *Source) Close() error { return s.w.Close() }
