package agenthook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/toolsd/toolsd/internal/fsopen"
	"github.com/toolsd/toolsd/internal/jsonobj"
	"github.com/toolsd/toolsd/internal/shquote"
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
	return shquote.Word(exe) + " hook --agent " + a.Key + " " + event
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
	root := &jsonobj.Object{}
	if len(bytes.TrimSpace(old)) > 0 {
		v, err := jsonobj.ParseKept(old)
		if err != nil {
			return nil, fmt.Errorf("the settings file is not JSON: %v", err)
		}
		o, ok := v.(*jsonobj.Object)
		if !ok {
			return nil, fmt.Errorf("the settings file is not a JSON object")
		}
		root = o
	}
	has := root.Has("hooks")
	hooks, ok := root.Get("hooks").(*jsonobj.Object)
	if has && !ok {
		return nil, fmt.Errorf(`"hooks" in the settings file is not an object`)
	}
	if !has {
		if !install {
			return old, nil
		}
		hooks = &jsonobj.Object{}
	}
	for _, kind := range []string{KindPre, KindPermission, KindPost, KindFailure} {
		event, ok := a.events[kind]
		if !ok {
			continue
		}
		v := hooks.Get(event)
		list, _ := v.([]any)
		if v != nil && list == nil {
			return nil, fmt.Errorf("hooks.%s in the settings file is not an array", event)
		}
		list = a.without(list)
		if install {
			list = append(list, a.entry(exe, event))
		}
		if len(list) == 0 {
			hooks.Del(event)
		} else {
			hooks.Set(event, list)
		}
	}
	if install && a.cursor {
		if !root.Has("version") {
			root.Set("version", json.Number("1"))
		}
	}
	if hooks.Len() == 0 {
		root.Del("hooks")
	} else {
		root.Set("hooks", hooks)
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
		e := &jsonobj.Object{}
		e.Set("command", cmd)
		e.Set("matcher", a.Matcher())
		return e
	}
	h := &jsonobj.Object{}
	h.Set("type", "command")
	h.Set("command", cmd)
	h.Set("timeout", timeout)
	g := &jsonobj.Object{}
	g.Set("matcher", a.Matcher())
	g.Set("hooks", []any{h})
	return g
}

// without drops toolsd's entries from an event's list: Cursor's flat entries, and in the
// others' matcher groups the hooks that run toolsd (a group left empty goes).
func (a *Agent) without(list []any) []any {
	var out []any
	for _, item := range list {
		g, ok := jsonobj.Unwrap(item).(*jsonobj.Object)
		if !ok {
			out = append(out, item)
			continue
		}
		if g.Has("command") {
			if s, _ := g.Get("command").(string); IsOurs(s) {
				continue
			}
			out = append(out, item)
			continue
		}
		hs, ok := g.Get("hooks").([]any)
		if !ok {
			out = append(out, item)
			continue
		}
		var keep []any
		for _, h := range hs {
			if ho, ok := jsonobj.Unwrap(h).(*jsonobj.Object); ok {
				if s, _ := ho.Get("command").(string); IsOurs(s) {
					continue
				}
			}
			keep = append(keep, h)
		}
		switch {
		case len(keep) == 0:
		case len(keep) == len(hs):
			out = append(out, item) // untouched: as it was written
		default:
			g.Set("hooks", keep)
			out = append(out, g)
		}
	}
	return out
}

// maxSettingsBytes caps an agent's settings file, as config caps toolsd's own.
const maxSettingsBytes = 1 << 20

// ReadFile reads an agent's settings file at path the way toolsd reads its own (through
// internal/fsopen): only a regular file, opened without blocking, at most 1 MiB. A missing
// file reads as empty.
func ReadFile(path string) ([]byte, error) {
	data, err := fsopen.ReadFile(path, maxSettingsBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return data, err
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
	case *jsonobj.Kept:
		b.Write(x.Raw)
	case *jsonobj.Object:
		if x.Len() == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteString("{\n")
		i := 0
		for k, v := range x.All() {
			b.WriteString(indent + unit)
			writeScalar(b, k)
			b.WriteString(": ")
			writeOrdered(b, v, indent+unit, unit)
			if i++; i < x.Len() {
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
	enc, _ := jsonobj.Marshal(v)
	b.Write(enc)
}
