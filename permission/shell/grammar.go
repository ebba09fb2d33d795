package shell

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A grammar is what toolsd knows to be safe in a command's arguments: the options that run
// no code, reach no path outside what is checked, and change nothing about how later
// commands are found; and what its positional words are. The tables are in grammars.go,
// written in a small notation (see parseGrammar) and reviewed against GTFOBins.
type grammar struct {
	short map[byte]optSpec
	long  map[string]optSpec
	// digits accepts -NUM (head -20, grep -3).
	digits bool
	// style "go": options are -name or --name, with =value or the next word (the flag
	// package); no clusters.
	goStyle bool
	// first is the kind of the first positional word (grep's pattern, sed's script) unless
	// an option gave it (an option whose kind is vPat or vPatFile).
	first    vkind
	hasFirst bool
	args     vkind
	// max is the most positional words (0: no limit); extra is their kind past max... no:
	// more than max makes the command unsafe.
	max int
	// sub: the first positional word names a subcommand, whose grammar is "name sub".
	sub bool
	// runs: the first positional word names a program run with the rest of the words,
	// checked with that program's grammar (npx tsc --noEmit, python -m pytest -x).
	runs bool
	// anyOpts: options are not checked one by one (the tool was reviewed as one whose
	// options only choose among the project's own code and files); their values are
	// checked as paths when they may be paths.
	anyOpts bool
	// stop: options end at the first positional word (POSIX order: env, xargs, ssh).
	stop bool
	// globSafe: no option of the program, listed or not, runs code or reaches a path that
	// is not checked, so a glob that expands to a file named like an option (-rf.txt) is
	// harmless (ls *.go).
	globSafe bool
	// globSuffix: a glob whose fixed ending holds a character no short option has
	// ("*.go": ".") cannot expand to an option cluster, and no long option of the program
	// does harm whatever its value (ls, grep): such a glob is harmless.
	globSuffix bool
	// check is a further check of the whole argument list; it returns why it is unsafe.
	check func(args []word) string
	// markedLong and markedShort are the options written with "!": known escapes, whose
	// values are still checked.
	markedLong  map[string]bool
	markedShort map[byte]bool
}

// optSpec is one option of a grammar.
type optSpec struct {
	arg      bool  // takes a value
	optional bool  // the value only attached (-uno, --color=auto)
	kind     vkind // what the value is
	// escape: the option is known to run code or reach outside; the text says how.
	escape string
}

// vkind is what a word is to its command.
type vkind uint8

const (
	vText      vkind = iota // any text; never a path
	vAuto                   // a path if it looks like one or names an existing file
	vPath                   // a path it reads (or lists, or runs)
	vWrite                  // a path it writes content the line controls into (an edit)
	vOut                    // a path a tool makes its own output in (a binary, a profile)
	vDir                    // a folder it works in (cd for the words after it)
	vNum                    // a number
	vPat                    // the pattern (the first positional is then a path)
	vPatFile                // a file holding the pattern
	vSed                    // a sed script
	vAwk                    // an awk program
	vLdflags                // go's -ldflags
	vNone                   // no positional words at all
	vText2                  // two words of text (jq --arg name value)
	vNamePath               // a name then a path (jq --slurpfile name file)
	vOptNum                 // make -j [N]: an optional number as the next word
	vScript                 // a file whose content it runs or reads as code (python's script, make -f)
	vRepo                   // a repository: a remote's name, a network URL or a local path (git fetch)
	vGitConfig              // a git configuration setting name=value (git -c)
	vReporter               // node's test reporter: a built-in name or a module's path
	vURL                    // a URL (curl): file:// is a path, other protocols than the web's ask
	vAtFile                 // a value, or @file to read it from (curl -H, -w)
	vPyPlugin               // pytest -p: a plugin module to load, or no:NAME to turn one off
)

