package project

import (
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/toolsd/toolsd/protocol"
	"github.com/toolsd/toolsd/registry"
	"github.com/toolsd/toolsd/watcher"
)

// SourceOptions configure a Source.
type SourceOptions struct {
	Options
	// OnChange is called after a reload changed the project tools or their diagnostics,
	// once per settled burst of file changes, with what changed and the catalogue's
	// diagnostics (every source's). It is called sequentially, from the watcher's goroutine, and must
	// not block for long (send the tools/changed notification and return).
	OnChange func(registry.Change, []protocol.Diagnostic)
	// Debounce is the watcher's debounce; zero means watcher.DefaultDebounce.
	Debounce time.Duration
	// Logger; nil means slog.Default().
	Logger *slog.Logger
}

// Source keeps the registry's "project" source in step with the definition files. It owns a
// watcher; Close stops it. Safe for concurrent use.
type Source struct {
	opts   SourceOptions
	reg    *registry.Registry
	loader *Loader
	w      *watcher.Watcher

	mu    sync.Mutex            // guards diags, serializes reloads
	diags []protocol.Diagnostic // the loader's, at the last reload
}

// NewSource starts watching the definition folders and loads the definitions into reg.
// The first load does not call OnChange (a change that races with it may).
func NewSource(reg *registry.Registry, opts SourceOptions) (*Source, error) {
	s := &Source{opts: opts, reg: reg, loader: NewLoader(opts.Options)}
	// Watch first, so that nothing written during the first load is missed.
	w, err := watcher.New(watcher.Options{
		Paths:    s.loader.Dirs(),
		Debounce: opts.Debounce,
		Logger:   opts.Logger,
		OnChange: func([]string) {
			ch, diags, changed := s.Reload()
			if changed && s.opts.OnChange != nil {
				s.opts.OnChange(ch, diags)
			}
		},
	})
	if err != nil {
		return nil, err
	}
	s.w = w
	s.Reload()
	return s, nil
}

// Reload reads the definitions again and replaces the registry's project source. It
// returns what changed, the catalogue's diagnostics (every source's), and whether the tools
// or this source's diagnostics changed. It does not call OnChange.
func (s *Source) Reload() (registry.Change, []protocol.Diagnostic, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tools, diags := s.loader.Load()
	ch := s.reg.SetSource(registry.SourceProject, tools, diags)
	// Only this source's own diagnostics count as a change; other sources report theirs.
	changed := !ch.Empty() || !slices.Equal(diags, s.diags)
	s.diags = diags
	return ch, s.reg.Catalog().Diagnostics(), changed
}

// Close stops watching; the tools stay in the registry.
func (s *Source) Close() error { return s.w.Close() }
