package config

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v5"
	"go.uber.org/goleak"

	"github.com/toolsd/toolsd/internal/fsopen/fsopentest"
	"github.com/toolsd/toolsd/protocol"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestSchemaMatchesStruct checks settings.schema.json against the Settings struct: the same
// property names (the json tags), compatible types, the defaults of Defaults().
func TestSchemaMatchesStruct(t *testing.T) {
	data, err := os.ReadFile("settings.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	if err := json.Unmarshal(data, &schema); err != nil {
		t.Fatal(err)
	}
	defs, _ = schema["$defs"].(map[string]any)
	compare(t, "", reflect.TypeOf(Settings{}), schema)

	// The defaults in the schema are Defaults().
	def, _ := json.Marshal(Defaults())
	var defaults map[string]any
	json.Unmarshal(def, &defaults)
	props := schema["properties"].(map[string]any)
	for _, k := range []string{"retentionDays", "patchModels", "logLevel"} {
		if !reflect.DeepEqual(props[k].(map[string]any)["default"], defaults[k]) {
			t.Errorf("default of %s: schema %v, Defaults() %v", k, props[k].(map[string]any)["default"], defaults[k])
		}
	}
	lim := props["limits"].(map[string]any)["properties"].(map[string]any)
	for k, v := range defaults["limits"].(map[string]any) {
		if lim[k].(map[string]any)["default"] != v {
			t.Errorf("default of limits.%s: schema %v, Defaults() %v", k, lim[k].(map[string]any)["default"], v)
		}
	}
	// Each limit's bounds are in the schema: the ceiling as maximum, the floor in words (0
	// means the default, so it cannot be the schema's minimum).
	for k := range lim {
		b, ok := limitBounds[k]
		p := lim[k].(map[string]any)
		if !ok {
			t.Errorf("limits.%s has no bounds", k)
		} else if p["maximum"] != float64(b.Max) || !strings.Contains(p["description"].(string), fmt.Sprintf("At least %d.", b.Min)) {
			t.Errorf("limits.%s: schema maximum %v and description %q, bounds %+v", k, p["maximum"], p["description"], b)
		}
	}

	// The schema compiles, and accepts the defaults and a full example.
	c := jsonschema.NewCompiler()
	if err := c.AddResource("settings.schema.json", strings.NewReader(string(data))); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("settings.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var v any
	json.Unmarshal([]byte(fullExample), &v)
	if err := s.Validate(v); err != nil {
		t.Errorf("the example does not validate: %v", err)
	}
}

// defs are the schema's $defs, which "$ref": "#/$defs/<name>" names.
var defs map[string]any

func compare(t *testing.T, where string, typ reflect.Type, schema map[string]any) {
	t.Helper()
	if ref, ok := schema["$ref"].(string); ok {
		d, ok := defs[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any)
		if !ok {
			t.Errorf("%s: $ref %s names no definition", orRoot(where), ref)
			return
		}
		schema = d
	}
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	types := map[string]bool{}
	switch st := schema["type"].(type) {
	case string:
		types[st] = true
	case []any:
		for _, x := range st {
			types[x.(string)] = true
		}
	}
	want := ""
	switch {
	case typ == reflect.TypeOf(json.RawMessage{}):
		want = "object" // or, for v2 permission rules, an array
		if types["array"] {
			want = "array"
		}
	case typ.Kind() == reflect.Struct, typ.Kind() == reflect.Map:
		want = "object"
	case typ.Kind() == reflect.Slice:
		want = "array"
	case typ.Kind() == reflect.String:
		want = "string"
	case typ.Kind() == reflect.Bool:
		want = "boolean"
	case typ.Kind() == reflect.Int, typ.Kind() == reflect.Int64:
		want = "integer"
	}
	if !types[want] {
		t.Errorf("%s: schema type %v, the struct needs %s", orRoot(where), schema["type"], want)
		return
	}
	if schema["description"] == nil && where != "" && !strings.Contains(where, "[]") && typ.Kind() != reflect.Struct {
		t.Errorf("%s: no description", where)
	}
	switch {
	case typ == reflect.TypeOf(json.RawMessage{}):
	case typ.Kind() == reflect.Struct:
		props, _ := schema["properties"].(map[string]any)
		if schema["additionalProperties"] != false {
			t.Errorf("%s: additionalProperties must be false", orRoot(where))
		}
		seen := map[string]bool{}
		for i := range typ.NumField() {
			name := jsonName(typ.Field(i))
			seen[name] = true
			p, ok := props[name].(map[string]any)
			if !ok {
				t.Errorf("%s: the schema lacks property %q", orRoot(where), name)
				continue
			}
			compare(t, where+"."+name, typ.Field(i).Type, p)
		}
		for name := range props {
			if !seen[name] {
				t.Errorf("%s: the schema has property %q, which the struct lacks", orRoot(where), name)
			}
		}
	case typ.Kind() == reflect.Map:
		ap, ok := schema["additionalProperties"].(map[string]any)
		if !ok {
			t.Errorf("%s: a map needs an additionalProperties schema", where)
			return
		}
		compare(t, where+"[]", typ.Elem(), ap)
	case typ.Kind() == reflect.Slice:
		items, ok := schema["items"].(map[string]any)
		if !ok {
			t.Errorf("%s: an array needs items", where)
			return
		}
		compare(t, where+"[]", typ.Elem(), items)
	}
}

const fullExample = `{
  "permission": {"bash": {"git status*": "allow", "rm *": "deny"}, "edit": "ask"},
  "agents": {"plan": {"description": "Plans.", "tools": {"edit": false, "write": false, "mcp_*": false}, "permission": {"bash": "deny"}}},
  "limits": {"truncateLines": 1000, "truncateBytes": 10000, "bashTimeoutMs": 60000, "bashMaxTimeoutMs": 300000, "maxMessageBytes": 1048576},
  "retentionDays": 3,
  "patchModels": ["gpt-5*"],
  "mcp": {"github": {"command": ["github-mcp"], "env": {"TOKEN": "x"}}},
  "logLevel": "debug",
  "hooks": {
    "before": [{"name": "guard", "match": "Bash", "if": "bash(git push *)", "command": ["python3", "~/.config/toolsd/hooks/guard.py"], "timeout": 10, "onFailure": "fail-closed"}],
    "after": [{"match": "edit|write", "command": ["./scripts/fmt.sh"], "env": {"X": "1"}, "sandbox": {"write": ["~/.cache/fmt"]}}]
  }
}`

func TestParse(t *testing.T) {
	l, diags := Parse(SourceProject, "/p/config.json", []byte(fullExample))
	if len(diags) != 0 {
		t.Fatal(diags)
	}
	s := l.Settings
	if s.Limits.TruncateLines != 1000 || s.RetentionDays != 3 || s.LogLevel != "debug" || s.MCP["github"].Command[0] != "github-mcp" || s.Agents["plan"].Tools["edit"] {
		t.Errorf("bad settings %+v", s)
	}
}

func TestParseDiagnostics(t *testing.T) {
	cases := []struct {
		name, src string
		severity  string
		line, col int
		want      string
	}{
		{"bad JSON", "{\n \"logLevel\": \"debug\",\n}", "error", 3, 1, "bad JSON"},
		{"not an object", `[]`, "error", 1, 1, "must be a JSON object"},
		{"unknown field", "{\n  \"limit\": {}\n}", "warning", 2, 3, `unknown setting "limit"`},
		{"unknown nested field", `{"limits": {"truncateLine": 5}}`, "warning", 1, 13, `unknown setting "truncateLine" in limits`},
		{"wrong type", `{"limits": {"truncateLines": "5"}}`, "error", 1, 30, "limits.truncateLines must be a whole number"},
		{"fraction", `{"retentionDays": 1.5}`, "error", 1, 19, "retentionDays must be a whole number"},
		{"agent tools", `{"agents": {"plan": {"tools": {"edit": "no"}}}}`, "error", 1, 40, "agents.plan.tools.edit must be true or false"},
		{"bad log level", `{"logLevel": "loud"}`, "error", 1, 14, `"logLevel" must be`},
		{"negative limit", `{"limits": {"bashTimeoutMs": -1}}`, "error", 1, 30, "must not be negative"},
		{"mcp without command", `{"mcp": {"x": {}}}`, "error", 1, 15, `mcp.x needs a "command"`},
		{"limit below its floor", `{"limits": {"truncateBytes": 7}}`, "warning", 1, 30, "limits.truncateBytes 7 is below the least allowed, 1024"},
		{"limit above its ceiling", `{"limits": {"bashMaxTimeoutMs": 99999999999999}}`, "warning", 1, 33, "limits.bashMaxTimeoutMs 99999999999999 is above the greatest allowed, 86400000"},
		// encoding/json matches names whatever their case: no position, and no panic.
		{"limit under another case", `{"Limits": {"TruncateLines": -1}}`, "error", 0, 0, "limits.truncateLines must not be negative"},
		{"log level under another case", `{"LOGLEVEL": "loud"}`, "error", 0, 0, `"logLevel" must be`},
		{"mcp under another case", `{"MCP": {"x": {}}}`, "error", 0, 0, `mcp.x needs a "command"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, diags := Parse(SourceProject, "/p/config.json", []byte(tc.src))
			for _, d := range diags {
				if strings.Contains(d.Message, tc.want) {
					if d.Severity != tc.severity || d.Line != tc.line || d.Column != tc.col || d.Path != "/p/config.json" {
						t.Errorf("got %+v, want %s at %d:%d", d, tc.severity, tc.line, tc.col)
					}
					return
				}
			}
			t.Fatalf("no diagnostic mentions %q: %+v", tc.want, diags)
		})
	}
	// A wrong field is ignored; the rest applies.
	l, _ := Parse(SourceProject, "", []byte(`{"limits": {"truncateLines": "5", "truncateBytes": 2048}, "logLevel": "warn"}`))
	if l.Settings.Limits.TruncateLines != 0 || l.Settings.Limits.TruncateBytes != 2048 || l.Settings.LogLevel != "warn" {
		t.Errorf("settings %+v", l.Settings)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func TestLoadLayers(t *testing.T) {
	root := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(root, "xdg"))
	ws := filepath.Join(root, "ws")
	writeFile(t, filepath.Join(root, "xdg/toolsd/config.json"), `{
		"limits": {"truncateLines": 100, "truncateBytes": 2000},
		"logLevel": "debug",
		"permission": {"bash": "ask"},
		"agents": {"plan": {"tools": {"edit": false, "bash": false}, "permission": {"edit": "deny"}}}
	}`)
	writeFile(t, filepath.Join(ws, ".toolsd/config.json"), `{
		"limits": {"truncateLines": 150},
		"permission": {"bash": {"go test*": "allow"}},
		"agents": {"plan": {"tools": {"bash": true}}}
	}`)
	l, diags := Load(ws, json.RawMessage(`{"limits": {"truncateLines": 200}, "retentionDays": 2, "permission": {"edit": "allow"}}`))
	if len(diags) != 0 {
		t.Fatal(diags)
	}
	e := l.Effective
	if e.Limits.TruncateLines != 150 || e.Limits.TruncateBytes != 2000 || e.Limits.BashTimeoutMs != 120000 || e.RetentionDays != 2 || e.LogLevel != "debug" {
		t.Errorf("effective %+v", e)
	}
	if e.AgentEnabled("plan", "edit") || !e.AgentEnabled("plan", "bash") || !e.AgentEnabled("plan", "read") {
		t.Errorf("agent tools %+v", e.Agents["plan"])
	}
	var got []string
	for _, p := range l.Permissions("plan") {
		got = append(got, p.Source+"("+p.Layer+")="+string(p.Raw))
	}
	want := []string{`user(user)={"bash": "ask"}`, `editor(editor)={"edit": "allow"}`, `project(project)={"bash": {"go test*": "allow"}}`, `agent:plan(user)={"edit": "deny"}`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("permissions:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Without the project layer (an untrusted workspace).
	if s := Merge(l.User, l.Editor); s.Limits.TruncateLines != 200 {
		t.Errorf("merge without project: %+v", s.Limits)
	}
}

func TestAgentEnabled(t *testing.T) {
	s := Settings{Agents: map[string]Agent{"a": {Tools: map[string]bool{
		"edit": false, "mcp_*": false, "mcp_github_*": true, "web*": false, "*tch": true,
	}}}}
	for _, tc := range []struct {
		agent, tool string
		want        bool
	}{
		{"a", "edit", false},
		{"a", "read", true},
		{"a", "mcp_slack_post", false},
		{"a", "mcp_github_issue", true}, // the longer pattern wins
		{"a", "webfetch", false},        // equal length: false wins
		{"other", "edit", true},
		{"", "edit", true},
	} {
		if got := s.AgentEnabled(tc.agent, tc.tool); got != tc.want {
			t.Errorf("AgentEnabled(%q, %q) = %v", tc.agent, tc.tool, got)
		}
	}
}

func TestUsePatch(t *testing.T) {
	s := Defaults()
	for _, tc := range []struct {
		provider, model string
		want            bool
	}{
		{"openai", "gpt-5.1", true},
		{"openai", "gpt-5.1-codex", true},
		{"openai", "gpt-4o", false},
		{"anthropic", "claude-sonnet-4-5", false},
	} {
		if got := s.UsePatch(&protocol.Model{ProviderID: tc.provider, ModelID: tc.model}); got != tc.want {
			t.Errorf("UsePatch(%s) = %v", tc.model, got)
		}
	}
	if s.UsePatch(nil) {
		t.Error("UsePatch(nil)")
	}
}

func TestSourceReload(t *testing.T) {
	root := t.TempDir()
	ws := filepath.Join(root, "ws")
	userPath := filepath.Join(root, "user/config.json")
	events := make(chan *Layers, 10)
	diagsCh := make(chan []protocol.Diagnostic, 10)
	s, err := NewSource(SourceOptions{
		Workspace: ws, UserPath: userPath, Debounce: 20 * time.Millisecond,
		OnChange: func(l *Layers, d []protocol.Diagnostic) { events <- l; diagsCh <- d },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Layers().Effective.Limits.TruncateLines != 2000 {
		t.Fatal("want defaults")
	}
	next := func() (*Layers, []protocol.Diagnostic) {
		t.Helper()
		select {
		case l := <-events:
			return l, <-diagsCh
		case <-time.After(5 * time.Second):
			t.Fatal("no reload within 5s")
		}
		return nil, nil
	}
	proj := ProjectPath(ws)
	writeFile(t, proj, `{"limits": {"truncateLines": 10}}`)
	if l, d := next(); l.Effective.Limits.TruncateLines != 10 || len(d) != 0 {
		t.Fatalf("after write: %+v %+v", l.Effective.Limits, d)
	}
	writeFile(t, proj, `{"limits": {"truncateLines": 20`)
	if l, d := next(); l.Effective.Limits.TruncateLines != 10 || len(d) != 1 || !strings.Contains(d[0].Message, "previous settings") {
		t.Fatalf("after break: %+v %+v", l.Effective.Limits, d)
	}
	writeFile(t, userPath, `{"logLevel": "error"}`)
	if l, _ := next(); l.Effective.LogLevel != "error" {
		t.Fatalf("after user write: %+v", l.Effective)
	}
	if err := os.Remove(proj); err != nil {
		t.Fatal(err)
	}
	if l, d := next(); l.Project != nil || l.Effective.Limits.TruncateLines != 2000 || len(d) != 0 {
		t.Fatalf("after delete: %+v %+v", l.Project, d)
	}
	s.SetEditor(json.RawMessage(`{"retentionDays": 1}`))
	if l, _ := next(); l.Effective.RetentionDays != 1 || l.Editor == nil {
		t.Fatalf("after SetEditor: %+v", l.Effective)
	}
}

// TestProjectLimits: the workspace's file may only lower limits, within their bounds, and may
// not set the message limit at all, trusted or not; every layer is held within the bounds.
func TestProjectLimits(t *testing.T) {
	cases := []struct {
		name, user, editor, project string
		want                        Limits // the limits that differ from the defaults
		warn                        string // a diagnostic that must come, if any
	}{
		{name: "the message limit is not the project's", project: `{"limits": {"maxMessageBytes": 100}}`,
			want: Limits{MaxMessageBytes: 8 << 20}, warn: "limits.maxMessageBytes is ignored here"},
		{name: "not even to lower it within bounds", editor: `{"limits": {"maxMessageBytes": 4194304}}`, project: `{"limits": {"maxMessageBytes": 2097152}}`,
			want: Limits{MaxMessageBytes: 4 << 20}, warn: "limits.maxMessageBytes is ignored here"},
		{name: "a raise is ignored", project: `{"limits": {"bashMaxTimeoutMs": 3600000, "truncateBytes": 1000000}}`,
			want: Limits{BashMaxTimeoutMs: 600000, TruncateBytes: 50 * 1024}, warn: "limits.bashMaxTimeoutMs 3600000 is ignored: a workspace's .toolsd/config.json may only lower a limit"},
		{name: "a raise over the user's is ignored", user: `{"limits": {"truncateLines": 100}}`, project: `{"limits": {"truncateLines": 500}}`,
			want: Limits{TruncateLines: 100}, warn: "the user's and the editor's settings make it 100"},
		{name: "a lower limit applies", project: `{"limits": {"truncateLines": 500, "bashTimeoutMs": 30000}}`,
			want: Limits{TruncateLines: 500, BashTimeoutMs: 30000}},
		{name: "but not below the floor", project: `{"limits": {"truncateLines": 1, "bashMaxTimeoutMs": 1}}`,
			want: Limits{TruncateLines: 10, BashMaxTimeoutMs: 1000}, warn: "is below the least allowed"},
		{name: "the user's settings are bounded too", user: `{"limits": {"bashMaxTimeoutMs": 9999999999999, "maxMessageBytes": 100}}`,
			want: Limits{BashMaxTimeoutMs: 86_400_000, MaxMessageBytes: 1 << 20}, warn: "above the greatest allowed"},
		{name: "and the editor's", editor: `{"limits": {"maxMessageBytes": 99999999999}}`,
			want: Limits{MaxMessageBytes: 256 << 20}, warn: "above the greatest allowed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			user, ws := filepath.Join(root, "user.json"), filepath.Join(root, "ws")
			if tc.user != "" {
				writeFile(t, user, tc.user)
			}
			if tc.project != "" {
				writeFile(t, ProjectPath(ws), tc.project)
			}
			l, diags := load(paths{user: user, project: ProjectPath(ws)}, json.RawMessage(tc.editor), nil)
			got := l.Effective.Limits
			want := Defaults().Limits
			w, set := reflect.ValueOf(&want).Elem(), reflect.ValueOf(tc.want)
			for i := range w.NumField() {
				if v := set.Field(i).Int(); v != 0 {
					w.Field(i).SetInt(v)
				}
			}
			if got != want {
				t.Errorf("limits %+v, want %+v", got, want)
			}
			found := tc.warn == ""
			for _, d := range diags {
				if d.Severity == "error" {
					t.Errorf("error diagnostic %+v", d)
				}
				if tc.warn != "" && strings.Contains(d.Message, tc.warn) {
					found = true
					if d.Path == ProjectPath(ws) && d.Line == 0 {
						t.Errorf("warning without a position: %+v", d)
					}
				}
			}
			if !found {
				t.Errorf("no diagnostic says %q: %+v", tc.warn, diags)
			}
		})
	}
}

// TestSettingsFileKinds: a settings file that is a FIFO, a link to /dev/zero, a folder, a
// socket, too large, or a link to a FIFO gives a diagnostic at once, for the user's file and
// the workspace's, and the other layers stay.
func TestSettingsFileKinds(t *testing.T) {
	for _, which := range []string{"user", "project"} {
		for _, k := range fsopentest.Kinds(MaxFileBytes) {
			t.Run(which+"/"+k.Name, func(t *testing.T) {
				root := t.TempDir()
				user, ws := filepath.Join(root, "user", "config.json"), filepath.Join(root, "ws")
				other, bad := user, ProjectPath(ws)
				if which == "user" {
					other, bad = bad, other
				}
				writeFile(t, other, `{"retentionDays": 3}`)
				if err := os.MkdirAll(filepath.Dir(bad), 0o755); err != nil {
					t.Fatal(err)
				}
				k.Make(t, bad)
				var l *Layers
				var diags []protocol.Diagnostic
				fsopentest.Promptly(t, 10*time.Second, "loading the settings", func() {
					l, diags = load(paths{user: user, project: ProjectPath(ws)}, nil, nil)
				})
				if len(diags) != 1 || diags[0].Path != bad || diags[0].Severity != "error" || !strings.Contains(diags[0].Message, k.Says) {
					t.Fatalf("diagnostics %+v, want one error on %s saying %q", diags, bad, k.Says)
				}
				if l.Effective.RetentionDays != 3 {
					t.Fatalf("the other layer was lost: %+v", l.Effective)
				}
			})
		}
	}
}

// TestSourceReloadKinds: a FIFO, a link to /dev/zero, ... that replaces the workspace's
// settings while the daemon runs gives a diagnostic and the last good settings stay in force.
func TestSourceReloadKinds(t *testing.T) {
	for _, k := range fsopentest.Kinds(MaxFileBytes) {
		t.Run(k.Name, func(t *testing.T) {
			root := t.TempDir()
			ws := filepath.Join(root, "ws")
			proj := ProjectPath(ws)
			writeFile(t, proj, `{"limits": {"truncateLines": 100}}`)
			diagsCh := make(chan []protocol.Diagnostic, 10)
			s, err := NewSource(SourceOptions{
				Workspace: ws, UserPath: filepath.Join(root, "user.json"), Debounce: 20 * time.Millisecond,
				OnChange: func(_ *Layers, d []protocol.Diagnostic) { diagsCh <- d },
			})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			// Swap it in at once, as a checkout would: make it beside, rename it over. A
			// folder cannot be renamed over a file: the file goes first, and with it the
			// layer.
			keeps := true
			if k.Name == "folder" {
				keeps = false
				if err := os.Remove(proj); err != nil {
					t.Fatal(err)
				}
				k.Make(t, proj)
			} else {
				tmp := filepath.Join(filepath.Dir(proj), "new")
				k.Make(t, tmp)
				if err := os.Rename(tmp, proj); err != nil {
					t.Fatal(err)
				}
			}
			deadline := time.After(10 * time.Second)
			for {
				select {
				case d := <-diagsCh:
					if len(d) == 1 && strings.Contains(d[0].Message, k.Says) && (!keeps || strings.Contains(d[0].Message, "previous settings")) {
						if got := s.Layers().Effective.Limits.TruncateLines; keeps && got != 100 {
							t.Fatalf("the last good settings are gone: truncateLines %d", got)
						}
						return
					}
				case <-deadline:
					t.Fatalf("no diagnostic saying %q within 10s; settings %+v, diagnostics %+v", k.Says, s.Layers().Effective.Limits, s.Diagnostics())
				}
			}
		})
	}
}
