package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/toolsd/toolsd/internal/fsopen"
	"github.com/toolsd/toolsd/internal/jsonpos"
	"github.com/toolsd/toolsd/internal/sandbox"
	"github.com/toolsd/toolsd/permission"
	"github.com/toolsd/toolsd/protocol"
)

// Layer sources: each is also the name of the permission layer its rules go to (policy
// hands them over by it) and of the hook layer of its hooks.
const (
	SourceManaged = permission.LayerManaged
	SourceUser    = permission.LayerUser
	SourceEditor  = permission.LayerEditor
	SourceProject = permission.LayerProject
)

// Layer is the settings of one source, as written there.
type Layer struct {
	Source   string // SourceManaged, SourceUser, SourceEditor or SourceProject
	Path     string // the file; "" for the editor's
	Raw      json.RawMessage
	Settings Settings

	// sandboxBad: the file's sandbox settings had errors and were not taken (the last good
	// ones stay in force, or the defaults, which confine).
	sandboxBad bool
	// HooksAt says where each hook of Settings.Hooks is written, by point, in order.
	HooksAt map[string][]HookAt
}

// Layers are the layers that exist, in precedence order, and their merge.
type Layers struct {
	// Managed is the administrator's policy (ManagedDir): only its permission rules and
	// examples count; it is not part of List or Effective.
	Managed               *Layer
	User, Editor, Project *Layer // nil when absent
	// Effective is Defaults overlaid with every layer.
	Effective Settings
}

// List returns the layers of settings that exist, lowest precedence first (the managed
// policy is not one: see Layers.Managed).
func (l *Layers) List() []*Layer {
	var out []*Layer
	for _, x := range []*Layer{l.User, l.Editor, l.Project} {
		if x != nil {
			out = append(out, x)
		}
	}
	return out
}

// PermissionLayer is the raw permission rules of one layer, for permission.ParseConfig.
type PermissionLayer struct {
	// Source names the rules' origin as permission.Rule.Source does: "user", "editor",
	// "project", or "agent:<name>".
	Source string
	// Layer is the layer the rules came from (SourceUser, SourceEditor, SourceProject), so
	// that project rules can be left out of an untrusted workspace.
	Layer string
	Raw   json.RawMessage
}

// Permissions returns the permission rules that apply to agent, lowest precedence first:
// each layer's global rules, then each layer's rules for the agent ("" for none).
func (l *Layers) Permissions(agent string) []PermissionLayer {
	var out []PermissionLayer
	for _, x := range l.List() {
		if len(x.Settings.Permission) > 0 {
			out = append(out, PermissionLayer{Source: x.Source, Layer: x.Source, Raw: x.Settings.Permission})
		}
	}
	if agent == "" {
		return out
	}
	for _, x := range l.List() {
		if a, ok := x.Settings.Agents[agent]; ok && len(a.Permission) > 0 {
			out = append(out, PermissionLayer{Source: "agent:" + agent, Layer: x.Source, Raw: a.Permission})
		}
	}
	return out
}

