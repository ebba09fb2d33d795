// Package shell parses a shell command line into the simple commands it would really run,
// the paths it would write, and the parts no parser can see through.
package shell

import "strings"

// Command is one simple command that would run.
type Command struct {
	// Text is the command as a permission pattern sees it: its words joined by spaces,
	// assignments before it left out ("git status --short").
	Text string
	Name string
	Args []string
	// Always are the patterns an "always" answer could allow, narrowest first: the exact
	// text, then the arity prefix with " *" ("git status *", "npm run build *").
	Always []string
}

// Analysis is what a command line would do.
type Analysis struct {
	Commands []Command
	// Writes are the targets of redirections and tee that write, as written.
	Writes []string
	// Paths are the path arguments of file commands (rm, cp, mv, cat, ...), as written.
	Paths []string
	// Dirs are the directories the line changes into (cd), as written.
	Dirs []string
	// Opaque holds text no parser can see through (eval, source of a variable, an
	// unparseable line): it always asks, with the raw text.
	Opaque []string
}

// Analyze parses script. It never fails: what it cannot parse lands in Opaque.
// (Placeholder splitting on whitespace; the real parser uses mvdan.cc/sh/v3/syntax.)
func Analyze(script string) *Analysis {
	a := &Analysis{}
	f := strings.Fields(script)
	if len(f) == 0 {
		return a
	}
	a.Commands = append(a.Commands, Command{Text: strings.Join(f, " "), Name: f[0], Args: f[1:], Always: []string{strings.Join(f, " "), f[0] + " *"}})
	return a
}
