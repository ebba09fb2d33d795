// Package shell parses a shell command line into the simple commands it would really run,
// the paths it would write or touch, and the parts no parser can see through.
//
// The parser is mvdan.cc/sh/v3/syntax (bash dialect). Every simple command anywhere in the
// tree counts: in pipelines and lists (| && || ; & newline), subshells and { } groups,
// command and process substitutions (also inside double quotes, arguments, assignments,
// parameter expansions, redirection targets and here-document bodies), function bodies,
// if/while/until/for/select/case bodies, [[ ]] and (( )), coproc and time. The strings run by
// bash/sh/zsh/dash/ksh -c, trap, watch and su -c are parsed in turn (up to a depth limit), and
// the wrappers env, sudo, doas, pkexec, timeout, nice, ionice, nohup, time, command, exec,
// builtin, stdbuf, setsid, xargs, watch and find -exec/-execdir/-ok/-okdir are looked
// through: the command they run is reported as a command of its own. The privilege wrappers
// (sudo, doas, su, pkexec, runuser) are reported too, with their whole text.
//
// A call of a function the script defines is reported like any other command (a call before
// the definition runs the real program), and so is the function's body.
//
// What no static reading can decide lands in Analysis.Opaque, as written: eval, source or .
// of a non-literal file, a command name with an expansion, a glob or a brace expansion
// ($CMD args, "$(x)" y, /bin/r? x, {rm,x}), a command name with invisible or spacing
// characters, an alias definition, hash -p, an assignment to a variable that changes what
// runs (PATH, LD_*, DYLD_*, BASH_ENV, ENV, GIT_*, PAGER, EDITOR, HOME, PYTHONPATH,
// NODE_OPTIONS, ...) whether by NAME=x, export, declare, a nameref, read, printf -v or env,
// a quoted "$(" or backquote in a script that also evaluates text as arithmetic or prompt
// strings (the a[$(cmd)] injection), nesting deeper than the limit, and anything the parser
// rejects (which includes "((cmd); (cmd))", parsed as arithmetic).
//
// Command.Text is what permission patterns are matched against: the words after quote
// removal ('git' "status" and git\ status both give "git status"), joined by single
// spaces; comments, line continuations and assignments before the command are left out;
// expansions in arguments are kept as written ("git status $(date)"). Nothing is
// normalised beyond that: a fullwidth or otherwise non-ASCII name stays as it is, so it
// matches no ASCII rule. A command name containing a slash is cleaned ("ls/../../bin/rm"
// becomes "../bin/rm", "./x" stays "./x") so that it cannot pass for a bare name. Options
// before a subcommand stay where they are: "git -c core.pager=x status" does not match
// "git status*".
package shell

