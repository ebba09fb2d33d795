// Package protect names the paths through which a workspace controls what runs outside any
// sandbox later — toolsd's own settings, the agents' and editors' settings, git's entry
// points — as the one list that every writer (the file tools, checkpoint revert, hooks and the
// sandbox) honours.
package protect

import (
	"path/filepath"
	"runtime"
	"strings"
)

// Top lists the entries at a workspace's top level that are protected whole, each with why.
// A program that reads one of them runs what it says, unconfined: toolsd reads .toolsd (its
// rules, its sandbox switch, its tools and hooks), the agents read their settings and MCP
// server lists (hooks and servers are commands), the editors theirs (a task, a git path, a
// terminal's environment), direnv its .envrc.
var Top = []Entry{
	{".toolsd", "toolsd's own settings, rules, tools and hooks"},
	{".vscode", "the editor's workspace settings (tasks, a git path, a terminal's environment run as written)"},
	{".idea", "the JetBrains IDE's workspace settings (run configurations run as written)"},
	{".claude", "Claude Code's project settings (its hooks and MCP servers are commands it runs)"},
	{".codex", "Codex's project settings (its hooks and MCP servers are commands it runs)"},
	{".cursor", "Cursor's project settings (its hooks and MCP servers are commands it runs)"},
	{".gemini", "Gemini CLI's project settings (its hooks and MCP servers are commands it runs)"},
	{".mcp.json", "the project's MCP server list (each server is a command an agent runs)"},
	{".envrc", "direnv's script, run by the shell on entering the folder"},
}

// GitControl lists the entries of a git folder that decide what git runs: its configuration
// (core.fsmonitor, aliases, filters, core.hooksPath), its hooks, where it takes its
// configuration and objects from instead (commondir, gitdir, objects/info/alternates), and the
// git folders of its worktrees and submodules, each with a configuration and hooks of its own.
// The rest of a git folder (objects, refs, the index, HEAD, logs) is data git reads but never
// runs.
var GitControl = []Entry{
	{"config", "git's configuration (core.fsmonitor, aliases, filters and core.hooksPath run programs)"},
	{"config.worktree", "a worktree's git configuration"},
	{"hooks", "git's hooks, run by git commit, merge, checkout and push"},
	{"info", "git's per-repository attributes and excludes"},
	{"commondir", "where git takes its configuration and hooks from instead"},
	{"gitdir", "where a worktree's git folder points"},
	{"objects/info", "where git takes objects from instead (alternates)"},
	{"worktrees", "the git folders of linked worktrees, each with a configuration of its own"},
	{"modules", "the git folders of submodules, each with a configuration and hooks of its own"},
}

// An Entry is a protected name and why it is protected.
type Entry struct {
	Name string // slash-separated, relative to the workspace (Top) or to a git folder (GitControl)
	Why  string
}

// Git is the name of a git folder, or of the file that points to one (a worktree's, a
// submodule's). Wherever it appears in a workspace — at the top, or in a nested repository
// that an editor discovers and runs git in — it is protected whole.
const Git = ".git"

// Check reports whether path, in workspace, is protected, and why. Both are absolute and
// already resolved (symlinks followed, as the writer will follow them); a path outside
// workspace is not this package's concern (the rules' external_directory is). Names compare
// without regard to case, as they resolve on a case-insensitive file system.
func Check(workspace, path string) (why string, protected bool) {
	rel, err := filepath.Rel(workspace, path)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return Rel(filepath.ToSlash(rel))
}

// Rel is Check for a slash-separated path relative to the workspace.
func Rel(rel string) (why string, protected bool) {
	return check(rel, runtime.GOOS == "windows")
}

// check is Rel, with Windows' reading of names (win32) or not.
func check(rel string, win32 bool) (why string, protected bool) {
	parts := strings.Split(strings.Trim(rel, "/"), "/")
	for _, e := range Top {
		if opens(parts[0], e.Name, win32) {
			return e.Name + ": " + e.Why, true
		}
	}
	for i, p := range parts {
		if !opens(p, Git, win32) {
			continue
		}
		where := strings.Join(parts[:i+1], "/")
		rest := parts[i+1:]
		for _, e := range GitControl {
			n := strings.Split(e.Name, "/")
			if len(rest) >= len(n) && allOpen(rest[:len(n)], n, win32) {
				return where + "/" + e.Name + ": " + e.Why, true
			}
		}
		if i > 0 {
			return where + ": a nested git repository (an editor discovers it and runs git in it, with its configuration and hooks)", true
		}
		return where + ": the git folder (git reads it to decide what to run; its objects, refs and index are changed by git, not by edits)", true
	}
	return "", false
}

func allOpen(names, entries []string, win32 bool) bool {
	for i := range names {
		if !opens(names[i], entries[i], win32) {
			return false
		}
	}
	return true
}

// opens reports whether the name in a path opens the protected name entry: the same name
// without regard to case and, on Windows (win32), also as Windows reads a name: with trailing
// dots and spaces dropped (".git." is .git), a stream after a colon (".git::$INDEX_ALLOCATION"
// is the folder), or an 8.3 short name NTFS may have given it (GIT~1 for .git).
func opens(name, entry string, win32 bool) bool {
	if strings.EqualFold(name, entry) {
		return true
	}
	if !win32 {
		return false
	}
	if i := strings.IndexByte(name, ':'); i >= 0 {
		name = name[:i]
	}
	name = strings.TrimRight(name, ". ")
	return strings.EqualFold(name, entry) || shortName(name, entry)
}

// shortName reports whether name may be an 8.3 short name of entry: NTFS spells one as up to
// six of the name's first letters (leading dots, inner dots and spaces left out), "~" and a
// number, then up to three letters of the extension; after four of one stem, as two letters
// and four hex digits of a hash before the "~". The extension is not compared: a name that
// may be a short name of a protected one is protected.
func shortName(name, entry string) bool {
	if i := strings.LastIndexByte(name, '.'); i > 0 {
		name = name[:i]
	}
	stem, num, ok := strings.Cut(name, "~")
	if !ok || num == "" || strings.Trim(num, "0123456789") != "" || stem == "" || len(stem) > 6 {
		return false
	}
	e := strings.TrimLeft(entry, ".")
	if i := strings.LastIndexByte(e, '.'); i > 0 {
		e = e[:i]
	}
	e = strings.NewReplacer(".", "", " ", "").Replace(e)
	if len(e) > 6 {
		e = e[:6]
	}
	if strings.EqualFold(stem, e) {
		return true
	}
	hashed := len(stem) == 6 && strings.Trim(strings.ToLower(stem[2:]), "0123456789abcdef") == ""
	return hashed && len(e) >= 2 && strings.EqualFold(stem[:2], e[:2])
}
