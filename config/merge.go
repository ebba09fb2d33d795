package config

import (
	"cmp"
	"reflect"
	"slices"
	"strings"

	"github.com/toolsd/toolsd/permission"
	"github.com/toolsd/toolsd/protocol"
)

// Merge overlays layers, lowest precedence first, on Defaults: a layer's value that is set
// (not its type's zero value) wins, as cmp.Or picks it. Permission is not merged
// (see Layers.Permissions); agents merge by name and their tools by key; MCP servers merge
// by name; a layer's PatchModels replaces the list. A project layer's limits only lower the
// limits (and never the message limit); see the package doc.
func Merge(layers ...*Layer) Settings {
	s := Defaults()
	for _, l := range layers {
		if l == nil {
			continue
		}
		o := l.Settings
		mergeLimits(&s.Limits, o.Limits, l.Source == SourceProject)
		s.RetentionDays = cmp.Or(o.RetentionDays, s.RetentionDays)
		if o.PatchModels != nil {
			s.PatchModels = slices.Clone(o.PatchModels)
		}
		s.LogLevel = cmp.Or(o.LogLevel, s.LogLevel)
		if l.Source != SourceProject && o.Audit != (Audit{}) {
			// A repository must not choose where a person's audit trail goes.
			s.Audit = o.Audit
		}
		s.Sandbox = mergeSandbox(s.Sandbox, o.Sandbox)
		for name, m := range o.MCP {
			if s.MCP == nil {
				s.MCP = map[string]MCPServer{}
			}
			s.MCP[name] = m
		}
		for name, a := range o.Agents {
			if s.Agents == nil {
				s.Agents = map[string]Agent{}
			}
			cur := s.Agents[name]
			cur.Description = cmp.Or(a.Description, cur.Description)
			if len(a.Tools) > 0 {
				tools := map[string]bool{}
				for k, v := range cur.Tools {
					tools[k] = v
				}
				for k, v := range a.Tools {
					tools[k] = v
				}
				cur.Tools = tools
			}
			if len(a.Permission) > 0 {
				cur.Permission = a.Permission // the last layer's, for display; see Layers.Permissions
			}
			s.Agents[name] = cur
		}
	}
	return s
}

// mergeSandbox overlays src on dst: set values win, lists add up, tools merge by id.
func mergeSandbox(dst, src Sandbox) Sandbox {
	dst.Enabled = cmp.Or(src.Enabled, dst.Enabled)
	dst.AutoAllow = cmp.Or(src.AutoAllow, dst.AutoAllow)
	dst.Mode = cmp.Or(src.Mode, dst.Mode)
	dst.UnixSockets = cmp.Or(src.UnixSockets, dst.UnixSockets)
	dst.Network = cmp.Or(src.Network, dst.Network)
	dst.Write = append(slices.Clone(dst.Write), src.Write...)
	dst.Deny = append(slices.Clone(dst.Deny), src.Deny...)
	if len(src.Tools) > 0 {
		tools := map[string]SandboxTool{}
		for k, v := range dst.Tools {
			tools[k] = v
		}
		for k, v := range src.Tools {
			cur := tools[k]
			cur.Enabled = cmp.Or(v.Enabled, cur.Enabled)
			cur.Network = cmp.Or(v.Network, cur.Network)
			cur.UnixSockets = cmp.Or(v.UnixSockets, cur.UnixSockets)
			cur.Write = append(slices.Clone(cur.Write), v.Write...)
			tools[k] = cur
		}
		dst.Tools = tools
	}
	return dst
}

// mergeLimits overlays the limits of src that are set on dst; with lowerOnly (the project
// layer), only those that lower a limit and that the project may set.
func mergeLimits(dst *Limits, src Limits, lowerOnly bool) {
	d, sv := reflect.ValueOf(dst).Elem(), reflect.ValueOf(src)
	for i := range d.NumField() {
		v := sv.Field(i).Int()
		if v == 0 || lowerOnly && (v > d.Field(i).Int() || projectMayNotSet[jsonName(d.Type().Field(i))]) {
			continue
		}
		d.Field(i).SetInt(v)
	}
}

// AgentEnabled reports whether agent may see the tool toolID. An agent that is not
// configured sees every tool.
func (s *Settings) AgentEnabled(agent, toolID string) bool {
	a, ok := s.Agents[agent]
	if !ok || len(a.Tools) == 0 {
		return true
	}
	if v, ok := a.Tools[toolID]; ok {
		return v
	}
	best, enabled := -1, true
	for pat, v := range a.Tools {
		if !strings.ContainsAny(pat, "*?") || !permission.Match(pat, toolID) {
			continue
		}
		if len(pat) > best || (len(pat) == best && !v) {
			best, enabled = len(pat), v
		}
	}
	return enabled
}

// UsePatch reports whether a model gets apply_patch instead of edit and write: its model
// id (or "providerID/modelID") matches one of PatchModels.
func (s *Settings) UsePatch(m *protocol.Model) bool {
	if m == nil {
		return false
	}
	for _, p := range s.PatchModels {
		if permission.Match(p, m.ModelID) || permission.Match(p, m.ProviderID+"/"+m.ModelID) {
			return true
		}
	}
	return false
}