import (
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Command is one simple command that would run.
type Command struct {
	// Text is the command as a permission pattern sees it: its words joined by spaces,
	// assignments before it left out ("git status --short").
	Text string
	Name string
	Args []string
	// Always are the patterns an "always" answer could allow, narrowest first: the exact
	// text (escaped, so that a literal * in it matches only itself), then the arity prefix
	// with " *" ("git status *", "npm run build *"). Destructive commands (rm, mv, dd,
	// chmod, sudo, interpreters, curl, "x delete", ...) offer only the exact text.
	Always []string
}

// Analysis is what a command line would do.
type Analysis struct {
	Commands []Command
	// Writes are the targets of redirections and tee (and dd of=, curl -o, sort -o, find
	// -fprint) that write, as written after quote removal. /dev/null, /dev/stdout,
	// /dev/stderr, /dev/tty and /dev/fd/N are left out.
	Writes []string
	// Paths are the path arguments of file commands (rm, cp, mv, cat, ls, find, grep, ...)
	// and the sources of input redirections, as written after quote removal.
	Paths []string
	// Dirs are the directories the line changes into (cd, pushd, git -C, make -C, env -C),
	// as written; "~" for a bare cd.
	Dirs []string
	// Dynamic are path words (of Writes, Paths or Dirs) whose value is only known when the
	// line runs ($f, ~user, a brace expansion, cd -), as written. They are not in Writes,
	// Paths or Dirs.
	Dynamic []string
	// Opaque holds text no parser can see through (eval, source of a variable, an
	// unparseable line): it always asks, with the raw text.
	Opaque []string
}

// maxDepth bounds the nesting of -c strings (bash -c "sh -c '...'").
const maxDepth = 8

// Analyze parses script. It never fails: what it cannot parse lands in Opaque.
func Analyze(script string) *Analysis {
	z := &analyzer{a: &Analysis{}}
	z.script(script, 0)
	if z.sawEval && z.sawQuotedSubst {
		z.opaque(script)
	}
	return z.a
}

type analyzer struct {
	a      *Analysis
	parser *syntax.Parser
	// sawEval: the line evaluates text as code in a way that runs substitutions found in
	// variable values (arithmetic contexts, [[ ]], ${x@P}).
	sawEval bool
	// sawQuotedSubst: a quoted or escaped "$(" or backquote, i.e. code kept as data.
	sawQuotedSubst bool
}

// scope is one parsed script: the top line or a -c string.
type scope struct {
	z     *analyzer
	src   string
	depth int
}

func (z *analyzer) opaque(s string) {
	z.a.Opaque = appendUnique(z.a.Opaque, s)
}

func (z *analyzer) script(src string, depth int) {
	if depth > maxDepth {
		z.opaque(src)
		return
	}
	if z.parser == nil {
		z.parser = syntax.NewParser(syntax.Variant(syntax.LangBash))
	}
	// Reused for nested scripts: each Parse finishes its tree before the walk that may
	// parse again.
	f, err := z.parser.Parse(strings.NewReader(src), "")
	if err != nil {
		z.opaque(src)
		return
	}
	// Calls of functions the script defines are reported like any command: a call before
	// the definition runs the real program ("rm -rf ~; rm() { :; }").
	s := &scope{z: z, src: src, depth: depth}
	syntax.Walk(f, s.visit)
}

func (s *scope) visit(n syntax.Node) bool {
	switch n := n.(type) {
	case *syntax.Stmt:
		for _, r := range n.Redirs {
			s.redirect(r)
		}
	case *syntax.CallExpr:
		s.call(n)
	case *syntax.DeclClause:
		s.decl(n)
	case *syntax.Assign:
		if n.Name != nil && dangerousVar(n.Name.Value) {
			s.z.opaque(slice(s.src, n.Pos(), n.End()))
		}
	case *syntax.WordIter:
		if n.Name != nil && dangerousVar(n.Name.Value) {
			s.z.opaque(slice(s.src, n.Pos(), n.End()))
		}
	case *syntax.ArithmExp, *syntax.ArithmCmd, *syntax.LetClause, *syntax.TestClause, *syntax.CStyleLoop:
		s.z.sawEval = true
	case *syntax.ParamExp:
		if n.Index != nil || n.Slice != nil || n.Excl || (n.Exp != nil && n.Exp.Op == syntax.OtherParamOps) {
			s.z.sawEval = true
		}
	case *syntax.SglQuoted:
		if strings.Contains(n.Value, "$(") || strings.Contains(n.Value, "`") {
			s.z.sawQuotedSubst = true
		}
	case *syntax.Lit:
		if strings.Contains(n.Value, "$(") || strings.Contains(n.Value, "`") {
			s.z.sawQuotedSubst = true
		}
	}
	return true
}

// redirect records what a redirection reads or writes.
func (s *scope) redirect(r *syntax.Redirect) {
	if r.Word == nil {
		return
	}
	switch r.Op {
	case syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
		return
	}
	w := render(s.src, r.Word)
	switch r.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob, syntax.RdrAll,
		syntax.RdrAllClob, syntax.AppAll, syntax.AppAllClob:
		s.write(w)
	case syntax.RdrInOut:
		s.write(w)
	case syntax.RdrIn:
		s.path(w)
	case syntax.DplOut, syntax.DplIn:
		if w.static && isFD(w.text) {
			return
		}
		if r.Op == syntax.DplOut {
			s.write(w)
		} else {
			s.path(w)
		}
	default:
		s.write(w)
	}
}