var kinds = map[string]vkind{
	"text": vText, "auto": vAuto, "path": vPath, "write": vWrite, "dir": vDir, "num": vNum,
	"out": vOut, "pat": vPat, "patfile": vPatFile, "sed": vSed, "awk": vAwk, "ldflags": vLdflags, "none": vNone,
	"text2": vText2, "namepath": vNamePath, "optnum": vOptNum, "script": vScript, "repo": vRepo,
	"gitcfg": vGitConfig, "reporter": vReporter, "url": vURL, "atfile": vAtFile, "pyplugin": vPyPlugin,
}

// parseGrammar reads the notation of grammars.go: words separated by spaces.
//
//	-abc          short flags a, b and c
//	-n:num        a short option with a value of that kind (attached or the next word)
//	-u?:text      a short option whose value is only attached (-uno)
//	--name        a long flag
//	--name:kind   a long option with a value (--name=v or --name v)
//	--name?:kind  a long option whose value is only attached (--color=auto)
//	#             -NUM is accepted
//	args:kind     the kind of every positional word (default auto)
//	first:kind    the kind of the first positional word
//	max:N         at most N positional words
//	sub runs anyopts stop go globsafe globsuffix   see grammar
//	@group        the options of a named group
//
// An option may end in "!": it is a known escape (its text is in escapes), and its value is
// still checked (a path value is asked for when it lies outside).
func parseGrammar(spec string, groups map[string]string) *grammar {
	g := &grammar{short: map[byte]optSpec{}, long: map[string]optSpec{}, args: vAuto,
		markedLong: map[string]bool{}, markedShort: map[byte]bool{}}
	setLong := func(name string, o optSpec, marked bool) {
		g.long[name] = o
		if marked {
			g.markedLong[name] = true
		}
	}
	setShort := func(ch byte, o optSpec, marked bool) {
		g.short[ch] = o
		if marked {
			g.markedShort[ch] = true
		}
	}
	var add func(spec string)
	add = func(spec string) {
		for _, tok := range strings.Fields(spec) {
			marked := strings.HasSuffix(tok, "!") && strings.HasPrefix(tok, "-")
			tok = strings.TrimSuffix(tok, "!")
			switch {
			case strings.HasPrefix(tok, "@"):
				grp, ok := groups[tok[1:]]
				if !ok {
					panic("shell: unknown grammar group " + tok)
				}
				add(grp)
			case tok == "#":
				g.digits = true
			case tok == "sub":
				g.sub = true
			case tok == "runs":
				g.runs = true
			case tok == "anyopts":
				g.anyOpts = true
			case tok == "stop":
				g.stop = true
			case tok == "go":
				g.goStyle = true
			case tok == "globsafe":
				g.globSafe = true
			case tok == "globsuffix":
				g.globSuffix = true
			case strings.HasPrefix(tok, "args:"):
				g.args = kind(tok[5:])
			case strings.HasPrefix(tok, "first:"):
				g.first, g.hasFirst = kind(tok[6:]), true
			case strings.HasPrefix(tok, "max:"):
				fmt.Sscan(tok[4:], &g.max)
			case strings.HasPrefix(tok, "--"):
				setLong(option(tok[2:], marked))
			case strings.HasPrefix(tok, "-") && len(tok) > 1:
				if strings.Contains(tok, ":") || g.goStyle {
					name, o, marked := option(tok[1:], marked)
					if g.goStyle {
						setLong(name, o, marked)
					} else {
						setShort(name[0], o, marked)
					}
					continue
				}
				for i := 1; i < len(tok); i++ {
					setShort(tok[i], optSpec{}, marked)
				}
			default:
				panic("shell: bad grammar word " + tok)
			}
		}
	}
	add(spec)
	return g
}

// option reads "name", "name:kind" or "name?:kind" (a value only attached).
func option(tok string, marked bool) (string, optSpec, bool) {
	name, k, hasArg := strings.Cut(tok, ":")
	o := optSpec{arg: hasArg}
	if hasArg {
		o.kind = kind(k)
		if strings.HasSuffix(name, "?") {
			name, o.optional = strings.TrimSuffix(name, "?"), true
		}
	}
	return name, o, marked
}

