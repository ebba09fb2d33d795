package agenthook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Scopes of an install.
const (
	ScopeProject = "project"
	ScopeUser    = "user"
)

// SettingsPath is the file `toolsd hook install` writes for the agent: Claude Code's
// .claude/settings.local.json (the person's own settings of the project, which Claude Code
// keeps out of git) or ~/.claude/settings.json; Codex's .codex/hooks.json or
// $CODEX_HOME/hooks.json; Cursor's .cursor/hooks.json or ~/.cursor/hooks.json.
func (a *Agent) SettingsPath(scope, workspace, home string) string {
	switch a.Key {
	case "claude":
		if scope == ScopeProject {
			return filepath.Join(workspace, ".claude", "settings.local.json")
		}
		if d := os.Getenv("CLAUDE_CONFIG_DIR"); d != "" {
			return filepath.Join(d, "settings.json")
		}
		return filepath.Join(home, ".claude", "settings.json")
	case "codex":
		if scope == ScopeProject {
			return filepath.Join(workspace, ".codex", "hooks.json")
		}
		if d := os.Getenv("CODEX_HOME"); d != "" {
			return filepath.Join(d, "hooks.json")
		}
		return filepath.Join(home, ".codex", "hooks.json")
	}
	if scope == ScopeProject {
		return filepath.Join(workspace, ".cursor", "hooks.json")
	}
	return filepath.Join(home, ".cursor", "hooks.json")
}

// Matcher is the tools the hook is installed for: every tool of the table, and MCP tools.
func (a *Agent) Matcher() string {
	if a.cursor {
		return strings.Join(Tools(), "|") + "|MCP:.*"
	}
	return strings.Join(Tools(), "|") + "|mcp__.*"
}

// Command is the hook's command line for event, running the toolsd binary exe.
func (a *Agent) Command(exe, event string) string {
	return shellQuote(exe) + " hook --agent " + a.Key + " " + event
}

// IsOurs reports whether a hook command is toolsd's: its program is named toolsd and its
// first argument is hook.
func IsOurs(command string) bool {
	command = strings.TrimSpace(command)
	prog, rest := "", ""
	if command != "" && (command[0] == '\'' || command[0] == '"') {
		end := strings.IndexByte(command[1:], command[0])
		if end < 0 {
			return false
		}
		prog, rest = command[1:end+1], command[end+2:]
	} else {
		prog, rest, _ = strings.Cut(command, " ")
	}
	f := strings.Fields(rest)
	return filepath.Base(prog) == "toolsd" && len(f) > 0 && f[0] == "hook"
}

// Merge returns the agent's settings file content with toolsd's hook entries in it (install)
// or out of it (!install), changing nothing else: every other key, hook and entry stays, in
// its order. exe is the toolsd binary the entries run. An empty old is a file that does not
// exist yet.
func (a *Agent) Merge(old []byte, install bool, exe string) ([]byte, error) {
	root := &object{}
	if len(bytes.TrimSpace(old)) > 0 {
		v, err := parseOrdered(old)
		if err != nil {
			return nil, fmt.Errorf("the settings file is not JSON: %v", err)
		}
		o, ok := v.(*object)
		if !ok {
			return nil, fmt.Errorf("the settings file is not a JSON object")
		}
		root = o
	}
	hooksV, has := root.get("hooks")
	hooks, ok := hooksV.(*object)
	if has && !ok {
		return nil, fmt.Errorf(`"hooks" in the settings file is not an object`)
	}
	if !has {
		if !install {
			return old, nil
		}
		hooks = &object{}
	}
	for _, kind := range []string{KindPre, KindPermission, KindPost, KindFailure} {
		event, ok := a.events[kind]
		if !ok {
			continue
		}
		v, _ := hooks.get(event)
		list, _ := v.([]any)
		if v != nil && list == nil {
			return nil, fmt.Errorf("hooks.%s in the settings file is not an array", event)
		}
		list = a.without(list)
		if install {
			list = append(list, a.entry(exe, event))
		}
		if len(list) == 0 {
			hooks.del(event)
		} else {
			hooks.set(event, list)
		}
	}
	if install && a.cursor {
		if _, ok := root.get("version"); !ok {
			root.set("version", json.Number("1"))
		}
	}
	if len(hooks.keys) == 0 {
		root.del("hooks")
	} else {
		root.set("hooks", hooks)
	}
	var b bytes.Buffer
	writeOrdered(&b, root, "", indentOf(old))
	b.WriteByte('\n')
	return b.Bytes(), nil
}

// entry is toolsd's entry for event.
func (a *Agent) entry(exe, event string) any {
	cmd := a.Command(exe, event)
	timeout := json.Number(strconv.Itoa(int(AgentTimeout.Seconds())))
	if a.cursor {
		e := &object{}
		e.set("command", cmd)
		e.set("matcher", a.Matcher())
		return e
	}
	h := &object{}
	h.set("type", "command")
	h.set("command", cmd)
	h.set("timeout", timeout)
	g := &object{}
	g.set("matcher", a.Matcher())
	g.set("hooks", []any{h})
	return g
}

