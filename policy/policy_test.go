package policy

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/toolsd/toolsd/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var update = flag.Bool("update", false, "rewrite the golden files")

// env is a workspace with every layer: the managed policy (needs root to own it), the
// user's config (v1 syntax, with an agent), the project's (v2 syntax), and a store with
// remembered answers and trust.
type env struct {
	ws, home, managed, storePath string
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func newEnv(t *testing.T, trusted bool) *env {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the managed policy must be owned by root: run as root")
	}
	root := t.TempDir()
	e := &env{ws: filepath.Join(root, "ws"), home: filepath.Join(root, "home"), managed: filepath.Join(root, "etc", "toolsd")}
	t.Setenv("HOME", e.home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(e.home, ".config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(e.home, ".local", "state"))
	write(t, filepath.Join(e.managed, "config.json"), `{
  "permission": {
    "bash": {"git push --force*": "deny", "curl *": "ask"},
    "webfetch": {"https://internal.example/*": "deny"}
  }
}
`)
	write(t, filepath.Join(e.home, ".config", "toolsd", "config.json"), `{
  "permission": {
    "bash": {"*": "ask", "git *": "allow", "git push *": "ask", "rm *": "deny", "curl *": "allow", "sed *": "allow"},
    "read": {"*.pem": "deny"},
    "webfetch": {"https://*": "allow"}
  },
  "agents": {
    "review": {"permission": {"edit": "deny", "bash": {"go test *": "allow"}}}
  }
}
`)
	write(t, filepath.Join(e.ws, ".toolsd", "config.json"), `{
  "permissions": [
    {"action": "shell", "resource": "make *", "effect": "allow"},
    {"action": "shell", "resource": "make deploy*", "effect": "deny"},
    {"action": "edit", "resource": "docs/*", "effect": "allow"},
    {"action": "edit", "resource": "*.lock", "effect": "deny"},
    {"action": "deploy", "resource": "*", "effect": "ask"}
  ]
}
`)
	write(t, filepath.Join(e.ws, "src", "main.go"), "package main\n")
	write(t, filepath.Join(e.ws, "docs", "intro.md"), "# hi\n")
	ws, err := filepath.EvalSymlinks(e.ws)
	if err != nil {
		t.Fatal(err)
	}
	e.ws = ws
	e.storePath = store.DefaultPath(e.ws)
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	st, err := store.Open(e.storePath, &store.Options{Retention: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.AddApprovals([]store.Approval{
		{Permission: "bash", Pattern: "npm test *", At: at, By: "Visual Studio Code"},
		{Permission: "bash", Pattern: "git push --force *", At: at, By: "Visual Studio Code"},
		{Permission: "bash", Pattern: "curl *", At: at, By: "Visual Studio Code"},
	}); err != nil {
		t.Fatal(err)
	}
	if err := st.SetTrusted(trusted); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb, e.managed)
	return e.clean(out.String()), e.clean(errb.String()), code
}

func (e *env) clean(s string) string {
	return strings.NewReplacer(e.ws, "$WS", e.home, "$HOME", e.managed, "$MANAGED").Replace(s)
}

// checkCalls are 30 calls across every layer and kind of decision.
var checkCalls = [][]string{
	{"bash", "git status"},                          // user allow
	{"bash", "git push origin main"},                // user ask
	{"bash", "git push --force origin main"},        // managed deny beats a remembered answer
	{"bash", "curl https://example.com"},            // managed ask beats user allow and a remembered answer
	{"bash", "npm test -- --watch=false"},           // remembered answer
	{"bash", "npm publish"},                         // user catch-all ask
	{"bash", "rm -rf build"},                        // user deny
	{"bash", "make build"},                          // project v2 allow (trusted)
	{"bash", "make deploy-prod"},                    // project v2 deny
	{"bash", "git -c core.pager=id log"},            // wildcard rule outside the safe grammar
	{"bash", "eval \"$CMD\""},                       // opaque
	{"bash", "for f in *.go; do gofmt -l $f; done"}, // opaque: control flow
	{"bash", "git status && rm -rf /"},              // the worst of a line
	{"bash", "cat /etc/hostname"},                   // external_directory
	{"bash", "echo hi > notes.txt"},                 // a write: edit
	{"read", "src/main.go"},                         // built-in default allow
	{"read", ".env"},                                // built-in default ask
	{"read", "certs/server.pem"},                    // user deny
	{"read", "/etc/hostname"},                       // external_directory
	{"edit", "docs/intro.md"},                       // project allow
	{"edit", "go.lock"},                             // project deny
	{"edit", "src/main.go"},                         // default ask
	{"write", "src/new.go"},                         // default ask, write asks under edit
	{"list", "src"},                                 // default allow
	{"glob", "**/*.go"},                             // default allow
	{"grep", "TODO"},                                // default allow
	{"webfetch", "https://internal.example/wiki"},   // managed deny
	{"webfetch", "https://go.dev/doc"},              // user allow
	{"deploy"},                                      // a project tool: its own key
	{"--agent", "review", "edit", "src/main.go"},    // the agent's rule
}

func TestCheckGolden(t *testing.T) {
	e := newEnv(t, true)
	var all strings.Builder
	if len(checkCalls) != 30 {
		t.Fatalf("%d calls, want 30", len(checkCalls))
	}
	for _, c := range checkCalls {
		args := append([]string{"check", "--workspace", e.ws}, c...)
		out, errOut, code := e.run(t, args...)
		if code != 0 || errOut != "" {
			t.Fatalf("%v: exit %d, stderr %s", c, code, errOut)
		}
		all.WriteString("$ toolsd policy check " + strings.Join(c, " ") + "\n" + out + "\n")
	}
	golden(t, "check.golden", all.String())
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./policy -update)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s:\n%s", path, got)
	}
}

func TestCheckJSON(t *testing.T) {
	e := newEnv(t, true)
	out, _, code := e.run(t, "check", "--workspace", e.ws, "--json", `{"tool": "bash", "args": {"command": "git push --force"}}`)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var res Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if res.Action != "deny" || len(res.Requests) != 1 {
		t.Fatalf("%+v", res)
	}
	p := res.Requests[0].Provenance
	if p.Kind != "rule" || p.Layer != "managed" || p.File != "$MANAGED/config.json" || p.Line != 3 || p.Column != 14 || p.Rule != `bash "git push --force*": deny` {
		t.Errorf("provenance %+v", p)
	}
}

// TestCheckLockedStore: while a daemon holds the store, check says it could not read the
// remembered answers, and decides without them.
func TestCheckLockedStore(t *testing.T) {
	e := newEnv(t, true)
	st, err := store.Open(e.storePath, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	out, _, code := e.run(t, "check", "--workspace", e.ws, "bash", "npm test -- --watch=false")
	if code != 0 || !strings.Contains(out, "npm test -- --watch=false: ask") || !strings.Contains(out, "a running toolsd holds the store") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

func TestCheckUntrusted(t *testing.T) {
	e := newEnv(t, false)
	out, _, _ := e.run(t, "check", "--workspace", e.ws, "bash", "make build")
	if !strings.Contains(out, "make build: ask") || !strings.Contains(out, `the project rule bash "make *": allow would allow it once the workspace is trusted`) || !strings.Contains(out, "not trusted") {
		t.Errorf("untrusted:\n%s", out)
	}
	// A project deny tightens while untrusted.
	if out, _, _ := e.run(t, "check", "--workspace", e.ws, "bash", "make deploy-prod"); !strings.Contains(out, "make deploy-prod: deny") {
		t.Errorf("untrusted deny:\n%s", out)
	}
}

func TestCommandLine(t *testing.T) {
	e := newEnv(t, true)
	for _, c := range []struct {
		args []string
		code int
		err  string
	}{
		{nil, 2, "Usage: toolsd policy check"},
		{[]string{"nope"}, 2, `unknown command "nope"`},
		{[]string{"check", "--workspace", e.ws}, 2, "give a call"},
		{[]string{"check", "--workspace", e.ws, "bash"}, 2, "bash needs its command"},
		{[]string{"check", "--workspace", e.ws, `{"tool": "bash", "arg": {}}`}, 2, "unknown field"},
		{[]string{"check", "--workspace", "/no/such/folder", "read", "x"}, 2, "workspace"},
		{[]string{"test", "--workspace", e.ws, "extra"}, 2, `unexpected argument "extra"`},
	} {
		_, errOut, code := e.run(t, c.args...)
		if code != c.code || !strings.Contains(errOut, c.err) {
			t.Errorf("%v: exit %d, stderr %s", c.args, code, errOut)
		}
	}
}

// TestPolicyTest: examples that hold pass; each one that does not is listed with where it
// is written, and the exit code is 1.
func TestPolicyTest(t *testing.T) {
	e := newEnv(t, false)
	out, _, code := e.run(t, "test", "--workspace", e.ws)
	if code != 0 || !strings.Contains(out, "no examples are declared") {
		t.Errorf("without examples: exit %d\n%s", code, out)
	}
	write(t, filepath.Join(e.ws, ".toolsd", "config.json"), `{
  "permissions": [
    {"action": "shell", "resource": "make *", "effect": "allow"},
    {"action": "edit", "resource": "*.lock", "effect": "deny"}
  ],
  "examples": {
    "allow": ["bash make build", "read src/main.go", "bash git status", "bash curl https://example.com"],
    "ask": ["bash git push origin", "edit src/main.go"],
    "deny": ["bash git push --force", "edit go.lock", {"tool": "bash", "args": {"command": "rm -rf /"}}, "read .env"]
  },
  "agents": {"review": {"examples": {"deny": ["edit src/main.go"], "allow": ["edit docs/intro.md"]}}}
}
`)
	out, _, code = e.run(t, "test", "--workspace", e.ws)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	golden(t, "test.golden", out)

	// All as declared: exit 0.
	write(t, filepath.Join(e.ws, ".toolsd", "config.json"), `{"examples": {"allow": ["bash git status"], "deny": ["bash rm -rf x"], "ask": ["bash curl https://x"]}}`)
	out, _, code = e.run(t, "test", "--workspace", e.ws, "--json")
	var res struct {
		Examples int
		Failures []any
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 0 || res.Examples != 3 || len(res.Failures) != 0 {
		t.Errorf("exit %d, %+v, %v\n%s", code, res, err, out)
	}
	// A broken rule file fails the test too.
	write(t, filepath.Join(e.ws, ".toolsd", "config.json"), `{"permission": {"bash": "yes"}, "permissions": []}`)
	out, _, code = e.run(t, "test", "--workspace", e.ws)
	if code != 1 || !strings.Contains(out, "both set") {
		t.Errorf("mixed syntaxes: exit %d\n%s", code, out)
	}
}
