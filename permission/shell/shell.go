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
	// text (escaped, so that a literal * in it matches only itself), then, for a command
	// whose arguments are Safe, the arity prefix with " *" ("git status *", "npm run build
	// *"). Destructive commands (rm, mv, dd, chmod, sudo, interpreters, curl, "x delete",
	// ...) offer only the exact text.
	Always []string
	// Unsafe says why the command's arguments do not fit the grammar toolsd knows to be
	// safe for it (an option that runs code or is not known, a value only known at run
	// time, ...); empty when they do. A rule or an "always" answer with a wildcard does
	// not allow an unsafe command: only one that names it exactly does (or the rule "*").
	Unsafe string
}

// UseKind is what a command does with a path.
type UseKind uint8

// The kinds of path use.
const (
	Read   UseKind = iota // reads it (or lists it, or runs it)
	Write                 // writes it: a redirection, tee, an output option
	Chdir                 // works in it: git -C, make -C, env -C (cd itself makes a Cwd)
	Create                // makes an entry there without following it (ln's link)
)

// Use is one path word of the line: as written after quote removal, what is done with it,
// and the working folders it may be resolved from.
type Use struct {
	Text string
	Kind UseKind
	// At are indices into Analysis.Cwds: the line may be in any of these folders when the
	// word is used.
	At []int
	// Maybe marks a word that is a path only if it names something that exists (an
	// argument of a command that takes paths and other words alike: git log main src).
	Maybe bool
}

// Cwd is a working folder the line can be in: Cwds[0] is the folder the line starts in,
// every other one is a cd (or pushd) from another Cwd.
type Cwd struct {
	From int    // the Cwd the cd ran in; -1 for the start
	Text string // the cd target after quote removal; "~" for a bare cd
	// Physical: cd -P (or git -C, make -C: a chdir), resolved as the kernel does; bash's
	// own cd is logical ("link/.." is the folder holding link).
	Physical bool
}

// Link is a symbolic link the line creates (ln -s) before later commands use paths
// through it: Path is resolved from the Cwd it was made in, Target from the link's own
// folder (as the kernel does).
type Link struct {
	Path, Target string
	At           []int
}

// Analysis is what a command line would do.
type Analysis struct {
	Commands []Command
	// Uses are the path words of the line: arguments of file commands, option values that
	// name files, redirection targets, git -C folders, with the folders they resolve from.
	Uses []Use
	Cwds []Cwd
	// Links are the symlinks ln -s makes; paths used after them may lead through them.
	Links []Link
	// Dynamic are path words whose value or folder is only known when the line runs ($f,
	// ~user, a brace expansion, a path after cd $d or after a command that can create
	// links), as written. They are not in Uses.
	Dynamic []string
	// Opaque holds the line when it is not fully understood (a construct outside the
	// safe subset, text the parser rejects, code hidden where bash evaluates values): it
	// always asks, with the raw text, and nothing may remember it. The commands found in
	// it are still in Commands, so that deny rules still deny.
	Opaque []string
	// Reasons say why the line is opaque, in words for the person and the model.
	Reasons []string
}

// maxDepth bounds the nesting of -c strings (bash -c "sh -c '...'").
const maxDepth = 8

// maxCwds bounds the working folders tracked; past it, relative paths are Dynamic.
const maxCwds = 64

// Analyze parses script. It never fails: what it cannot understand makes the line Opaque.
func Analyze(script string) *Analysis {
	loadGrammars()
	z := &analyzer{a: &Analysis{Cwds: []Cwd{{From: -1}}}, root: script}
	z.script(script, 0, []int{0})
	if len(z.a.Reasons) > 0 {
		z.a.Opaque = []string{script}
	}
	return z.a
}

type analyzer struct {
	a      *Analysis
	root   string
	parser *syntax.Parser
	// linked: a command that can create links (cp -a, tar x, git checkout, ...) ran
	// before: paths used from here on may lead anywhere.
	linked bool
	// unknownCwd: a cd to a folder only known at run time came before.
	unknownCwd bool
	// extra names what gives the next emitted command more arguments than it shows
	// (xargs).
	extra string
}

// scope is one parsed script: the top line or a -c string.
type scope struct {
	z     *analyzer
	src   string
	depth int
}

// opaque records why the line cannot be fully understood.
func (z *analyzer) opaque(reason string) {
	z.a.Reasons = appendUnique(z.a.Reasons, reason)
}

