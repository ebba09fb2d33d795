package registry

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/toolsd/toolsd/protocol"
)

// ValidID reports whether id can name a tool: 1 to 64 ASCII letters, digits, '_' and '-'
// (^[A-Za-z0-9_-]{1,64}$), within providers' 64-character limit: a loop, so that no start of
// the binary compiles that regular expression.
func ValidID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if !idByte(id[i]) {
			return false
		}
	}
	return true
}

// idByte reports whether c may stand in a tool id.
func idByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-'
}

// SanitizeID maps every character that ValidID refuses to '_' (the length is the caller's):
// how a tool of an MCP server gets its id, and how a hook finds the server's name in one.
func SanitizeID(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 128 && idByte(byte(r)) {
			return r
		}
		return '_'
	}, s)
}

// Entry is a tool of a Catalog with its compiled schema.
type Entry struct {
	*Tool
	// schema is the compiled parameters schema: compiled when the source is set, except a
	// built-in's, which is compiled on its first call (see SetSource).
	schema func() (*jsonschema.Schema, error)
}

// Validate checks untrusted arguments against the tool's schema. The error is a
// *ValidationError written for the model.
func (e *Entry) Validate(args []byte) error {
	s, err := e.schema()
	if err != nil {
		return err // a built-in's schema that does not compile: a bug, reported to the call
	}
	return validate(s, e.ID, args)
}

// Catalog is an immutable snapshot of every tool the Registry knows. Safe for concurrent use.
type Catalog struct {
	entries     map[string]*Entry // by id
	order       []string          // sorted ids
	diagnostics []protocol.Diagnostic
}

// Lookup finds a tool by id. A name that differs from a real id only in case is repaired,
// as OpenCode does: the repaired id is the entry's ID.
func (c *Catalog) Lookup(id string) (*Entry, bool) {
	if e, ok := c.entries[id]; ok {
		return e, true
	}
	for _, k := range c.order {
		if strings.EqualFold(k, id) {
			return c.entries[k], true
		}
	}
	return nil, false
}

// Entries returns the entries in id order.
func (c *Catalog) Entries() []*Entry {
	out := make([]*Entry, 0, len(c.order))
	for _, id := range c.order {
		out = append(out, c.entries[id])
	}
	return out
}

// Diagnostics returns the diagnostics of every source.
func (c *Catalog) Diagnostics() []protocol.Diagnostic {
	return append([]protocol.Diagnostic{}, c.diagnostics...)
}

// Closest returns up to n tool ids nearest to name, nearest first, among those allowed.
func (c *Catalog) Closest(name string, n int, allowed func(*Entry) bool) []string {
	type cand struct {
		id string
		d  int
	}
	var cs []cand
	lname := strings.ToLower(name)
	for _, id := range c.order {
		if allowed != nil && !allowed(c.entries[id]) {
			continue
		}
		lid := strings.ToLower(id)
		d := EditDistance(lname, lid)
		if strings.Contains(lid, lname) || strings.Contains(lname, lid) {
			d = min(d, 1)
		}
		cs = append(cs, cand{id, d})
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].d < cs[j].d })
	var out []string
	for _, c := range cs {
		if len(out) == n || c.d > max(3, len(name)/2) {
			break
		}
		out = append(out, c.id)
	}
	return out
}

// Change is the difference between two catalogs, as tools/changed reports it.
type Change struct {
	Added, Removed, Changed []string
}

// Empty reports whether nothing changed.
func (ch Change) Empty() bool { return len(ch.Added)+len(ch.Removed)+len(ch.Changed) == 0 }

// Registry holds the tools of every source. Safe for concurrent use; sources replace their
// whole snapshot at once, so a reader never sees half of a reload.
type Registry struct {
	mu      sync.Mutex // guards sources and current
	sources map[string]sourceSnapshot
	current *Catalog
}

type sourceSnapshot struct {
	tools       []*Entry
	diagnostics []protocol.Diagnostic
}

// New returns an empty registry.
func New() *Registry {
	return &Registry{sources: map[string]sourceSnapshot{}, current: &Catalog{entries: map[string]*Entry{}}}
}

// Catalog returns the current snapshot.
func (r *Registry) Catalog() *Catalog {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.current
}

