package permission

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// ConfigError reports a "permission" value that is not what the config syntax allows.
type ConfigError struct {
	Source string // the layer or file the value came from
	Path   string // the key path: permission.bash["rm *"]
	Msg    string
}

func (e *ConfigError) Error() string {
	s := e.Path + ": " + e.Msg
	if e.Source != "" {
		s = e.Source + ": " + s
	}
	return s
}

// ParseConfig parses the value of a "permission" key in OpenCode's syntax:
//
//	"allow"                                   every permission, every pattern
//	{"edit": "ask", "external_directory": "deny"}
//	{"bash": {"*": "ask", "git status*": "allow", "rm *": "deny"}}
//
// Keys are permission names (see Keys; project and MCP tools use their tool id; * and ?
// wildcards work in keys too). Pattern maps keep their order: later entries win. In patterns
// of every key but bash, a leading ~ or ~/ and $HOME or ${HOME} are replaced with the home
// directory (bash patterns are compared with commands as written, where ~ stays ~). The
// rules get source as their Source. null gives no rules.
func ParseConfig(raw json.RawMessage, source string) (Ruleset, error) {
	home, _ := os.UserHomeDir()
	p := &cfgParser{dec: json.NewDecoder(bytes.NewReader(raw)), source: source, home: home}
	p.dec.UseNumber()
	rs, err := p.top()
	if err != nil {
		return nil, err
	}
	if _, err := p.dec.Token(); err != io.EOF {
		return nil, p.errf("permission", "unexpected data after the value")
	}
	return rs, nil
}

type cfgParser struct {
	dec    *json.Decoder
	source string
	home   string
}

func (p *cfgParser) errf(path, format string, args ...any) error {
	return &ConfigError{Source: p.source, Path: path, Msg: fmt.Sprintf(format, args...)}
}

const wantAction = `expected "allow", "ask" or "deny"`

func (p *cfgParser) action(path string, tok json.Token) (Action, error) {
	s, ok := tok.(string)
	if !ok {
		return "", p.errf(path, "%s, got %s", wantAction, describe(tok))
	}
	switch a := Action(s); a {
	case Allow, Ask, Deny:
		return a, nil
	}
	return "", p.errf(path, "%s, got %q", wantAction, s)
}

func describe(tok json.Token) string {
	switch t := tok.(type) {
	case nil:
		return "null"
	case bool:
		return fmt.Sprint(t)
	case json.Number:
		return "the number " + t.String()
	case string:
		return fmt.Sprintf("%q", t)
	case json.Delim:
		switch t {
		case '{':
			return "an object"
		case '[':
			return "an array"
		}
	}
	return fmt.Sprint(tok)
}

func (p *cfgParser) token(path string) (json.Token, error) {
	tok, err := p.dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, p.errf(path, "the value ends too early")
		}
		return nil, p.errf(path, "not valid JSON: %v", err)
	}
	return tok, nil
}

func (p *cfgParser) top() (Ruleset, error) {
	const path = "permission"
	tok, err := p.token(path)
	if err != nil {
		return nil, err
	}
	switch tok {
	case nil:
		return nil, nil
	case json.Delim('{'):
	default:
		if _, ok := tok.(string); ok {
			a, err := p.action(path, tok)
			if err != nil {
				return nil, err
			}
			return Ruleset{{Permission: "*", Pattern: "*", Action: a, Source: p.source}}, nil
		}
		return nil, p.errf(path, `expected an action ("allow", "ask", "deny") or an object of permission keys, got %s`, describe(tok))
	}
	var rs Ruleset
	for p.dec.More() {
		kt, err := p.token(path)
		if err != nil {
			return nil, err
		}
		key := kt.(string)
		kpath := path + "." + key
		if key == "" || strings.ContainsAny(key, ".[]\" ") {
			kpath = fmt.Sprintf("%s[%q]", path, key)
		}
		if key == "" {
			return nil, p.errf(kpath, "a permission key cannot be empty")
		}
		vt, err := p.token(kpath)
		if err != nil {
			return nil, err
		}
		switch vt {
		case json.Delim('{'):
			for p.dec.More() {
				pt, err := p.token(kpath)
				if err != nil {
					return nil, err
				}
				pattern := pt.(string)
				ppath := fmt.Sprintf("%s[%q]", kpath, pattern)
				if pattern == "" {
					return nil, p.errf(ppath, "a pattern cannot be empty (use \"*\" for everything)")
				}
				at, err := p.token(ppath)
				if err != nil {
					return nil, err
				}
				a, err := p.action(ppath, at)
				if err != nil {
					if d, ok := at.(json.Delim); ok && (d == '{' || d == '[') {
						return nil, p.errf(ppath, "%s, got %s (pattern maps do not nest)", wantAction, describe(at))
					}
					return nil, err
				}
				rs = append(rs, Rule{Permission: key, Pattern: p.expand(key, pattern), Action: a, Source: p.source})
			}
			if _, err := p.token(kpath); err != nil { // '}'
				return nil, err
			}
		default:
			if _, ok := vt.(string); !ok {
				return nil, p.errf(kpath, `%s or an object of patterns ({"*": "ask", "git status*": "allow"}), got %s`, wantAction, describe(vt))
			}
			a, err := p.action(kpath, vt)
			if err != nil {
				return nil, err
			}
			rs = append(rs, Rule{Permission: key, Pattern: "*", Action: a, Source: p.source})
		}
	}
	if _, err := p.token(path); err != nil { // '}'
		return nil, err
	}
	return rs, nil
}

// expand replaces ~ and $HOME in patterns of path-like keys.
func (p *cfgParser) expand(key, pattern string) string {
	if key == KeyBash || p.home == "" {
		return pattern
	}
	home := strings.TrimSuffix(p.home, "/")
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
