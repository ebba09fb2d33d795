package project

import (
	"errors"
	"fmt"
	"github.com/toolsd/toolsd/internal/sandbox"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/toolsd/toolsd/internal/fsopen"
	"github.com/toolsd/toolsd/protocol"
	"github.com/toolsd/toolsd/registry"
)

// Options say where definitions live and how their tools run.
type Options struct {
	// Workspace is the absolute workspace folder: its .toolsd/tool and .toolsd/tools
	// folders hold definitions, tools run in it (or in their cwd under it), and it is
	// TOOLSD_WORKSPACE.
	Workspace string
	// UserDir is the user's toolsd config folder ($XDG_CONFIG_HOME/toolsd, see
	// config.UserDir); its tool and tools folders hold the user's definitions. Empty means
	// none.
	UserDir string
	// Builtins are the names a project tool may not take: the built-in tools' ids and any
	// other reserved permission keys.
	Builtins []string
	// Env is the environment tools start with, before their own env; nil means the
	// daemon's (os.Environ at call time).
	Env []string
	// Grace is how long a cancelled or timed-out tool's process group has between SIGTERM
	// and SIGKILL; zero means proc.DefaultGrace.
	Grace time.Duration
	// Sandbox, if set, says how a call of the tool named runs confined.
	Sandbox func(tool string) *sandbox.Confinement
}

// Dirs returns the folders that hold definitions, highest precedence first: the
// workspace's .toolsd/tool and .toolsd/tools, then the user's tool and tools.
func (o *Options) Dirs() []string {
	var out []string
	if o.Workspace != "" {
		out = append(out, filepath.Join(o.Workspace, ".toolsd", "tool"), filepath.Join(o.Workspace, ".toolsd", "tools"))
	}
	if o.UserDir != "" {
		out = append(out, filepath.Join(o.UserDir, "tool"), filepath.Join(o.UserDir, "tools"))
	}
	return out
}

// Loader reads every definition from its folders. Safe for concurrent use.
type Loader struct {
	opts     Options
	builtins map[string]bool
}

// NewLoader returns a loader.
func NewLoader(opts Options) *Loader {
	l := &Loader{opts: opts, builtins: map[string]bool{}}
	for _, b := range opts.Builtins {
		l.builtins[strings.ToLower(b)] = true
	}
	return l
}

// Dirs returns the folders the loader reads, highest precedence first.
func (l *Loader) Dirs() []string { return l.opts.Dirs() }

// Load reads every definition and returns the tools that loaded, sorted by name, and
// diagnostics for the files that did not (and warnings for those that did). A tool defined
// in the workspace hides the user's tool of the same name; two definitions of one name in
// the same place (tool/ and tools/) are a clash, and the one in tool/ wins.
func (l *Loader) Load() ([]*registry.Tool, []protocol.Diagnostic) {
	var tools []*registry.Tool
	diags := []protocol.Diagnostic{}
	byName := map[string]string{} // name -> path of the definition that won
	dirs := l.Dirs()
	for i, dir := range dirs {
		entries, err := fsopen.ReadDir(dir, maxFolderEntries)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				diags = append(diags, protocol.Diagnostic{Path: dir, Message: fmt.Sprintf("cannot read the tool folder: %v", err), Severity: "error"})
			}
			continue
		}
		for _, e := range entries {
			file := e.Name()
			if !strings.HasSuffix(file, ".json") || strings.HasPrefix(file, ".") {
				continue // helper scripts, editors' temporary files
			}
			path := filepath.Join(dir, file)
			name := strings.TrimSuffix(file, ".json")
			errorf := func(format string, args ...any) {
				diags = append(diags, protocol.Diagnostic{Path: path, Message: fmt.Sprintf(format, args...), Severity: "error"})
			}
			if !registry.ValidID(name) {
				errorf("the file name %q does not make a valid tool name: use 1 to 64 letters, digits, '_' or '-', then .json", file)
				continue
			}
			if l.builtins[strings.ToLower(name)] {
				errorf("tool %q would shadow the built-in tool of that name; rename the file", name)
				continue
			}
			if prev, ok := byName[strings.ToLower(name)]; ok {
				// Same root (tool/ and tools/): a clash. A user tool under a workspace one:
				// hidden on purpose.
				if sameRoot(dirs, i, prev) {
					errorf("tool %q is also defined in %s, which wins; remove one of them", name, prev)
				}
				continue
			}
			data, err := fsopen.ReadFile(path, maxFileSize)
			if err != nil {
				errorf("cannot read the definition: %v; a definition is a regular JSON file of at most %d bytes", err, maxFileSize)
				continue
			}
			byName[strings.ToLower(name)] = path
			def, ds := ParseDefinition(name, path, data)
			diags = append(diags, ds...)
			if def != nil {
				tools = append(tools, l.tool(def))
			}
		}
	}
	sort.Slice(tools, func(i, j int) bool { return tools[i].ID < tools[j].ID })
	sortDiagnostics(diags)
	return tools, diags
}

// sameRoot reports whether dirs[i] and the folder of path belong to the same root (the
// workspace's .toolsd, or the user's folder).
func sameRoot(dirs []string, i int, path string) bool {
	return filepath.Dir(dirs[i]) == filepath.Dir(filepath.Dir(path))
}

// tool makes the registry tool of a definition.
func (l *Loader) tool(d *Definition) *registry.Tool {
	r := &runner{def: d, opts: l.opts}
	return &registry.Tool{
		ID:          d.Name,
		Description: d.Description,
		Parameters:  d.Parameters,
		Permission:  d.Name,
		Source:      registry.SourceProject,
		Annotations: d.Annotations,
		Path:        d.Path,
		Fingerprint: d.Fingerprint,
		Execute:     r.execute,
	}
}
