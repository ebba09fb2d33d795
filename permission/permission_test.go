package permission

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/toolsd/toolsd/permission/shell"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestMatch(t *testing.T) {
	tests := []struct {
		pattern, s string
		want       bool
	}{
		{"*", "", true},
		{"*", "anything at all\nwith newline", true},
		{"git status*", "git status", true},
		{"git status*", "git status --short", true},
		{"git status*", "git statusx", true},
		{"git status*", "git stat", false},
		{"git status *", "git status", true},
		{"git status *", "git status -s", true},
		{"git status *", "git statusx", false},
		{"rm *", "rm", true},
		{"rm *", "rmdir x", false},
		{"ls*", "ｌs", false},
		{"ls*", "LS", false},
		{"?s", "ls", true},
		{"?s", "és", true},
		{"?s", "s", false},
		{"*.env", ".env", true},
		{"*.env", "config/prod.env", true},
		{"*.env.*", ".env.local", true},
		{`echo \*`, "echo *", true},
		{`echo \*`, "echo x", false},
		{`a\?`, "a?", true},
		{`a\?`, "ab", false},
		{`a\\b`, `a\b`, true},
		{`C:\dir`, `C:\dir`, true},
		{`a*b*c`, "aXXbYYc", true},
		{`a*b*c`, "aXXbYY", false},
		{"/etc/*", "/etc/passwd", true},
		{"/etc/*", "/etcx/passwd", false},
		{"", "", true},
		{"", "x", false},
	}
	for _, tt := range tests {
		if got := Match(tt.pattern, tt.s); got != tt.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tt.pattern, tt.s, got, tt.want)
		}
	}
}