func (z *analyzer) script(src string, depth int, at []int) []int {
	if depth > maxDepth {
		z.opaque("shell strings nested more than 8 deep")
		return at
	}
	if z.parser == nil {
		z.parser = syntax.NewParser(syntax.Variant(syntax.LangBash))
	}
	// Reused for nested scripts: each Parse finishes its tree before the walk that may
	// parse again.
	f, err := z.parser.Parse(strings.NewReader(src), "")
	if err != nil {
		z.opaque("the shell parser rejects it: " + err.Error())
		return at
	}
	s := &scope{z: z, src: src, depth: depth}
	return s.stmts(f.Stmts, at)
}

// stmts runs a list of statements in sequence: each may start in any folder the previous
// one may have left the line in.
func (s *scope) stmts(list []*syntax.Stmt, at []int) []int {
	for _, st := range list {
		ok, fail := s.stmt(st, at)
		at = union(ok, fail)
	}
	return at
}

// stmt evaluates one statement starting in the folders at, and returns the folders the
// line may be in after it succeeded and after it failed.
func (s *scope) stmt(st *syntax.Stmt, at []int) (ok, fail []int) {
	if st.Coprocess || st.Disown {
		s.z.opaque("a coprocess")
	}
	// The command first (its commands are reported before those of its redirections),
	// the redirections opened in the folder the statement starts in.
	ok, fail = at, at
	if st.Cmd != nil {
		ok, fail = s.cmd(st.Cmd, at)
	}
	for _, r := range st.Redirs {
		s.redirect(r, at)
	}
	if st.Cmd == nil {
		return at, at
	}
	if st.Background {
		// A background job runs in a subshell: its cd does not move the line.
		return at, at
	}
	if st.Negated {
		ok, fail = fail, ok
	}
	return ok, fail
}

func (s *scope) cmd(c syntax.Command, at []int) (ok, fail []int) {
	switch c := c.(type) {
	case *syntax.CallExpr:
		return s.call(c, at)
	case *syntax.BinaryCmd:
		switch c.Op {
		case syntax.AndStmt:
			lok, lfail := s.stmt(c.X, at)
			rok, rfail := s.stmt(c.Y, lok)
			return rok, union(lfail, rfail)
		case syntax.OrStmt:
			lok, lfail := s.stmt(c.X, at)
			rok, rfail := s.stmt(c.Y, lfail)
			return union(lok, rok), rfail
		default: // | and |&: every part runs in a subshell
			s.stmt(c.X, at)
			s.stmt(c.Y, at)
			return at, at
		}
	case *syntax.Subshell:
		s.stmts(c.Stmts, at)
		return at, at
	case *syntax.Block:
		after := s.stmts(c.Stmts, at)
		return after, after
	case *syntax.TimeClause:
		if c.Stmt == nil {
			return at, at
		}
		return s.stmt(c.Stmt, at)
	case *syntax.DeclClause:
		if s.safeExport(c, at) {
			return at, at
		}
	}
	// Everything else is outside the subset the analysis follows: control flow, function
	// definitions, arithmetic and test commands, declarations. Their commands are still
	// found (so that deny rules still deny), from a folder no longer known.
	s.z.opaque(constructReason(c))
	s.blind(c)
	return at, at
}

// safeExport reports an export of assignments only, to names known to be harmless (export
// CI=true); their values are analysed like any word.
func (s *scope) safeExport(d *syntax.DeclClause, at []int) bool {
	if d.Variant == nil || d.Variant.Value != "export" || len(d.Args) == 0 {
		return false
	}
	for _, a := range d.Args {
		if a.Naked || a.Name == nil || a.Index != nil || a.Array != nil || assignable(a.Name.Value) != "" {
			return false
		}
	}
	for _, a := range d.Args {
		if a.Value != nil {
			s.word(a.Value, at)
		}
	}
	return true
}

// constructReason names a construct outside the subset.
func constructReason(c syntax.Command) string {
	switch c := c.(type) {
	case *syntax.IfClause, *syntax.WhileClause, *syntax.ForClause, *syntax.CaseClause:
		return "control flow (if, for, while, case): the analysis follows only plain command lists"
	case *syntax.FuncDecl:
		return "a function definition"
	case *syntax.ArithmCmd, *syntax.LetClause:
		return "arithmetic evaluation (( )) or let, where bash runs code hidden in variable values"
	case *syntax.TestClause:
		return "[[ ]], where bash evaluates variable values as arithmetic (and runs code hidden in them)"
	case *syntax.DeclClause:
		v := "declare"
		if c.Variant != nil {
			v = c.Variant.Value
		}
		return v + ", which sets variables by name (and evaluates subscripts and -i values as code)"
	case *syntax.CoprocClause:
		return "a coprocess"
	}
	return "a shell construct the analysis does not follow"
}