// UserDir returns the user's toolsd folder: $XDG_CONFIG_HOME/toolsd, or ~/.config/toolsd.
func UserDir() string {
	if d := os.Getenv("XDG_CONFIG_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "toolsd")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".config", "toolsd")
}

// UserPath returns the user's config file ("" when there is no home folder).
func UserPath() string {
	if d := UserDir(); d != "" {
		return filepath.Join(d, "config.json")
	}
	return ""
}

// ProjectPath returns the workspace's config file.
func ProjectPath(workspace string) string {
	return filepath.Join(workspace, ".toolsd", "config.json")
}

// Load reads the managed policy, the user's config file, the editor's
// initializationOptions and the workspace's config file. A file that is absent is no
// layer; a file that is not valid JSON is no layer and a diagnostic; unknown fields are
// warnings, and fields of the wrong type are errors and ignored.
func Load(workspace string, initOptions json.RawMessage) (*Layers, []protocol.Diagnostic) {
	return load(paths{managed: ManagedPath(""), user: UserPath(), project: ProjectPath(workspace)}, initOptions, nil)
}

// LoadFrom is Load with the managed policy read from managedDir ("" for ManagedDir()) and
// without the editor's settings, for tools that read a workspace's settings while no
// editor is there (toolsd policy).
func LoadFrom(workspace, managedDir string) (*Layers, []protocol.Diagnostic) {
	return load(paths{managed: ManagedPath(managedDir), user: UserPath(), project: ProjectPath(workspace)}, nil, nil)
}

// paths are the settings files.
type paths struct{ managed, user, project string }

// load reads the layers; prev, if set, supplies the last good version of a file that is
// now broken.
func load(p paths, initOptions json.RawMessage, prev *Layers) (*Layers, []protocol.Diagnostic) {
	diags := []protocol.Diagnostic{}
	l := &Layers{}
	var prevManaged, prevUser, prevProject *Layer
	if prev != nil {
		prevManaged, prevUser, prevProject = prev.Managed, prev.User, prev.Project
	}
	var ds []protocol.Diagnostic
	l.Managed, ds = loadManaged(p.managed, prevManaged)
	diags = append(diags, ds...)
	l.User, ds = loadFile(SourceUser, p.user, prevUser)
	diags = append(diags, ds...)
	if len(initOptions) > 0 && string(initOptions) != "null" {
		l.Editor, ds = Parse(SourceEditor, "", initOptions)
		for i := range ds {
			ds[i].Path = "initializationOptions"
		}
		diags = append(diags, ds...)
	}
	l.Project, ds = loadFile(SourceProject, p.project, prevProject)
	diags = append(diags, ds...)
	l.Effective = Merge(l.List()...)
	diags = append(diags, projectLimits(l)...)
	return l, diags
}

// projectLimits reports the project layer's limits that Merge ignores: one it may not set,
// and one that would raise what the layers below it make the limit.
func projectLimits(l *Layers) []protocol.Diagnostic {
	if l.Project == nil {
		return nil
	}
	root, err := jsonpos.Parse(l.Project.Raw)
	if err != nil {
		return nil
	}
	limits := field(root, "limits")
	below := reflect.ValueOf(Merge(l.User, l.Editor).Limits)
	v := reflect.ValueOf(l.Project.Settings.Limits)
	var diags []protocol.Diagnostic
	for i := range v.NumField() {
		name, set := jsonName(v.Type().Field(i)), v.Field(i).Int()
		var msg string
		switch {
		case set == 0:
			continue
		case projectMayNotSet[name]:
			msg = fmt.Sprintf("limits.%s is ignored here: a workspace's .toolsd/config.json cannot set it, so that a repository cannot lock the editor out; set it in your user settings or the editor's", name)
		case set > below.Field(i).Int():
			msg = fmt.Sprintf("limits.%s %d is ignored: a workspace's .toolsd/config.json may only lower a limit, and the user's and the editor's settings make it %d; raise it there", name, set, below.Field(i).Int())
		default:
			continue
		}
		d := protocol.Diagnostic{Path: l.Project.Path, Message: msg, Severity: "warning"}
		if n := field(limits, name); n != nil {
			d.Line, d.Column = jsonpos.Position(l.Project.Raw, n.Offset)
		}
		diags = append(diags, d)
	}
	return diags
}

func loadFile(source, path string, prev *Layer) (*Layer, []protocol.Diagnostic) {
	if path == "" {
		return nil, nil
	}
	data, err := fsopen.ReadFile(path, MaxFileBytes)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return keep(prev, []protocol.Diagnostic{{Path: path, Message: fmt.Sprintf("cannot read the settings: %v; settings are a regular JSON file of at most %d bytes", err, MaxFileBytes), Severity: "error"}})
	}
	l, ds := Parse(source, path, data)
	if l == nil {
		return keep(prev, ds)
	}
	if l.sandboxBad && prev != nil {
		l.Settings.Sandbox = prev.Settings.Sandbox
		l.Settings.MCP = keepMCPSandbox(l.Settings.MCP, prev.Settings.MCP)
		for i := range ds {
			if ds[i].Severity == "error" && strings.Contains(ds[i].Message, "sandbox") {
				ds[i].Message += "; the previous sandbox settings of this file stay in effect until it is fixed"
			}
		}
	}
	return l, ds
}

