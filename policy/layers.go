package policy

import (
	"fmt"
	"sort"

	"github.com/toolsd/toolsd/config"
	"github.com/toolsd/toolsd/internal/jsonpos"
	"github.com/toolsd/toolsd/permission"
	"github.com/toolsd/toolsd/protocol"
)

// Rules are the permission engine's layers assembled from the config layers.
type Rules struct {
	// Layers maps an engine layer ("managed", "user", "editor", "project", "agent:<name>",
	// "project-agent:<name>") to its rules, lowest precedence first.
	Layers map[string]permission.Ruleset
	// Agents are the agents any config layer names.
	Agents []string
	// parsed keeps each config layer's rules by scope, so that a file whose rules turn
	// unreadable keeps its last good ones (see Assemble).
	parsed map[scopeKey]permission.Ruleset
}

type scopeKey struct{ source, agent string }

// Assemble reads the permission rules of every config layer — "permission" in OpenCode's
// first syntax or "permissions" in its second, globally and per agent — into the engine's
// layers. A value that cannot be read (or a file that uses both syntaxes in one place) is a
// positioned diagnostic, and that file's rules there stay what they were in prev (nil: no
// rules), so that a half-typed edit never drops a deny.
func Assemble(l *config.Layers, prev *Rules) (*Rules, []protocol.Diagnostic) {
	r := &Rules{Layers: map[string]permission.Ruleset{}, parsed: map[scopeKey]permission.Ruleset{}}
	var diags []protocol.Diagnostic
	agents := map[string]bool{}
	all := append([]*config.Layer{l.Managed}, l.List()...)
	for _, x := range all {
		if x == nil {
			continue
		}
		for name := range x.Settings.Agents {
			agents[name] = true
		}
	}
	root := func(x *config.Layer) *jsonpos.Node {
		n, err := jsonpos.Parse(x.Raw)
		if err != nil {
			return nil
		}
		return n
	}
	for _, x := range all {
		if x == nil {
			continue
		}
		n := root(x)
		if n == nil {
			continue
		}
		file := x.Path
		if x.Source == config.SourceEditor {
			file = "initializationOptions"
		}
		o := permission.Origin{Source: x.Source, File: file, Doc: x.Raw}
		rs, ds := parseScope(n, "", o)
		diags = append(diags, ds...)
		key := scopeKey{x.Source, ""}
		if ds != nil && hasError(ds) && prev != nil {
			rs = prev.parsed[key]
		}
		r.parsed[key] = rs
		r.Layers[x.Source] = append(r.Layers[x.Source], rs...)

		agentsNode, _ := n.Get("agents")
		if agentsNode == nil || agentsNode.Kind != jsonpos.Object || x.Source == config.SourceManaged {
			continue
		}
		for _, f := range agentsNode.Fields {
			if f.Value.Kind != jsonpos.Object {
				continue
			}
			layer := permission.LayerAgentPrefix + f.Name
			if x.Source == config.SourceProject {
				layer = permission.LayerProjectAgentPrefix + f.Name
			}
			ao := o
			ao.Source = layer
			rs, ds := parseScope(f.Value, "agents."+f.Name+".", ao)
			diags = append(diags, ds...)
			key := scopeKey{x.Source, f.Name}
			if hasError(ds) && prev != nil {
				rs = prev.parsed[key]
			}
			r.parsed[key] = rs
			r.Layers[layer] = append(r.Layers[layer], rs...)
		}
	}
	for name := range agents {
		r.Agents = append(r.Agents, name)
	}
	sort.Strings(r.Agents)
	return r, diags
}

func hasError(ds []protocol.Diagnostic) bool {
	for _, d := range ds {
		if d.Severity == "error" {
			return true
		}
	}
	return false
}

// parseScope reads "permission" or "permissions" of the object n (the settings or an
// agent); where names n for messages ("" or "agents.<name>.").
func parseScope(n *jsonpos.Node, where string, o permission.Origin) (permission.Ruleset, []protocol.Diagnostic) {
	v1, _ := n.Get("permission")
	v2, _ := n.Get("permissions")
	diag := func(off int, msg string) []protocol.Diagnostic {
		d := protocol.Diagnostic{Path: o.File, Message: msg, Severity: "error"}
		d.Line, d.Column = jsonpos.Position(o.Doc, off)
		return []protocol.Diagnostic{d}
	}
	if v1 != nil && v2 != nil && v1.Kind != jsonpos.Null && v2.Kind != jsonpos.Null {
		return nil, diag(v2.Offset, fmt.Sprintf("%spermission and %spermissions are both set: %q is OpenCode's first rule syntax (an object of keys), %q its second (an ordered array of {action, resource, effect}), and toolsd will not guess how the two orders interleave. "+
			"Keep one: move the rules of one into the other. Until then the rules here are those of the last version of this file that had one syntax (none if there was none)", where, where, "permission", "permissions"))
	}
	var rs permission.Ruleset
	var err error
	switch {
	case v1 != nil:
		rs, err = permission.ParseV1(v1, o)
	case v2 != nil:
		rs, err = permission.ParseV2(v2, o)
	default:
		return nil, nil
	}
	if err != nil {
		ce, _ := err.(*permission.ConfigError)
		d := protocol.Diagnostic{Path: o.File, Message: "permission rules: " + err.Error() + "; the rules of this file stay as they were until it is fixed", Severity: "error"}
		if ce != nil {
			d.Line, d.Column = ce.Line, ce.Column
			if where != "" {
				d.Message = "permission rules: " + ce.Source + ": " + where + ce.Path + ": " + ce.Msg + "; the rules of this file stay as they were until it is fixed"
			}
		}
		return nil, []protocol.Diagnostic{d}
	}
	return rs, nil
}

// Apply sets the engine's layers to r, clearing the agent layers of prev that r no longer
// names.
func Apply(e *permission.Engine, r, prev *Rules) {
	for _, name := range []string{permission.LayerManaged, permission.LayerUser, permission.LayerEditor, permission.LayerProject} {
		_ = e.SetLayer(name, r.Layers[name])
	}
	if prev != nil {
		for _, name := range prev.Agents {
			if sort.SearchStrings(r.Agents, name) == len(r.Agents) || r.Agents[sort.SearchStrings(r.Agents, name)] != name {
				_ = e.SetLayer(permission.LayerAgentPrefix+name, nil)
				_ = e.SetLayer(permission.LayerProjectAgentPrefix+name, nil)
			}
		}
	}
	for _, name := range r.Agents {
		_ = e.SetLayer(permission.LayerAgentPrefix+name, r.Layers[permission.LayerAgentPrefix+name])
		_ = e.SetLayer(permission.LayerProjectAgentPrefix+name, r.Layers[permission.LayerProjectAgentPrefix+name])
	}
}