func kind(s string) vkind {
	k, ok := kinds[strings.TrimSuffix(s, "!")]
	if !ok {
		panic("shell: unknown grammar kind " + s)
	}
	return k
}

// argCheck is the state of one command's arguments being checked against its grammar.
type argCheck struct {
	s    *scope
	name string // the command, as its grammar is named ("git status")
	g    *grammar
	at   []int
	// unsafe is the first reason found.
	unsafe string
}

func (c *argCheck) fail(format string, a ...any) {
	if c.unsafe == "" {
		c.unsafe = fmt.Sprintf(format, a...)
	}
}

// value handles an option's or a positional word's value of kind k.
func (c *argCheck) value(w word, k vkind) {
	switch k {
	case vPath, vPatFile:
		c.s.path(w, Read, c.at)
	case vWrite, vOut:
		if w.static && w.text == "-" {
			return // standard output
		}
		if k == vWrite {
			c.s.path(w, Write, c.at)
		} else {
			c.s.path(w, Create, c.at)
		}
	case vScript:
		if !w.static {
			c.fail("the program %s runs is only known when the line runs (%s)", c.name, w.raw)
			return
		}
		if inputWord(w.text) {
			c.fail("%s runs a program it reads from the line's input (%s), which no analysis sees", c.name, w.text)
			return
		}
		c.s.path(w, Read, c.at)
	case vRepo:
		c.repo(w)
	case vGitConfig:
		c.gitConfig(w)
	case vReporter:
		c.reporter(w)
	case vURL:
		c.url(w)
	case vPyPlugin:
		if !w.static || !strings.HasPrefix(w.text, "no:") {
			c.fail("%s -p %s loads a plugin module (-p no:NAME, which turns one off, is known to be safe)", c.name, w.raw)
		}
	case vAtFile:
		if !w.static && (w.prefix == "" || strings.HasPrefix(w.prefix, "@")) {
			c.fail("a value of %s is only known when the line runs (%s), and may name a file to read (@file)", c.name, w.raw)
		}
		if w.static && strings.HasPrefix(w.text, "@") {
			c.s.path(withText(w, w.text[1:]), Read, c.at)
		}
		if strings.Contains(w.text, "%output{") {
			c.fail("%s's %%output{file} writes a file", c.name)
		}
	case vDir:
		c.s.path(w, Chdir, c.at)
		c.at = c.s.chdir(w, c.at, true)
	case vAuto:
		c.auto(w)
	case vSed:
		if !w.static {
			c.fail("the sed script of %s is only known when the line runs", c.name)
		} else if why := sedUnsafe(w.text); why != "" {
			c.fail("the sed script %s: %s", quoteWord(w.text), why)
		}
	case vAwk:
		if !w.static {
			c.fail("the awk program of %s is only known when the line runs", c.name)
		} else if why := awkUnsafe(w.text); why != "" {
			c.fail("the awk program %s: %s", quoteWord(w.text), why)
		}
	case vLdflags:
		if !w.static || !safeLdflags(w.text) {
			c.fail("-ldflags other than -s, -w and -X name=value can name a linker or plugins to run")
		}
	}
}