func isFD(s string) bool {
	s = strings.TrimSuffix(s, "-")
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func (s *scope) write(w word) {
	if !w.static || w.glob {
		s.z.a.Dynamic = appendUnique(s.z.a.Dynamic, w.raw)
		return
	}
	switch w.text {
	case "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty":
		return
	}
	if fd, ok := strings.CutPrefix(w.text, "/dev/fd/"); ok && fd != "" && isFD(fd) {
		return // an fd the line opened (with a redirection that was checked) or inherited
	}
	s.z.a.Writes = appendUnique(s.z.a.Writes, w.text)
}

func (s *scope) path(w word) {
	if !w.static || braceGlob(w) {
		s.z.a.Dynamic = appendUnique(s.z.a.Dynamic, w.raw)
		return
	}
	switch w.text {
	case "/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/zero", "/dev/random", "/dev/urandom", "/dev/tty":
		return
	}
	s.z.a.Paths = appendUnique(s.z.a.Paths, w.text)
}

// pathText records a path given as text (the value of of=, --file=).
func (s *scope) pathText(w word, text string, write bool) {
	w.text = text
	if write {
		s.write(w)
	} else {
		s.path(w)
	}
}

func (s *scope) dir(w word) {
	if !w.static || braceGlob(w) || w.text == "-" {
		s.z.a.Dynamic = appendUnique(s.z.a.Dynamic, w.raw)
		return
	}
	s.z.a.Dirs = appendUnique(s.z.a.Dirs, w.text)
}

// braceGlob reports a word the shell may brace-expand: its text is not one path.
func braceGlob(w word) bool {
	return w.glob && strings.Contains(w.text, "{")
}

// call handles one simple command.
func (s *scope) call(c *syntax.CallExpr) {
	if len(c.Args) == 0 {
		return // assignments only; dangerous names are caught by visit
	}
	ws := make([]word, len(c.Args))
	for i, a := range c.Args {
		ws[i] = render(s.src, a)
	}
	raw := slice(s.src, c.Pos(), c.End())
	s.command(ws, raw)
}

// decl handles declare, local, export, readonly, typeset and nameref.
func (s *scope) decl(d *syntax.DeclClause) {
	// A nameref (declare -n r=PATH, nameref r=PATH) makes later "r=x" assign PATH.
	nameref := d.Variant != nil && d.Variant.Value == "nameref"
	for _, a := range d.Args {
		if a.Naked && a.Name == nil && a.Value != nil {
			if w := render(s.src, a.Value); strings.HasPrefix(w.text, "-") && strings.Contains(w.text, "n") {
				nameref = true
			}
		}
	}
	for _, a := range d.Args {
		if nameref && a.Name != nil && a.Value != nil {
			if w := render(s.src, a.Value); !w.static || dangerousVar(w.text) {
				s.z.opaque(slice(s.src, d.Pos(), d.End()))
				return
			}
		}
		if a.Name != nil {
			continue // visit checks named assignments
		}
		if a.Value != nil {
			w := render(s.src, a.Value)
			if !w.static {
				// "export $X": the name is only known at run time.
				s.z.opaque(slice(s.src, d.Pos(), d.End()))
				return
			}
			name, _, _ := strings.Cut(w.text, "=")
			if dangerousVar(name) {
				s.z.opaque(slice(s.src, d.Pos(), d.End()))
				return
			}
		}
	}
}

func appendUnique(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// cleanName cleans a command name with a slash so that it cannot pass for a bare name.
func cleanName(name string) string {
	if !strings.Contains(name, "/") {
		return name
	}
	c := path.Clean(name)
	if !strings.Contains(c, "/") {
		c = "./" + c
	}
	return c
}

// dangerousVar reports variables whose value changes what a later command runs or loads.
func dangerousVar(name string) bool {
	switch name {
	case "PATH", "BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PS4", "PROMPT_COMMAND", "CDPATH",
		"HOME", "XDG_CONFIG_HOME", "PAGER", "MANPAGER", "SYSTEMD_PAGER", "EDITOR", "VISUAL",
		"LESSOPEN", "LESSCLOSE", "NODE_OPTIONS", "NODE_PATH", "CLASSPATH", "JAVA_TOOL_OPTIONS",
		"_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "GOFLAGS", "RUSTC_WRAPPER", "RUSTC", "CC", "CXX",
		"SSH_ASKPASS", "SUDO_ASKPASS", "GCONV_PATH", "IFS", "BASH_XTRACEFD", "TMOUT",
		"HISTFILE", "INPUTRC", "ZDOTDIR", "MAKEFLAGS", "MFLAGS", "GLOBIGNORE", "BASH_LOADABLES_PATH",
		"SHELL", "TERMINFO", "LOCPATH", "NLSPATH", "MALLOC_CONF", "OPENSSL_CONF", "CURL_HOME",
		"WGETRC", "PIP_CONFIG_FILE", "NPM_CONFIG_USERCONFIG", "DOCKER_HOST", "KUBECONFIG":
		return true
	}
	for _, p := range []string{"LD_", "DYLD_", "GIT_", "BASH_FUNC_", "PYTHON", "PERL", "RUBY", "npm_config_", "NPM_CONFIG_", "CARGO_", "GEM_", "BUNDLE_"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
