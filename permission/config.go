package permission

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/toolsd/toolsd/internal/jsonpos"
)

// ConfigError reports a permission value that is not what the config syntax allows.
type ConfigError struct {
	Source string // the layer the value came from
	Path   string // the key path: permission.bash["rm *"], permissions[2].effect
	Msg    string
	// File, Line and Column say where the value is written (Line and Column are 1-based; 0
	// when unknown).
	File         string
	Line, Column int
}

func (e *ConfigError) Error() string {
	s := e.Path + ": " + e.Msg
	if e.Source != "" {
		s = e.Source + ": " + s
	}
	return s
}

// Origin is where a permission value was read: the rules it gives carry it as their
// provenance.
type Origin struct {
	// Source is the layer: "user", "editor", "project", "managed", "agent:<name>", ...
	Source string
	// File is the settings file ("" when the value is not in a file).
	File string
	// Doc is the whole document the value was parsed from, so that an offset in it becomes a
	// line and a column. nil: rules get no position.
	Doc []byte
}

func (o Origin) at(off int) (line, col int) {
	if o.Doc == nil || off < 0 {
		return 0, 0
	}
	return jsonpos.Position(o.Doc, off)
}

// ParseConfig parses the value of a "permission" key in OpenCode's syntax (ParseV1); the
// rules get source as their Source and their line and column within raw.
func ParseConfig(raw json.RawMessage, source string) (Ruleset, error) {
	o := Origin{Source: source, Doc: raw}
	n, err := jsonpos.Parse(raw)
	if err != nil {
		msg := "not valid JSON: " + err.Error()
		if strings.Contains(err.Error(), "unexpected end") {
			msg = "the value ends too early"
		} else if strings.Contains(err.Error(), "after the end") {
			msg = "unexpected data after the value"
		}
		ce := &ConfigError{Source: source, Path: "permission", Msg: msg}
		if se, ok := err.(*jsonpos.SyntaxError); ok {
			ce.Line, ce.Column = o.at(se.Offset)
		}
		return nil, ce
	}
	return ParseV1(n, o)
}

// ParseV1 parses the value of a "permission" key in OpenCode's first syntax:
//
//	"allow"                                   every permission, every pattern
//	{"edit": "ask", "external_directory": "deny"}
//	{"bash": {"*": "ask", "git status*": "allow", "rm *": "deny"}}
//
// Keys are permission names (see Keys; project and MCP tools use their tool id; * and ?
// wildcards work in keys too). Pattern maps keep their order: later entries win. In patterns
// of every key but bash, a leading ~ or ~/ and $HOME or ${HOME} are replaced with the home
// directory (bash patterns are compared with commands as written, where ~ stays ~). Each
// rule carries o and the line and column of its key. null gives no rules.
func ParseV1(n *jsonpos.Node, o Origin) (Ruleset, error) {
	p := newCfgParser(o)
	const path = "permission"
	switch n.Kind {
	case jsonpos.Null:
		return nil, nil
	case jsonpos.String:
		a, err := p.action(path, n)
		if err != nil {
			return nil, err
		}
		return Ruleset{p.rule("*", "*", a, n.Offset)}, nil
	case jsonpos.Object:
	default:
		return nil, p.errf(path, n.Offset, `expected an action ("allow", "ask", "deny") or an object of permission keys, got %s`, describe(n))
	}
	var rs Ruleset
	for _, f := range n.Fields {
		key := f.Name
		kpath := path + "." + key
		if key == "" || strings.ContainsAny(key, ".[]\" ") {
			kpath = fmt.Sprintf("%s[%q]", path, key)
		}
		if key == "" {
			return nil, p.errf(kpath, f.KeyOffset, "a permission key cannot be empty")
		}
		v := f.Value
		switch v.Kind {
		case jsonpos.Object:
			for _, pf := range v.Fields {
				pattern := pf.Name
				ppath := fmt.Sprintf("%s[%q]", kpath, pattern)
				if pattern == "" {
					return nil, p.errf(ppath, pf.KeyOffset, "a pattern cannot be empty (use \"*\" for everything)")
				}
				a, err := p.action(ppath, pf.Value)
				if err != nil {
					if k := pf.Value.Kind; k == jsonpos.Object || k == jsonpos.Array {
						return nil, p.errf(ppath, pf.Value.Offset, "%s, got %s (pattern maps do not nest)", wantAction, describe(pf.Value))
					}
					return nil, err
				}
				rs = append(rs, p.rule(key, p.expand(key, pattern), a, pf.KeyOffset))
			}
		case jsonpos.String:
			a, err := p.action(kpath, v)
			if err != nil {
				return nil, err
			}
			rs = append(rs, p.rule(key, "*", a, f.KeyOffset))
		default:
			return nil, p.errf(kpath, v.Offset, `%s or an object of patterns ({"*": "ask", "git status*": "allow"}), got %s`, wantAction, describe(v))
		}
	}
	return rs, nil
}

// v2Actions are OpenCode's second syntax's action names that toolsd's keys name otherwise.
var v2Actions = map[string]string{"shell": KeyBash, "subagent": KeyTask}

