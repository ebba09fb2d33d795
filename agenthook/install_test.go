package agenthook

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/toolsd/toolsd/internal/fsopen/fsopentest"
	"github.com/toolsd/toolsd/internal/jsonobj"
)

func sameJSON(t *testing.T, a, b []byte) bool {
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(x, y)
}

// Real settings files, with the person's own hooks and keys, in each agent's format.
var settingsFiles = map[string]string{
	"claude": `{
  "$schema": "https://json.schemastore.org/claude-code-settings.json",
  "permissions": {
    "allow": ["Bash(npm test:*)", "Read(~/.zshrc)"],
    "deny": ["Read(./.env)"],
    "defaultMode": "acceptEdits"
  },
  "env": {"FOO": "1 < 2 && 3 > 2"},
  "hooks": {
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/guard.sh", "timeout": 5}]},
      {
        "matcher": "Write|Edit",
        "hooks": [
          {"type": "command", "command": "prettier --check \"$CLAUDE_PROJECT_DIR\""},
          {"type": "command", "command": "/old/bin/toolsd hook --agent claude PreToolUse", "timeout": 60}
        ]
      }
    ],
    "PostToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", "command": "gofmt -w"}]}],
    "Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]
  },
  "statusLine": {"type": "command", "command": "echo hi"},
  "cleanupPeriodDays": 30
}
`,
	"codex": `{
    "hooks": {
        "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "python3 ~/.codex/hooks/start.py"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "/usr/local/bin/policy-check", "timeout": 30}]}]
    }
}
`,
	"cursor": `{
  "version": 1,
  "hooks": {
    "afterFileEdit": [{"command": "./hooks/format.sh"}],
    "beforeShellExecution": [{"command": "./hooks/audit.sh"}]
  }
}
`,
}

func TestMergeKeepsEverythingElse(t *testing.T) {
	for key, orig := range settingsFiles {
		a := Agents[key]
		got, err := a.Merge([]byte(orig), true, "/opt/toolsd/bin/toolsd")
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		// Every line of the person's file is still there (a comma may have been added at its
		// end); toolsd's stale entry of another binary is replaced, not duplicated.
		for _, line := range strings.Split(orig, "\n") {
			line = strings.TrimRight(line, ",")
			if strings.Contains(line, "/old/bin/toolsd") {
				if strings.Contains(string(got), line) {
					t.Errorf("%s: the stale toolsd entry is still there: %s", key, line)
				}
				continue
			}
			if !strings.Contains(string(got), line) {
				// An array written on one line that toolsd's entry joins is written out, one
				// entry a line, each entry as the person wrote it.
				if i := strings.Index(line, ": ["); i >= 0 && strings.HasSuffix(line, "]") && strings.Contains(string(got), line[i+3:len(line)-1]) {
					continue
				}
				t.Errorf("%s: install dropped the line %q:\n%s", key, line, got)
			}
		}
		for _, ev := range a.eventNames() {
			if n := strings.Count(string(got), `/opt/toolsd/bin/toolsd hook --agent `+key+` `+ev+`"`); n != 1 {
				t.Errorf("%s: %d entries for %s, want 1:\n%s", key, n, ev, got)
			}
		}
		if _, err := jsonobj.Parse(got); err != nil {
			t.Fatalf("%s: the merged file is not JSON: %v\n%s", key, err, got)
		}
		again, _ := a.Merge(got, true, "/opt/toolsd/bin/toolsd")
		if !bytes.Equal(again, got) {
			t.Errorf("%s: a second install changed the file:\n%s", key, again)
		}
		back, _ := a.Merge(got, false, "")
		want := strings.Replace(orig, `,
          {"type": "command", "command": "/old/bin/toolsd hook --agent claude PreToolUse", "timeout": 60}`, "", 1)
		if key == "claude" {
			// The group whose toolsd hook went is written anew; everything else as it was.
			if !strings.Contains(string(back), `"prettier --check \"$CLAUDE_PROJECT_DIR\""`) || strings.Contains(string(back), "toolsd") {
				t.Errorf("claude: uninstall:\n%s", back)
			}
			continue
		}
		if !sameJSON(t, back, []byte(want)) {
			t.Errorf("%s: uninstall did not give back the file:\n%s\nwant\n%s", key, back, want)
		}
		if key == "cursor" && string(back) != want {
			t.Errorf("cursor: uninstall did not give back the file byte for byte:\n%s\nwant\n%s", back, want)
		}
	}
}

func TestMergeNewAndBadFiles(t *testing.T) {
	a := Agents["cursor"]
	got, err := a.Merge(nil, true, "toolsd")
	if err != nil || !strings.Contains(string(got), `"version": 1`) || !strings.Contains(string(got), `"command": "toolsd hook --agent cursor preToolUse"`) {
		t.Fatalf("a new Cursor file: %v\n%s", err, got)
	}
	if back, _ := a.Merge(got, false, ""); strings.Contains(string(back), "hooks") {
		t.Fatalf("uninstall left hooks: %s", back)
	}
	for _, bad := range []string{`[1]`, `{"hooks": []}`, `{"hooks": {"PreToolUse": {}}}`, `{"a": `} {
		if _, err := Agents["claude"].Merge([]byte(bad), true, "toolsd"); err == nil {
			t.Errorf("%s: merged", bad)
		}
	}
	for _, c := range []struct {
		cmd  string
		ours bool
	}{{"toolsd hook --agent claude PreToolUse", true}, {"'/a b/toolsd' hook PreToolUse", true}, {"/x/toolsd mcp", false}, {"mytoolsd hook", false}, {"echo toolsd hook", false}} {
		if IsOurs(c.cmd) != c.ours {
			t.Errorf("IsOurs(%q) = %v", c.cmd, !c.ours)
		}
	}
}

// TestReadFileKinds: an agent's settings file is read as toolsd's own are: a FIFO, a link
// to /dev/zero, a folder, a socket or an oversized file in its place is an error that says
// what it is, at once; a missing file reads as empty.
func TestReadFileKinds(t *testing.T) {
	dir := t.TempDir()
	if b, err := ReadFile(filepath.Join(dir, "missing.json")); b != nil || err != nil {
		t.Errorf("a missing file: %q, %v; want nothing and no error", b, err)
	}
	for _, k := range fsopentest.Kinds(maxSettingsBytes) {
		t.Run(k.Name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "settings.json")
			k.Make(t, path)
			var err error
			fsopentest.Promptly(t, 10*time.Second, "ReadFile", func() { _, err = ReadFile(path) })
			if err == nil || !strings.Contains(err.Error(), k.Says) {
				t.Errorf("ReadFile of %s: %v; want an error saying %q", k.Name, err, k.Says)
			}
		})
	}
}