// checkArgs checks ws (the words after the command's name, or after its subcommand)
// against g, records the path words, and returns why the command is unsafe ("" when its
// arguments fit the grammar), the folders the rest of the line is in, and for a grammar
// with subcommands or a runner, the index in ws of the subcommand or program.
func (s *scope) checkArgs(name string, g *grammar, ws []word, at []int) (unsafe string, atAfter []int, next int) {
	c := &argCheck{s: s, name: name, g: g, at: at}
	next = -1
	dashdash := false
	positional := 0
	firstGiven := false
	allText := g.args == vText && (!g.hasFirst || g.first == vText) && !g.sub && !g.runs
	for i := 0; i < len(ws); i++ {
		w := ws[i]
		isOpt := !dashdash && len(w.prefix) > 1 && w.prefix[0] == '-' || !dashdash && w.static && len(w.text) > 1 && w.text[0] == '-'
		if g.stop && positional > 0 {
			isOpt = false
		}
		if !dashdash && w.static && w.text == "--" {
			dashdash = true
			continue
		}
		if isOpt {
			i = c.option(ws, i, &firstGiven)
			continue
		}
		if !w.static && w.prefix == "" && !dashdash && !allText && !(w.glob && (g.globSafe || g.globSuffix && optionProofSuffix(w.text))) {
			// "$x", $(cmd), *.go: whatever it turns into may start with "-".
			c.fail("an argument of %s is only known when the line runs (%s), and could be an option", name, w.raw)
		}
		if w.glob && !dashdash && !allText && !g.globSafe && !(g.globSuffix && optionProofSuffix(w.text)) && (w.text == "" || strings.IndexByte("*?[", w.text[0]) >= 0) {
			c.fail("the pattern %s could match a file named like an option of %s (write ./%s)", w.raw, name, w.raw)
		}
		if (g.sub || g.runs) && positional == 0 {
			return c.unsafe, c.at, i
		}
		k := g.args
		if g.hasFirst && positional == 0 && !firstGiven {
			k = g.first
		}
		if k == vNone {
			c.fail("%s takes no arguments toolsd knows to be safe (%s)", name, w.raw)
		}
		c.value(w, k)
		positional++
		if g.max > 0 && positional > g.max {
			c.fail("%s with more than %d arguments", name, g.max)
		}
	}
	if g.check != nil {
		if why := g.check(ws); why != "" {
			c.fail("%s", why)
		}
	}
	return c.unsafe, c.at, next
}

// option checks the option at ws[i] and returns the index of its last word.
func (c *argCheck) option(ws []word, i int, firstGiven *bool) int {
	w := ws[i]
	g := c.g
	t := w.text
	if !w.static {
		t = w.prefix
	}
	long := strings.HasPrefix(t, "--") || g.goStyle
	if long {
		body := strings.TrimLeft(t, "-")
		name, val, hasVal := strings.Cut(body, "=")
		if !w.static && !hasVal {
			c.fail("an option of %s is only known when the line runs (%s)", c.name, w.raw)
			return i
		}
		if !w.static {
			val = strings.TrimPrefix(w.text, t[:len(t)-len(body)]+name+"=")
		}
		o, ok := g.long[name]
		if !ok {
			// Not in the grammar: its value is still checked where it may be a path (a
			// rule "*" allows the command as it is, but not its paths).
			if hasVal {
				c.auto(withText(w, val))
			}
			if !g.anyOpts {
				c.unknown("--"+name, "-"+name)
			}
			return i
		}
		if o.escape != "" {
			c.fail("%s %s %s", c.name, "--"+name, o.escape)
		}
		if !o.arg {
			if hasVal && !g.goStyle {
				c.fail("--%s of %s takes no value", name, c.name)
			}
			return i
		}
		vw := withText(w, val)
		if !hasVal {
			if o.optional {
				return i
			}
			if o.kind == vOptNum {
				if i+1 < len(ws) && ws[i+1].static && isNumber(ws[i+1].text) {
					return i + 1
				}
				return i
			}
			if i+1 >= len(ws) {
				c.fail("--%s of %s needs a value", name, c.name)
				return i
			}
			i++
			vw = ws[i]
		}
		i = c.optValue(ws, i, vw, o, firstGiven)
		return i
	}
	// A cluster of short options, the last of which may take a value.
	if g.digits && w.static && isNumber(t[1:]) {
		return i
	}
	for j := 1; j < len(t); j++ {
		ch := t[j]
		o, ok := g.short[ch]
		if !ok {
			// Not in the grammar: what follows it in the word may be its value (-o/etc/x).
			if rest := w.text[min(j+1, len(w.text)):]; w.static && looksLikePath(rest) {
				c.auto(withText(w, rest))
			}
			if !g.anyOpts {
				c.unknown("-"+string(ch), "")
			}
			return i
		}
		if o.escape != "" {
			c.fail("%s -%c %s", c.name, ch, o.escape)
		}
		if !o.arg {
			continue
		}
		if j+1 < len(t) || !w.static && j+1 == len(t) && len(w.text) > len(t) {
			// The value is attached: -n5, -e's/a/b/'.
			vw := withText(w, w.text[j+1:])
			if j+1 == len(t) {
				vw = withText(w, w.text[len(t):])
			}
			return c.optValue(ws, i, vw, o, firstGiven)
		}
		if o.optional {
			return i
		}
		if o.kind == vOptNum {
			if i+1 < len(ws) && ws[i+1].static && isNumber(ws[i+1].text) {
				return i + 1
			}
			return i
		}
		if !w.static {
			c.fail("an option of %s is only known when the line runs (%s)", c.name, w.raw)
			return i
		}
		if i+1 >= len(ws) {
			c.fail("-%c of %s needs a value", ch, c.name)
			return i
		}
		return c.optValue(ws, i+1, ws[i+1], o, firstGiven)
	}
	if !w.static {
		c.fail("an option of %s is only known when the line runs (%s)", c.name, w.raw)
	}
	return i
}

