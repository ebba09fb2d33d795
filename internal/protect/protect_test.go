package protect

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	ws := filepath.FromSlash("/w/repo")
	for _, c := range []struct {
		rel  string
		want string // a word of the reason; "" for not protected
	}{
		{".toolsd/config.json", ".toolsd"},
		{".toolsd", ".toolsd"},
		{".TOOLSD/config.json", ".toolsd"},
		{".git/config", "configuration"},
		{".git/hooks/pre-commit", "hooks"},
		{".git/commondir", "commondir"},
		{".git/objects/info/alternates", "alternates"},
		{".git/worktrees/x/config", "worktrees"},
		{".git/modules/sub/hooks/post-checkout", "submodules"},
		{".git/info/attributes", "attributes"},
		{".git", "git folder"},
		{".git/HEAD", "git folder"},
		{".git/objects/ab/cdef", "git folder"},
		{"sub/.git/config", "configuration"},
		{"sub/.git", "nested git repository"},
		{"vendor/x/.git/HEAD", "nested git repository"},
		{".vscode/settings.json", "editor"},
		{".claude/settings.json", "Claude Code"},
		{".mcp.json", "MCP"},
		{".envrc", "direnv"},
		{"src/main.go", ""},
		{"src/.gitignore", ""},
		{".github/workflows/ci.yml", ""},
		{"docs/.git-notes", ""},
		{"x.toolsd", ""},
	} {
		why, ok := Check(ws, filepath.Join(ws, filepath.FromSlash(c.rel)))
		if ok != (c.want != "") || !strings.Contains(why, c.want) {
			t.Errorf("Check(%q) = %q, %v; want a reason with %q", c.rel, why, ok, c.want)
		}
	}
	for _, p := range []string{"/w/repo", "/w/other/.git/config", "/w/repo2/.toolsd"} {
		if why, ok := Check(ws, filepath.FromSlash(p)); ok {
			t.Errorf("Check(%q) = %q; want not protected (not inside the workspace)", p, why)
		}
	}
}

// TestWindowsNames: on Windows a name opens a protected one also as Win32 reads it; elsewhere
// those are names of their own.
func TestWindowsNames(t *testing.T) {
	for _, c := range []struct {
		rel  string
		want string // a word of the reason on Windows; "" for not protected
	}{
		{".git./config", "configuration"},
		{".git /hooks/pre-commit", "hooks"},
		{".git::$INDEX_ALLOCATION/config", "configuration"},
		{".git/config:stream", "configuration"},
		{".git/hooks. /x", "hooks"},
		{"GIT~1/config", "configuration"},
		{"git~12/hooks/x", "hooks"},
		{"GI1A2B~1/config", "configuration"},
		{"TOOLSD~1/config.json", ".toolsd"},
		{"vscode~1/settings.json", "editor"},
		{"MCP~1.JSO", "MCP"},
		{".toolsd...", ".toolsd"},
		{"sub/GIT~1", "nested git repository"},
		{".git/COMMON~1", "commondir"},
		{".git/WORKTR~1/x/config", "worktrees"},
		{"src/GOT~1/x", ""},
		{"src/git~/x", ""},
		{"src/git~x/x", ""},
		{"src/.gitx/x", ""},
		{"src/ZZ1A2B~1", ""},
		{"README~1.MD", ""},
	} {
		why, ok := check(c.rel, true)
		if ok != (c.want != "") || !strings.Contains(why, c.want) {
			t.Errorf("windows: check(%q) = %q, %v; want a reason with %q", c.rel, why, ok, c.want)
		}
		if why, _ := check(c.rel, false); c.want != "" && strings.Contains(why, c.want) {
			t.Errorf("unix: check(%q) = %q; want no reason with %q (the name is a name of its own)", c.rel, why, c.want)
		}
	}
}