// SetSource replaces the tools and diagnostics of one source (keyed by name, e.g. "builtin",
// "project", "mcp:github") and returns what changed in the catalogue. Tools whose schema does
// not compile, whose id is malformed, or that clash with a tool of another source are left
// out with a diagnostic; the rest load. The built-ins' schemas are compiled on first use.
// The first source to claim an id keeps it, except that the built-ins always win.
func (r *Registry) SetSource(name string, tools []*Tool, diags []protocol.Diagnostic) Change {
	snap := sourceSnapshot{diagnostics: append([]protocol.Diagnostic{}, diags...)}
	for _, t := range tools {
		if !ValidID(t.ID) {
			snap.diagnostics = append(snap.diagnostics, diag(t, fmt.Sprintf("tool name %q is not valid: use 1 to 64 letters, digits, '_' or '-'", t.ID)))
			continue
		}
		if name == SourceBuiltin {
			// The built-ins' schemas are the daemon's own (their tests compile each): they
			// are compiled on first use rather than in every workspace's open, of whose work
			// in a fresh process they would be a good part.
			snap.tools = append(snap.tools, &Entry{Tool: t, schema: sync.OnceValues(func() (*jsonschema.Schema, error) {
				return CompileSchema(t.ID, t.Parameters)
			})})
			continue
		}
		c, err := CompileSchema(t.ID, t.Parameters)
		if err != nil {
			snap.diagnostics = append(snap.diagnostics, diag(t, err.Error()))
			continue
		}
		snap.tools = append(snap.tools, &Entry{Tool: t, schema: func() (*jsonschema.Schema, error) { return c, nil }})
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	if len(tools) == 0 && len(diags) == 0 {
		delete(r.sources, name)
	} else {
		r.sources[name] = snap
	}
	old := r.current
	r.current = r.build()
	return diff(old, r.current)
}

// build merges the sources; r.mu is held.
func (r *Registry) build() *Catalog {
	c := &Catalog{entries: map[string]*Entry{}}
	names := make([]string, 0, len(r.sources))
	for n := range r.sources {
		names = append(names, n)
	}
	// builtin first, then project, then MCP servers by name: earlier claims win.
	rank := func(n string) int {
		switch {
		case n == SourceBuiltin:
			return 0
		case n == SourceProject:
			return 1
		}
		return 2
	}
	sort.Slice(names, func(i, j int) bool {
		if rank(names[i]) != rank(names[j]) {
			return rank(names[i]) < rank(names[j])
		}
		return names[i] < names[j]
	})
	for _, n := range names {
		s := r.sources[n]
		c.diagnostics = append(c.diagnostics, s.diagnostics...)
		for _, e := range s.tools {
			if prev, dup := c.entries[e.ID]; dup {
				c.diagnostics = append(c.diagnostics, diag(e.Tool, fmt.Sprintf("tool %q is already defined by %s; rename this one", e.ID, describeSource(prev.Tool))))
				continue
			}
			c.entries[e.ID] = e
			c.order = append(c.order, e.ID)
		}
	}
	sort.Strings(c.order)
	if c.diagnostics == nil {
		c.diagnostics = []protocol.Diagnostic{}
	}
	return c
}

func describeSource(t *Tool) string {
	switch {
	case t.Source == SourceBuiltin:
		return "a built-in tool"
	case t.Path != "":
		return t.Path
	}
	return t.Source
}

func diag(t *Tool, msg string) protocol.Diagnostic {
	return protocol.Diagnostic{Path: t.Path, Message: msg, Severity: "error"}
}

func diff(old, cur *Catalog) Change {
	ch := Change{Added: []string{}, Removed: []string{}, Changed: []string{}}
	for _, id := range cur.order {
		o, ok := old.entries[id]
		switch {
		case !ok:
			ch.Added = append(ch.Added, id)
		case !sameTool(o.Tool, cur.entries[id].Tool):
			ch.Changed = append(ch.Changed, id)
		}
	}
	for _, id := range old.order {
		if _, ok := cur.entries[id]; !ok {
			ch.Removed = append(ch.Removed, id)
		}
	}
	return ch
}

func sameTool(a, b *Tool) bool {
	if a == b {
		return true
	}
	if a.Fingerprint != "" || b.Fingerprint != "" {
		return a.Fingerprint == b.Fingerprint
	}
	return a.Description == b.Description && bytes.Equal(a.Parameters, b.Parameters) && a.Source == b.Source
}

// EditDistance is the Levenshtein distance between a and b, in runes: how many insertions,
// deletions and substitutions turn one into the other.
func EditDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
