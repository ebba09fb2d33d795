package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"
	"sync"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/toolsd/toolsd/registry"
)

const listDescription = `Lists the files and folders below a folder as a tree.

Usage:
- path is the folder to list: relative to the workspace root, or absolute. Default: the workspace root.
- Folders that are rarely worth reading are left out: %[2]s. Files ignored by .gitignore or .ignore are left out too.
- ignore adds glob patterns to leave out ("*.log", "testdata/**"); a pattern without a slash matches names at any depth.
- At most %[1]d entries are shown; list a subfolder to see more. To find files by pattern, glob is better.`

// defaultListIgnores are folder names list does not enter.
var defaultListIgnores = []string{
	".git", "node_modules", "dist", "build", "target", "vendor", "__pycache__", ".venv", "venv",
	".idea", ".vscode", "coverage", ".next", ".nuxt", ".cache", ".pytest_cache", ".mypy_cache",
	".tox", ".gradle", "bin", "obj", ".terraform", ".zig-cache", "zig-out",
}

func listTool(o *Options) *registry.Tool {
	s := schema{
		props: []prop{
			{"path", map[string]any{"type": "string", "description": "The folder to list: relative to the workspace root, or absolute (default: the workspace root)."}},
			{"ignore", map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "Glob patterns of files and folders to leave out."}},
		},
	}
	return &registry.Tool{
		ID:          "list",
		Description: fmt.Sprintf(listDescription, o.ListLimit, strings.Join(defaultListIgnores, ", ")),
		Parameters:  s.raw(),
		Permission:  "list",
		ReadOnly:    true,
		Execute: func(ctx context.Context, call *registry.Call, args json.RawMessage) (*registry.Result, error) {
			var a struct {
				Path   *string  `json:"path"`
				Ignore []string `json:"ignore"`
			}
			if err := decode(args, &a); err != nil {
				return nil, err
			}
			return runList(ctx, o, call, deref(a.Path), a.Ignore)
		},
	}
}

func runList(ctx context.Context, o *Options, call *registry.Call, p string, ignores []string) (*registry.Result, error) {
	for _, g := range ignores {
		if !doublestar.ValidatePattern(g) {
			return nil, fmt.Errorf("ignore pattern %q is not a valid glob: check its brackets and braces", g)
		}
	}
	if p == "" {
		p = "."
	}
	t, err := resolvePath(call.Workspace, "", "path", p)
	if err != nil {
		return nil, err
	}
	if !t.Exists() {
		return nil, notFoundError(call.Workspace, t)
	}
	if !t.Info.IsDir() {
		return nil, fmt.Errorf("path %s is a file, not a folder: use read to see a file", t.Display())
	}
	if err := askExternal(ctx, call, t, true); err != nil {
		return nil, err
	}
	if err := call.Ask(ctx, registry.AskRequest{Permission: "list", Patterns: []string{t.Pattern()}, Always: exactly(t.Pattern()), Metadata: map[string]any{"path": t.Display()}}); err != nil {
		return nil, err
	}
	skipDirs := map[string]bool{}
	for _, d := range defaultListIgnores {
		skipDirs[d] = true
	}
	skip := func(rel string, isDir bool) bool {
		base := path.Base(rel)
		for _, g := range ignores {
			g = strings.TrimSuffix(g, "/")
			if strings.Contains(g, "/") {
				if doublestar.MatchUnvalidated(g, rel) || doublestar.MatchUnvalidated(strings.TrimSuffix(g, "/**"), rel) {
					return true
				}
			} else if doublestar.MatchUnvalidated(g, base) {
				return true
			}
		}
		return false
	}
	const hardCap = 200000
	var mu sync.Mutex // guards entries
	var entries []walkEntry
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	err = walk(wctx, walkOptions{Root: t.Abs, Workspace: call.Workspace, SkipDirs: skipDirs, Skip: skip, Dirs: true}, func(e walkEntry) {
		mu.Lock()
		entries = append(entries, e)
		if len(entries) >= hardCap {
			cancel()
		}
		mu.Unlock()
	})
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil && wctx.Err() == nil:
		return nil, fmt.Errorf("cannot list %s: %w", t.Display(), err)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Rel < entries[j].Rel })
	shown := entries[:min(len(entries), o.ListLimit)]
	var b strings.Builder
	fmt.Fprintf(&b, "%s/\n", strings.TrimSuffix(t.Display(), "/"))
	writeTree(&b, shown)
	meta := map[string]any{"path": t.Display(), "count": len(entries), "truncated": len(shown) < len(entries)}
	if len(shown) < len(entries) {
		more := fmt.Sprint(len(entries))
		if len(entries) >= hardCap {
			more = "more than " + more
		}
		fmt.Fprintf(&b, "\n(Showing %d of %s entries. List a subfolder, or pass ignore patterns, to see the rest.)", len(shown), more)
	}
	return &registry.Result{Title: t.Display(), Output: strings.TrimSuffix(b.String(), "\n"), Metadata: meta}, nil
}

// writeTree writes entries (sorted by path) as an indented tree: in each folder, its
// folders first, then its files.
func writeTree(b *strings.Builder, entries []walkEntry) {
	type node struct {
		dirs  []string
		files []string
	}
	kids := map[string]*node{"": {}}
	get := func(dir string) *node {
		n, ok := kids[dir]
		if !ok {
			n = &node{}
			kids[dir] = n
		}
		return n
	}
	for _, e := range entries {
		parent := path.Dir(e.Rel)
		if parent == "." {
			parent = ""
		}
		if e.Dir {
			get(parent).dirs = append(get(parent).dirs, e.Rel)
			get(e.Rel)
		} else {
			get(parent).files = append(get(parent).files, e.Rel)
		}
	}
	var rec func(dir string, depth int)
	rec = func(dir string, depth int) {
		n := kids[dir]
		if n == nil {
			return
		}
		indent := strings.Repeat("  ", depth+1)
		for _, d := range n.dirs {
			fmt.Fprintf(b, "%s%s/\n", indent, path.Base(d))
			rec(d, depth+1)
		}
		for _, f := range n.files {
			fmt.Fprintf(b, "%s%s\n", indent, path.Base(f))
		}
	}
	rec("", 0)
}