// optValue handles the value vw of option o (ws[i] is the value's last word so far).
func (c *argCheck) optValue(ws []word, i int, vw word, o optSpec, firstGiven *bool) int {
	switch o.kind {
	case vPat, vSed, vAwk:
		*firstGiven = true
	case vPatFile:
		*firstGiven = true
		c.value(vw, vPath)
		return i
	case vText2:
		if i+1 >= len(ws) {
			c.fail("an option of %s needs two values", c.name)
			return i
		}
		return i + 1
	case vNamePath:
		if i+1 >= len(ws) {
			c.fail("an option of %s needs a name and a file", c.name)
			return i
		}
		c.value(ws[i+1], vPath)
		return i + 1
	}
	if !vw.static && o.kind != vText && o.kind != vNum && o.kind != vPat {
		switch o.kind {
		case vPath, vWrite, vOut, vDir, vAuto, vAtFile, vURL, vRepo, vGitConfig, vReporter:
			c.value(vw, o.kind) // paths recorded as Dynamic; the others check what is known
			return i
		}
		c.fail("a value of %s is only known when the line runs (%s)", c.name, vw.raw)
		return i
	}
	c.value(vw, o.kind)
	return i
}

// auto handles a word that is a path if it looks like one or names something that exists
// (and for NAME=value, its value). The line's input named as a device (/dev/stdin,
// /dev/fd/3) is not: toolsd cannot tell whether the command reads it as data or runs it.
func (c *argCheck) auto(w word) {
	t := w.text
	if name, val, ok := strings.Cut(t, "="); ok && isShellName(name) {
		t = val
	}
	if w.static && inputDevice(t) || !w.static && (strings.HasPrefix(w.prefix, "/dev/") || strings.HasPrefix(w.prefix, "/proc/")) {
		c.fail("%s is given the line's input as %s, which it may run as a program or read as a list of files", c.name, w.raw)
	}
	// A module a JavaScript tool imports (--plugin, --require, a reporter) may be a URL:
	// data: is code written in the line, file: a path.
	switch lower := strings.ToLower(t); {
	case strings.HasPrefix(lower, "data:"):
		c.fail("%s is given a data: URL (%s), which is code if it imports it", c.name, w.raw)
		return
	case strings.HasPrefix(lower, "file:"):
		p := strings.TrimPrefix(t[len("file:"):], "//localhost")
		if strings.HasPrefix(p, "//") {
			p = p[2:]
			if !strings.HasPrefix(p, "/") {
				c.fail("%s is given a file: URL on another host (%s)", c.name, w.raw)
				return
			}
		}
		c.s.path(withText(w, p), Read, c.at)
		return
	}
	c.s.maybePath(w, c.at)
}

