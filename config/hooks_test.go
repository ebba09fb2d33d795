package config

import (
	"strings"
	"testing"
)

// A layer's hooks: where each is written, and what a wrong setting does (the hook runs the
// stricter way, or not at all when it has nothing to run).
func TestHooks(t *testing.T) {
	data := `{
  "hooks": {
    "before": [
      {"name": "guard", "match": "Bash", "if": "bash(git push *)", "command": ["python3", "guard.py"], "onFailure": "fail-closed"},
      {"command": []},
      {"command": ["x"], "onFailure": "closed", "if": "bash(", "timeout": 9000}
    ],
    "definition": [{"command": ["d"], "if": "bash(*)"}],
    "after": [{"command": ["f"], "sandbox": {"write": ["relative/dir"]}}],
    "permission": [{"command": ["p"], "sandbox": {"enabled": false}}]
  }
}`
	l, diags := Parse(SourceUser, "/u/config.json", []byte(data))
	if l == nil {
		t.Fatal(diags)
	}
	h := l.Settings.Hooks
	if len(h.Before) != 2 || h.Before[0].Name != "guard" || h.Before[1].Command[0] != "x" {
		t.Fatalf("before: %+v", h.Before)
	}
	if at := l.HooksAt["before"]; len(at) != 2 || at[0] != (HookAt{Line: 4, Column: 7}) || at[1] != (HookAt{Line: 6, Column: 7}) {
		t.Fatalf("positions: %+v", l.HooksAt)
	}
	if x := h.Before[1]; x.OnFailure != "fail-closed" || x.If != "" || x.Timeout != maxHookTimeout {
		t.Fatalf("the stricter way: %+v", x)
	}
	if h.Definition[0].If != "" || h.After[0].Sandbox != nil || h.Permission[0].Sandbox == nil {
		t.Fatalf("if and sandbox: %+v", h)
	}
	want := []string{
		"hooks.before[1] needs a \"command\"",
		"hooks.before[2].onFailure must be",
		"hooks.before[2].timeout 9000 is above",
		"hooks.before[2].if \"bash(\" is not a rule pattern",
		"hooks.definition[0].if is ignored",
		"hooks.after[0].sandbox.write[0] \"relative/dir\" is not a path",
		"hooks.permission[0].sandbox.enabled is false",
	}
	var got []string
	for _, d := range diags {
		got = append(got, d.Message)
		if d.Line == 0 {
			t.Errorf("no position: %+v", d)
		}
	}
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || strings.Contains(g, w)
		}
		if !found {
			t.Errorf("no diagnostic %q in:\n%s", w, strings.Join(got, "\n"))
		}
	}
	if len(diags) != len(want) {
		t.Errorf("%d diagnostics, want %d:\n%s", len(diags), len(want), strings.Join(got, "\n"))
	}
}