// blind finds the commands of a subtree the analysis does not follow, so that deny rules
// still see them; their paths are Dynamic.
func (s *scope) blind(n syntax.Node) {
	saved := s.z.unknownCwd
	s.z.unknownCwd = true
	syntax.Walk(n, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CallExpr:
			s.call(n, []int{0})
			return false
		case *syntax.Redirect:
			s.redirect(n, []int{0})
			return false
		case *syntax.DeclClause:
			// declare x=$(cmd): the substitutions still run.
			for _, a := range n.Args {
				if a.Value != nil {
					s.word(a.Value, []int{0})
				}
			}
			return false
		case *syntax.CmdSubst:
			s.stmts(n.Stmts, []int{0})
			return false
		case *syntax.ProcSubst:
			s.stmts(n.Stmts, []int{0})
			return false
		}
		return true
	})
	s.z.unknownCwd = saved
}

// redirect records what a redirection reads or writes.
func (s *scope) redirect(r *syntax.Redirect, at []int) {
	if r.N != nil && !isFD(r.N.Value) {
		s.z.opaque("a redirection to a named file descriptor ({var}>file), which assigns a variable")
	}
	if r.Word == nil {
		return
	}
	if r.Hdoc != nil {
		s.word(r.Hdoc, at)
	}
	switch r.Op {
	case syntax.Hdoc, syntax.DashHdoc:
		return
	case syntax.WordHdoc:
		s.word(r.Word, at)
		return
	}
	w := s.word(r.Word, at)
	// A file read on descriptor 1 or 2 or above (1< f, 3< f), or another descriptor than 1
	// and 2 made 1 or 2 (1<&0, >&3): a write to /dev/stdout or /dev/fd/N opens the file
	// again, for writing. Only the line's own output is written through those names.
	n := "0"
	if r.Op == syntax.DplOut {
		n = "1"
	}
	if r.N != nil {
		n = r.N.Value
	}
	switch r.Op {
	case syntax.RdrIn:
		if n != "0" {
			s.z.opaque("a file read on descriptor " + n + " (" + n + "< file), which a write to /dev/fd/" + n + " or /dev/stdout would write")
		}
		s.path(w, Read, at)
	case syntax.DplOut, syntax.DplIn:
		if w.static && isFD(w.text) {
			if m := strings.TrimSuffix(w.text, "-"); (n == "1" || n == "2") && m != "" && m != "1" && m != "2" {
				s.z.opaque("descriptor " + m + " made " + n + " (" + n + ">&" + m + "), which a write to /dev/stdout would open again for writing")
			}
			return
		}
		if r.Op == syntax.DplOut {
			s.path(w, Write, at)
		} else {
			s.path(w, Read, at)
		}
	default: // > >> >| &> &>> <> and what else writes
		s.path(w, Write, at)
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

// path records a path word used from the folders at.
func (s *scope) path(w word, kind UseKind, at []int) {
	if w.static && !w.glob {
		switch w.text {
		case "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/zero", "/dev/random", "/dev/urandom":
			return
		}
		if inputDevice(w.text) {
			// Read as data: an fd the line opened (with a redirection that was checked) or
			// inherited; a grammar asks where it may be a program or a list (vScript,
			// vAuto). Written: only the line's output (1, 2) — /dev/stdin and /dev/fd/3
			// open the file behind the descriptor again, for writing (cat x > /dev/stdin
			// < f writes f).
			if kind == Read || outputFD(w.text) {
				return
			}
			s.dynamic(w.raw)
			return
		}
	}
	if !w.static || braceGlob(w) || w.text == "" {
		s.dynamic(w.raw)
		return
	}
	if s.z.linked || s.z.unknownCwd && !strings.HasPrefix(w.text, "/") && !strings.HasPrefix(w.text, "~") {
		s.dynamic(w.raw)
		return
	}
	s.z.a.Uses = append(s.z.a.Uses, Use{Text: w.text, Kind: kind, At: at})
}

// inputWord reports a word that names the line's standard input to a command that reads a
// file: "-" or a device (inputDevice).
func inputWord(t string) bool { return t == "-" || inputDevice(t) }

// inputDevice reports a path to a descriptor of the line — standard input, or one the line
// opened (3<<EOF, <(cmd)) — however it is spelled: /dev/stdin, /dev/fd/N, /proc/self/fd/N,
// /proc/thread-self/fd/N, //dev/./stdin. (/proc/PID/fd/N is another process's file: a path.)
func inputDevice(t string) bool {
	return descriptor(t) != ""
}

// outputFD reports a path to the line's standard output or error (/dev/fd/1, /proc/self/fd/2).
func outputFD(t string) bool {
	fd := descriptor(t)
	return fd == "1" || fd == "2"
}

// descriptor returns the number of the descriptor a path names ("0" for /dev/stdin), or "".
func descriptor(t string) string {
	if !strings.HasPrefix(t, "/") {
		return ""
	}
	p := path.Clean(t)
	if p == "/dev/stdin" {
		return "0"
	}
	for _, dir := range []string{"/dev/fd/", "/proc/self/fd/", "/proc/thread-self/fd/"} {
		if fd, ok := strings.CutPrefix(p, dir); ok && isNumber(fd) {
			return fd
		}
	}
	return ""
}

func (s *scope) dynamic(raw string) {
	s.z.a.Dynamic = appendUnique(s.z.a.Dynamic, raw)
}

// braceGlob reports a word the shell may brace-expand: its text is not one path.
func braceGlob(w word) bool {
	return w.glob && strings.Contains(w.text, "{")
}

// cd records a change of folder from the folders at, and returns the folders the line may
// then be in.
func (s *scope) cd(w word, at []int) []int { return s.chdir(w, at, false) }

// chdir is cd, or with physical a chdir(2) (cd -P, git -C, make -C).
func (s *scope) chdir(w word, at []int, physical bool) []int {
	if !w.static || braceGlob(w) || w.glob || w.text == "-" || s.z.linked {
		s.dynamic(w.raw)
		s.z.unknownCwd = true
		return at
	}
	if s.z.unknownCwd && !strings.HasPrefix(w.text, "/") && !strings.HasPrefix(w.text, "~") {
		s.dynamic(w.raw)
		return at
	}
	var out []int
	for _, from := range at {
		if len(s.z.a.Cwds) >= maxCwds {
			s.dynamic(w.raw)
			s.z.unknownCwd = true
			return at
		}
		s.z.a.Cwds = append(s.z.a.Cwds, Cwd{From: from, Text: w.text, Physical: physical})
		out = append(out, len(s.z.a.Cwds)-1)
	}
	return out
}

// call handles one simple command: its assignments, then the command.
func (s *scope) call(c *syntax.CallExpr, at []int) (ok, fail []int) {
	ok, fail = at, at
	if len(c.Args) > 0 {
		ws := make([]word, len(c.Args))
		for i, a := range c.Args {
			ws[i] = render(s.src, a)
		}
		ok, fail = s.command(ws, at)
	}
	// The substitutions in the words run before the command, from the same folder; their
	// commands are reported after it.
	for _, a := range c.Assigns {
		s.assign(a, at, len(c.Args) > 0)
	}
	for _, a := range c.Args {
		s.expansions(a, at)
	}
	return ok, fail
}

// assign checks one assignment: before a command (exported to it) or on its own.
func (s *scope) assign(a *syntax.Assign, at []int, prefix bool) {
	if a.Value != nil {
		s.word(a.Value, at)
	}
	if a.Array != nil {
		s.z.opaque("an array assignment, whose subscripts bash evaluates as code")
		s.blind(a.Array)
		return
	}
	if a.Index != nil {
		s.z.opaque("an assignment to an array element, whose subscript bash evaluates as code")
		return
	}
	if a.Naked || a.Name == nil {
		return
	}
	if why := assignable(a.Name.Value); why != "" {
		s.z.opaque("it sets " + a.Name.Value + ", " + why)
	}
}

// word renders a word, checks its expansions against the subset, and analyses the
// commands in its substitutions (which run in a subshell, from the folders at).
func (s *scope) word(w *syntax.Word, at []int) word {
	s.expansions(w, at)
	return render(s.src, w)
}

// expansions checks the expansions of a word against the subset and analyses the commands
// of its substitutions.
func (s *scope) expansions(w *syntax.Word, at []int) {
	for _, p := range w.Parts {
		if _, lit := p.(*syntax.Lit); !lit {
			s.part(p, at)
		}
	}
}

func (s *scope) part(p syntax.WordPart, at []int) {
	switch p := p.(type) {
	case *syntax.DblQuoted:
		for _, q := range p.Parts {
			s.part(q, at)
		}
	case *syntax.ParamExp:
		if why := paramReason(p); why != "" {
			s.z.opaque(why)
		}
		// ${x:-$(cmd)}: what the expansion holds still runs.
		syntax.Walk(p, func(n syntax.Node) bool {
			switch n := n.(type) {
			case *syntax.CmdSubst:
				s.stmts(n.Stmts, at)
				return false
			case *syntax.ProcSubst:
				s.stmts(n.Stmts, at)
				return false
			}
			return true
		})
	case *syntax.CmdSubst:
		s.stmts(p.Stmts, at)
	case *syntax.ProcSubst:
		s.stmts(p.Stmts, at)
	case *syntax.ArithmExp:
		if !literalArithm(p.X) {
			s.z.opaque("arithmetic $(( )) with variables, which bash evaluates as code")
			s.blind(p)
		}
	case *syntax.ExtGlob:
		// A pattern: the word is a glob (render says so).
	}
}

// paramReason says why a parameter expansion is outside the subset: only $name and
// ${name} (and the special parameters) are in it. ${x@P} and ${!x} evaluate a value as
// code or as a name, subscripts and slices as arithmetic; the other operators are left
// out for simplicity.
func paramReason(p *syntax.ParamExp) string {
	switch {
	case p.Excl:
		return "indirect expansion ${!x}, which evaluates a variable's value as a name (and runs code hidden in it)"
	case p.Index != nil:
		return "an array subscript ${a[i]}, which bash evaluates as code"
	case p.Slice != nil:
		return "a substring ${x:i:n}, whose offsets bash evaluates as code"
	case p.Exp != nil && p.Exp.Op == syntax.OtherParamOps:
		return "the expansion ${x@...}, which can evaluate a value as a prompt (and run code hidden in it)"
	case p.Length:
		return ""
	case p.Repl != nil || p.Exp != nil || p.Names != 0 || p.Width || p.IsSet || len(p.Modifiers) > 0 || p.NestedParam != nil || p.Flags != nil:
		return "a parameter expansion with an operator (${x...}): only $name and ${name} are followed"
	}
	return ""
}

// literalArithm reports an arithmetic expression of numbers and operators only: with a
// variable in it, bash would evaluate the variable's value as code.
func literalArithm(x syntax.ArithmExpr) bool {
	switch x := x.(type) {
	case nil:
		return true
	case *syntax.BinaryArithm:
		switch x.Op {
		case syntax.Assgn, syntax.AddAssgn, syntax.SubAssgn, syntax.MulAssgn, syntax.QuoAssgn,
			syntax.RemAssgn, syntax.AndAssgn, syntax.OrAssgn, syntax.XorAssgn, syntax.ShlAssgn, syntax.ShrAssgn:
			return false
		}
		return literalArithm(x.X) && literalArithm(x.Y)
	case *syntax.UnaryArithm:
		if x.Op == syntax.Inc || x.Op == syntax.Dec {
			return false
		}
		return literalArithm(x.X)
	case *syntax.ParenArithm:
		return literalArithm(x.X)
	case *syntax.Word:
		if len(x.Parts) != 1 {
			return false
		}
		l, ok := x.Parts[0].(*syntax.Lit)
		if !ok || l.Value == "" {
			return false
		}
		for i := 0; i < len(l.Value); i++ {
			c := l.Value[i]
			if !(c >= '0' && c <= '9' || c == 'x' || c == 'X' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' || c == '#') {
				return false
			}
		}
		// A name made only of hex letters ("abc") is a variable, not a number.
		return l.Value[0] >= '0' && l.Value[0] <= '9'
	}
	return false
}

func appendUnique(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// union returns the folders in a or b, in order, once each.
func union(a, b []int) []int {
	out := append([]int(nil), a...)
	for _, x := range b {
		seen := false
		for _, y := range out {
			seen = seen || x == y
		}
		if !seen {
			out = append(out, x)
		}
	}
	return out
}

// cleanName cleans a command name with a slash so that it cannot pass for a bare name.
func cleanName(name string) string {
	if !strings.Contains(name, "/") {
		return name
	}
	c := path.Clean(name)
	// ./bin/server stays ./bin/server (as the person writes it in a rule); ./../x is ../x.
	if !strings.Contains(c, "/") || strings.HasPrefix(name, "./") && !strings.HasPrefix(c, "../") && !strings.HasPrefix(c, "/") {
		c = "./" + c
	}
	return c
}