// repo handles the repository of git fetch, pull, push and clone: a remote's name or a
// local path (checked as a path), or a URL of a network transport. A remote helper
// (ext::cmd, fd::3) runs a program; file:// is a local path; other transports ask.
func (c *argCheck) repo(w word) {
	t := w.prefix
	if strings.Contains(t, "::") {
		c.fail("%s %s names a remote helper, which runs a program", c.name, w.raw)
		return
	}
	if scheme, rest, ok := strings.Cut(t, "://"); ok {
		switch strings.ToLower(scheme) {
		case "https", "http", "ssh", "git", "git+ssh", "ssh+git":
		case "file":
			if !w.static || !strings.HasPrefix(rest, "/") {
				c.fail("%s %s names a local repository toolsd cannot place (write its path)", c.name, w.raw)
				return
			}
			c.s.path(withText(w, rest), Read, c.at)
		default:
			c.fail("%s uses the %s:// transport, which toolsd does not know to be safe", c.name, scheme)
		}
		return
	}
	if !w.static {
		c.fail("the repository of %s is only known when the line runs (%s)", c.name, w.raw)
		return
	}
	if i := strings.IndexByte(t, ':'); i > 0 && !strings.Contains(t[:i], "/") {
		return // host:path, over ssh
	}
	c.s.maybePath(w, c.at) // a remote's name, or a repository on this machine
}

// safeGitConfig are the git settings (lower case) known to name no program and no file:
// git -c may set them under a rule with a wildcard. Every other key may (core.pager,
// core.fsmonitor, core.sshCommand, alias.*, diff.external, credential.helper,
// include.path, protocol.ext.allow, ...), and no list of those is complete.
var safeGitConfig = set("user.name user.email color.ui color.diff color.status color.branch color.interactive " +
	"core.quotepath init.defaultbranch")

// gitConfig handles a setting given to git -c (name=value, or name alone for true).
func (c *argCheck) gitConfig(w word) {
	if !w.static {
		c.fail("%s -c with a setting only known when the line runs (%s)", c.name, w.raw)
		return
	}
	key, _, _ := strings.Cut(w.text, "=")
	key = strings.ToLower(key)
	if !safeGitConfig[key] && !strings.HasPrefix(key, "advice.") {
		c.fail("%s -c %s sets configuration for the command, which can name programs to run "+
			"(core.pager, core.fsmonitor, core.sshCommand, alias.*): only user.name, user.email, "+
			"color.*, core.quotePath, init.defaultBranch and advice.* are known to be harmless", c.name, key)
	}
}

// nodeReporters are node's built-in test reporters.
var nodeReporters = set("spec tap dot junit lcov")

// reporter handles node's --test-reporter: a built-in reporter, or a module in a file
// (checked as a path). Anything else is a module node loads — a package, or a data: URL
// that is code written in the line.
func (c *argCheck) reporter(w word) {
	t := w.text
	switch {
	case w.static && nodeReporters[t]:
	case w.static && (strings.HasPrefix(t, "./") || strings.HasPrefix(t, "../") || strings.HasPrefix(t, "/")) && !strings.Contains(t, ":"):
		c.s.path(w, Read, c.at)
	default:
		c.fail("%s --test-reporter %s loads a module, which runs code (a data: URL is code written in the line): "+
			"use a built-in reporter (spec, tap, dot, junit, lcov) or a file ./reporter.js", c.name, w.raw)
	}
}

// url handles a URL of curl or wget: the web's and ftp's protocols (or none: http) fetch
// from the network, file: reads a local path (checked as one), any other protocol asks.
func (c *argCheck) url(w word) {
	t := strings.ToLower(w.prefix)
	if rest, ok := strings.CutPrefix(t, "file:"); ok {
		rest = w.prefix[len("file:"):]
		rest = strings.TrimPrefix(strings.TrimPrefix(rest, "//localhost"), "//")
		if !w.static || !strings.HasPrefix(rest, "/") {
			c.fail("%s %s reads a local file toolsd cannot place (write its path)", c.name, w.raw)
			return
		}
		c.s.path(withText(w, rest), Read, c.at)
		return
	}
	scheme, _, ok := strings.Cut(t, "://")
	if !ok {
		if !w.static {
			c.fail("the URL of %s is only known when the line runs (%s)", c.name, w.raw)
		}
		return
	}
	switch scheme {
	case "http", "https", "ftp", "ftps", "ws", "wss":
	default:
		c.fail("%s's %s:// protocol is not one toolsd knows to be safe", c.name, scheme)
	}
}

