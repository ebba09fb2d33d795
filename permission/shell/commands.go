package shell

import (
	"path"
	"strings"
	"unicode"
	"unicode/utf8"
)

// hiddenRunes reports a command name with characters a person cannot see or tell apart from
// spacing: control and format characters (zero-width spaces, bidi overrides), combining
// marks, any kind of space, invalid UTF-8.
func hiddenRunes(s string) bool {
	if !utf8.ValidString(s) {
		return true
	}
	for _, r := range s {
		if r < 0x80 {
			if r < 0x21 || r == 0x7f {
				return true
			}
			continue
		}
		if !unicode.IsGraphic(r) || unicode.In(r, unicode.Cf, unicode.Mn, unicode.Me, unicode.Zs) {
			return true
		}
	}
	return false
}

// wrapSpec describes a wrapper's options: which take a value, which are flags, how many
// positional words come before the wrapped command.
type wrapSpec struct {
	withArg  string // short options with a value, e.g. "nk"
	flags    string // short options without one
	longArg  []string
	longFlag []string
	// positional words before the command (timeout's duration, flock's file).
	positional int
}

// wrappers run the command that follows their options; it is reported as a command of its
// own (and the wrapper is not: its options are checked here).
var wrappers = map[string]wrapSpec{
	"timeout": {withArg: "ks", flags: "v", longArg: []string{"kill-after", "signal"}, longFlag: []string{"preserve-status", "foreground", "verbose"}, positional: 1},
	"nice":    {withArg: "n", longArg: []string{"adjustment"}},
	"ionice":  {withArg: "cnp", flags: "tP", longArg: []string{"class", "classdata"}, longFlag: []string{"ignore"}},
	"nohup":   {},
	"stdbuf":  {withArg: "ioe", longArg: []string{"input", "output", "error"}},
	"setsid":  {flags: "cfw", longFlag: []string{"ctty", "fork", "wait"}},
	"time":    {withArg: "fo", flags: "pvaq", longArg: []string{"format", "output"}, longFlag: []string{"portability", "verbose", "append", "quiet"}},
	"exec":    {withArg: "a", flags: "cl"},
	"builtin": {},
	"xargs": {withArg: "adEeIiLlnPs", flags: "0oprtx",
		longArg:  []string{"arg-file", "delimiter", "eof", "replace", "max-lines", "max-args", "max-procs", "max-chars", "process-slot-var"},
		longFlag: []string{"null", "open-tty", "interactive", "no-run-if-empty", "verbose", "exit", "show-limits"}},
	"watch": {withArg: "nq", flags: "bcdegptwx",
		longArg:  []string{"interval", "equexit", "differences"},
		longFlag: []string{"beep", "color", "no-color", "chgexit", "errexit", "exec", "precise", "no-title", "no-wrap", "no-linewrap"}},
	"flock":   {withArg: "wEc", flags: "sxunoFv", longArg: []string{"timeout", "conflict-exit-code", "command"}, longFlag: []string{"shared", "exclusive", "unlock", "nonblock", "close", "no-fork", "verbose"}, positional: 1},
	"taskset": {flags: "apc", longFlag: []string{"all-tasks", "pid", "cpu-list"}, positional: 1},
	"chrt":    {flags: "bdfiormRav", longFlag: []string{"batch", "deadline", "fifo", "idle", "other", "rr", "reset-on-fork", "all-tasks", "verbose"}, positional: 1},
	"sudo": {withArg: "CDghpRrtTUu", flags: "AbEeHiKklnPSsVv",
		longArg:  []string{"close-from", "chdir", "group", "host", "prompt", "chroot", "role", "type", "command-timeout", "other-user", "user"},
		longFlag: []string{"askpass", "background", "preserve-env", "set-home", "login", "remove-timestamp", "reset-timestamp", "list", "non-interactive", "preserve-groups", "stdin", "shell", "validate"}},
	"doas":    {withArg: "Cu", flags: "Lns"},
	"pkexec":  {withArg: "u", longArg: []string{"user"}, longFlag: []string{"disable-internal-agent", "keep-cwd"}},
	"runuser": {withArg: "ugG", flags: "lmpf", longArg: []string{"user", "group", "supp-group", "command", "shell"}, longFlag: []string{"login", "preserve-environment", "pty"}},
}

// privileged wrappers are reported with their whole text as well as the command they run.
var privileged = map[string]bool{"sudo": true, "doas": true, "pkexec": true, "runuser": true, "su": true}