// without drops toolsd's entries from an event's list: Cursor's flat entries, and in the
// others' matcher groups the hooks that run toolsd (a group left empty goes).
func (a *Agent) without(list []any) []any {
	var out []any
	for _, item := range list {
		g, ok := unwrap(item).(*object)
		if !ok {
			out = append(out, item)
			continue
		}
		if c, ok := g.get("command"); ok {
			if s, _ := c.(string); IsOurs(s) {
				continue
			}
			out = append(out, item)
			continue
		}
		hv, _ := g.get("hooks")
		hs, ok := hv.([]any)
		if !ok {
			out = append(out, item)
			continue
		}
		var keep []any
		for _, h := range hs {
			if ho, ok := unwrap(h).(*object); ok {
				if c, _ := ho.get("command"); c != nil {
					if s, _ := c.(string); IsOurs(s) {
						continue
					}
				}
			}
			keep = append(keep, h)
		}
		switch {
		case len(keep) == 0:
		case len(keep) == len(hs):
			out = append(out, item) // untouched: as it was written
		default:
			g.set("hooks", keep)
			out = append(out, g)
		}
	}
	return out
}

// WriteFile writes data to path atomically (a temporary file renamed over it), keeping the
// mode of the file it replaces, creating its folder.
func WriteFile(path string, data []byte) error {
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".toolsd-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r == '+' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// object is a JSON object that keeps its keys in order.
type object struct {
	keys []string
	vals map[string]any
}

// kept is a value read from the file and not changed since: it is written back as it was
// written (its raw text), so that an install changes no line it does not need to.
type kept struct {
	v   any
	raw []byte
}

func unwrap(v any) any {
	if k, ok := v.(*kept); ok {
		return k.v
	}
	return v
}

func (o *object) get(k string) (any, bool) {
	v, ok := o.vals[k]
	return unwrap(v), ok
}

func (o *object) set(k string, v any) {
	if o.vals == nil {
		o.vals = map[string]any{}
	}
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

func (o *object) del(k string) {
	if _, ok := o.vals[k]; !ok {
		return
	}
	delete(o.vals, k)
	for i, x := range o.keys {
		if x == k {
			o.keys = append(o.keys[:i:i], o.keys[i+1:]...)
			break
		}
	}
}

// parseOrdered reads JSON with objects as *object (keys in order), numbers as they were
// written, and every value inside the top one as *kept.
func parseOrdered(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := parseValue(dec, data)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("more than one JSON value")
	}
	return v, nil
}

func parseValue(dec *json.Decoder, data []byte) (any, error) {
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	child := func() (any, error) {
		start := dec.InputOffset()
		v, err := parseValue(dec, data)
		if err != nil {
			return nil, err
		}
		return &kept{v: v, raw: bytes.TrimLeft(data[start:dec.InputOffset()], " \t\r\n:,")}, nil
	}
	switch t {
	case json.Delim('{'):
		o := &object{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			v, err := child()
			if err != nil {
				return nil, err
			}
			o.set(kt.(string), v)
		}
		_, err := dec.Token()
		return o, err
	case json.Delim('['):
		list := []any{}
		for dec.More() {
			v, err := child()
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
		_, err := dec.Token()
		return list, err
	}
	return t, nil
}

// indentOf is the indentation unit of a file: the leading white space of its first indented
// line (two spaces when none is).
func indentOf(data []byte) string {
	for _, line := range bytes.Split(data, []byte("\n")) {
		if n := len(line) - len(bytes.TrimLeft(line, " \t")); n > 0 && n < len(line) {
			return string(line[:n])
		}
	}
	return "  "
}

// writeOrdered writes v, each level indented by unit; kept values as they were written.
func writeOrdered(b *bytes.Buffer, v any, indent, unit string) {
	switch x := v.(type) {
	case *kept:
		b.Write(x.raw)
	case *object:
		if len(x.keys) == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteString("{\n")
		for i, k := range x.keys {
			b.WriteString(indent + unit)
			writeScalar(b, k)
			b.WriteString(": ")
			writeOrdered(b, x.vals[k], indent+unit, unit)
			if i < len(x.keys)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString(indent + "}")
	case []any:
		if len(x) == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteString("[\n")
		for i, e := range x {
			b.WriteString(indent + unit)
			writeOrdered(b, e, indent+unit, unit)
			if i < len(x)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString(indent + "]")
	default:
		writeScalar(b, x)
	}
}

func writeScalar(b *bytes.Buffer, v any) {
	enc, _ := json.Marshal(v)
	// Settings hold commands with < > &: keep them as written, not \u003c.
	enc = bytes.ReplaceAll(enc, []byte(`\u003c`), []byte("<"))
	enc = bytes.ReplaceAll(enc, []byte(`\u003e`), []byte(">"))
	enc = bytes.ReplaceAll(enc, []byte(`\u0026`), []byte("&"))
	b.Write(enc)
}