// unknown fails on an option the grammar does not list, naming a known escape when there
// is one.
func (c *argCheck) unknown(opt, alt string) {
	for _, o := range []string{opt, alt} {
		if o == "" {
			continue
		}
		if why, ok := escapes[c.name+" "+o]; ok {
			c.fail("%s %s %s", c.name, o, why)
			return
		}
		if sp := strings.IndexByte(c.name, ' '); sp > 0 {
			if why, ok := escapes[c.name[:sp]+" "+o]; ok {
				c.fail("%s %s %s", c.name[:sp], o, why)
				return
			}
		}
	}
	c.fail("%s is not an option of %s that toolsd knows to be safe", opt, c.name)
}

// seenOpt is an option found in a command's words: its name as written in the grammar
// ("-i", "--in-place") and its value, if it has one.
type seenOpt struct{ name, val string }

// options lists the options of ws as g reads them: clusters split, values taken (attached,
// after =, or the next word), until "--".
func options(g *grammar, ws []word) []seenOpt {
	var out []seenOpt
	for i := 0; i < len(ws); i++ {
		t := ws[i].text
		if t == "--" {
			break
		}
		if len(t) < 2 || t[0] != '-' {
			continue
		}
		if strings.HasPrefix(t, "--") || g.goStyle {
			name, val, hasVal := strings.Cut(strings.TrimLeft(t, "-"), "=")
			o := g.long[name]
			if o.arg && !hasVal && !o.optional && i+1 < len(ws) {
				i++
				val = ws[i].text
			}
			out = append(out, seenOpt{"--" + name, val})
			continue
		}
		for j := 1; j < len(t); j++ {
			o := g.short[t[j]]
			if !o.arg {
				out = append(out, seenOpt{"-" + t[j:j+1], ""})
				continue
			}
			val := t[j+1:]
			if val == "" && !o.optional && i+1 < len(ws) {
				i++
				val = ws[i].text
			}
			out = append(out, seenOpt{"-" + t[j:j+1], val})
			break
		}
	}
	return out
}

// withText returns w with another text (an option's value taken from the option word).
func withText(w word, text string) word {
	w.text = text
	if !w.static {
		// The value holds the expansion.
		w.prefix = ""
	} else {
		w.prefix = text
	}
	return w
}

// optionProofSuffix reports a glob whose fixed ending (after its last pattern character)
// holds a character that is no short option's, so that no expansion is an option cluster.
func optionProofSuffix(glob string) bool {
	i := strings.LastIndexAny(glob, "*?]}")
	return i >= 0 && strings.ContainsAny(glob[i+1:], "./,=+@:~%")
}

func isNumber(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// safeLdflags accepts -ldflags made only of -s, -w and -X name=value.
func safeLdflags(v string) bool {
	f := strings.Fields(v)
	for i := 0; i < len(f); i++ {
		switch {
		case f[i] == "-s" || f[i] == "-w":
		case f[i] == "-X" && i+1 < len(f) && strings.Contains(f[i+1], "="):
			i++
		case strings.HasPrefix(f[i], "-X=") && strings.Contains(f[i][3:], "="):
		default:
			return false
		}
	}
	return true
}

// quoteWord shows a word in a reason: quoted as Go quotes a string, its first 57 bytes
// (whole characters) and "..." when it is longer than 60.
func quoteWord(s string) string {
	if len(s) > 60 {
		cut := 57
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return strconv.Quote(s)
}
