package builtin

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/toolsd/toolsd/internal/posix"

	"github.com/toolsd/toolsd/internal/fswalk"
	"github.com/toolsd/toolsd/registry"
)

const globDescription = `Finds files by name with a glob pattern, newest first.

Usage:
- pattern is a glob: * matches within a name, ** any number of folders, {a,b} alternatives, [abc] a character class. A pattern without a slash matches file names at any depth ("*.go" finds every Go file); one with a slash matches paths below path ("src/**/*.ts", "cmd/*/main.go").
- path is the folder to search: relative to the workspace root, or absolute. Default: the workspace root.
- Files ignored by .gitignore or .ignore, the .git folder and symbolic links are skipped. Only files are listed, not folders (use list for a tree).
- At most %[1]d paths are returned, most recently modified first; the footer says when the list was cut: then narrow the pattern or path.
- To search file contents, use grep.`

func globTool(o *Options) *registry.Tool {
	s := schema{
		props: []prop{
			{"pattern", map[string]any{"type": "string", "minLength": 1, "description": `The glob to match file paths against ("*.go", "src/**/*.{ts,tsx}").`}},
			{"path", map[string]any{"type": "string", "description": "The folder to search in: relative to the workspace root, or absolute (default: the workspace root)."}},
		},
		required: []string{"pattern"},
	}
	return &registry.Tool{
		ID:          "glob",
		Description: fmt.Sprintf(globDescription, o.SearchLimit),
		Parameters:  s.raw(),
		Permission:  "glob",
		ReadOnly:    true,
		Execute: func(ctx context.Context, call *registry.Call, args json.RawMessage) (*registry.Result, error) {
			var a struct {
				Pattern string  `json:"pattern"`
				Path    *string `json:"path"`
			}
			if err := decode(args, &a); err != nil {
				return nil, err
			}
			return runGlob(ctx, o, call, a.Pattern, deref(a.Path))
		},
	}
}

// globMatch is a file glob found.
type globMatch struct {
	rel     string // relative to the folder searched, slash-separated
	modTime int64  // Unix nanoseconds
}

// globFiles walks root and returns the files matching pattern, newest first (then by path):
// with anyDepth the pattern matches file names at any depth, otherwise paths relative to
// root.
func globFiles(ctx context.Context, ws, root, pattern string, anyDepth bool) ([]globMatch, error) {
	match := globMatcher(pattern)
	var mu sync.Mutex // guards found
	var found []globMatch
	err := walk(ctx, walkOptions{Root: root, Workspace: ws}, func(e walkEntry) {
		if anyDepth && !match(e.Name()) || !anyDepth && !match(e.Rel) {
			return
		}
		var mt int64
		st := statPool.Get().(*posix.Stat_t)
		if e.Lstat(st) == nil {
			mt = st.Mtim.Nano()
		}
		statPool.Put(st)
		mu.Lock()
		found = append(found, globMatch{e.Rel, mt})
		mu.Unlock()
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(found, func(a, b globMatch) int {
		if c := cmp.Compare(b.modTime, a.modTime); c != 0 {
			return c
		}
		return strings.Compare(a.rel, b.rel)
	})
	return found, nil
}

// statPool holds the stat buffers of glob's and grep's walks: one allocated per file
// passed to a system call is a third of what a walk of a large tree allocates.
var statPool = sync.Pool{New: func() any { return new(posix.Stat_t) }}

// globMatcher returns a test of a file name or slash-separated path against a valid
// glob: for "*" and plain text ("*.go"), a compare of the end (where "*" holds no slash);
// otherwise doublestar, on what holds the glob's literal (fswalk.GlobLiteral).
func globMatcher(glob string) func(name string) bool {
	if suffix, ok := strings.CutPrefix(glob, "*"); ok && !strings.ContainsAny(suffix, "*?[]{}\\/") &&
		utf8.ValidString(suffix) && !strings.ContainsRune(suffix, utf8.RuneError) {
		return func(name string) bool {
			return strings.HasSuffix(name, suffix) && strings.IndexByte(name[:len(name)-len(suffix)], '/') < 0
		}
	}
	need := fswalk.GlobLiteral(glob)
	return func(name string) bool { return strings.Contains(name, need) && doublestar.MatchUnvalidated(glob, name) }
}

func runGlob(ctx context.Context, o *Options, call *registry.Call, pattern, path string) (*registry.Result, error) {
	if err := checkPathText("pattern", pattern); err != nil {
		return nil, err
	}
	pattern = strings.TrimPrefix(filepath.ToSlash(pattern), "./")
	orig := pattern
	if !doublestar.ValidatePattern(pattern) {
		return nil, fmt.Errorf("pattern %q is not a valid glob: check its brackets and braces (\"*.go\", \"src/**/*.{ts,tsx}\")", pattern)
	}
	anyDepth := !strings.Contains(pattern, "/")
	// A static folder at the start of the pattern (or an absolute pattern) narrows the walk.
	dir := path
	if b, rest := doublestar.SplitPattern(pattern); b != "." && b != "" {
		if filepath.IsAbs(b) || dir == "" {
			dir = b
		} else {
			dir = filepath.Join(dir, b)
		}
		pattern = rest
	}
	if dir == "" {
		dir = "."
	}
	t, err := resolvePath(call.Workspace, "", "path", dir)
	if err != nil {
		return nil, err
	}
	if !t.Exists() {
		return nil, notFoundError(call.Workspace, t)
	}
	if !t.Info.IsDir() {
		return nil, fmt.Errorf("path %s is a file, not a folder: give the folder to search in", t.Display())
	}
	if err := askExternal(ctx, call, t, true); err != nil {
		return nil, err
	}
	meta := map[string]any{"pattern": orig, "path": t.Display()}
	if err := call.Ask(ctx, registry.AskRequest{Permission: "glob", Patterns: []string{orig}, Always: exactly(orig), Metadata: meta}); err != nil {
		return nil, err
	}
	found, err := globFiles(ctx, call.Workspace, t.Abs, pattern, anyDepth)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, fmt.Errorf("cannot search %s: %w", t.Display(), err)
	}
	meta["count"] = len(found)
	meta["truncated"] = len(found) > o.SearchLimit
	if len(found) == 0 {
		return &registry.Result{Title: orig, Output: "No files found.", Metadata: meta}, nil
	}
	var b strings.Builder
	for _, f := range found[:min(len(found), o.SearchLimit)] {
		b.WriteString(relOrAbs(call.Workspace, t.Abs+string(filepath.Separator)+filepath.FromSlash(f.rel)))
		b.WriteByte('\n')
	}
	if len(found) > o.SearchLimit {
		fmt.Fprintf(&b, "\n(Results are truncated: showing the %d most recently modified of %d files. Use a more specific pattern or path.)", o.SearchLimit, len(found))
	}
	return &registry.Result{Title: orig, Output: strings.TrimSuffix(b.String(), "\n"), Metadata: meta}, nil
}