// ParseV2 parses the value of a "permissions" key in OpenCode's second syntax: an ordered
// array of rules, the last matching one winning, no match meaning ask:
//
//	[{"action": "shell", "resource": "*", "effect": "ask"},
//	 {"action": "shell", "resource": "git status *", "effect": "allow"},
//	 {"action": "read", "resource": "*.env", "effect": "deny"}]
//
// The action "shell" is toolsd's "bash" and "subagent" its "task"; other actions are
// permission keys as in ParseV1 (wildcards included), and resources are its patterns (with
// ~ and $HOME expanded in the same places). Each rule carries o and the line and column of
// its object. null gives no rules.
func ParseV2(n *jsonpos.Node, o Origin) (Ruleset, error) {
	p := newCfgParser(o)
	const path = "permissions"
	switch n.Kind {
	case jsonpos.Null:
		return nil, nil
	case jsonpos.Array:
	default:
		return nil, p.errf(path, n.Offset, `expected an array of rules ([{"action": "shell", "resource": "git *", "effect": "allow"}]), got %s`, describe(n))
	}
	var rs Ruleset
	for i, e := range n.Elems {
		epath := fmt.Sprintf("%s[%d]", path, i)
		if e.Kind != jsonpos.Object {
			return nil, p.errf(epath, e.Offset, `expected a rule {"action": ..., "resource": ..., "effect": ...}, got %s`, describe(e))
		}
		var action, resource string
		var effect Action
		seen := map[string]bool{}
		for _, f := range e.Fields {
			fpath := epath + "." + f.Name
			switch f.Name {
			case "action", "resource":
				s, ok := f.Value.Value.(string)
				if !ok || f.Value.Kind != jsonpos.String {
					return nil, p.errf(fpath, f.Value.Offset, "expected a string, got %s", describe(f.Value))
				}
				if s == "" {
					return nil, p.errf(fpath, f.Value.Offset, "cannot be empty (use \"*\" for everything)")
				}
				if f.Name == "action" {
					action = s
				} else {
					resource = s
				}
			case "effect":
				a, err := p.action(fpath, f.Value)
				if err != nil {
					return nil, err
				}
				effect = a
			default:
				return nil, p.errf(fpath, f.KeyOffset, "unknown field %q: a rule has \"action\", \"resource\" and \"effect\"", f.Name)
			}
			seen[f.Name] = true
		}
		for _, want := range []string{"action", "resource", "effect"} {
			if !seen[want] {
				return nil, p.errf(epath, e.Offset, "the rule has no %q: a rule has \"action\", \"resource\" and \"effect\"", want)
			}
		}
		if k, ok := v2Actions[action]; ok {
			action = k
		}
		rs = append(rs, p.rule(action, p.expand(action, resource), effect, e.Offset))
	}
	return rs, nil
}

type cfgParser struct {
	o    Origin
	home string
}

func newCfgParser(o Origin) *cfgParser {
	home, _ := os.UserHomeDir()
	return &cfgParser{o: o, home: home}
}

func (p *cfgParser) rule(perm, pattern string, a Action, off int) Rule {
	r := Rule{Permission: perm, Pattern: pattern, Action: a, Source: p.o.Source, File: p.o.File}
	r.Line, r.Column = p.o.at(off)
	return r
}

func (p *cfgParser) errf(path string, off int, format string, args ...any) error {
	e := &ConfigError{Source: p.o.Source, Path: path, Msg: fmt.Sprintf(format, args...), File: p.o.File}
	e.Line, e.Column = p.o.at(off)
	return e
}

const wantAction = `expected "allow", "ask" or "deny"`

func (p *cfgParser) action(path string, n *jsonpos.Node) (Action, error) {
	s, ok := n.Value.(string)
	if !ok || n.Kind != jsonpos.String {
		return "", p.errf(path, n.Offset, "%s, got %s", wantAction, describe(n))
	}
	switch a := Action(s); a {
	case Allow, Ask, Deny:
		return a, nil
	}
	return "", p.errf(path, n.Offset, "%s, got %q", wantAction, s)
}

func describe(n *jsonpos.Node) string {
	switch n.Kind {
	case jsonpos.Null:
		return "null"
	case jsonpos.Bool:
		return fmt.Sprint(n.Value)
	case jsonpos.Number:
		return "the number " + string(n.Raw)
	case jsonpos.String:
		return fmt.Sprintf("%q", n.Value)
	case jsonpos.Object:
		return "an object"
	case jsonpos.Array:
		return "an array"
	}
	return n.Kind.String()
}

// expand replaces ~ and $HOME in patterns of path-like keys.
func (p *cfgParser) expand(key, pattern string) string {
	if key == KeyBash || p.home == "" {
		return pattern
	}
	// Path subjects are written with forward slashes (a Windows home too), and so are the
	// patterns they are matched against.
	home := strings.TrimSuffix(filepath.ToSlash(p.home), "/")
	switch {
	case pattern == "~":
		pattern = home
	case strings.HasPrefix(pattern, "~/"):
		pattern = home + pattern[1:]
	}
	pattern = strings.ReplaceAll(pattern, "${HOME}", home)
	pattern = strings.ReplaceAll(pattern, "$HOME", home)
	return pattern
}
