package shell

import (
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

// optSpec describes a wrapper's options: which take a value, which are flags, how many
// positional words come before the wrapped command.
type optSpec struct {
	withArg  string // short options with a value, e.g. "nk"
	flags    string // short options without one
	longArg  []string
	longFlag []string
	// positional words before the command (timeout's duration).
	positional int
}

var wrappers = map[string]optSpec{
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
func splitOpts(ws []word, spec optSpec) (int, map[string]string, bool) {
	seen := map[string]string{}
	i := 0
	for i < len(ws) {
		w := ws[i]
		if !w.static {
			if strings.HasPrefix(w.text, "-") {
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

// command handles the words of one simple command (or of the command a wrapper runs).
func (s *scope) command(ws []word, raw string) {
	if len(ws) == 0 {
		return
	}
	name := ws[0]
	if !name.static || name.glob || hiddenRunes(name.text) {
		s.z.opaque(raw)
		return
	}
	n := name.text
	for _, dir := range []string{"/bin/", "/usr/bin/", "/usr/local/bin/", "/sbin/", "/usr/sbin/"} {
		// /usr/bin/env, /bin/bash: the wrappers and shells are looked through by any name.
		if b, ok := strings.CutPrefix(n, dir); ok && !strings.Contains(b, "/") && (wrappers[b].withArg != "" || wrappers[b].flags != "" || b == "nohup" || b == "env" || shells[b] || b == "su" || b == "find" || b == "command") {
			n = b
		}
	}
	args := ws[1:]
	switch {
	case n == "eval":
		s.z.opaque(raw)
		return
	case n == "source" || n == ".":
		if len(args) == 0 || !args[0].static || args[0].glob {
			s.z.opaque(raw)
			return
		}
		s.path(args[0])
		s.emit(ws)
		return
	case n == "alias":
		for _, a := range args {
			if strings.Contains(a.text, "=") || !a.static {
				s.z.opaque(raw)
				return
			}
		}
	case n == "read" || n == "mapfile" || n == "readarray" || n == "printf" || n == "getopts" || n == "export" ||
		n == "declare" || n == "typeset" || n == "local" || n == "readonly" || n == "hash" && hasArg(args, "-p"):
		// Builtins that set variables by name (read PATH, printf -v PATH, builtin export
		// LD_PRELOAD=x) or bind names to programs (hash -p /bin/rm ls).
		declares := n == "export" || n == "declare" || n == "typeset" || n == "local" || n == "readonly"
		for i, a := range args {
			t := a.text
			if n == "printf" {
				// Only printf -v NAME / -vNAME assigns.
				switch {
				case t == "-v" && i+1 < len(args):
					t = args[i+1].text
				case strings.HasPrefix(t, "-v"):
					t = t[2:]
				default:
					continue
				}
			}
			name, _, _ := strings.Cut(t, "=")
			if declares && !a.static || dangerousVar(strings.TrimSuffix(name, "+")) || n == "hash" {
				s.z.opaque(raw)
				return
			}
		}
	case n == "command":
		i := 0
		for i < len(args) && args[i].static && strings.HasPrefix(args[i].text, "-") && args[i].text != "--" {
			if strings.ContainsAny(args[i].text, "vV") {
				s.emit(ws) // command -v x describes x; it runs nothing
				return
			}
			i++
		}
		if i < len(args) && args[i].text == "--" {
			i++
		}
		s.command(args[i:], raw)
		return
	case n == "env":
		s.env(ws, raw)
		return
	case n == "su":
		s.emit(ws)
		for i := 0; i < len(args); i++ {
			t := args[i].text
			switch {
			case t == "-c" || t == "--command":
				if i+1 < len(args) {
					s.nested(args[i+1], raw)
				}
				return
			case strings.HasPrefix(t, "--command="):
				a := args[i]
				a.text = strings.TrimPrefix(t, "--command=")
				s.nested(a, raw)
				return
			}
		}
		return
	case n == "trap":
		if len(args) == 0 || (args[0].static && strings.HasPrefix(args[0].text, "-")) {
			return
		}
		s.nested(args[0], raw)
		return
	case n == "find":
		s.find(ws, raw)
		return
	case shells[n]:
		s.shell(ws, raw)
		return
	}
	if spec, ok := wrappers[n]; ok {
		i, seen, ok := splitOpts(args, spec)
		if !ok {
			s.emit(ws) // options we do not know: the whole text asks
			return
		}
		rest := args[i:]
		if privileged[n] {
			s.emit(ws)
			if _, ok := seen["e"]; ok && n == "sudo" { // sudoedit: edits files
				for _, a := range rest {
					s.write(a)
				}
				return
			}
			if len(rest) == 0 {
				return
			}
			if n == "runuser" {
				if c, ok := seen["command"]; ok {
					s.z.script(c, s.depth+1)
					return
				}
			}
			_, shell := seen["s"]
			_, login := seen["i"]
			if n == "sudo" && (shell || login) {
				// sudo -s cmd args runs "cmd args" through the shell.
				s.z.script(join(rest), s.depth+1)
				return
			}
			s.command(rest, raw)
			return
		}
		if n == "time" {
			if o, ok := seen["o"]; ok {
				s.pathText(args[0], o, true)
			}
			if o, ok := seen["output"]; ok {
				s.pathText(args[0], o, true)
			}
		}
		if n == "xargs" {
			if a, ok := seen["a"]; ok {
				s.pathText(args[0], a, false)
			}
			if a, ok := seen["arg-file"]; ok {
				s.pathText(args[0], a, false)
			}
		}
		if len(rest) == 0 {
			if n == "exec" || n == "builtin" || n == "xargs" {
				return // exec with redirections only; xargs runs echo
			}
			s.emit(ws)
			return
		}
		if n == "watch" {
			_, x := seen["x"]
			_, exec := seen["exec"]
			if !x && !exec {
				s.z.script(join(rest), s.depth+1) // watch runs its words through sh -c
				return
			}
		}
		s.command(rest, raw)
		return
	}
	s.emit(ws)
}

// nested parses the script held in w (a -c string, a trap action).
func (s *scope) nested(w word, raw string) {
	if !w.static {
		s.z.opaque(raw)
		return
	}
	s.z.script(w.text, s.depth+1)
}

// shell handles sh/bash/zsh...: with -c the string is parsed; otherwise the shell runs a
// file or reads commands from stdin, which is reported as the command itself.
func (s *scope) shell(ws []word, raw string) {
	args := ws[1:]
	cmd := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !a.static {
			s.z.opaque(raw)
			return
		}
		t := a.text
		switch {
		case t == "--" || t == "-" || !(strings.HasPrefix(t, "-") || strings.HasPrefix(t, "+")):
			if t == "--" || t == "-" {
				i++
			}
			if cmd {
				if i < len(args) {
					s.nested(args[i], raw)
				} else {
					s.z.opaque(raw)
				}
				return
			}
			if i < len(args) {
				s.path(args[i])
			}
			s.emit(ws)
			return
		case strings.HasPrefix(t, "--"):
			switch t {
			case "--login", "--noprofile", "--norc", "--posix", "--noediting", "--restricted", "--verbose":
			default:
				s.emit(ws) // --rcfile, --init-file, ...: not looked through
				return
			}
		default:
			// -eux, -lc, -o pipefail, +o x, -O extglob
			for _, c := range t[1:] {
				switch c {
				case 'c':
					cmd = true
				case 'o', 'O':
					i++ // the option's name
				case 'e', 'u', 'x', 'v', 'l', 'f', 'h', 'B', 'C', 'E', 'H', 'P', 'T', 'a', 'b', 'k', 'm', 'n', 'p', 't':
				default:
					s.emit(ws) // -i, -s, and what we do not know: the whole text asks
					return
				}
			}
		}
	}
	if cmd {
		s.z.opaque(raw)
		return
	}
	s.emit(ws) // a bare shell reads commands from stdin: curl x | sh
}

// env handles env [options] [NAME=value]... [command [args]].
func (s *scope) env(ws []word, raw string) {
	args := ws[1:]
	i := 0
	for i < len(args) {
		a := args[i]
		if !a.static {
			s.z.opaque(raw)
			return
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
				s.dir(args[i+1])
			}
			i += 2
			continue
		}
		if strings.HasPrefix(t, "--chdir=") || (strings.HasPrefix(t, "-C") && len(t) > 2) {
			d := a
			d.text = strings.TrimPrefix(strings.TrimPrefix(t, "--chdir="), "-C")
			s.dir(d)
			i++
			continue
		}
		if strings.HasPrefix(t, "-") {
			// -S/--split-string and what we do not know: no static reading.
			s.z.opaque(raw)
			return
		}
		break
	}
	for i < len(args) && args[i].static && strings.Contains(args[i].text, "=") && !strings.HasPrefix(args[i].text, "=") {
		name, _, _ := strings.Cut(args[i].text, "=")
		if dangerousVar(name) {
			s.z.opaque(raw)
		}
		i++
	}
	if i >= len(args) {
		s.emit(ws[:1]) // prints the environment
		return
	}
	s.command(args[i:], raw)
}

// find handles find [paths] [expression], its -exec family and its writing actions.
func (s *scope) find(ws []word, raw string) {
	s.emit(ws)
	args := ws[1:]
	i := 0
	// Options before the start paths: -H -L -P -D debugopts -Olevel.
	for i < len(args) && args[i].static {
		t := args[i].text
		if t == "-H" || t == "-L" || t == "-P" || strings.HasPrefix(t, "-O") {
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
		s.path(args[i])
	}
	for ; i < len(args); i++ {
		t := args[i].text
		if !args[i].static {
			continue
		}
		switch t {
		case "-exec", "-execdir", "-ok", "-okdir":
			j := i + 1
			for j < len(args) && !(args[j].static && (args[j].text == ";" || args[j].text == "+" && j > i+1 && args[j-1].text == "{}")) {
				j++
			}
			s.command(args[i+1:j], raw)
			i = j
		case "-fprint", "-fprint0", "-fls", "-fprintf":
			if i+1 < len(args) {
				s.write(args[i+1])
			}
		case "-files0-from":
			if i+1 < len(args) {
				s.path(args[i+1])
			}
		}
	}
}

// fileCommands take paths as arguments: every argument that is not an option is a path,
// and so is the value of an option written as --opt=value or -Xvalue with a path-like value.
var fileCommands = map[string]bool{
	"rm": true, "rmdir": true, "unlink": true, "shred": true, "cp": true, "mv": true, "install": true,
	"ln": true, "link": true, "mkdir": true, "mkfifo": true, "mknod": true, "touch": true, "truncate": true,
	"chmod": true, "chown": true, "chgrp": true, "chattr": true, "setfacl": true, "cat": true, "tac": true, "nl": true,
	"head": true, "tail": true, "less": true, "more": true, "most": true, "bat": true, "batcat": true, "view": true,
	"vi": true, "vim": true, "nvim": true, "nano": true, "emacs": true, "ed": true, "rsync": true, "scp": true,
	"tar": true, "zip": true, "unzip": true, "gzip": true, "gunzip": true, "zcat": true, "bzip2": true,
	"bunzip2": true, "xz": true, "unxz": true, "zstd": true, "7z": true, "sed": true, "awk": true, "gawk": true,
	"grep": true, "egrep": true, "fgrep": true, "rg": true, "ag": true, "ls": true, "dir": true, "tree": true,
	"stat": true, "file": true, "du": true, "wc": true, "sort": true, "uniq": true, "cut": true, "paste": true,
	"join": true, "comm": true, "diff": true, "cmp": true, "patch": true, "readlink": true, "realpath": true,
	"md5sum": true, "sha1sum": true, "sha256sum": true, "sha512sum": true, "cksum": true, "base64": true,
	"xxd": true, "hexdump": true, "od": true, "strings": true, "iconv": true, "split": true, "csplit": true,
	"source": true, "open": true, "xdg-open": true, "jq": true, "yq": true, "split-file": true, "shasum": true,
	"lsattr": true, "getfacl": true, "fold": true, "fmt": true, "expand": true, "unexpand": true, "tr": false,
}

// patternFirst commands take a pattern or script as their first non-option argument unless
// an option gave it.
var patternFirst = map[string]string{
	"grep": "ef", "egrep": "ef", "fgrep": "ef", "rg": "ef", "ag": "", "sed": "ef", "awk": "f", "gawk": "f", "jq": "",
}

// emit reports ws as a command, with what it touches.
func (s *scope) emit(ws []word) {
	name := cleanName(ws[0].text)
	cws := append([]word{{text: name, raw: ws[0].raw, static: true}}, ws[1:]...)
	c := Command{Text: join(cws), Name: name, Args: texts(ws[1:])}
	c.Always = always(cws)
	s.z.a.Commands = append(s.z.a.Commands, c)
	s.touches(name, ws[1:])
}

// touches records the paths, writes and directories of a command's arguments.
func (s *scope) touches(name string, args []word) {
	base := name
	if i := strings.LastIndexByte(base, '/'); i >= 0 {
		base = base[i+1:]
	}
	switch base {
	case "cd", "pushd":
		for _, a := range args {
			if a.static && strings.HasPrefix(a.text, "-") && a.text != "-" {
				continue
			}
			s.dir(a)
			return
		}
		s.z.a.Dirs = appendUnique(s.z.a.Dirs, "~")
		return
	case "tee":
		for _, a := range args {
			if a.static && strings.HasPrefix(a.text, "-") {
				continue
			}
			s.write(a)
		}
		return
	case "dd":
		for _, a := range args {
			switch {
			case strings.HasPrefix(a.text, "of="):
				s.pathText(a, a.text[3:], true)
			case strings.HasPrefix(a.text, "if="):
				s.pathText(a, a.text[3:], false)
			}
		}
		return
	case "git", "make", "gmake":
		for i, a := range args {
			if a.text == "-C" && i+1 < len(args) {
				s.dir(args[i+1])
			} else if strings.HasPrefix(a.text, "--directory=") {
				s.pathText(a, strings.TrimPrefix(a.text, "--directory="), false)
			} else if base == "git" && strings.HasPrefix(a.text, "--output=") {
				s.pathText(a, strings.TrimPrefix(a.text, "--output="), true)
			} else if base == "git" && (strings.HasPrefix(a.text, "--git-dir=") || strings.HasPrefix(a.text, "--work-tree=")) {
				_, v, _ := strings.Cut(a.text, "=")
				s.pathText(a, v, false)
			}
		}
		return
	case "curl", "wget", "sort":
		defer func() {
			if base == "sort" {
				s.filePaths(base, args)
			}
		}()
		short := map[string]string{"curl": "-o", "wget": "-O", "sort": "-o"}[base]
		long := map[string]string{"curl": "--output", "wget": "--output-document", "sort": "--output"}[base]
		for i, a := range args {
			switch {
			case (a.text == short || a.text == long) && i+1 < len(args):
				s.write(args[i+1])
			case strings.HasPrefix(a.text, long+"="):
				s.pathText(a, strings.TrimPrefix(a.text, long+"="), true)
			case strings.HasPrefix(a.text, short) && len(a.text) > 2 && !strings.HasPrefix(a.text, "--"):
				s.pathText(a, a.text[2:], true)
			}
		}
		return
	}
	if fileCommands[base] {
		s.filePaths(base, args)
	}
}

// filePaths records the path arguments of a file command.
func (s *scope) filePaths(base string, args []word) {
	given, skipFirst := patternFirst[base]
	dashdash, skipNext := false, false
	for _, a := range args {
		t := a.text
		if skipNext {
			skipNext = false
			continue
		}
		if !dashdash && a.static && t == "--" {
			dashdash = true
			continue
		}
		if !dashdash && a.static && len(t) > 1 && t[0] == '-' {
			if strings.HasPrefix(t, "--") {
				if _, v, ok := strings.Cut(t, "="); ok && looksLikePath(v) {
					s.pathText(a, v, false)
				}
				if name, _, _ := strings.Cut(t[2:], "="); name == "regexp" || name == "file" || name == "expression" {
					skipFirst = false
				}
				continue
			}
			if given != "" && strings.ContainsAny(t[1:2], given) {
				skipFirst = false
				skipNext = len(t) == 2 // -e PATTERN
			}
			if len(t) > 2 && looksLikePath(t[2:]) && strings.ContainsAny(t[2:3], "/~.") {
				s.pathText(a, t[2:], false)
			}
			continue
		}
		if skipFirst {
			skipFirst = false
			continue
		}
		s.path(a)
	}
}

func looksLikePath(v string) bool {
	return strings.HasPrefix(v, "/") || strings.HasPrefix(v, "~") || strings.HasPrefix(v, ".") || strings.Contains(v, "/")
}