func TestEscape(t *testing.T) {
	for _, s := range []string{"rm *.o", `a\b`, "x?", `\*`, "plain", "* ", "a *", `tail \`} {
		p := Escape(s)
		if !Match(p, s) {
			t.Errorf("Escape(%q) = %q does not match itself", s, p)
		}
		for _, other := range []string{s + "x", "x" + s, strings.ReplaceAll(s, "*", "zz"), ""} {
			if other != s && Match(p, other) {
				t.Errorf("Escape(%q) = %q matches %q too", s, p, other)
			}
		}
	}
}

// TestRuleString: a rule shows its pattern so that a person sees every character of it, and
// where it ends.
func TestRuleString(t *testing.T) {
	cases := []struct{ pattern, want string }{
		{"", `bash "": deny`},
		{"rm *", `bash "rm *": deny`},
		{`echo "hi"`, `bash "echo \"hi\"": deny`},
		{`a\b`, `bash "a\\b": deny`},
		{"a\nrm *", `bash "a\nrm *": deny`},
		{"echo $HOME !!", `bash "echo $HOME !!": deny`},
		{"café", `bash "café": deny`},
		{"rm\u200b *", `bash "rm\u200b *": deny`}, // an invisible character shows
		{"\xff", `bash "\xff": deny`},
		{"-rf", `bash "-rf": deny`},
		{"~/x", `bash "~/x": deny`},
		{"=x", `bash "=x": deny`},
	}
	for _, tc := range cases {
		if got := (Rule{Permission: "bash", Pattern: tc.pattern, Action: Deny}).String(); got != tc.want {
			t.Errorf("Rule{%q}.String() = %s, want %s", tc.pattern, got, tc.want)
		}
	}
}

func TestDecideLastMatchWins(t *testing.T) {
	rs := Ruleset{
		{Permission: "bash", Pattern: "*", Action: Ask},
		{Permission: "bash", Pattern: "git *", Action: Allow},
		{Permission: "bash", Pattern: "git push *", Action: Deny},
	}
	e, err := NewEngine(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.SetLayer(LayerUser, rs); err != nil {
		t.Fatal(err)
	}
	for pattern, want := range map[string]Action{"git status": Allow, "git push origin": Deny, "ls": Ask} {
		if d := e.Decide(Query{Permission: "bash", Patterns: []string{pattern}}); d.Action != want {
			t.Errorf("%q: %s, want %s", pattern, d.Action, want)
		}
	}
	if d := e.Decide(Query{Permission: "bash", Patterns: []string{"git status", "git push x"}}); d.Action != Deny || d.Pattern != "git push x" {
		t.Errorf("several patterns: %+v, want deny of git push x", d)
	}
	if d := e.Decide(Query{Permission: "webfetch", Patterns: []string{"x"}}); d.Action != Ask || d.Rule != nil && d.Rule.Source != SourceDefault {
		t.Errorf("no written rule: %+v, want ask by the built-in default", d)
	}
}

func TestParseConfig(t *testing.T) {
	t.Setenv("HOME", "/home/u")
	tests := []struct {
		name, raw string
		want      Ruleset
	}{
		{"null", `null`, nil},
		{"all", `"allow"`, Ruleset{{Permission: "*", Pattern: "*", Action: Allow, Source: "user"}}},
		{"keys", `{"edit": "ask", "webfetch": "deny"}`, Ruleset{{Permission: "edit", Pattern: "*", Action: Ask, Source: "user"}, {Permission: "webfetch", Pattern: "*", Action: Deny, Source: "user"}}},
		{"ordered", `{"bash": {"*": "ask", "git status*": "allow", "rm *": "deny", "a": "ask"}}`, Ruleset{
			{Permission: "bash", Pattern: "*", Action: Ask, Source: "user"}, {Permission: "bash", Pattern: "git status*", Action: Allow, Source: "user"}, {Permission: "bash", Pattern: "rm *", Action: Deny, Source: "user"}, {Permission: "bash", Pattern: "a", Action: Ask, Source: "user"},
		}},
		{"reverse order kept", `{"bash": {"z": "allow", "a": "deny"}}`, Ruleset{{Permission: "bash", Pattern: "z", Action: Allow, Source: "user"}, {Permission: "bash", Pattern: "a", Action: Deny, Source: "user"}}},
		{"home", `{"external_directory": {"~/src/*": "allow", "$HOME/x/*": "deny", "${HOME}/y": "ask", "~": "ask"}}`, Ruleset{
			{Permission: "external_directory", Pattern: "/home/u/src/*", Action: Allow, Source: "user"}, {Permission: "external_directory", Pattern: "/home/u/x/*", Action: Deny, Source: "user"},
			{Permission: "external_directory", Pattern: "/home/u/y", Action: Ask, Source: "user"}, {Permission: "external_directory", Pattern: "/home/u", Action: Ask, Source: "user"},
		}},
		{"bash keeps ~", `{"bash": {"ls ~/*": "allow"}}`, Ruleset{{Permission: "bash", Pattern: "ls ~/*", Action: Allow, Source: "user"}}},
		{"mcp key", `{"github_*": "deny"}`, Ruleset{{Permission: "github_*", Pattern: "*", Action: Deny, Source: "user"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseConfig(json.RawMessage(tt.raw), "user")
			if err != nil {
				t.Fatal(err)
			}
			for i := range got {
				if got[i].Line == 0 || got[i].Column == 0 {
					t.Errorf("rule %d has no position: %+v", i, got[i])
				}
				got[i].Line, got[i].Column = 0, 0
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestParseConfigErrors(t *testing.T) {
	tests := []struct{ raw, want string }{
		{`"yes"`, `project: permission: expected "allow", "ask" or "deny", got "yes"`},
		{`42`, `project: permission: expected an action ("allow", "ask", "deny") or an object of permission keys, got the number 42`},
		{`{"bash": true}`, `project: permission.bash: expected "allow", "ask" or "deny" or an object of patterns ({"*": "ask", "git status*": "allow"}), got true`},
		{`{"bash": {"rm *": "nope"}}`, `project: permission.bash["rm *"]: expected "allow", "ask" or "deny", got "nope"`},
		{`{"bash": {"rm *": {"x": "allow"}}}`, `project: permission.bash["rm *"]: expected "allow", "ask" or "deny", got an object (pattern maps do not nest)`},
		{`{"bash": {"": "allow"}}`, `project: permission.bash[""]: a pattern cannot be empty (use "*" for everything)`},
		{`{"": "allow"}`, `project: permission[""]: a permission key cannot be empty`},
		{`{"Bash": "Allow"}`, `project: permission.Bash: expected "allow", "ask" or "deny", got "Allow"`},
		{`{"a.b": 1}`, `project: permission["a.b"]: expected "allow", "ask" or "deny" or an object of patterns ({"*": "ask", "git status*": "allow"}), got the number 1`},
		{`{"bash": "allow"`, `project: permission: the value ends too early`},
		{`"allow" "deny"`, `project: permission: unexpected data after the value`},
		{`{"bash": [1]}`, `project: permission.bash: expected "allow", "ask" or "deny" or an object of patterns ({"*": "ask", "git status*": "allow"}), got an array`},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			_, err := ParseConfig(json.RawMessage(tt.raw), "project")
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want a *ConfigError", err)
			}
			if err.Error() != tt.want {
				t.Fatalf("err = %s\nwant  %s", err, tt.want)
			}
		})
	}
}

// fakeStore is an in-memory ApprovalStore.
type fakeStore struct {
	mu      sync.Mutex
	rules   []Rule
	trusted bool
	fail    error
}

func (f *fakeStore) Approvals() ([]Rule, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Rule(nil), f.rules...), f.fail
}
func (f *fakeStore) AddApprovals(rs []Rule) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return f.fail
	}
	f.rules = append(f.rules, rs...)
	return nil
}
func (f *fakeStore) Trusted() (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.trusted, f.fail
}
func (f *fakeStore) SetTrusted(t bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return f.fail
	}
	f.trusted = t
	return nil
}

func mustParse(t testing.TB, raw, src string) Ruleset {
	t.Helper()
	rs, err := ParseConfig(json.RawMessage(raw), src)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func newEngine(t testing.TB, st ApprovalStore, layers map[string]string) *Engine {
	t.Helper()
	e, err := NewEngine(st)
	if err != nil {
		t.Fatal(err)
	}
	for name, raw := range layers {
		if err := e.SetLayer(name, mustParse(t, raw, "")); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

func TestDefaults(t *testing.T) {
	e := newEngine(t, nil, nil)
	tests := []struct {
		perm, pattern string
		readOnly      bool
		want          Action
	}{
		{"read", "src/a.go", false, Allow},
		{"read", ".env", false, Ask},
		{"read", "config/.env.local", false, Ask},
		{"read", ".env.example", false, Allow},
		{"glob", "*", false, Allow},
		{"grep", "x", false, Allow},
		{"list", "x", false, Allow},
		{"todowrite", "*", false, Allow},
		{"todoread", "*", false, Allow},
		{"edit", "a.go", false, Ask},
		{"bash", "ls", false, Ask},
		{"external_directory", "/etc/*", false, Ask},
		{"doom_loop", "read", false, Ask},
		{"webfetch", "https://x", false, Ask},
		{"my_project_tool", "*", false, Ask},
		{"github_create_issue", "*", false, Ask},
		{"lsp", "*", true, Allow},
		{"read", ".env", true, Ask}, // read-only does not override the .env rule
	}
	for _, tt := range tests {
		d := e.Decide(Query{Permission: tt.perm, Patterns: []string{tt.pattern}, ReadOnly: tt.readOnly})
		if d.Action != tt.want {
			t.Errorf("%s %q (readOnly %v): %s, want %s", tt.perm, tt.pattern, tt.readOnly, d.Action, tt.want)
		}
	}
}

func TestPrecedence(t *testing.T) {
	// Each layer overrides the one below it for the same pattern.
	layers := []string{LayerUser, LayerEditor, LayerProject, "agent:build"}
	actions := []Action{Deny, Allow, Ask, Deny}
	for n := 1; n <= len(layers); n++ {
		t.Run(strings.Join(layers[:n], "<"), func(t *testing.T) {
			e := newEngine(t, &fakeStore{trusted: true}, nil)
			for i := 0; i < n; i++ {
				_ = e.SetLayer(layers[i], Ruleset{{Permission: "bash", Pattern: "make *", Action: actions[i]}})
			}
			d := e.Decide(Query{Agent: "build", Permission: "bash", Patterns: []string{"make test"}})
			if d.Action != actions[n-1] || d.Rule == nil || d.Rule.Source != layers[n-1] {
				t.Fatalf("decision %+v, want %s from %s", d, actions[n-1], layers[n-1])
			}
		})
	}
	// The agent layer applies only to its agent.
	e := newEngine(t, nil, map[string]string{"agent:plan": `{"edit": "deny"}`})
	if d := e.Decide(Query{Agent: "build", Permission: "edit", Patterns: []string{"a"}}); d.Action != Ask {
		t.Errorf("other agent: %s, want ask", d.Action)
	}
	if d := e.Decide(Query{Agent: "plan", Permission: "edit", Patterns: []string{"a"}}); d.Action != Deny {
		t.Errorf("plan agent: %s, want deny", d.Action)
	}
	// A later, more general rule wins over an earlier specific one (order, not specificity).
	e = newEngine(t, nil, map[string]string{LayerUser: `{"bash": {"git status*": "allow", "*": "ask"}}`})
	if d := e.Decide(Query{Permission: "bash", Patterns: []string{"git status"}}); d.Action != Ask {
		t.Errorf("later general rule: %s, want ask", d.Action)
	}
	if err := e.SetLayer("nope", nil); !errors.Is(err, ErrLayer) {
		t.Errorf("SetLayer(nope) = %v, want ErrLayer", err)
	}
	if err := e.SetLayer("agent:", nil); !errors.Is(err, ErrLayer) {
		t.Errorf("SetLayer(agent:) = %v, want ErrLayer", err)
	}
}

func TestRememberedAnswers(t *testing.T) {
	st := &fakeStore{}
	e := newEngine(t, st, map[string]string{LayerUser: `{"bash": {"git push --force*": "deny"}}`})
	q := func(sid, p string) Action {
		return e.Decide(Query{SessionID: sid, Permission: "bash", Patterns: []string{p}}).Action
	}
	if err := e.Remember("s1", "bash", []string{"git push *"}, ""); err != nil {
		t.Fatal(err)
	}
	if got := q("s1", "git push origin"); got != Allow {
		t.Errorf("session answer: %s, want allow", got)
	}
	if got := q("s2", "git push origin"); got != Ask {
		t.Errorf("other session: %s, want ask", got)
	}
	if got := q("s1", "git push --force"); got != Deny {
		t.Errorf("remembered answer undid a deny: %s", got)
	}
	if len(st.rules) != 0 {
		t.Errorf("a session answer reached the store: %+v", st.rules)
	}
	// Workspace answers persist and load in the next engine.
	if err := e.Remember("", "bash", []string{"make *", "make *"}, ""); err != nil {
		t.Fatal(err)
	}
	if err := e.Remember("", "bash", []string{"make *"}, ""); err != nil {
		t.Fatal(err)
	}
	if len(st.rules) != 1 {
		t.Fatalf("store holds %+v, want one rule (duplicates skipped)", st.rules)
	}
	e2 := newEngine(t, st, nil)
	if d := e2.Decide(Query{SessionID: "new", Permission: "bash", Patterns: []string{"make test"}}); d.Action != Allow || d.Rule.Source != SourceWorkspace {
		t.Errorf("next daemon: %+v, want allow from workspace", d)
	}
	// Opaque text is never allowed by an answer or a rule.
	_ = e.Remember("s1", "bash", []string{"*"}, "")
	if d := e.Decide(Query{SessionID: "s1", Permission: "bash", Patterns: []string{"eval x"}, Opaque: true}); d.Action != Ask {
		t.Errorf("opaque: %s, want ask", d.Action)
	}
	e.EndSession("s1")
	if got := q("s1", "git push origin"); got != Ask {
		t.Errorf("after EndSession: %s, want ask", got)
	}
	// A failing store fails Remember and keeps nothing.
	st.fail = errors.New("disk full")
	if err := e.Remember("", "bash", []string{"go *"}, ""); err == nil {
		t.Error("Remember with a failing store: no error")
	}
	if got := q("x", "go test"); got != Ask {
		t.Errorf("failed remember still allows: %s", got)
	}
}

func TestOpaqueDenyStillDenies(t *testing.T) {
	e := newEngine(t, nil, map[string]string{LayerUser: `{"bash": {"*": "allow", "eval *": "deny"}}`})
	if d := e.Decide(Query{Permission: "bash", Patterns: []string{"eval x"}, Opaque: true}); d.Action != Deny {
		t.Errorf("opaque under deny: %s", d.Action)
	}
	if d := e.Decide(Query{Permission: "bash", Patterns: []string{"$X y"}, Opaque: true}); d.Action != Ask || d.Rule != nil {
		t.Errorf("opaque under allow-all: %+v, want ask", d)
	}
}

func TestTrust(t *testing.T) {
	st := &fakeStore{}
	e := newEngine(t, st, map[string]string{
		LayerUser:    `{"bash": {"git *": "allow", "curl *": "deny"}}`,
		LayerProject: `{"bash": {"*": "allow", "git push*": "ask", "curl *": "ask", "rm *": "deny"}, "webfetch": "allow"}`,
	})
	q := func(p string) Decision { return e.Decide(Query{Permission: "bash", Patterns: []string{p}}) }
	if e.Trusted() {
		t.Fatal("a new workspace is trusted")
	}
	// Untrusted: allows ignored, stricter rules kept.
	if d := q("make"); d.Action != Ask || d.Untrusted == nil || d.Untrusted.Pattern != "*" {
		t.Errorf("untrusted project allow: %+v, want ask reporting the ignored rule", d)
	}
	if d := q("git push origin"); d.Action != Ask || d.Rule.Source != LayerProject {
		t.Errorf("untrusted project tightening: %+v, want ask from project", d)
	}
	if d := q("git status"); d.Action != Allow || d.Untrusted != nil {
		t.Errorf("user allow under untrusted project: %+v", d)
	}
	if d := q("curl x"); d.Action != Deny {
		t.Errorf("untrusted project loosened a deny to ask: %+v", d)
	}
	if d := q("rm x"); d.Action != Deny || d.Rule.Source != LayerProject {
		t.Errorf("untrusted project deny: %+v", d)
	}
	if got := len(e.UntrustedAllows()); got != 2 {
		t.Errorf("UntrustedAllows has %d rules, want 2", got)
	}
	if d := e.Decide(Query{Permission: "webfetch", Patterns: []string{"https://x"}}); d.Action != Ask || d.Untrusted == nil {
		t.Errorf("untrusted webfetch allow: %+v", d)
	}
	// Trusted: the project layer takes its place in the order.
	if err := e.SetTrusted(true); err != nil {
		t.Fatal(err)
	}
	if !st.trusted {
		t.Error("trust not persisted")
	}
	if d := q("make"); d.Action != Allow {
		t.Errorf("trusted project allow: %+v", d)
	}
	if d := q("curl x"); d.Action != Ask {
		t.Errorf("trusted project ask after user deny: %+v, want ask (later layer wins)", d)
	}
	if e.UntrustedAllows() != nil {
		t.Error("UntrustedAllows while trusted")
	}
	// An agent's rules from the project config are the project's too.
	e3 := newEngine(t, &fakeStore{}, map[string]string{"project-agent:build": `{"bash": {"*": "allow", "rm *": "deny"}}`})
	if d := e3.Decide(Query{Agent: "build", Permission: "bash", Patterns: []string{"make"}}); d.Action != Ask || d.Untrusted == nil {
		t.Errorf("untrusted project agent allow: %+v", d)
	}
	if d := e3.Decide(Query{Agent: "build", Permission: "bash", Patterns: []string{"rm x"}}); d.Action != Deny {
		t.Errorf("untrusted project agent deny: %+v", d)
	}
	if got := len(e3.UntrustedAllows()); got != 1 {
		t.Errorf("UntrustedAllows with a project agent: %d rules, want 1", got)
	}
	_ = e3.SetTrusted(true)
	if d := e3.Decide(Query{Agent: "build", Permission: "bash", Patterns: []string{"make"}}); d.Action != Allow {
		t.Errorf("trusted project agent allow: %+v", d)
	}
	// The next engine loads the trust.
	if e2 := newEngine(t, st, nil); !e2.Trusted() {
		t.Error("trust not loaded")
	}
	st.fail = errors.New("io")
	if err := e.SetTrusted(false); err == nil || !e.Trusted() {
		t.Errorf("SetTrusted with failing store: err %v, trusted %v", err, e.Trusted())
	}
	if _, err := NewEngine(st); err == nil {
		t.Error("NewEngine with failing store: no error")
	}
}

func TestHidden(t *testing.T) {
	tests := []struct {
		name    string
		layers  map[string]string
		trusted bool
		perm    string
		agent   string
		want    bool
	}{
		{"default", nil, false, "bash", "", false},
		{"deny all", map[string]string{LayerUser: `{"bash": "deny"}`}, false, "bash", "", true},
		{"deny then allow one", map[string]string{LayerUser: `{"bash": {"*": "deny", "git status*": "allow"}}`}, false, "bash", "", false},
		{"later allow layer", map[string]string{LayerUser: `{"webfetch": "deny"}`, LayerEditor: `{"webfetch": "allow"}`}, false, "webfetch", "", false},
		{"global deny", map[string]string{LayerUser: `"deny"`}, false, "read", "", true},
		{"wildcard key", map[string]string{LayerUser: `{"github_*": "deny"}`}, false, "github_create_issue", "", true},
		{"agent", map[string]string{"agent:plan": `{"edit": "deny"}`}, false, "edit", "plan", true},
		{"other agent", map[string]string{"agent:plan": `{"edit": "deny"}`}, false, "edit", "build", false},
		{"untrusted project deny hides", map[string]string{LayerProject: `{"bash": "deny"}`}, false, "bash", "", true},
		{"untrusted project cannot unhide", map[string]string{LayerUser: `{"bash": "deny"}`, LayerProject: `{"bash": "allow"}`}, false, "bash", "", true},
		{"untrusted project agent cannot unhide", map[string]string{LayerUser: `{"bash": "deny"}`, "project-agent:b": `{"bash": "allow"}`}, false, "bash", "b", true},
		{"untrusted project agent hides", map[string]string{"project-agent:b": `{"bash": "deny"}`}, false, "bash", "b", true},
		{"trusted project unhides", map[string]string{LayerUser: `{"bash": "deny"}`, LayerProject: `{"bash": "allow"}`}, true, "bash", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEngine(t, &fakeStore{trusted: tt.trusted}, tt.layers)
			if got := e.Hidden(tt.perm, tt.agent); got != tt.want {
				t.Fatalf("Hidden(%s, %q) = %v, want %v", tt.perm, tt.agent, got, tt.want)
			}
		})
	}
}

// TestHiddenFollowsChanges: Hidden's answers are kept, but a change of a layer or of the
// trust is seen at once, and agents are kept apart.
func TestHiddenFollowsChanges(t *testing.T) {
	e := newEngine(t, &fakeStore{}, nil)
	want := func(agent string, hidden bool, when string) {
		t.Helper()
		for range 2 { // computed, then from the cache
			if got := e.Hidden("bash", agent); got != hidden {
				t.Fatalf("%s: Hidden(bash, %q) = %v, want %v", when, agent, got, hidden)
			}
		}
	}
	want("", false, "at first")
	if err := e.SetLayer(LayerUser, mustParse(t, `{"bash": "deny"}`, "")); err != nil {
		t.Fatal(err)
	}
	want("", true, "after a user deny")
	if err := e.SetLayer(LayerProject, mustParse(t, `{"bash": "allow"}`, "")); err != nil {
		t.Fatal(err)
	}
	want("", true, "untrusted project allow")
	if err := e.SetTrusted(true); err != nil {
		t.Fatal(err)
	}
	want("", false, "once trusted")
	if err := e.SetLayer(LayerAgentPrefix+"plan", mustParse(t, `{"bash": "deny"}`, "")); err != nil {
		t.Fatal(err)
	}
	want("plan", true, "agent plan")
	want("build", false, "agent build")
	if err := e.SetLayer(LayerAgentPrefix+"plan", nil); err != nil {
		t.Fatal(err)
	}
	want("plan", false, "agent plan's layer removed")
}

func TestObserveDoomLoop(t *testing.T) {
	e := newEngine(t, nil, nil)
	seq := []struct {
		sid, tool, args string
		want            bool
	}{
		{"s", "read", `{"filePath":"a","offset":1}`, false},
		{"s", "read", `{"offset":1, "filePath":"a"}`, false},
		{"s", "read", ` { "filePath" : "a" , "offset" : 1 } `, true},
		{"s", "read", `{"filePath":"a","offset":1}`, true},
		{"t", "read", `{"filePath":"a","offset":1}`, false}, // other session
		{"s", "read", `{"filePath":"b"}`, false},
		{"s", "grep", `{"filePath":"b"}`, false},
		{"s", "grep", `{"filePath":"b"}`, false},
		{"s", "grep", `not json`, false},
		{"s", "grep", `not json`, false},
		{"s", "grep", `not json`, true},
		{"s", "grep", `{"n":1.0}`, false},
		{"s", "grep", `{"n":1}`, false}, // 1.0 and 1 are different texts
	}
	for i, c := range seq {
		if got := e.Observe(c.sid, c.tool, []byte(c.args)); got != c.want {
			t.Fatalf("step %d (%s %s): loop %v, want %v", i, c.tool, c.args, got, c.want)
		}
	}
}

func TestTexts(t *testing.T) {
	q := Query{Tool: "bash", Permission: "bash", Patterns: []string{"rm -rf x"}}
	r := &Rule{Permission: "bash", Pattern: "rm *", Action: Deny, Source: LayerProject}
	for _, tt := range []struct{ got, want string }{
		{DeniedText(r, q), `permission denied by rule "rm *: deny" (project config .toolsd/config.json): bash "rm -rf x" is not allowed, so nothing ran. Do not retry`},
		{DeniedText(nil, q), `permission denied by a rule: bash "rm -rf x"`},
		{RejectedText("use trash instead", q), `the user rejected bash "rm -rf x", so nothing ran. Their message: "use trash instead". Follow it`},
		{RejectedText("  ", q), `They gave no reason: do not retry it; stop and ask the user`},
		{NoUIText(q), `no one was there to approve bash "rm -rf x" (the editor cannot show permission asks), so nothing ran. Ask the user to allow it in the editor or in toolsd config (.toolsd/config.json or the user config, e.g. {"permission": {"bash": {"rm -rf x": "allow"}}})`},
		{NoUIText(Query{Permission: "webfetch"}), `e.g. {"permission": {"webfetch": "allow"}}`},
		{DeniedText(r, Query{Permission: "bash", Patterns: []string{"git status", "rm -rf x"}}), `(project config .toolsd/config.json): bash "rm -rf x" is not allowed`},
		{NoUIText(Query{Permission: "bash", Patterns: []string{"make", "rm *.o"}}), `e.g. {"permission": {"bash": {"make": "allow", "rm \\*.o": "allow"}}}`},
		{NoUIText(Query{Permission: "bash", Patterns: []string{"eval x"}, Opaque: true}), `shell features the permission check does not follow`},
		{DoomLoopText("read"), "read was called 3 times in a row with the same arguments"},
	} {
		if !strings.Contains(tt.got, tt.want) {
			t.Errorf("text\n%s\ndoes not contain\n%s", tt.got, tt.want)
		}
	}
	many := Query{Permission: "edit", Patterns: []string{"a", "b", "c", "d", "e", "f", "g"}}
	if s := RejectedText("", many); !strings.Contains(s, `"e", and 2 more`) {
		t.Errorf("long pattern list: %s", s)
	}
}

func TestShellRequests(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	outside, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// A symlink inside the workspace that leads outside.
	if err := os.Symlink(outside, filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(ws, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	home := "/home/u"
	tests := []struct {
		script string
		want   []Request
	}{
		{"git status --short", []Request{{Permission: "bash", Patterns: []string{"git status --short"}, Always: []string{"git status --short", "git status *"}}}},
		{"ls > out.txt", []Request{
			{Permission: "edit", Patterns: []string{"out.txt"}, Always: []string{"out.txt"}},
			{Permission: "bash", Patterns: []string{"ls"}, Always: []string{"ls", "ls *"}},
		}},
		{"cat link/secret", []Request{
			{Permission: "external_directory", Patterns: []string{outside + "/*"}, Always: []string{outside + "/*"}},
			{Permission: "bash", Patterns: []string{"cat link/secret"}, Always: []string{"cat link/secret", "cat *"}},
		}},
		{"cat */secret", []Request{ // the glob matches the link too
			{Permission: "external_directory", Patterns: []string{outside + "/*"}, Always: []string{outside + "/*"}},
			{Permission: "bash", Patterns: []string{"cat */secret"}, Always: []string{`cat \*/secret`, "cat *"}},
		}},
		{"cat ~/x .*/y", []Request{
			{Permission: "external_directory", Patterns: []string{"/home/u/*", filepath.Dir(ws) + "/*"}, Always: []string{"/home/u/*", filepath.Dir(ws) + "/*"}},
			{Permission: "bash", Patterns: []string{"cat ~/x .*/y"}, Always: []string{`cat ~/x .\*/y`, "cat *"}},
		}},
		{"cd sub && echo > f", []Request{ // && runs echo in sub only
			{Permission: "edit", Patterns: []string{"sub/f"}, Always: []string{"sub/f"}},
			{Permission: "bash", Patterns: []string{"cd sub", "echo"}, Always: []string{"cd sub", "cd *", "echo", "echo *"}},
		}},
		{"rm $f; eval x", []Request{ // one ask for the whole line: $f says nothing more
			{Permission: "bash", Patterns: []string{"rm $f", "eval x", "x", "rm $f; eval x"}, Opaque: true, Reasons: []string{"eval runs text as code"}},
		}},
		{"cd link/.. && cat secret", []Request{ // bash's logical cd: back in the workspace
			{Permission: "bash", Patterns: []string{"cd link/..", "cat secret"}, Always: []string{"cd link/..", "cd *", "cat secret", "cat *"}},
		}},
		{"cat link/../secret", []Request{ // the kernel: .. from where link leads
			{Permission: "external_directory", Patterns: []string{filepath.Dir(outside) + "/*"}, Always: []string{filepath.Dir(outside) + "/*"}},
			{Permission: "bash", Patterns: []string{"cat link/../secret"}, Always: []string{"cat link/../secret", "cat *"}},
		}},
		{"ln -s .. up && cat up/x", []Request{ // a link made in the line, from its own folder
			{Permission: "external_directory", Patterns: []string{filepath.Dir(ws) + "/*"}, Always: []string{filepath.Dir(ws) + "/*"}},
			{Permission: "bash", Patterns: []string{"ln -s .. up", "cat up/x"}, Always: []string{"ln -s .. up", "cat up/x", "cat *"}},
		}},
		{"x=1", nil},
	}
	for _, tt := range tests {
		t.Run(tt.script, func(t *testing.T) {
			got := ShellRequests(shell.Analyze(tt.script), ws, ws, home)
			if !reflect.DeepEqual(got, tt.want) {
				a, _ := json.MarshalIndent(got, "", " ")
				b, _ := json.MarshalIndent(tt.want, "", " ")
				t.Fatalf("got %s\nwant %s", a, b)
			}
		})
	}
}

func TestEngineConcurrentUse(t *testing.T) {
	e := newEngine(t, &fakeStore{}, map[string]string{LayerUser: `{"bash": {"git *": "allow"}}`})
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 200; j++ {
				sid := string(rune('a' + j%3))
				_ = e.Remember(sid, "bash", []string{"make *"}, "")
				_ = e.Remember("", "bash", []string{"go *"}, "")
				e.Decide(Query{SessionID: sid, Permission: "bash", Patterns: []string{"make x", "git status", "rm x"}})
				e.Observe(sid, "read", []byte(`{"a":1}`))
				_ = e.SetLayer(LayerEditor, Ruleset{{Permission: "edit", Pattern: "*", Action: Allow}})
				_ = e.SetTrusted(j%2 == 0)
				e.Hidden("bash", "")
				e.UntrustedAllows()
				if j%50 == 0 {
					e.EndSession(sid)
				}
			}
		}()
	}
	wg.Wait()
	if d := e.Decide(Query{SessionID: "x", Permission: "bash", Patterns: []string{"go test"}}); d.Action != Allow {
		t.Fatalf("workspace answer lost: %+v", d)
	}
	_, ws := e.Remembered("x")
	if len(ws) != 1 {
		t.Fatalf("workspace answers %+v, want one", ws)
	}
}

// The shell package escapes exact patterns the way Escape does, so an exact "always" matches
// its command alone.
func TestShellAlwaysExactIsEscaped(t *testing.T) {
	for _, line := range []string{"rm *.o", `echo \\*`, "ls ?", "git log --format=%h*", "echo a\\\\b", "rm -rf /tmp/x"} {
		for _, c := range shell.Analyze(line).Commands {
			if c.Always[0] != Escape(c.Text) {
				t.Errorf("%q: exact always %q, want %q", line, c.Always[0], Escape(c.Text))
			}
			if !Match(c.Always[0], c.Text) || Match(c.Always[0], c.Text+" -rf /") {
				t.Errorf("%q: exact always %q matches wrongly", line, c.Always[0])
			}
		}
	}
}
