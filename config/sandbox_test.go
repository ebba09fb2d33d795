package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSandboxBadInput: a sandbox section with an unknown key, an impossible path or a bad
// domain is an error at its position, and the last good sandbox settings of the file stay
// in force; never a half-read section that leaves a tool less confined.
func TestSandboxBadInput(t *testing.T) {
	dir := t.TempDir()
	user := filepath.Join(dir, "config.json")
	ws := t.TempDir()
	write := func(s string) {
		if err := os.WriteFile(user, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"sandbox": {"write": ["~/scratch"], "network": {"allow": ["proxy.golang.org"]}}}`)
	good, diags := load(paths{user: user, project: ProjectPath(ws)}, nil, nil)
	if len(diags) != 0 {
		t.Fatalf("good settings: %v", diags)
	}
	for _, tc := range []struct {
		name, text, want string
		line, col        int
	}{
		{"unknown key", "{\"sandbox\": {\n  \"enabeld\": false}}", `unknown setting "enabeld"`, 2, 3},
		{"relative path", "{\"sandbox\": {\"write\": [\n  \"scratch\"]}}", `"scratch" is not a path`, 2, 3},
		{"bad domain", "{\"sandbox\": {\"network\": {\"allow\": [\"http://x.com/\"]}}}", "sandbox.network.allow[0]", 1, 36},
		{"bad mode", "{\"sandbox\": {\"mode\": \"off\"}}", `sandbox.mode must be`, 1, 22},
		{"unknown key in a server's sandbox", "{\"mcp\": {\"s\": {\"command\": [\"x\"], \"sandbox\": {\"enable\": false}}}}", `unknown setting "enable"`, 1, 46},
	} {
		t.Run(tc.name, func(t *testing.T) {
			write(tc.text)
			l, diags := load(paths{user: user, project: ProjectPath(ws)}, nil, good)
			var found bool
			for _, d := range diags {
				if strings.Contains(d.Message, tc.want) {
					found = true
					if d.Severity != "error" || d.Line != tc.line || d.Column != tc.col {
						t.Errorf("diagnostic %+v: want an error at %d:%d", d, tc.line, tc.col)
					}
					if !strings.Contains(d.Message, "previous sandbox settings") {
						t.Errorf("diagnostic %q does not say the last good settings stay", d.Message)
					}
				}
			}
			if !found {
				t.Fatalf("no diagnostic %q in %v", tc.want, diags)
			}
			s := l.Effective.Sandbox
			if s.Enabled != nil && !*s.Enabled {
				t.Error("a bad section turned the sandbox off")
			}
			if len(s.Write) != 1 || s.Write[0] != "~/scratch" || s.Network == nil || s.Network.Allow[0] != "proxy.golang.org" {
				t.Errorf("the last good sandbox settings are not in force: %+v", s)
			}
		})
	}
	// Turning it off is a warning at the setting.
	write("{\"sandbox\": {\"enabled\": false}}")
	_, diags = load(paths{user: user, project: ProjectPath(ws)}, nil, good)
	if len(diags) != 1 || diags[0].Severity != "warning" || !strings.Contains(diags[0].Message, "outside the sandbox") || diags[0].Line != 1 {
		t.Errorf("turning the sandbox off: %v", diags)
	}
}
