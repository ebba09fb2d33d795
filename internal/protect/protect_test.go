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