// shells run the string given with -c.
var shells = map[string]bool{"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "mksh": true, "ash": true, "yash": true, "posh": true}

// splitOpts consumes the options of spec from ws and returns the index of the first word
// after them (and after the positional words), the options seen (by name, with value), and
// ok=false when an option is unknown or a value is missing or not static.
func splitOpts(ws []word, spec wrapSpec) (int, map[string]string, bool) {
	seen := map[string]string{}
	i := 0
	for i < len(ws) {
		w := ws[i]
		if !w.static {
			if strings.HasPrefix(w.prefix, "-") || w.prefix == "" {
				return 0, nil, false
			}
			break
		}
		t := w.text
		if t == "--" {
			i++
			break
		}
		if len(t) < 2 || t[0] != '-' {
			break
		}
		if strings.HasPrefix(t, "--") {
			name, val, hasVal := strings.Cut(t[2:], "=")
			switch {
			case contains(spec.longArg, name):
				if !hasVal {
					if i+1 >= len(ws) || !ws[i+1].static {
						return 0, nil, false
					}
					val = ws[i+1].text
					i++
				}
				seen[name] = val
			case contains(spec.longFlag, name):
				seen[name] = ""
			default:
				return 0, nil, false
			}
			i++
			continue
		}
		// A cluster of short options, the last of which may take a value.
		j := 1
		for j < len(t) {
			c := t[j]
			switch {
			case strings.IndexByte(spec.withArg, c) >= 0:
				val := t[j+1:]
				if val == "" {
					if i+1 >= len(ws) || !ws[i+1].static {
						return 0, nil, false
					}
					val = ws[i+1].text
					i++
				}
				seen[string(c)] = val
				j = len(t)
			case strings.IndexByte(spec.flags, c) >= 0:
				seen[string(c)] = ""
				j++
			case c >= '0' && c <= '9' && spec.withArg == "n" && j == 1:
				// nice -5: the adjustment as an option.
				seen["n"] = t[1:]
				j = len(t)
			default:
				return 0, nil, false
			}
		}
		i++
	}
	for k := 0; k < spec.positional; k++ {
		if i >= len(ws) || !ws[i].static {
			return 0, nil, false
		}
		i++
	}
	return i, seen, true
}

func hasArg(ws []word, s string) bool {
	for _, w := range ws {
		if w.text == s {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// sysDirs hold the system's programs: /usr/bin/env is env, /bin/bash is bash.
var sysDirs = []string{"/bin/", "/usr/bin/", "/usr/local/bin/", "/sbin/", "/usr/sbin/"}

// opaqueBuiltins are bash builtins that change the shell itself or evaluate text or
// values as code: a line that uses one is not understood.
var opaqueBuiltins = map[string]string{
	"eval": "eval runs text as code", "source": "source runs the commands of a file in this shell",
	".": "source (.) runs the commands of a file in this shell", "alias": "alias changes what later names run",
	"unalias": "unalias changes what later names run", "bind": "bind changes the shell's key bindings",
	"enable": "enable turns builtins on and off or loads them from files", "hash": "hash binds names to programs",
	"shopt": "shopt changes how the shell parses and runs later commands", "trap": "trap runs text as code later",
	"declare":  "declare sets variables by name (and evaluates subscripts and -i values as code)",
	"typeset":  "typeset sets variables by name (and evaluates subscripts and -i values as code)",
	"local":    "local sets variables by name (and evaluates subscripts and -i values as code)",
	"readonly": "readonly sets variables by name (and evaluates subscripts as code)",
	"export":   "export sets variables for later commands (and evaluates subscripts as code)",
	"let":      "let evaluates arithmetic, where bash runs code hidden in variable values",
	"read":     "read assigns variables by name (and evaluates subscripts as code)",
	"mapfile":  "mapfile assigns an array by name", "readarray": "readarray assigns an array by name",
	"getopts": "getopts assigns variables by name", "unset": "unset removes variables or functions by name (and evaluates subscripts as code)",
	"caller": "caller", "compgen": "compgen", "complete": "complete changes completion", "compopt": "compopt changes completion",
	"fc": "fc runs commands from the history", "history": "history", "bg": "job control (bg)", "fg": "job control (fg)",
	"disown": "job control (disown)", "suspend": "suspend", "logout": "logout", "break": "break (only in loops)",
	"continue": "continue (only in loops)", "return": "return (only in functions)", "ulimit": "ulimit changes the shell's limits",
	"umask": "umask changes the modes of files created later",
}

// command handles the words of one simple command (or of the command a wrapper runs) from
// the folders at, and returns the folders the line may be in after it succeeded and after
// it failed.
func (s *scope) command(ws []word, at []int) (ok, fail []int) {
	if len(ws) == 0 {
		return at, at
	}
	name := ws[0]
	// "[" alone is no pattern (a bracket without its end matches itself): it is test.
	if !name.static || name.glob && name.text != "[" || hiddenRunes(name.text) {
		s.z.opaque("the command name " + name.raw + " is only known when the line runs (or hides characters)")
		for _, w := range ws[1:] {
			s.maybePath(w, at)
		}
		return at, at
	}
	n := name.text
	for _, dir := range sysDirs {
		// /usr/bin/env, /bin/bash: the wrappers and shells are looked through by any name.
		if b, ok := strings.CutPrefix(n, dir); ok && !strings.Contains(b, "/") && (hasWrapSpec(b) || b == "env" || shells[b] || b == "su" || b == "find" || b == "command") {
			n = b
		}
	}
	args := ws[1:]
	if why, ok := opaqueBuiltins[n]; ok {
		return s.opaqueBuiltin(n, why, ws, at)
	}
	switch {
	case n == "cd" || n == "pushd":
		s.emit(ws, at)
		physical := false
		for _, a := range args {
			if a.static && strings.HasPrefix(a.text, "-") && a.text != "-" && n == "cd" {
				physical = physical || a.text != "--" && strings.Contains(a.text, "P")
				continue
			}
			return s.chdir(a, at, physical), at
		}
		if n == "pushd" {
			s.z.unknownCwd = true // pushd alone swaps with the folder before
			return at, at
		}
		return s.cd(word{text: "~", raw: "~", static: true, prefix: "~"}, at), at
	case n == "popd":
		s.emit(ws, at)
		all := make([]int, len(s.z.a.Cwds))
		for i := range all {
			all[i] = i
		}
		return all, at
	case n == "printf" && len(args) > 0 && strings.HasPrefix(args[0].prefix, "-v"):
		return s.opaqueBuiltin(n, "printf -v assigns a variable by name (and evaluates subscripts as code)", ws, at)
	case (n == "test" || n == "[") && testAssigns(args):
		return s.opaqueBuiltin(n, n+" -v evaluates its operand's subscript as code", ws, at)
	case n == "wait" && hasArg(args, "-p"):
		return s.opaqueBuiltin(n, "wait -p assigns a variable by name", ws, at)
	case n == "set":
		if why := setUnsafe(args); why != "" {
			return s.opaqueBuiltin(n, why, ws, at)
		}
	case n == "command":
		i := 0
		for i < len(args) && args[i].static && strings.HasPrefix(args[i].text, "-") && args[i].text != "--" {
			if strings.ContainsAny(args[i].text, "vV") {
				s.emit(ws, at) // command -v x describes x; it runs nothing
				return at, at
			}
			i++
		}
		if i < len(args) && args[i].text == "--" {
			i++
		}
		return s.command(args[i:], at)
	case n == "env":
		return s.env(ws, at)
	case n == "su":
		s.emit(ws, at)
		for i := 0; i < len(args); i++ {
			t := args[i].text
			switch {
			case t == "-c" || t == "--command":
				if i+1 < len(args) {
					s.nested(args[i+1], at)
				}
				return at, at
			case strings.HasPrefix(t, "--command="):
				s.nested(withText(args[i], strings.TrimPrefix(t, "--command=")), at)
				return at, at
			}
		}
		return at, at
	case n == "find":
		return s.find(ws, at)
	case shells[n]:
		return s.shell(ws, at)
	}
	if spec, ok := wrappers[n]; ok {
		return s.wrapper(n, spec, ws, at)
	}
	return s.emit(ws, at)
}

func hasWrapSpec(name string) bool {
	_, ok := wrappers[name]
	return ok
}

// opaqueBuiltin makes the line opaque and still reports the command, so that deny rules
// see it; eval's text is analysed for the same reason.
func (s *scope) opaqueBuiltin(n, why string, ws []word, at []int) ([]int, []int) {
	s.z.opaque(why)
	s.emitUnchecked(ws, why)
	if n == "eval" || n == "trap" {
		var parts []string
		for i, a := range ws[1:] {
			if n == "trap" && i > 0 {
				break
			}
			if !a.static {
				return at, at
			}
			parts = append(parts, a.text)
		}
		s.z.unknownCwd = true
		s.z.script(strings.Join(parts, " "), s.depth+1, at)
	}
	if n == "source" || n == "." {
		if len(ws) > 1 {
			s.path(ws[1], Read, at)
		}
		s.z.unknownCwd = true // the file may cd anywhere
	}
	return at, at
}

// testAssigns reports a test or [ that uses -v or -R (which evaluate a subscript).
func testAssigns(args []word) bool {
	for _, a := range args {
		if a.static && (a.text == "-v" || a.text == "-R") || !a.static && (a.prefix == "-v" || a.prefix == "-R") {
			return true
		}
	}
	return false
}

// setUnsafe says why a set command is outside the subset: only the options that make the
// shell stricter or noisier (-e -u -x -v -o pipefail ...) and -- (positional parameters)
// are in it.
func setUnsafe(args []word) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !a.static {
			return "set with a value only known when the line runs"
		}
		t := a.text
		if t == "--" || t == "-" {
			return ""
		}
		if len(t) < 2 || t[0] != '-' && t[0] != '+' {
			return ""
		}
		for _, c := range t[1:] {
			switch c {
			case 'e', 'u', 'x', 'v', 'C', 'f', 'n', 'E', 'h', 'B':
			case 'o':
				if i+1 >= len(args) {
					return ""
				}
				i++
				switch args[i].text {
				case "pipefail", "errexit", "nounset", "xtrace", "verbose", "noclobber", "noglob", "errtrace", "hashall", "braceexpand", "noexec":
				default:
					return "set -o " + args[i].text + " changes how the shell runs later commands"
				}
			default:
				return "set -" + string(c) + " changes how the shell runs later commands"
			}
		}
	}
	return ""
}

// wrapper handles a command that runs another one after its options.
func (s *scope) wrapper(n string, spec wrapSpec, ws []word, at []int) ([]int, []int) {
	args := ws[1:]
	i, seen, ok := splitOpts(args, spec)
	if !ok {
		return s.emit(ws, at) // options we do not know: the whole text asks
	}
	rest := args[i:]
	if privileged[n] {
		s.emitUnchecked(ws, n+" runs a command as another user")
		if _, ok := seen["e"]; ok && n == "sudo" { // sudoedit: edits files
			for _, a := range rest {
				s.path(a, Write, at)
			}
			return at, at
		}
		if len(rest) == 0 {
			return at, at
		}
		if n == "runuser" {
			if c, ok := seen["command"]; ok {
				s.z.script(c, s.depth+1, at)
				return at, at
			}
		}
		_, shell := seen["s"]
		_, login := seen["i"]
		if n == "sudo" && (shell || login) {
			// sudo -s cmd args runs "cmd args" through the shell.
			s.z.script(join(rest), s.depth+1, at)
			return at, at
		}
		return s.command(rest, at)
	}
	switch n {
	case "time":
		for _, k := range []string{"o", "output"} {
			if o, ok := seen[k]; ok {
				s.path(withText(args[0], o), Write, at)
			}
		}
	case "xargs":
		for _, k := range []string{"a", "arg-file"} {
			if a, ok := seen[k]; ok {
				s.path(withText(args[0], a), Read, at)
			}
		}
	case "flock":
		if c, ok := seen["c"]; ok {
			s.z.script(c, s.depth+1, at)
			return at, at
		}
		if c, ok := seen["command"]; ok {
			s.z.script(c, s.depth+1, at)
			return at, at
		}
		if i > 0 {
			s.path(args[i-1], Read, at) // the lock file
		}
	}
	if len(rest) == 0 {
		if n == "exec" || n == "builtin" || n == "xargs" {
			return at, at // exec with redirections only; xargs runs echo
		}
		return s.emit(ws, at)
	}
	if n == "watch" {
		_, x := seen["x"]
		_, exec := seen["exec"]
		if !x && !exec {
			return s.z.script(join(rest), s.depth+1, at), at // watch runs its words through sh -c
		}
	}
	if n == "builtin" {
		if _, ok := opaqueBuiltins[rest[0].text]; !ok && !safeBuiltins[rest[0].text] {
			s.z.opaque("builtin " + rest[0].text + " is not a builtin toolsd follows")
		}
	}
	if n == "xargs" {
		s.z.extra = "xargs"
		s.dynamic("(the arguments xargs reads from its input)")
	}
	return s.command(rest, at)
}

// safeBuiltins are the builtins the analysis follows (besides the wrappers).
var safeBuiltins = map[string]bool{
	"cd": true, "pushd": true, "popd": true, "dirs": true, "echo": true, "printf": true, "pwd": true,
	"true": true, "false": true, ":": true, "test": true, "[": true, "set": true, "exit": true,
	"shift": true, "type": true, "wait": true, "kill": true, "jobs": true, "times": true, "help": true,
	"command": true, "exec": true,
}

// nested parses the script held in w (a -c string).
func (s *scope) nested(w word, at []int) []int {
	if !w.static {
		s.z.opaque("a shell runs text only known when the line runs: " + w.raw)
		return at
	}
	return s.z.script(w.text, s.depth+1, at)
}

// shell handles sh/bash/zsh...: with -c the string is parsed; otherwise the shell runs a
// file (reported as the command itself) or reads commands from its input (not understood).
func (s *scope) shell(ws []word, at []int) ([]int, []int) {
	args := ws[1:]
	cmd := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !a.static {
			s.z.opaque("a shell with an argument only known when the line runs: " + a.raw)
			s.emitUnchecked(ws, "not understood")
			return at, at
		}
		t := a.text
		switch {
		case t == "--" || t == "-" || !(strings.HasPrefix(t, "-") || strings.HasPrefix(t, "+")):
			if t == "--" || t == "-" {
				i++
			}
			if cmd {
				if i < len(args) {
					s.nested(args[i], at)
				} else {
					s.z.opaque("a shell -c without a command")
				}
				return at, at
			}
			if i < len(args) {
				s.path(args[i], Read, at)
				return s.emit(ws, at)
			}
			s.z.opaque(ws[0].text + " runs commands read from its input, which no analysis sees")
			s.emitUnchecked(ws, "not understood")
			return at, at
		case strings.HasPrefix(t, "--"):
			switch t {
			case "--login", "--noprofile", "--norc", "--posix", "--noediting", "--restricted", "--verbose":
			default:
				return s.emit(ws, at) // --rcfile, --init-file, ...: not looked through
			}
		default:
			// -eux, -lc, -o pipefail, +o x, -O extglob
			for _, c := range t[1:] {
				switch c {
				case 'c':
					cmd = true
				case 'o', 'O':
					// The option's name: only those that make the shell stricter or noisier
					// (-O extglob changes parsing, which the analysis does anyway). dotglob,
					// posix, physical, keyword (-k: assignments anywhere go to the command's
					// environment) and the like change what the line means.
					i++
					if i >= len(args) || !safeShellOption(c, args[i].text) {
						s.z.opaque(ws[0].text + " with a shell option that changes how the line runs")
						s.emitUnchecked(ws, "not understood")
						return at, at
					}
				case 'e', 'u', 'x', 'v', 'l', 'f', 'h', 'B', 'C', 'E', 'H', 'T', 'm', 'n', 'p', 't':
				default:
					return s.emit(ws, at) // -i, -s, and what we do not know: the whole text asks
				}
			}
		}
	}
	if cmd {
		s.z.opaque("a shell -c without a command")
		return at, at
	}
	s.z.opaque(ws[0].text + " runs commands read from its input, which no analysis sees")
	s.emitUnchecked(ws, "not understood")
	return at, at
}

// safeShellOption reports a -o or -O option of a shell that changes nothing about what a
// line means to the analysis.
func safeShellOption(kind rune, name string) bool {
	if kind == 'O' {
		return name == "extglob"
	}
	switch name {
	case "pipefail", "errexit", "nounset", "xtrace", "verbose", "noclobber", "noglob", "errtrace", "hashall", "braceexpand", "noexec", "functrace", "monitor":
		return true
	}
	return false
}

// env handles env [options] [NAME=value]... [command [args]].
func (s *scope) env(ws []word, at []int) ([]int, []int) {
	args := ws[1:]
	i := 0
	for i < len(args) {
		a := args[i]
		if !a.static {
			s.z.opaque("env with an argument only known when the line runs: " + a.raw)
			s.emitUnchecked(ws, "not understood")
			return at, at
		}
		t := a.text
		if t == "--" {
			i++
			break
		}
		if t == "-" || t == "-i" || t == "-0" || t == "-v" || t == "--ignore-environment" || t == "--null" || t == "--debug" ||
			strings.HasPrefix(t, "--ignore-signal") || strings.HasPrefix(t, "--default-signal") || strings.HasPrefix(t, "--block-signal") || t == "--list-signal-handling" {
			i++
			continue
		}
		if t == "-u" || t == "--unset" {
			i += 2
			continue
		}
		if strings.HasPrefix(t, "--unset=") || (strings.HasPrefix(t, "-u") && len(t) > 2) {
			i++
			continue
		}
		if t == "-C" || t == "--chdir" {
			if i+1 < len(args) {
				s.path(args[i+1], Chdir, at)
				at = s.cd(args[i+1], at)
			}
			i += 2
			continue
		}
		if strings.HasPrefix(t, "--chdir=") || (strings.HasPrefix(t, "-C") && len(t) > 2) {
			d := withText(a, strings.TrimPrefix(strings.TrimPrefix(t, "--chdir="), "-C"))
			s.path(d, Chdir, at)
			at = s.cd(d, at)
			i++
			continue
		}
		if strings.HasPrefix(t, "-") {
			// -S/--split-string and what we do not know: no static reading.
			s.z.opaque("env " + t + " is not an option the analysis follows")
			s.emitUnchecked(ws, "not understood")
			return at, at
		}
		break
	}
	for i < len(args) && args[i].static && strings.Contains(args[i].text, "=") && !strings.HasPrefix(args[i].text, "=") {
		name, _, _ := strings.Cut(args[i].text, "=")
		if why := assignable(name); why != "" {
			s.z.opaque("it sets " + name + ", " + why)
		}
		i++
	}
	if i >= len(args) {
		s.emit(ws[:1], at) // prints the environment
		return at, at
	}
	return s.command(args[i:], at)
}

// find handles find [options] [paths] [expression]: its start paths, the paths its tests
// and actions name, and the commands of -exec, -execdir, -ok and -okdir, each reported as a
// command of its own.
func (s *scope) find(ws []word, at []int) ([]int, []int) {
	c := s.emitUnchecked(ws, "")
	args := ws[1:]
	unsafe := func(why string) { s.markUnsafe(c, why) }
	i := 0
	// Options before the start paths: -H -L -P -D debugopts -Olevel.
	for i < len(args) && args[i].static {
		t := args[i].text
		if t == "-L" || t == "-H" {
			unsafe("find " + t + " follows symlinks, which may lead outside the workspace")
			i++
		} else if t == "-P" || strings.HasPrefix(t, "-O") {
			i++
		} else if t == "-D" {
			i += 2
		} else {
			break
		}
	}
	for ; i < len(args); i++ {
		t := args[i].text
		if args[i].static && (strings.HasPrefix(t, "-") || t == "(" || t == "!" || t == ")") {
			break
		}
		if !args[i].static && args[i].prefix == "" {
			unsafe("a start path of find is only known when the line runs (" + args[i].raw + ")")
		}
		s.path(args[i], Read, at)
	}
	for ; i < len(args); i++ {
		a := args[i]
		t := a.text
		if !a.static {
			if strings.HasPrefix(a.prefix, "-") || a.prefix == "" {
				unsafe("a find expression only known when the line runs (" + a.raw + ")")
			}
			continue
		}
		switch {
		case t == "-exec" || t == "-execdir" || t == "-ok" || t == "-okdir":
			j := i + 1
			for j < len(args) && !(args[j].static && (args[j].text == ";" || args[j].text == "+" && j > i+1 && args[j-1].text == "{}")) {
				j++
			}
			if strings.HasSuffix(t, "dir") {
				// The command runs in the folder of each file found: its relative paths
				// are only known when the line runs.
				saved := s.z.unknownCwd
				s.z.unknownCwd = true
				s.command(args[i+1:j], at)
				s.z.unknownCwd = saved
			} else {
				s.command(args[i+1:j], at)
			}
			i = j
		case t == "-fprint" || t == "-fprint0" || t == "-fls" || t == "-fprintf":
			if i+1 < len(args) {
				s.path(args[i+1], Write, at)
			}
			i++
			if t == "-fprintf" {
				i++
			}
		case t == "-files0-from":
			unsafe("find -files0-from " + fileList)
			if i+1 < len(args) {
				s.path(args[i+1], Read, at)
			}
			i++
		case t == "-newer" || t == "-anewer" || t == "-cnewer" || t == "-samefile" ||
			strings.HasPrefix(t, "-newer") && len(t) == 8:
			if i+1 < len(args) {
				s.path(args[i+1], Read, at)
			}
			i++
		case t == "-delete":
			unsafe("find -delete deletes what it finds")
		case t == "-follow":
			unsafe("find -follow follows symlinks, which may lead outside the workspace")
		case findValue[t]:
			i++ // the test's value: a pattern, a number, a type
		case findFlag[t] || t == "(" || t == ")" || t == "!" || t == ",":
		default:
			unsafe(t + " is not a find expression toolsd knows to be safe")
		}
	}
	return at, at
}

// findValue are find's tests and options that take one value that is not a path.
var findValue = set("-name -iname -path -ipath -wholename -iwholename -regex -iregex -lname -ilname -type -xtype " +
	"-size -mtime -mmin -atime -amin -ctime -cmin -used -perm -user -group -uid -gid -maxdepth -mindepth " +
	"-links -inum -regextype -printf -fstype -context")

// findFlag are find's tests, options and actions without a value that run and write nothing.
var findFlag = set("-print -print0 -ls -prune -quit -depth -empty -readable -writable -executable -true -false " +
	"-not -a -o -and -or -mount -xdev -nouser -nogroup -daystart -noleaf -ignore_readdir_race " +
	"-noignore_readdir_race -warn -nowarn")

func set(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

// emitUnchecked reports ws as a command without checking its arguments against a grammar
// (the caller does, or knows why they are unsafe), and returns its index in Commands.
func (s *scope) emitUnchecked(ws []word, unsafe string) int {
	name := cleanName(ws[0].text)
	cws := append([]word{{text: name, raw: ws[0].raw, static: true, prefix: name}}, ws[1:]...)
	c := Command{Text: join(cws), Name: name, Args: texts(ws[1:]), Unsafe: unsafe}
	c.Always = always(cws, unsafe != "")
	s.z.a.Commands = append(s.z.a.Commands, c)
	return len(s.z.a.Commands) - 1
}

// markUnsafe records why the command at index i is unsafe (the first reason stays); it
// then offers only its exact text.
func (s *scope) markUnsafe(i int, why string) {
	c := &s.z.a.Commands[i]
	if c.Unsafe == "" {
		c.Unsafe = why
		c.Always = c.Always[:1]
	}
}

// emit reports ws as a command: its arguments are checked against the command's grammar,
// its path words recorded.
func (s *scope) emit(ws []word, at []int) ([]int, []int) {
	name := cleanName(ws[0].text)
	cws := append([]word{{text: name, raw: ws[0].raw, static: true, prefix: name}}, ws[1:]...)
	extra := s.z.extra
	s.z.extra = ""
	unsafe := s.checkCommand(name, ws[1:], at)
	if extra != "" && unsafe == "" {
		unsafe = name + " gets more arguments from its input (" + extra + "), which no analysis sees"
	}
	c := Command{Text: join(cws), Name: name, Args: texts(ws[1:]), Unsafe: unsafe}
	c.Always = always(cws, unsafe != "")
	s.z.a.Commands = append(s.z.a.Commands, c)
	if linkMaker(name, ws[1:]) {
		s.z.linked = true
	}
	return at, at
}

// checkCommand checks the arguments of the command name against its grammar (through
// subcommands and the programs a runner runs), records their path words, and says why they
// are unsafe ("" when they fit).
func (s *scope) checkCommand(name string, args []word, at []int) string {
	if why := runsCommandsWhy(name, args); why != "" {
		// Its words are still checked where they may be paths (vim *, less link/x).
		s.checkArgs(name, defaultGrammar, args, at)
		// A wrapper's command is reported too, so that a deny rule sees it (busybox rm x).
		if skip, ok := innerCommand[path.Base(name)]; ok {
			for i, a := range args {
				if a.static && !strings.HasPrefix(a.text, "-") {
					if skip > 0 {
						skip--
						continue
					}
					s.command(args[i:], at)
					break
				}
			}
		}
		return why
	}
	if name == "ln" {
		return s.ln(args, at)
	}
	if name == "dd" {
		// dd's operands: if= is read, of= written; the rest are numbers and flags.
		for _, a := range args {
			switch {
			case strings.HasPrefix(a.prefix, "of="):
				s.path(withText(a, a.text[3:]), Write, at)
			case strings.HasPrefix(a.prefix, "if="):
				s.path(withText(a, a.text[3:]), Read, at)
			case !a.static:
				return "an operand of dd is only known when the line runs (" + a.raw + ")"
			}
		}
		return ""
	}
	if (name == "chmod" || name == "chgrp" || name == "chown") && len(args) > 0 && chmodMode(args[0]) {
		args = append([]word{withText(args[0], "MODE")}, args[1:]...)
	}
	key := grammarKey(name)
	if (key == "python" || key == "python3") && pyModule(args) >= 0 {
		// python -m pytest -x: the module's grammar checks its words. Only the modules
		// with a grammar ("python -m pytest", "python -m json.tool", ...) may run under a
		// rule with a wildcard: timeit, code, runpy, pdb, asyncio, cProfile, trace and
		// many more run code given in their arguments or read from the line's input.
		i := pyModule(args)
		opts := *grammars[key]
		opts.check = nil
		if why, _, _ := s.checkArgs(key, &opts, args[:i], at); why != "" {
			return why
		}
		if i+1 >= len(args) || !args[i+1].static {
			return name + " -m runs a module only known when the line runs"
		}
		mod := args[i+1].text
		key, args = "python -m "+mod, args[i+2:]
		if grammars[key] == nil {
			s.checkArgs(key, defaultGrammar, args, at) // its paths are still checked
			return name + " -m " + mod + " runs a module toolsd does not know to be safe " +
				"(modules like timeit, code, runpy and pdb run code given in their arguments)"
		}
	}
	g := grammars[key]
	if g == nil && len(args) > 0 && args[0].static && grammars[key+" "+args[0].text] != nil {
		// A command with no grammar of its own whose subcommand has one (poetry run).
		key, args = key+" "+args[0].text, args[1:]
		g = grammars[key]
	}
	if g == nil {
		g = defaultGrammar
	}
	if name == "tar" && len(args) > 0 && args[0].static && !args[0].glob && oldStyleTar(args[0].text) {
		args = oldStyleTarArgs(g, args)
	}
	unsafe := ""
	for depth := 0; depth < 4; depth++ {
		why, after, next := s.checkArgs(key, g, args, at)
		if unsafe == "" {
			unsafe = why
		}
		at = after
		if next < 0 {
			return unsafe
		}
		sub := args[next]
		if !sub.static {
			return firstOf(unsafe, key+" runs a subcommand only known when the line runs")
		}
		if g.runs {
			// npx tsc --noEmit: tsc's own grammar checks the rest.
			key = grammarKey(path.Base(sub.text))
			if shells[key] {
				return firstOf(unsafe, name+" runs "+key+", a shell: what it runs is not in the line")
			}
			if why := runsCommandsWhy(key, args[next+1:]); why != "" {
				return firstOf(unsafe, why)
			}
			g = grammars[key]
			if g == nil {
				g = defaultGrammar
			}
			if strings.Contains(sub.text, "/") {
				s.path(sub, Read, at)
			}
		} else {
			key += " " + sub.text
			g = grammars[key]
			if g == nil {
				why := key + " is not a subcommand toolsd knows to be safe"
				if e, ok := escapes[key]; ok {
					why = key + " " + e
				}
				for _, a := range args[next+1:] {
					s.maybePath(a, at)
				}
				return firstOf(unsafe, why)
			}
		}
		args = args[next+1:]
	}
	return firstOf(unsafe, name+" nests subcommands deeper than toolsd follows")
}

// grammarKey is the name of the grammar of the command name: a system program named by its
// path has its own (/usr/bin/git is git), and the other names of an interpreter share its
// grammar (python3.12, pypy3 and python2 are python3; nodejs is node).
func grammarKey(name string) string {
	for _, dir := range sysDirs {
		if b, ok := strings.CutPrefix(name, dir); ok && !strings.Contains(b, "/") {
			name = b
		}
	}
	if name == "nodejs" {
		return "node"
	}
	if name != "python" && name != "python3" {
		for _, py := range []string{"python", "pypy", "py"} {
			if v, ok := strings.CutPrefix(name, py); ok && strings.Trim(v, "0123456789.") == "" {
				return "python3"
			}
		}
	}
	return name
}

// innerCommand are the runsCommands that take a command after their options (and after
// this many positional words: chroot's folder, sg's group).
var innerCommand = map[string]int{
	"strace": 0, "ltrace": 0, "valgrind": 0, "busybox": 0, "toybox": 0, "unshare": 0, "nsenter": 0,
	"setpriv": 0, "fakeroot": 0, "firejail": 0, "bwrap": 0, "proot": 0, "systemd-run": 0, "chronic": 0,
	"unbuffer": 0, "prlimit": 0, "numactl": 0, "catchsegv": 0, "xvfb-run": 0, "dbus-run-session": 0,
	"chroot": 1, "sg": 1, "parallel": 0, "entr": 0,
}

// runsCommandsWhy says why the command name (or name and first word) runs commands no
// grammar can check ("" when it is not one of runsCommands).
func runsCommandsWhy(name string, args []word) string {
	base := path.Base(name)
	if why, ok := runsCommands[base]; ok {
		return base + " " + why
	}
	// lua5.4, php8.2, tclsh8.6: a version after the name.
	if v := strings.TrimRight(base, "0123456789.-"); v != base && v != "" {
		if why, ok := runsCommands[v]; ok {
			return base + " " + why
		}
	}
	for _, a := range args {
		if a.static && !strings.HasPrefix(a.text, "-") {
			if why, ok := runsCommands[base+" "+a.text]; ok {
				return base + " " + a.text + " " + why
			}
			break
		}
	}
	return ""
}

// oldStyleTarArgs rewrites tar's old-style options as options: "tar xzf a.tgz" is "tar -x -z
// -f a.tgz", and each letter that takes a value takes the next word, in order ("tar cfT
// x.tar list" is "tar -c -f x.tar -T list").
func oldStyleTarArgs(g *grammar, args []word) []word {
	var out []word
	rest := args[1:]
	for i := 0; i < len(args[0].text); i++ {
		ch := args[0].text[i]
		out = append(out, withText(args[0], "-"+string(ch)))
		if g.short[ch].arg && len(rest) > 0 {
			out = append(out, rest[0])
			rest = rest[1:]
		}
	}
	return append(out, rest...)
}

// oldStyleTar reports tar's first word as old-style options ("xzf"): letters only.
func oldStyleTar(t string) bool {
	if t == "" {
		return false
	}
	for i := 0; i < len(t); i++ {
		if !(t[i] >= 'a' && t[i] <= 'z' || t[i] >= 'A' && t[i] <= 'Z') {
			return false
		}
	}
	return true
}

// pyModule returns the index of python's -m among its options, or -1.
func pyModule(args []word) int {
	for i, a := range args {
		if !a.static || !strings.HasPrefix(a.text, "-") || a.text == "--" {
			return -1
		}
		if a.text == "-m" {
			return i
		}
	}
	return -1
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// chmodMode reports a chmod mode that looks like an option (-x, -rw): chmod takes it as
// the mode.
func chmodMode(w word) bool {
	if !w.static || len(w.text) < 2 || w.text[0] != '-' {
		return false
	}
	for _, c := range w.text[1:] {
		if !strings.ContainsRune("rwxXstugo,+-=", c) {
			return false
		}
	}
	return true
}

// ln checks ln's arguments; a symbolic link is recorded as a Link (its target is resolved
// from the link's folder, when a later command goes through it), a hard link's targets as
// paths it reads.
func (s *scope) ln(args []word, at []int) string {
	why, _, _ := s.checkArgs("ln", grammars["ln"], args, at)
	symbolic := false
	targetDir := ""
	var pos []word
	dashdash := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		t := a.text
		switch {
		case !dashdash && t == "--":
			dashdash = true
		case !dashdash && (t == "-t" || t == "--target-directory") && i+1 < len(args):
			targetDir = args[i+1].text
			s.path(args[i+1], Read, at)
			i++
		case !dashdash && strings.HasPrefix(t, "--target-directory="):
			targetDir = strings.TrimPrefix(t, "--target-directory=")
			s.path(withText(a, targetDir), Read, at)
		case !dashdash && strings.HasPrefix(t, "--"):
			symbolic = symbolic || t == "--symbolic"
		case !dashdash && len(t) > 1 && t[0] == '-':
			symbolic = symbolic || strings.ContainsRune(t, 's')
		default:
			pos = append(pos, a)
		}
	}
	if len(pos) == 0 {
		return why
	}
	targets, links := pos, []string(nil)
	switch {
	case targetDir != "":
		for _, t := range targets {
			links = append(links, targetDir+"/"+path.Base(t.text))
		}
	case len(pos) == 1:
		links = []string{path.Base(pos[0].text)}
	case len(pos) == 2:
		targets = pos[:1]
		// The second word is the link, or a folder the link goes in.
		links = []string{pos[1].text, pos[1].text + "/" + path.Base(pos[0].text)}
		s.path(pos[1], Create, at)
	default:
		targets = pos[:len(pos)-1]
		for _, t := range targets {
			links = append(links, pos[len(pos)-1].text+"/"+path.Base(t.text))
		}
		s.path(pos[len(pos)-1], Create, at)
	}
	for _, t := range targets {
		if !symbolic {
			s.path(t, Read, at) // a hard link to a file outside is a way to write it
			continue
		}
		if !t.static {
			s.z.linked = true
			continue
		}
		for _, l := range links {
			s.z.a.Links = append(s.z.a.Links, Link{Path: l, Target: t.text, At: at})
		}
	}
	return why
}

// linkMaker reports a command that can create symlinks whose targets the line does not
// show (an archive's or a repository's content), in ways the analysis does not model (ln -s
// is modelled; cp and mv only copy or move entries whose paths are checked): paths used
// after it are only known when the line runs.
func linkMaker(name string, args []word) bool {
	sub := ""
	for _, a := range args {
		if a.static && !strings.HasPrefix(a.text, "-") {
			sub = a.text
			break
		}
	}
	switch name {
	case "unzip", "cpio", "rsync", "7z", "7za", "bsdtar":
		return true
	case "tar":
		for _, a := range args {
			t := a.text
			if t == "--extract" || t == "--get" || strings.HasPrefix(t, "-") && !strings.HasPrefix(t, "--") && strings.Contains(t, "x") ||
				a == args[0] && oldStyleTar(t) && strings.Contains(t, "x") {
				return true
			}
		}
	case "git":
		switch sub {
		case "checkout", "switch", "restore", "reset", "stash", "apply", "am", "merge", "pull", "rebase",
			"cherry-pick", "revert", "worktree", "submodule", "clone", "read-tree", "checkout-index":
			return true
		}
	}
	return false
}

// maybePath records a word that is a path if it looks like one, or if it names something
// that exists (checked when the line's requests are built).
func (s *scope) maybePath(w word, at []int) {
	if !w.static {
		if looksLikePath(w.prefix) {
			s.dynamic(w.raw)
		}
		return
	}
	if name, val, ok := strings.Cut(w.text, "="); ok && isShellName(name) {
		// make CC=/tmp/x, go run . -- out=dir: the value is what may be a path.
		if looksLikePath(val) {
			s.path(withText(w, val), Read, at)
		}
		return
	}
	if looksLikePath(w.text) || w.glob {
		s.path(w, Read, at)
		return
	}
	if w.text == "" || s.z.linked || s.z.unknownCwd {
		return
	}
	s.z.a.Uses = append(s.z.a.Uses, Use{Text: w.text, Kind: Read, At: at, Maybe: true})
}

func looksLikePath(v string) bool {
	return strings.HasPrefix(v, "/") || strings.HasPrefix(v, "~") || strings.HasPrefix(v, ".") || strings.Contains(v, "/")
}