// keepMCPSandbox gives each server of cur the sandbox settings it had in prev.
func keepMCPSandbox(cur, prev map[string]MCPServer) map[string]MCPServer {
	for name, m := range cur {
		m.Sandbox = nil
		if p, ok := prev[name]; ok {
			m.Sandbox = p.Sandbox
		}
		cur[name] = m
	}
	return cur
}

// keep returns the previous good layer of a file that is now broken, and says so.
func keep(prev *Layer, ds []protocol.Diagnostic) (*Layer, []protocol.Diagnostic) {
	if prev != nil {
		for i := range ds {
			if ds[i].Severity == "error" {
				ds[i].Message += "; the previous settings of this file stay in effect until it is fixed"
			}
		}
	}
	return prev, ds
}

// Parse reads one layer. It returns nil when data is not a JSON object.
func Parse(source, path string, data []byte) (*Layer, []protocol.Diagnostic) {
	var diags []protocol.Diagnostic
	at := func(off int, severity, format string, args ...any) {
		d := protocol.Diagnostic{Path: path, Message: fmt.Sprintf(format, args...), Severity: severity}
		if off >= 0 {
			d.Line, d.Column = jsonpos.Position(data, off)
		}
		diags = append(diags, d)
	}
	root, err := jsonpos.Parse(data)
	if err != nil {
		off := -1
		if se, ok := err.(*jsonpos.SyntaxError); ok {
			off = se.Offset
		}
		at(off, "error", "bad JSON: %v; fix the syntax of the settings", err)
		return nil, diags
	}
	if root.Kind != jsonpos.Object {
		at(root.Offset, "error", "the settings must be a JSON object, not %v", root.Kind)
		return nil, diags
	}
	sandboxErrors := 0
	check(root, reflect.TypeOf(Settings{}), "", func(off int, severity, format string, args ...any) {
		if msg := fmt.Sprintf(format, args...); strings.HasPrefix(msg, "sandbox") || strings.Contains(msg, " in sandbox") || strings.Contains(msg, ".sandbox") {
			// The sandbox's settings are held strictly: a typo could otherwise leave a
			// tool less confined than the person meant.
			severity = "error"
			sandboxErrors++
		}
		at(off, severity, "%s", fmt.Sprintf(format, args...))
	})
	l := &Layer{Source: source, Path: path, Raw: append(json.RawMessage{}, data...)}
	// Type errors were reported above; Unmarshal sets every field it can.
	_ = json.Unmarshal(data, &l.Settings)
	s := &l.Settings
	if s.LogLevel != "" && !slices.Contains([]string{"debug", "info", "warn", "error"}, s.LogLevel) {
		at(offset(field(root, "logLevel")), "error", `"logLevel" must be "debug", "info", "warn" or "error", not %q`, s.LogLevel)
		s.LogLevel = ""
	}
	limits := field(root, "limits")
	lim := reflect.ValueOf(&s.Limits).Elem()
	for i := range lim.NumField() {
		name, v := jsonName(lim.Type().Field(i)), lim.Field(i).Int()
		if v == 0 {
			continue
		}
		off := offset(field(limits, name))
		b := limitBounds[name]
		switch {
		case v < 0:
			at(off, "error", "limits.%s must not be negative (leave it out or 0 for the default)", name)
			lim.Field(i).SetInt(0)
		case v < b.Min:
			at(off, "warning", "limits.%s %d is below the least allowed, %d, which is used instead", name, v, b.Min)
			lim.Field(i).SetInt(b.Min)
		case v > b.Max:
			at(off, "warning", "limits.%s %d is above the greatest allowed, %d, which is used instead", name, v, b.Max)
			lim.Field(i).SetInt(b.Max)
		}
	}
	if p := s.Audit.OTLPProtocol; p != "" && p != "grpc" && p != "http/protobuf" {
		at(offset(field(field(root, "audit"), "otlpProtocol")), "error", `audit.otlpProtocol must be "grpc" or "http/protobuf", not %q`, p)
		s.Audit.OTLPProtocol = ""
	}
	if source == SourceProject && s.Audit != (Audit{}) {
		at(offset(field(root, "audit")), "warning", "audit is ignored here: a workspace's .toolsd/config.json cannot choose where the audit trail goes; set it in your user settings or the editor's")
	}
	if s.RetentionDays < 0 {
		at(offset(field(root, "retentionDays")), "error", "retentionDays must not be negative")
		s.RetentionDays = 0
	}
	for name, m := range s.MCP {
		if len(m.Command) == 0 {
			at(offset(field(field(root, "mcp"), name)), "error", "mcp.%s needs a \"command\" (an argv)", name)
		}
	}
	l.HooksAt = checkHooks(root, data, &s.Hooks, at)
	sb := field(root, "sandbox")
	bad := func(n *jsonpos.Node, format string, args ...any) {
		at(offset(n), "error", format, args...)
		sandboxErrors++
	}
	if s.Sandbox.Mode != "" && s.Sandbox.Mode != "auto" && s.Sandbox.Mode != "landlock" {
		bad(field(sb, "mode"), `sandbox.mode must be "auto" or "landlock", not %q`, s.Sandbox.Mode)
	}
	checkPaths := func(n *jsonpos.Node, where string, paths []string) {
		for i, p := range paths {
			if !sandboxPath(p) {
				var e *jsonpos.Node
				if n != nil && i < len(n.Elems) {
					e = n.Elems[i]
				}
				bad(e, "%s[%d] %q is not a path toolsd can confine: write an absolute path or one that starts with ~/", where, i, p)
			}
		}
	}
	checkNet := func(n *jsonpos.Node, where string, net *SandboxNetwork) {
		if net == nil {
			return
		}
		for i, a := range net.Allow {
			if err := sandbox.ParseAllow(a); err != nil {
				var e *jsonpos.Node
				if al := field(n, "allow"); al != nil && i < len(al.Elems) {
					e = al.Elems[i]
				}
				bad(e, "%s.allow[%d]: %v", where, i, err)
			}
		}
	}
	checkPaths(field(sb, "write"), "sandbox.write", s.Sandbox.Write)
	checkPaths(field(sb, "deny"), "sandbox.deny", s.Sandbox.Deny)
	checkNet(field(sb, "network"), "sandbox.network", s.Sandbox.Network)
	for name, t := range s.Sandbox.Tools {
		tn := field(field(sb, "tools"), name)
		checkPaths(field(tn, "write"), "sandbox.tools."+name+".write", t.Write)
		checkNet(field(tn, "network"), "sandbox.tools."+name+".network", t.Network)
	}
	for name, m := range s.MCP {
		if m.Sandbox == nil {
			continue
		}
		mn := field(field(field(root, "mcp"), name), "sandbox")
		checkPaths(field(mn, "write"), "mcp."+name+".sandbox.write", m.Sandbox.Write)
		checkNet(field(mn, "network"), "mcp."+name+".sandbox.network", m.Sandbox.Network)
	}
	if sandboxErrors > 0 {
		// Never a half-read sandbox section: none of it is taken (the defaults confine).
		l.sandboxBad = true
		s.Sandbox = Sandbox{}
		for name, m := range s.MCP {
			m.Sandbox = nil
			s.MCP[name] = m
		}
	} else {
		warnOff := func(n *jsonpos.Node, what string) {
			if n != nil && n.Kind == jsonpos.Bool && string(n.Raw) == "false" {
				at(n.Offset, "warning", "%s is false: its processes run outside the sandbox, with everything the daemon may do, and its commands ask as if there were no sandbox", what)
			}
		}
		warnOff(field(sb, "enabled"), "sandbox.enabled")
		for name := range s.Sandbox.Tools {
			warnOff(field(field(field(sb, "tools"), name), "enabled"), "sandbox.tools."+name+".enabled")
		}
		for name := range s.MCP {
			warnOff(field(field(field(field(root, "mcp"), name), "sandbox"), "enabled"), "mcp."+name+".sandbox.enabled")
		}
	}
	return l, diags
}

