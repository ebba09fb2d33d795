package permission

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/toolsd/toolsd/permission/shell"
)

// Action is what a rule says about a call.
type Action string

// Actions.
const (
	Allow Action = "allow"
	Ask   Action = "ask"
	Deny  Action = "deny"
)

// Permission keys of the built-in tools and of the daemon itself. Project tools and MCP tools
// use their tool id as their key.
const (
	KeyRead              = "read"
	KeyEdit              = "edit" // also write and apply_patch
	KeyGlob              = "glob"
	KeyGrep              = "grep"
	KeyList              = "list"
	KeyBash              = "bash"
	KeyTask              = "task"
	KeyWebFetch          = "webfetch"
	KeyWebSearch         = "websearch"
	KeyExternalDirectory = "external_directory"
	KeyDoomLoop          = "doom_loop"
	KeyTodoRead          = "todoread"
	KeyTodoWrite         = "todowrite"
	KeyQuestion          = "question"
	KeySkill             = "skill"
	KeyLSP               = "lsp"
)

// Keys are the permission keys the daemon knows, in the order docs list them. The tools
// write, edit and apply_patch all ask under "edit".
var Keys = []string{
	KeyRead, KeyEdit, KeyGlob, KeyGrep, KeyList, KeyBash, KeyTask, KeyWebFetch, KeyWebSearch,
	KeyExternalDirectory, KeyDoomLoop, KeyTodoRead, KeyTodoWrite, KeyQuestion, KeySkill, KeyLSP,
}

// Rule says what to do with calls under a permission key whose pattern matches.
type Rule struct {
	Permission string `json:"permission"`
	Pattern    string `json:"pattern"`
	Action     Action `json:"action"`
	// Source names the layer the rule came from: "default", "managed", "user", "editor",
	// "project", "agent:<name>", "project-agent:<name>", "session", "workspace".
	Source string `json:"source,omitempty"`
	// File, Line and Column say where a config rule is written (Line and Column 1-based, 0
	// when unknown; File empty for the editor's settings and the built-in defaults).
	File   string `json:"file,omitempty"`
	Line   int    `json:"line,omitempty"`
	Column int    `json:"column,omitempty"`
	// At and By say when and by whom a remembered answer was given (the client's name, or
	// "" when not known).
	At time.Time `json:"at,omitzero"`
	By string    `json:"by,omitempty"`
}

// String writes the rule for a person: `bash "rm *": deny`, the pattern quoted as Go
// quotes a string (strconv.Quote), so that a newline, a backslash or an invisible
// character in it shows.
func (r Rule) String() string {
	return r.Permission + " " + strconv.Quote(r.Pattern) + ": " + string(r.Action)
}

// Where says where the rule comes from, for a person: "user config
// /home/u/.config/toolsd/config.json:4:7", "built-in defaults", "an answer remembered for
// this workspace on 2026-11-30 12:00:00 UTC by VS Code".
func (r Rule) Where() string {
	s := describeSource(r.Source)
	if r.Source == LayerProject && r.File != "" {
		s = "project config"
	}
	switch {
	case r.File != "" && r.Line > 0:
		s += fmt.Sprintf(" %s:%d:%d", r.File, r.Line, r.Column)
	case r.File != "":
		s += " " + r.File
	case r.Line > 0:
		s += fmt.Sprintf(" at %d:%d", r.Line, r.Column)
	}
	if !r.At.IsZero() {
		s += " on " + r.At.UTC().Format("2006-01-02 15:04:05 UTC")
	}
	if r.By != "" {
		s += " by " + r.By
	}
	return s
}

// Remembered reports whether the rule is a remembered "always" answer.
func (r Rule) Remembered() bool { return r.Source == SourceSession || r.Source == SourceWorkspace }

// Ruleset is an ordered list of rules; the last matching rule wins.
type Ruleset []Rule

func rank(a Action) int {
	switch a {
	case Deny:
		return 2
	case Ask:
		return 1
	}
	return 0
}

// Match reports whether s matches the wildcard pattern: '*' matches any run of characters
// (slashes and newlines included), '?' one character, and a backslash before *, ? or \
// matches that character itself (Escape writes such patterns). A pattern ending in " *"
// also matches the text before it alone ("git status *" matches "git status"). Everything
// else matches byte for byte: nothing is case-folded or normalised.
func Match(pattern, s string) bool {
	if strings.HasSuffix(pattern, " *") && !escapedAt(pattern, len(pattern)-1) {
		if wildcard(pattern[:len(pattern)-2], s) {
			return true
		}
	}
	return wildcard(pattern, s)
}

// escapedAt reports whether the byte at i is preceded by an odd number of backslashes.
func escapedAt(p string, i int) bool {
	n := 0
	for j := i - 1; j >= 0 && p[j] == '\\'; j-- {
		n++
	}
	return n%2 == 1
}

// Escape returns the pattern that matches s alone.
func Escape(s string) string { return shell.Escape(s) }

// wildcard matches with backtracking on the last star: linear in practice, O(len(p)*len(s))
// at worst.
func wildcard(p, s string) bool {
	pi, si, star, mark := 0, 0, -1, 0
	for si < len(s) {
		if pi < len(p) {
			c := p[pi]
			switch {
			case c == '*':
				star, mark = pi, si
				pi++
				continue
			case c == '?':
				_, n := utf8.DecodeRuneInString(s[si:])
				pi++
				si += n
				continue
			case c == '\\' && pi+1 < len(p) && (p[pi+1] == '*' || p[pi+1] == '?' || p[pi+1] == '\\'):
				if p[pi+1] == s[si] {
					pi += 2
					si++
					continue
				}
			case c == s[si]:
				pi++
				si++
				continue
			}
		}
		if star < 0 {
			return false
		}
		pi = star + 1
		_, n := utf8.DecodeRuneInString(s[mark:])
		mark += n
		si = mark
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}