// sandboxPath reports whether p can name a folder of the sandbox's settings.
func sandboxPath(p string) bool {
	if strings.IndexByte(p, 0) >= 0 || p == "" {
		return false
	}
	if p == "~" || strings.HasPrefix(p, "~/") {
		return true
	}
	return filepath.IsAbs(p)
}

// field returns the member name of the object n, or nil when n is nil or has no such member:
// encoding/json matches names without regard to case, so a setting can be set under a name
// (its case changed) that the tree does not have.
func field(n *jsonpos.Node, name string) *jsonpos.Node {
	if n == nil {
		return nil
	}
	v, _ := n.Get(name)
	return v
}

// offset is the offset of n, or -1 (no position) for nil.
func offset(n *jsonpos.Node) int {
	if n == nil {
		return -1
	}
	return n.Offset
}

// check reports unknown fields (warnings) and values of the wrong type (errors) of n
// against the Go type t.
func check(n *jsonpos.Node, t reflect.Type, where string, at func(int, string, string, ...any)) {
	if n.Kind == jsonpos.Null {
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	wrong := func(want string) {
		at(n.Offset, "error", "%s must be %s, not %v; it is ignored", strings.TrimPrefix(where, "."), want, n.Kind)
	}
	if t == reflect.TypeOf(json.RawMessage{}) {
		// Permission rules and examples: their own parsers check them, with positions.
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != jsonpos.Object {
			wrong("an object")
			return
		}
		known := map[string]reflect.StructField{}
		var names []string
		for i := range t.NumField() {
			f := t.Field(i)
			known[jsonName(f)] = f
			names = append(names, jsonName(f))
		}
		for _, f := range n.Fields {
			sf, ok := known[f.Name]
			if !ok {
				at(f.KeyOffset, "warning", "unknown setting %q in %s; the settings here are %s", f.Name, orRoot(where), strings.Join(names, ", "))
				continue
			}
			check(f.Value, sf.Type, where+"."+f.Name, at)
		}
	case reflect.Map:
		if n.Kind != jsonpos.Object {
			wrong("an object")
			return
		}
		for _, f := range n.Fields {
			check(f.Value, t.Elem(), where+"."+f.Name, at)
		}
	case reflect.Slice:
		if n.Kind != jsonpos.Array {
			wrong("an array")
			return
		}
		for i, e := range n.Elems {
			check(e, t.Elem(), fmt.Sprintf("%s[%d]", where, i), at)
		}
	case reflect.String:
		if n.Kind != jsonpos.String {
			wrong("a string")
		}
	case reflect.Bool:
		if n.Kind != jsonpos.Bool {
			wrong("true or false")
		}
	case reflect.Int, reflect.Int64:
		if n.Kind != jsonpos.Number || strings.ContainsAny(string(n.Raw), ".eE") {
			wrong("a whole number")
		}
	}
}

func orRoot(where string) string {
	if where == "" {
		return "the settings"
	}
	return strings.TrimPrefix(where, ".")
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "" {
		return f.Name
	}
	return name
}
