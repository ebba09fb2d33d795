package shell

import (
	"strings"
	"sync"
)

// The safe grammars of the commands an allow rule or an "always" answer may cover by a
// pattern with a wildcard. Each lists the options known to run no code, to name no path
// that is not checked (a path value is resolved and asked for when it lies outside the
// workspace) and to change nothing about how later commands are found; and what the
// positional words are. Anything else — an option not listed, a value only known at run
// time where an option could be, a subcommand not listed — makes the command unsafe: a
// wildcard does not allow it, a rule that names it exactly does. A command with no entry
// here gets defaultGrammar: positional words only.
//
// The entries were reviewed against GTFOBins (https://gtfobins.github.io): the escapes
// listed there for each command are left out, and the common ones are named in escapes so
// that the ask says why. Notation: see parseGrammar.

// defaultGrammar (set by loadGrammars) is the grammar of a command toolsd knows nothing
// about: its positional words (paths checked when they may be paths), and no option.

// escapes name what known escape options do, for the ask and the model ("tar
// --to-command runs a command for each file").
var escapes = func() map[string]string {
	m := map[string]string{
		"tar --to-command": "runs a command for each file", "tar --use-compress-program": "runs a program of its choice",
		"tar -I": "runs a program of its choice", "tar --checkpoint-action": "runs a command at checkpoints",
		"tar -F": "runs a script at each volume", "tar --info-script": "runs a script at each volume",
		"tar --new-volume-script": "runs a script at each volume", "tar --rsh-command": "runs a remote shell program",
		"tar --rmt-command": "runs a program", "tar -P": "keeps absolute names, which extract outside the folder",
		"tar --absolute-names": "keeps absolute names, which extract outside the folder",
		"sed -f":               "reads its script from a file no analysis sees", "sed --file": "reads its script from a file no analysis sees",
		"awk -f": "reads its program from a file no analysis sees", "gawk -f": "reads its program from a file no analysis sees",
		"awk -E":           "reads its program from a file no analysis sees",
		"git --config-env": "sets configuration for the command, which can name programs to run",
		"git --exec-path":  "changes where git finds its programs", "git --git-dir": "points git at another repository, whose configuration can run programs",
		"git --work-tree": "points git at another folder", "git --namespace": "changes the refs git sees",
		"git --upload-pack": "names a program to run", "git -u": "names a program to run",
		"git --receive-pack": "names a program to run", "git --exec": "runs a command",
		"git -O": "runs a pager program of its choice", "git --open-files-in-pager": "runs a pager program of its choice",
		"git --ext-diff": "runs the external diff program of the configuration", "git --textconv": "runs the configured text conversion programs",
		"git --output": "writes a file", "git -x": "runs a command", "git --extcmd": "runs a command",
		"git --show-signature": "runs the configured signature program", "git -S": "runs the configured signing program",
		"git --gpg-sign": "runs the configured signing program", "git --template": "copies templates (hooks) from a folder",
		"git filter-branch": "runs commands on every commit", "git bisect": "can run commands (bisect run)",
		"git submodule": "can run commands in each submodule (foreach)", "git difftool": "runs a diff program of its choice",
		"git mergetool": "runs a merge program of its choice", "git daemon": "serves the repository on the network",
		"git config": "can set configuration that names programs to run",
		"find -exec": "runs a command", "find -delete": "deletes what it finds",
		"rsync -e": "names the remote shell program to run", "rsync --rsh": "names the remote shell program to run",
		"zip -T": "tests with a program of its choice (-TT)", "zip -TT": "runs a program of its choice",
		"go -exec": "runs the built program through a program of its choice", "go -toolexec": "runs the build's tools through a program of its choice",
		"go -overlay": "replaces source files with others", "go -modfile": "uses another go.mod",
		"go -gccgoflags": "passes flags to the compiler", "go -asmflags": "passes flags to the assembler",
		"go -gcflags": "passes flags to the compiler (which can load plugins)", "go -vettool": "runs a vet program of its choice",
		"go env -w": "changes go's configuration for every later command", "go env -u": "changes go's configuration for every later command",
		"npm --script-shell": "names the shell that runs scripts", "npm --node-options": "passes options to node (--require runs code)",
		"npm --userconfig": "reads another configuration", "npm --globalconfig": "reads another configuration",
		"npm -g": "installs outside the workspace", "npm --global": "installs outside the workspace",
		"npm --registry": "fetches packages from another registry",
		"npm exec":       "runs a package, downloading it if needed", "npm x": "runs a package, downloading it if needed",
		"npx -c": "runs a shell command", "npx --call": "runs a shell command", "npx -p": "installs another package to run",
		"npx --package": "installs another package to run",
		"cargo -Z":      "turns on unstable features", "cargo --config": "sets configuration that can name programs to run",
		"cargo install": "installs programs outside the workspace",
		"make --eval":   "evaluates make code", "make -E": "evaluates make code",
		"python -c": "runs the code given", "python3 -c": "runs the code given",
		"node --inspect": "opens a debugger on the network",
		"pytest -p":      "loads a plugin module", "pytest -o": "overrides configuration (addopts can load plugins)",
		"sort --compress-program": "runs a program of its choice", "rg --pre": "runs a program on every file",
		"rg -L": "follows symlinks, which may lead outside the workspace", "rg --follow": "follows symlinks, which may lead outside the workspace",
		"grep -R": "follows symlinks, which may lead outside the workspace", "grep --dereference-recursive": "follows symlinks, which may lead outside the workspace",
		"du -L": "follows symlinks, which may lead outside the workspace", "tree -l": "follows symlinks, which may lead outside the workspace",
		"rm --no-preserve-root": "lets rm remove /", "date -s": "sets the system clock", "date --set": "sets the system clock",
		"file -C": "writes a compiled magic file", "hostname -F": "sets the host name",
		"git tag -s": "signs with the configured signing program", "git tag -u": "signs with the configured signing program",
		"git tag --sign": "signs with the configured signing program", "git tag --local-user": "signs with the configured signing program",
		"python -m": "runs a module", "python3 -m": "runs a module",
		"less": "can run commands (!)", "man": "can run commands through its pager", "vim": "can run commands", "vi": "can run commands",
		"ed": "can run commands (!)", "ssh": "runs commands on another host",
		"tar -h": "follows symlinks, which may lead outside the workspace", "tar --dereference": "follows symlinks, which may lead outside the workspace",
		"tar --hard-dereference": "follows hard links, which may lead outside the workspace",
		"tar -T":                 fileList, "tar --files-from": fileList, "sort --files0-from": fileList, "wc --files0-from": fileList,
		"du --files0-from": fileList, "file -f": fileList, "file --files-from": fileList, "zip -@": fileList,
		"git config --global": "reads (and can change) the person's configuration outside the workspace (~/.gitconfig)",
		"git config --system": "reads (and can change) the machine's configuration outside the workspace (/etc/gitconfig)",
		"pylint --init-hook":  "runs the Python code given",
	}
	for _, sum := range []string{"md5sum", "sha1sum", "sha256sum", "sha512sum"} {
		m[sum+" -c"], m[sum+" --check"] = fileList, fileList
	}
	// node and the TypeScript runners built on it.
	for _, js := range []string{"node", "tsx", "ts-node"} {
		for opt, why := range map[string]string{"-e": "runs the code given", "--eval": "runs the code given",
			"-p": "runs the code given", "--print": "runs the code given", "-r": "loads a module first",
			"--require": "loads a module first", "--import": "loads a module first", "--loader": "loads a module loader",
			"-i": "reads code from its input", "--interactive": "reads code from its input"} {
			m[js+" "+opt] = why
		}
	}
	return m
}()

// fileList is why an option that reads the names of files from a file is an escape: the
// names (of files outside the workspace, say) are in no line the analysis sees.
const fileList = "reads the names of the files to work on from a file (or the line's input), which no analysis sees"

// runsCommands are programs that run commands given in their arguments or read from their
// input — interpreters, editors and pagers with shell escapes, remote shells, and wrappers
// that take a command (GTFOBins' "shell" and "command" functions): no grammar can make
// their arguments safe, so a rule with a wildcard never allows them. (Their inner command
// is still reported, so that a deny rule sees it.) A program missing from this list that
// runs its arguments is the residual risk of a rule that allows it by a wildcard; the
// sandbox is the second line.
var runsCommands = map[string]string{
	"ed": "runs shell commands (!) read from its input", "ex": "runs shell commands (!)", "vi": "runs shell commands (!)",
	"vim": "runs shell commands (!)", "nvim": "runs shell commands (!)", "view": "runs shell commands (!)",
	"emacs": "evaluates Lisp and runs commands", "gdb": "runs commands", "lldb": "runs commands",
	"sqlite3": "runs shell commands (.shell, .system)", "psql": "runs shell commands (\\!)", "mysql": "runs shell commands (\\!)",
	"perl": "runs code", "ruby": "runs code", "php": "runs code", "lua": "runs code", "luajit": "runs code",
	"irb": "runs code", "tclsh": "runs code", "wish": "runs code", "expect": "runs code", "dc": "runs shell commands (!)",
	"osascript": "runs code", "pwsh": "runs code", "powershell": "runs code", "deno": "runs code", "bun": "runs code",
	"Rscript": "runs code", "R": "runs code", "julia": "runs code", "ghci": "runs code", "guile": "runs code",
	"ssh": "runs commands on another host", "scp": "copies to and from other hosts", "sftp": "runs commands on another host",
	"ftp": "runs shell commands (!)", "telnet": "connects to other hosts", "nc": "connects to other hosts and can run programs",
	"ncat": "connects to other hosts and can run programs", "netcat": "connects to other hosts and can run programs",
	"socat": "connects to other hosts and can run programs", "screen": "runs commands", "tmux": "runs commands",
	"script": "runs a command (-c) or a shell", "strace": "runs the command it is given", "ltrace": "runs the command it is given",
	"valgrind": "runs the command it is given", "busybox": "runs the applet it is given", "toybox": "runs the applet it is given",
	"parallel": "runs the commands it is given", "unshare": "runs the command it is given", "nsenter": "runs the command it is given",
	"chroot": "runs the command it is given", "setpriv": "runs the command it is given", "capsh": "runs a shell",
	"fakeroot": "runs the command it is given", "firejail": "runs the command it is given", "bwrap": "runs the command it is given",
	"proot": "runs the command it is given", "systemd-run": "runs the command it is given", "at": "runs commands later",
	"batch": "runs commands later", "crontab": "installs commands to run later", "sg": "runs a command as another group",
	"newgrp": "runs a shell", "chronic": "runs the command it is given", "unbuffer": "runs the command it is given",
	"prlimit": "runs the command it is given", "numactl": "runs the command it is given", "catchsegv": "runs the command it is given",
	"xvfb-run": "runs the command it is given", "dbus-run-session": "runs the command it is given", "entr": "runs a command on changes",
	"less": "runs shell commands (!, +!cmd, LESSOPEN)", "more": "runs shell commands (!)", "man": "runs its pager and preprocessors",
	"docker run": "runs a container", "docker exec": "runs a command in a container", "docker cp": "copies to and from containers",
	"podman run": "runs a container", "podman exec": "runs a command in a container", "kubectl exec": "runs a command in a pod",
	"kubectl cp": "copies to and from pods", "kubectl debug": "runs a debugging container",
	"docker-compose run": "runs a container", "docker-compose exec": "runs a command in a container",
	"elixir": "runs code", "iex": "runs code", "erl": "runs code", "escript": "runs code", "ocaml": "runs code",
	"racket": "runs code", "sbcl": "runs code", "clisp": "runs code", "swipl": "runs code", "gforth": "runs code",
	"jshell": "runs code", "groovy": "runs code", "scala": "runs code", "kotlin": "runs code", "octave": "runs code",
	"m4": "runs shell commands (syscmd, esyscmd)", "gnuplot": "runs shell commands (system, !)",
	"nano": "runs shell commands (^T)", "pico": "runs shell commands", "emacsclient": "evaluates Lisp and runs commands",
	"editor": "is an editor, which can run shell commands", "sensible-editor": "is an editor, which can run shell commands",
	"xdg-open": "opens files with the program the desktop chooses", "open": "opens files with the program the desktop chooses",
	"rlwrap": "runs the command it is given", "ssh-agent": "runs the command it is given", "dbus-launch": "runs the command it is given",
	"hyperfine": "runs the shell commands it is given", "watchexec": "runs the command it is given",
	"nodemon": "runs the command it is given (--exec)", "concurrently": "runs the shell commands it is given",
	"perf": "runs the command it is given",
}

// groups are option sets several grammars share.
var groups = map[string]string{
	// git diff, show, log: the diff options.
	"gitdiff": "-p -u -s -z -R -a -w -b --patch --no-patch -U:num --unified:num --raw --patch-with-raw --stat?:text " +
		"--numstat --shortstat --dirstat?:text --summary --name-only --name-status --compact-summary --color?:text " +
		"--no-color --word-diff?:text --word-diff-regex:text --color-words?:text --minimal --patience --histogram " +
		"--diff-algorithm:text --anchored:text --ignore-all-space --ignore-space-change --ignore-space-at-eol " +
		"--ignore-blank-lines --ignore-cr-at-eol -I:text --ignore-matching-lines:text --check --full-index --binary " +
		"--abbrev?:num -M?:text --find-renames?:text -C?:text --find-copies?:text -B?:text --break-rewrites?:text " +
		"-D --irreversible-delete --no-renames --rename-empty --no-rename-empty -l:num --diff-filter:text " +
		"--relative?:text --no-relative --text --no-ext-diff --no-textconv --ignore-submodules?:text --src-prefix:text " +
		"--dst-prefix:text --no-prefix --default-prefix --line-prefix:text --inter-hunk-context:num -W --function-context " +
		"--exit-code --quiet --submodule?:text --stat-width:num --stat-name-width:num --stat-count:num --cached --staged " +
		"--merge-base --no-index --indent-heuristic --no-indent-heuristic --ws-error-highlight:text --color-moved?:text " +
		"--no-color-moved --output-indicator-new:text --output-indicator-old:text --output-indicator-context:text " +
		"-G:text -S:text --pickaxe-all --pickaxe-regex --find-object:text -O:path --skip-to:text --rotate-to:text " +
		"--output:write " +
		"--ita-invisible-in-index --ita-visible-in-index",
	// git log, show, shortlog, rev-list: commit limiting and formatting.
	"gitlog": "# -n:num --max-count:num --skip:num --since:text --after:text --until:text --before:text " +
		"--author:text --committer:text --grep:text --all-match --invert-grep -i --regexp-ignore-case -E " +
		"--extended-regexp -F --fixed-strings -P --perl-regexp --merges --no-merges --min-parents:num " +
		"--max-parents:num --first-parent --all --branches?:text --tags?:text --remotes?:text --glob:text " +
		"--exclude:text --reflog --not --ancestry-path --simplify-by-decoration --full-history --dense --sparse " +
		"--simplify-merges --boundary --left-right --left-only --right-only --cherry-pick --cherry-mark --cherry " +
		"-g --walk-reflogs --merge --topo-order --date-order --author-date-order --reverse --no-walk?:text " +
		"--do-walk --oneline --pretty?:text --format:text --abbrev-commit --no-abbrev-commit --encoding:text " +
		"--expand-tabs?:num --no-expand-tabs --notes?:text --no-notes --show-notes?:text --relative-date " +
		"--date:text --parents --children --graph --show-linear-break?:text --decorate?:text --no-decorate " +
		"--decorate-refs:text --decorate-refs-exclude:text --source --use-mailmap --mailmap --no-mailmap " +
		"--full-diff --log-size -L:text --follow --no-follow -m -c --cc --dd --remerge-diff --diff-merges:text " +
		"--no-diff-merges --combined-all-paths -t --count --mailmap --clear-decorations --show-pulls",
	// node, tsx, ts-node: the options that run code given in the line or load a module.
	"jsrun": "-e:text! --eval:text! -p:text! --print:text! -r:text! --require:text! --import:text! " +
		"--loader:text! -i! --interactive!",
	// go build, test, run, list, vet, install: the build flags.
	"gobuild": "-a -n -p:num -race -msan -asan -cover -covermode:text -coverpkg:text -v -work -x " +
		"-buildmode:text -buildvcs:text -compiler:text -installsuffix:text -ldflags:ldflags -linkshared " +
		"-mod:text -modcacherw -pgo:path -tags:text -trimpath -C:dir -o:out -pkgdir:out -json " +
		"-gcflags:text! -exec:text! -toolexec:text! -overlay:path! -modfile:path! -gccgoflags:text! -asmflags:text!",
	"gotest": "-run:text -skip:text -bench:text -benchtime:text -benchmem -count:num -coverprofile:out " +
		"-cpuprofile:out -memprofile:out -memprofilerate:num -blockprofile:out -blockprofilerate:num " +
		"-mutexprofile:out -mutexprofilefraction:num -trace:out -outputdir:out -failfast -fullpath " +
		"-list:text -parallel:num -short -shuffle:text -timeout:text -vet:text -fuzz:text -fuzztime:text " +
		"-fuzzminimizetime:text -cpu:text -c -i -args",
	// npm, pnpm, yarn: options that only choose among the project's own scripts and packages.
	"npm": "-s -q -d -y -D -E -S -O -B -w:text --silent --quiet --loglevel:text --verbose --json --parseable " +
		"--long --yes --no-yes --if-present --ignore-scripts --foreground-scripts --workspace:text --workspaces " +
		"--include-workspace-root --no-audit --no-fund --no-progress --progress --color?:text --no-color " +
		"--legacy-peer-deps --strict-peer-deps --force --omit:text --include:text --production --save " +
		"--save-dev --save-optional --save-peer --save-exact --save-prod --no-save --dry-run --offline " +
		"--prefer-offline --prefer-online --package-lock-only --no-package-lock --install-links --depth:num " +
		"--all --audit-level:text --fix --unicode --no-unicode --frozen-lockfile --immutable --prefer-frozen-lockfile " +
		"--filter:text -F:text --recursive -r --parallel --stream --reporter:text --watch --coverage --ci " +
		"--global! -g! --prefix:dir --script-shell:text! --node-options:text! --userconfig:path! " +
		"--globalconfig:path! --registry:text!",
	// cargo build, test, check, run, clippy, doc, bench.
	"cargo": "-q -v -r --quiet --verbose --release --all-features --no-default-features --features:text " +
		"-F:text --workspace --all --exclude:text -p:text --package:text --bin:text --bins --lib --tests " +
		"--test:text --examples --example:text --benches --bench:text --all-targets --target:text " +
		"--target-dir:out --manifest-path:path --locked --frozen --offline --color:text -j:num --jobs:num " +
		"--keep-going --message-format:text --no-run --no-fail-fast --doc --profile:text --timings?:text " +
		"--future-incompat-report --ignore-rust-version --unit-graph --config:text! -Z:text!",
	"pytest": "-x -v -q -s -l -r:text -k:text -m:text -n:text --maxfail:num --tb:text --lf --last-failed --ff " +
		"--failed-first --nf --new-first --sw --stepwise --co --collect-only --durations:num " +
		"--durations-min:text --junitxml:out --junit-xml:out --rootdir:dir -c:script --confcutdir:dir " +
		"--no-header --no-summary --disable-warnings --disable-pytest-warnings -W:text --pythonwarnings:text " +
		"--showlocals --capture:text --log-level:text --log-cli-level:text --cov?:text --cov-report:text " +
		"--cov-fail-under:num --cov-branch --basetemp:out --import-mode:text --strict-markers --runxfail " +
		"--verbose --quiet --exitfirst --color:text --code-highlight:text --setup-show --setup-only --doctest-modules " +
		"--ignore:path --ignore-glob:text --deselect:text --count:num --reruns:num --timeout:num --numprocesses:text " +
		"-p:pyplugin -o:text! --override-ini:text!",
}

// grammars by command, and by "command subcommand"; filled by loadGrammars on the first
// Analyze (see the package doc).
var grammars = map[string]*grammar{}

var defaultGrammar *grammar

// loadGrammars parses the tables once.
var loadGrammars = sync.OnceFunc(func() {
	defaultGrammar = parseGrammar("args:auto", nil)
	for name, spec := range map[string]string{
		// Shell builtins the analysis follows.
		"echo": "anyopts args:text", "printf": "anyopts args:text", "pwd": "-LP args:none", "true": "args:text",
		"false": "args:text", ":": "args:text", "exit": "args:num max:1", "shift": "args:num max:1",
		"type": "-atpPf args:text", "wait": "-nf args:text", "jobs": "-lnprs args:text", "times": "args:none",
		"help": "-dms args:text", "dirs": "-clpv # args:text", "set": "anyopts args:text",
		"cd": "-LPe@ args:text max:1", "pushd": "-n args:text max:1", "popd": "-n args:text max:1",
		"kill": "-s:text -n:num -lL # args:text", "test": "anyopts args:text", "[": "anyopts args:text",

		// Reading and listing files.
		"ls": "globsuffix -aAbBcCdDfFgGhHiklLmnNopqQrRsStuUvxXZ1 -I:text -w:num -T:num --all --almost-all --author " +
			"--escape --block-size:text --ignore-backups --color?:text --directory --dired --classify?:text --file-type " +
			"--format:text --full-time --group-directories-first --no-group --human-readable --si " +
			"--dereference-command-line --dereference-command-line-symlink-to-dir --hide:text --hyperlink?:text " +
			"--indicator-style:text --inode --ignore:text --dereference --kibibytes --literal --numeric-uid-gid " +
			"--hide-control-chars --show-control-chars --quote-name --quoting-style:text --reverse --recursive " +
			"--size --sort:text --time:text --time-style:text --tabsize:num --width:num --context --zero args:path",
		"cat":  "globsafe -AbeEnstTuv --show-all --number-nonblank --show-ends --number --squeeze-blank --show-tabs --show-nonprinting args:path",
		"tac":  "globsafe -br -s:text --before --regex --separator:text args:path",
		"nl":   "globsafe -b:text -d:text -f:text -h:text -i:num -l:num -n:text -p -s:text -v:num -w:num args:path",
		"head": "globsafe -qvz -n:num -c:num --lines:num --bytes:num --quiet --silent --verbose --zero-terminated # args:path",
		"tail": "globsafe -fFqvz -n:num -c:num -s:num --lines:num --bytes:num --follow?:text --retry --sleep-interval:num " +
			"--pid:num --max-unchanged-stats:num --quiet --silent --verbose --zero-terminated # args:path",
		"wc":   "globsafe -cmlLw --bytes --chars --lines --words --max-line-length --total:text --files0-from:path! args:path",
		"stat": "globsuffix -fLt -c:text --format:text --printf:text --terse --file-system --dereference --cached:text args:path",
		"file": "-bcdEhiklLnNprsSvz0 -e:text -F:text -P:text -m:path --brief --mime --mime-type --mime-encoding " +
			"--dereference --no-dereference --no-buffer --no-pad --preserve-date --raw --special-files " +
			"--uncompress --exclude:text --separator:text -f:path! --files-from:path! --magic-file:path args:path",
		"du": "globsuffix -0abcDhHklmsSxP -d:num -t:text -B:text --null --all --apparent-size --block-size:text --bytes " +
			"--total --max-depth:num --human-readable --inodes --count-links --summarize --threshold:text " +
			"--si --time?:text --time-style:text --exclude:text -X:path --exclude-from:path --one-file-system args:path",
		"df":        "-ahHiklPT -t:text -x:text -B:text --all --human-readable --si --inodes --local --portability --print-type --output?:text --total --type:text --exclude-type:text --block-size:text args:path",
		"tree":      "-adfiFnxsuhgDpvtrCANSQJX -L:num -P:text -I:text --noreport --dirsfirst --gitignore --charset:text --filelimit:num --prune --matchdirs --du --si --inodes --device --sort:text -o:write args:path",
		"readlink":  "-femnqsvz --canonicalize --canonicalize-existing --canonicalize-missing --no-newline --quiet --silent --verbose --zero args:path",
		"realpath":  "-emLPqsz --canonicalize-existing --canonicalize-missing --logical --physical --quiet --strip --no-symlinks --zero --relative-to:path --relative-base:path args:path",
		"basename":  "-az -s:text --multiple --suffix:text --zero args:text",
		"dirname":   "-z --zero args:text",
		"md5sum":    "globsafe -btwz -c! --check! --binary --tag --text --ignore-missing --quiet --status --strict --warn --zero args:path",
		"sha1sum":   "globsafe -btwz -c! --check! --binary --tag --text --ignore-missing --quiet --status --strict --warn --zero args:path",
		"sha256sum": "globsafe -btwz -c! --check! --binary --tag --text --ignore-missing --quiet --status --strict --warn --zero args:path",
		"sha512sum": "globsafe -btwz -c! --check! --binary --tag --text --ignore-missing --quiet --status --strict --warn --zero args:path",
		"cksum":     "globsafe -a:text --algorithm:text --base64 --raw --tag --untagged -l:num --length:num args:path",
		"base64":    "-di -w:num --decode --ignore-garbage --wrap:num args:path max:1",
		"xxd":       "-abCeEipru -c:num -g:num -l:num -n:text -o:num -s:text --autoskip --bits --cols:num args:path max:1",
		"od":        "-bcdDfFhHiIlLoOsSvxX -A:text -j:text -N:text -t:text -w?:num --address-radix:text --skip-bytes:text --read-bytes:text --format:text --output-duplicates --width?:num --endian:text args:path",
		"hexdump":   "-bcCdovx -n:num -s:text -e:text -f:path args:path",
		"strings":   "-afw -n:num -t:text -e:text --all --bytes:num --radix:text --encoding:text --print-file-name args:path",
		"sort": "-bdfgiMhnRrVcCmsuz -k:text -t:text -o:write -S:text -T:write --parallel:num --key:text " +
			"--field-separator:text --output:write --reverse --unique --numeric-sort --general-numeric-sort " +
			"--human-numeric-sort --month-sort --version-sort --random-sort --stable --ignore-case " +
			"--ignore-leading-blanks --dictionary-order --ignore-nonprinting --check?:text --merge --zero-terminated " +
			"--buffer-size:text --temporary-directory:write --batch-size:num --files0-from:path! --random-source:path --debug args:path",
		"uniq": "-cdDuiz -f:num -s:num -w:num --count --repeated --all-repeated?:text --unique --ignore-case " +
			"--skip-fields:num --skip-chars:num --check-chars:num --group?:text --zero-terminated first:path args:write max:2",
		"cut":    "-snz -b:text -c:text -f:text -d:text --bytes:text --characters:text --fields:text --delimiter:text --complement --only-delimited --output-delimiter:text --zero-terminated args:path",
		"tr":     "-cdstC --complement --delete --squeeze-repeats --truncate-set1 args:text max:2",
		"rev":    "args:path",
		"fold":   "-bs -w:num --bytes --spaces --width:num args:path",
		"fmt":    "-cstu -w:num -p:text -g:num --crown-margin --tagged-paragraph --split-only --uniform-spacing --width:num --prefix:text --goal:num args:path",
		"paste":  "-sz -d:text --serial --delimiters:text --zero-terminated args:path",
		"join":   "-ivz -a:num -e:text -j:num -o:text -t:text -1:num -2:num --ignore-case --check-order --nocheck-order --header --zero-terminated args:path",
		"comm":   "-123z --check-order --nocheck-order --output-delimiter:text --total --zero-terminated args:path",
		"column": "-txneJ -s:text -o:text -c:num -N:text -R:text -H:text -T:text -W:text -d --table --separator:text --output-separator:text --output-width:num args:path",
		"expand": "-i -t:text --initial --tabs:text args:path", "unexpand": "-a -t:text --all --first-only --tabs:text args:path",
		"diff": "-abBcdeEilnNpqrsStTuwyZ -C:num -U:num -x:text -X:path -I:text -W:num --normal --brief " +
			"--report-identical-files --context?:num --unified?:num --ed --rcs --side-by-side --width:num " +
			"--left-column --suppress-common-lines --show-c-function --show-function-line:text --label:text " +
			"--expand-tabs --initial-tab --tabsize:num --suppress-blank-empty --new-file --unidirectional-new-file " +
			"--ignore-case --ignore-tab-expansion --ignore-trailing-space --ignore-space-change --ignore-all-space " +
			"--ignore-blank-lines --ignore-matching-lines:text --text --strip-trailing-cr --recursive " +
			"--no-dereference --exclude:text --exclude-from:path --starting-file:text --from-file:path " +
			"--to-file:path --minimal --horizon-lines:num --speed-large-files --color?:text --palette:text " +
			"--line-format:text --old-line-format:text --new-line-format:text --unchanged-line-format:text " +
			"--old-group-format:text --new-group-format:text --unchanged-group-format:text " +
			"--changed-group-format:text --ignore-file-name-case --no-ignore-file-name-case args:path",
		"cmp": "globsafe -blsz -i:text -n:text --print-bytes --ignore-initial:text --verbose --bytes:text --quiet --silent args:auto",
		"grep": "globsuffix -abcDdEFGHhIiLlnoPqrsTUvwxZz -e:pat -f:patfile -m:num -A:num -B:num -C:num -D:text -d:text " +
			"--extended-regexp --fixed-strings --basic-regexp --perl-regexp --regexp:pat --file:patfile " +
			"--ignore-case --no-ignore-case --word-regexp --line-regexp --no-messages --invert-match " +
			"--max-count:num --byte-offset --line-number --no-line-number --line-buffered --with-filename " +
			"--no-filename --label:text --only-matching --quiet --silent --binary-files:text --text " +
			"--directories:text --devices:text --recursive --include:text --exclude:text --exclude-from:path " +
			"--exclude-dir:text --files-without-match --files-with-matches --count --initial-tab --null " +
			"--null-data --before-context:num --after-context:num --context:num --color?:text --colour?:text " +
			"--binary # first:pat args:path",
		"rg": "-abcFHhiIlnNoPqsSuUvwxz0. -e:pat -f:patfile -g:text -t:text -T:text -m:num -A:num -B:num -C:num " +
			"-j:num -M:num -r:text -E:text -d:num --regexp:pat --file:patfile --glob:text --iglob:text " +
			"--type:text --type-not:text --type-add:text --max-count:num --after-context:num " +
			"--before-context:num --context:num --threads:num --max-columns:num --replace:text " +
			"--encoding:text --max-depth:num --max-filesize:text --hidden --no-ignore --no-ignore-vcs " +
			"--no-ignore-dot --no-ignore-parent --no-ignore-global --ignore-file:path --case-sensitive " +
			"--ignore-case --smart-case --fixed-strings --word-regexp --line-regexp --invert-match --count " +
			"--count-matches --files --files-with-matches --files-without-match --line-number --no-line-number " +
			"--column --no-heading --heading --with-filename --no-filename --only-matching --quiet --json " +
			"--vimgrep --null --null-data --multiline --multiline-dotall --pcre2 --engine:text --sort:text " +
			"--sortr:text --stats --trim --color:text --colors:text --no-messages --no-config --passthru " +
			"--binary --text --unrestricted --one-file-system --max-columns-preview --byte-offset --crlf " +
			"--type-list --debug --path-separator:text --field-match-separator:text --field-context-separator:text " +
			"--context-separator:text --no-context-separator --include-zero --no-unicode --block-buffered " +
			"--line-buffered first:pat args:path",
		"jq": "-rjcnesSaCMR --raw-output --join-output --compact-output --null-input --exit-status --slurp " +
			"--sort-keys --ascii-output --color-output --monochrome-output --raw-input --tab --indent:num " +
			"--seq --stream --stream-errors --arg:text2 --argjson:text2 --slurpfile:namepath --rawfile:namepath " +
			"--args --jsonargs -f:patfile --from-file:patfile -L:path first:pat args:path",
		"sed": "-nEirsuz -e:sed -l:num --quiet --silent --expression:sed --regexp-extended --separate " +
			"--unbuffered --null-data --posix --debug --sandbox --follow-symlinks -i?:text --in-place?:text " +
			"--line-length:num first:sed args:path",
		"awk":  "-F:text -v:text --field-separator:text --assign:text first:awk args:path",
		"gawk": "-F:text -v:text --field-separator:text --assign:text -b -c -P -S --characters-as-bytes --traditional --posix --sandbox first:awk args:path",
		"mawk": "-F:text -v:text first:awk args:path",
		"tee":  "-aip --append --ignore-interrupts --output-error?:text args:write",
		// Fetching: what they write is checked; what they send (-d @file, -T, -F) is not
		// listed, so it asks.
		"curl": "-sSLfIikvZgGN# -o:write -X:text -H:atfile -A:text -e:text -m:num -w:atfile -r:text -y:num -Y:num " +
			"--silent --show-error --location --fail --fail-with-body --head --include --insecure --verbose " +
			"--output:write --remote-name --remote-name-all --request:text --header:atfile --user-agent:text " +
			"--referer:text --max-time:num --connect-timeout:num --retry:num --retry-delay:num --retry-max-time:num " +
			"--compressed --write-out:atfile --range:text --http1.1 --http2 --ipv4 --ipv6 --no-progress-meter " +
			"--create-dirs --output-dir:write --globoff --location-trusted --max-redirs:num --proto:text " +
			"--proto-redir:text --tlsv1.2 --tlsv1.3 -O args:url",
		"wget": "-qvncNrkpS -O:write -P:write -t:num -T:num -l:num -U:text --quiet --verbose " +
			"--no-clobber --continue --timestamping --output-document:write --directory-prefix:write " +
			"--tries:num --timeout:num --user-agent:text --header:text --no-check-certificate --recursive " +
			"--level:num --no-parent --convert-links --page-requisites --server-response --spider " +
			"--progress:text --show-progress --no-verbose --max-redirect:num args:url",

		// Making and changing files (exact-only commands still have grammars, for rules that
		// name them with a wildcard).
		"mkdir": "-pvZ -m:text --parents --verbose --mode:text args:path",
		"touch": "-acfhm -d:text -t:text -r:path --no-create --no-dereference --date:text --reference:path --time:text args:path",
		"cp": "-aabdfHiklLnpPrRsStTuvx -S:text -t:path --archive --attributes-only --backup?:text --copy-contents " +
			"--force --interactive --link --dereference --no-clobber --no-dereference --preserve?:text " +
			"--no-preserve:text --parents --recursive --reflink?:text --remove-destination --sparse:text " +
			"--strip-trailing-slashes --symbolic-link --suffix:text --target-directory:path " +
			"--no-target-directory --update?:text --verbose --one-file-system args:path",
		"mv": "-bfinTuv -S:text -t:path --backup?:text --force --interactive --no-clobber --strip-trailing-slashes " +
			"--suffix:text --target-directory:path --no-target-directory --update?:text --verbose args:path",
		"rm":    "-dfiIrRv --force --interactive?:text --one-file-system --preserve-root?:text --recursive --dir --verbose args:path",
		"rmdir": "-pv --ignore-fail-on-non-empty --parents --verbose args:path",
		"ln": "-bdfFinLPrsTv -S:text -t:path --backup?:text --directory --force --interactive --logical " +
			"--no-dereference --physical --relative --symbolic --suffix:text --target-directory:path " +
			"--no-target-directory --verbose args:text",
		"chmod": "-cfvR --changes --silent --quiet --verbose --recursive --no-preserve-root --preserve-root --reference:path first:text args:path",
		"tar": "-Acdtrux -f:path -C:dir -T:path! -X:path -zjJaZvkpmlSWOiG -b:num -H:text -K:text -L:num -N:text " +
			"-V:text --create --extract --get --list --append --update --diff --compare --concatenate --file:path " +
			"--directory:dir --files-from:path! --exclude:text --exclude-from:path --exclude-vcs " +
			"--exclude-vcs-ignores --exclude-caches --gzip --gunzip --bzip2 --xz --lzma --lzip --lzop --zstd " +
			"--compress --uncompress --auto-compress --verbose --totals?:text --keep-old-files --skip-old-files " +
			"--keep-newer-files --overwrite --overwrite-dir --no-overwrite-dir --preserve-permissions " +
			"--same-permissions --no-same-permissions --same-owner --no-same-owner --numeric-owner --owner:text " +
			"--group:text --mode:text --mtime:text --touch --strip-components:num --transform:text --xform:text " +
			"--wildcards --no-wildcards --anchored --no-anchored --recursion --no-recursion --null --no-null " +
			"--one-file-system --sort:text --format:text --to-stdout --occurrence?:num --show-transformed-names " +
			"--warning:text --ignore-zeros --ignore-failed-read --checkpoint?:num --blocking-factor:num " +
			"--label:text --force-local --delay-directory-restore --unlink-first --recursive-unlink " +
			"-h! --dereference! --hard-dereference! args:path",
		"unzip":  "-lvtzZocfunqQaobBCjLKMVXsD -d:dir -x:text -P:text args:path",
		"zip":    "-rjqvmgdDuf0123456789Xylo -x:text -i:text -b:dir --recurse-paths --junk-paths --quiet --symlinks args:path",
		"gzip":   "-cdfhklLnNqrtvV123456789 -S:text --stdout --to-stdout --decompress --uncompress --force --keep --list --no-name --name --quiet --recursive --suffix:text --test --verbose --fast --best args:path",
		"gunzip": "-cfhklLnNqrtvV -S:text --stdout --to-stdout --force --keep --list --no-name --name --quiet --recursive --suffix:text --test --verbose args:path",
		"zcat":   "-fhlLqrtvV args:path",

		// Git: global options, then a subcommand.
		"git": "-P -p --no-pager --paginate --no-optional-locks --literal-pathspecs --glob-pathspecs " +
			"--noglob-pathspecs --icase-pathspecs --no-replace-objects --bare --version --help -C:dir -c:gitcfg " +
			"--git-dir:path! --work-tree:path! --config-env:text! --exec-path?:path! --namespace:text! sub",
		"git status": "-sbvuz -u?:text --short --branch --show-stash --porcelain?:text --long --verbose " +
			"--untracked-files?:text --ignore-submodules?:text --ignored?:text --no-ignored --column?:text " +
			"--no-column --ahead-behind --no-ahead-behind --renames --no-renames --find-renames?:text --null args:auto",
		"git diff":        "@gitdiff args:auto",
		"git show":        "@gitdiff @gitlog -q --quiet --show-signature! args:auto",
		"git log":         "@gitdiff @gitlog -q --quiet --show-signature! args:auto",
		"git shortlog":    "@gitlog -s -e -n -c --summary --email --numbered --committer --group:text --format:text -w?:text args:auto",
		"git rev-list":    "@gitlog --objects --objects-edge --no-object-names --in-commit-order --header --timestamp --quiet --disk-usage?:text --max-age:text --min-age:text args:auto",
		"git whatchanged": "@gitdiff @gitlog args:auto",
		"git branch": "-a -r -v -l -q --all --remotes --verbose --list --show-current --contains?:text " +
			"--no-contains?:text --merged?:text --no-merged?:text --sort:text --format:text --color?:text " +
			"--no-color --column?:text --no-column --points-at:text --abbrev:num --no-abbrev --ignore-case " +
			"--omit-empty --quiet --track?:text --no-track args:text",
		"git rev-parse": "-q --short?:num --verify --quiet --show-toplevel --show-prefix --show-cdup --git-dir " +
			"--git-common-dir --absolute-git-dir --is-inside-work-tree --is-inside-git-dir --is-bare-repository " +
			"--is-shallow-repository --abbrev-ref?:text --symbolic --symbolic-full-name --all --branches?:text " +
			"--tags?:text --remotes?:text --glob:text --show-object-format?:text --show-ref-format --sq --sq-quote " +
			"--not --default:text --since:text --until:text --path-format:text --local-env-vars --show-superproject-working-tree " +
			"--resolve-git-dir:path --git-path:text args:text",
		"git ls-files": "-cdmoiskuvftz -x:text -X:path --cached --deleted --modified --others --ignored --stage " +
			"--directory --no-empty-directory --unmerged --killed --exclude:text --exclude-from:path " +
			"--exclude-per-directory:text --exclude-standard --error-unmatch --full-name --recurse-submodules " +
			"--abbrev?:num --debug --eol --deduplicate --format:text --sparse --resolve-undo args:auto",
		"git ls-tree": "-dlrtz --name-only --name-status --object-only --full-name --full-tree --abbrev?:num --format:text args:auto",
		"git cat-file": "-tspe --batch?:text --batch-check?:text --batch-command?:text --batch-all-objects " +
			"--follow-symlinks --unordered --buffer -z -Z --allow-unknown-type --mailmap --use-mailmap args:text",
		"git blame": "-bclnfsetwp -L:text -S:path -M?:num -C?:num --root --show-stats --score-debug --show-name " +
			"--show-number --show-email --porcelain --line-porcelain --incremental --date:text --abbrev:num " +
			"--ignore-rev:text --ignore-revs-file:path --first-parent --reverse:text --progress --no-progress " +
			"--color-lines --color-by-age --minimal --encoding:text --contents:path args:auto",
		"git describe": "--tags --all --always --long --abbrev:num --dirty?:text --broken?:text --match:text " +
			"--exclude:text --contains --first-parent --exact-match --candidates:num --debug args:text",
		"git grep": "-abcEFGhHiIlLnopPqvwWz -e:pat -f:patfile -A:num -B:num -C:num -m:num --cached --untracked " +
			"--no-index --exclude-standard --no-exclude-standard --recurse-submodules --text --textconv! " +
			"--no-textconv --ignore-case --max-depth:num --recursive --no-recursive --word-regexp " +
			"--invert-match --full-name --extended-regexp --basic-regexp --perl-regexp --fixed-strings " +
			"--line-number --column --files-with-matches --name-only --files-without-match --null --only-matching " +
			"--count --color?:text --no-color --break --heading --show-function --function-context " +
			"--context:num --after-context:num --before-context:num --threads:num --and --or --not --all-match " +
			"--quiet --max-count:num # first:pat args:auto",
		"git remote":         "-v --verbose sub",
		"git remote show":    "-n args:text",
		"git remote get-url": "--push --all args:text",
		"git tag": "-l -n?:num -a -m:text --list --sort:text --contains?:text --no-contains?:text --merged?:text " +
			"--no-merged?:text --points-at:text --format:text --column?:text --no-column --color?:text " +
			"--ignore-case --omit-empty --annotate --message:text --cleanup:text -s! --sign! -u:text! --local-user:text! args:text",
		"git stash":         "sub",
		"git stash list":    "@gitlog args:text",
		"git stash show":    "@gitdiff --include-untracked --only-untracked args:text",
		"git show-ref":      "-sdq --head --heads --branches --tags --hash?:num --abbrev?:num --verify --exists --dereference --quiet args:text",
		"git for-each-ref":  "--count:num --sort:text --format:text --shell --perl --python --tcl --points-at:text --merged?:text --no-merged?:text --contains?:text --no-contains?:text --ignore-case --omit-empty --exclude:text --stdin args:text",
		"git merge-base":    "-a --all --octopus --independent --is-ancestor --fork-point args:text",
		"git reflog":        "@gitlog args:text",
		"git count-objects": "-vH --verbose --human-readable args:none",
		"git version":       "--build-options args:none",
		"git var":           "-l args:text",
		"git check-ignore":  "-qvnz --quiet --verbose --non-matching --no-index --stdin args:auto",
		"git check-attr":    "-az --all --cached --source:text --stdin args:auto",
		"git worktree":      "sub",
		"git worktree list": "-v --porcelain --verbose -z --expire:text args:none",
		"git config": "-lz --list --get --get-all --get-regexp --get-urlmatch --get-color --get-colorbool " +
			"--name-only --null --show-origin --show-scope --local --global! --system! --worktree --type:text " +
			"--bool --int --bool-or-int --path --expiry-date --default:text --includes --no-includes args:text",
		"git add": "-AnNuvfip --all --update --dry-run --verbose --force --intent-to-add --ignore-errors " +
			"--ignore-missing --no-ignore-removal --ignore-removal --renormalize --no-all --chmod:text " +
			"--sparse --refresh --pathspec-from-file:path --pathspec-file-nul args:auto",
		"git rm": "-nqrf --cached --dry-run --quiet --force --ignore-unmatch --sparse --pathspec-from-file:path --pathspec-file-nul args:auto",
		"git mv": "-fkvn --force --dry-run --verbose args:auto",
		"git commit": "-aeinoqsvz -m:text -F:path -C:text -c:text --all --amend --no-edit --edit --signoff " +
			"--no-signoff --allow-empty --allow-empty-message --quiet --verbose --no-verify --verify --dry-run " +
			"--short --branch --porcelain --long --status --no-status --message:text --file:path --author:text " +
			"--date:text --fixup:text --squash:text --reuse-message:text --reedit-message:text --reset-author " +
			"--only --include --cleanup:text --untracked-files?:text --trailer:text --no-gpg-sign -S! --gpg-sign! " +
			"--template:path! -t:path! --pathspec-from-file:path --pathspec-file-nul args:auto",
		"git fetch": "-aqvpPtfnk46 --all --prune --prune-tags --tags --no-tags --depth:num --deepen:num " +
			"--shallow-since:text --unshallow --dry-run --force --keep --multiple --quiet --verbose --progress " +
			"--no-progress --recurse-submodules?:text --no-recurse-submodules --jobs:num -j:num --set-upstream " +
			"--refetch --write-fetch-head --no-write-fetch-head --atomic --filter:text first:repo args:text",
		"git pull": "-qvr --quiet --verbose --rebase?:text --no-rebase --ff --no-ff --ff-only --squash " +
			"--no-squash --commit --no-commit --edit --no-edit --autostash --no-autostash --all --prune --tags " +
			"--no-tags --depth:num --unshallow --progress --no-progress --stat --no-stat --verify --no-verify " +
			"-X:text --strategy-option:text first:repo args:text",
		"git checkout": "-bBlqfmp -b:text -B:text --quiet --force --merge --track?:text --no-track --detach " +
			"--orphan:text --ours --theirs --conflict:text --progress --no-progress --ignore-other-worktrees " +
			"--recurse-submodules --no-recurse-submodules --pathspec-from-file:path --pathspec-file-nul args:auto",
		"git switch": "-cCdqfmt -c:text -C:text --create:text --force-create:text --detach --guess --no-guess " +
			"--quiet --force --discard-changes --merge --track?:text --no-track --orphan:text --progress " +
			"--no-progress --ignore-other-worktrees --recurse-submodules --no-recurse-submodules args:text",
		"git restore": "-sSWpq -s:text --source:text --staged --worktree --patch --quiet --progress --no-progress " +
			"--ours --theirs --merge --conflict:text --ignore-unmerged --overlay --no-overlay " +
			"--pathspec-from-file:path --pathspec-file-nul args:auto",
		"git merge":            "-qvn --commit --no-commit --edit --no-edit --ff --no-ff --ff-only --squash --no-squash --stat --no-stat --log?:num --no-log --abort --continue --quit -m:text --message:text --autostash --no-autostash --verify --no-verify -X:text --strategy-option:text --allow-unrelated-histories args:text",
		"git reset":            "-qp --soft --mixed --hard --merge --keep --quiet --no-refresh --recurse-submodules --pathspec-from-file:path args:auto",
		"git rebase":           "-iqv --continue --abort --skip --quit --onto:text --keep-base --autostash --no-autostash --autosquash --no-autosquash --update-refs --rebase-merges?:text --root --quiet --verbose -X:text --strategy-option:text --exec:text! -x:text! args:text",
		"git cherry-pick":      "-nexs --continue --abort --skip --quit --no-commit --edit --signoff -m:num --mainline:num --ff --allow-empty -X:text args:text",
		"git revert":           "-nes --continue --abort --skip --quit --no-commit --edit --no-edit --signoff -m:num --mainline:num args:text",
		"git init":             "-q --quiet --bare -b:text --initial-branch:text --object-format:text --shared?:text --template:path! --separate-git-dir:path! args:path",
		"git clone":            "-ql --quiet --local --depth:num --branch:text -b:text --single-branch --no-single-branch --no-tags --shallow-since:text --filter:text --recurse-submodules?:text --bare --mirror --origin:text -o:text --progress --no-checkout -n --sparse first:repo args:auto --upload-pack:text! -u:text! --template:path! -c:gitcfg --config:gitcfg",
		"git push":             "-qvnu --quiet --verbose --dry-run --set-upstream --tags --follow-tags --all --branches --force-with-lease?:text --force-if-includes --no-verify --verify --progress --atomic --porcelain --delete -d -f --force first:repo args:text",
		"git apply":            "-vqR --check --stat --numstat --summary --index --cached --3way --reverse --reject --verbose --quiet --whitespace:text --exclude:text --include:text -p:num --directory:text --unidiff-zero --allow-empty args:path",
		"git format-patch":     "-kns -o:write -v:num --output-directory:write --stdout --cover-letter --numbered --no-numbered --start-number:num --signoff --subject-prefix:text --rfc --no-stat --thread?:text --base:text --zero-commit @gitdiff args:text",
		"git clean":            "-ndfxXqi -e:text --dry-run --force --quiet --exclude:text args:auto",
		"git gc":               "--auto --quiet --prune?:text --no-prune --aggressive args:none",
		"git fsck":             "--full --strict --unreachable --dangling --no-dangling --root --tags --cache --no-reflogs --connectivity-only --lost-found --name-objects --progress --no-progress args:text",
		"git help":             "-a -g -i -m -w --all --guides --info --man --web args:text",
		"git notes":            "sub",
		"git notes list":       "args:text",
		"git notes show":       "args:text",
		"git submodule":        "sub",
		"git submodule status": "--cached --recursive -q --quiet args:auto",

		// Go.
		"go":              "sub",
		"go build":        "go @gobuild args:auto",
		"go install":      "go @gobuild args:auto",
		"go run":          "go @gobuild stop args:auto",
		"go test":         "go @gobuild @gotest args:auto",
		"go vet":          "go @gobuild -vettool:path! args:auto",
		"go list":         "go @gobuild -m -u -f:text -e -deps -test -find -export -compiled -versions -retracted -reuse:path args:auto",
		"go fmt":          "go -n -x -mod:text args:auto",
		"go generate":     "go @gobuild -run:text -skip:text args:auto",
		"go clean":        "go @gobuild -i -r -cache -testcache -modcache -fuzzcache args:auto",
		"go doc":          "go -all -c -cmd -short -src -u -http:text! args:text",
		"go env":          "go -json -changed args:text -w:text! -u:text!",
		"go version":      "go -m -v -json args:path",
		"go get":          "go -u -t -d -x -v -tool -insecure! args:text",
		"go mod":          "sub",
		"go mod tidy":     "go -v -e -x -diff -go:text -compat:text args:none",
		"go mod download": "go -json -x -reuse:path args:text",
		"go mod verify":   "args:none",
		"go mod why":      "go -m -vendor args:text",
		"go mod graph":    "go -go:text -x args:none",
		"go mod init":     "args:text max:1",
		"go mod vendor":   "go -v -e -o:out args:none",
		"go mod edit":     "go -fmt -json -print -go:text -toolchain:text -module:text -require:text -droprequire:text -exclude:text -dropexclude:text -retract:text -dropretract:text -tool:text -droptool:text args:path",
		"go work":         "sub",
		"go work sync":    "args:none",
		"go work use":     "go -r args:path",
		"go tool":         "sub",
		"go tool cover":   "go -func:path -html:path -o:out -mode:text -var:text args:none",
		"go tool pprof":   "go -top -text -list:text -svg -png -output:out -http:text! args:path",
		"go tool nm":      "go -n -size -sort:text -type args:path",
		"go tool objdump": "go -s:text -S args:path",
		"gofmt":           "-l -d -s -w -e -r:text args:path",

		// JavaScript.
		"npm":      "@npm sub",
		"npm test": "@npm args:auto", "npm t": "@npm args:auto", "npm tst": "@npm args:auto",
		"npm run": "@npm args:auto", "npm run-script": "@npm args:auto", "npm start": "@npm args:auto",
		"npm ci":      "@npm args:none",
		"npm install": "@npm args:auto", "npm i": "@npm args:auto", "npm add": "@npm args:auto",
		"npm uninstall": "@npm args:text", "npm ls": "@npm args:text", "npm list": "@npm args:text",
		"npm outdated": "@npm args:text", "npm audit": "@npm args:text", "npm view": "@npm args:text",
		"npm info": "@npm args:text", "npm pack": "@npm --pack-destination:out args:auto", "npm version": "@npm args:text",
		"npm explain": "@npm args:text", "npm why": "@npm args:text", "npm prune": "@npm args:text",
		"npm dedupe": "@npm args:none", "npm rebuild": "@npm args:text", "npm init": "@npm args:none",
		"npm help": "args:text", "npm config": "sub", "npm config get": "@npm args:text", "npm config list": "@npm args:none",
		"npx":  "-y --yes --no --no-install --quiet -q runs",
		"pnpm": "@npm sub", "pnpm test": "@npm args:auto", "pnpm run": "@npm args:auto", "pnpm install": "@npm args:auto",
		"pnpm i": "@npm args:auto", "pnpm add": "@npm args:auto", "pnpm ls": "@npm args:text", "pnpm list": "@npm args:text",
		"pnpm build": "@npm args:auto", "pnpm lint": "@npm args:auto", "pnpm exec": "@npm runs", "pnpm outdated": "@npm args:text",
		"pnpm why": "@npm args:text", "pnpm start": "@npm args:auto",
		"yarn": "@npm sub", "yarn test": "@npm args:auto", "yarn run": "@npm args:auto", "yarn install": "@npm args:none",
		"yarn add": "@npm args:auto", "yarn build": "@npm args:auto", "yarn lint": "@npm args:auto", "yarn why": "@npm args:text",
		"yarn list": "@npm args:text", "yarn workspace": "@npm sub", "yarn start": "@npm args:auto",
		"bunx": "runs",
		// Runners of a project's environment: the program they run is checked with its own
		// grammar (a shell, an interpreter without a script, a program of runsCommands ask).
		"yarn exec": "runs", "bundle exec": "runs", "poetry run": "runs", "pipenv run": "runs", "pdm run": "runs",
		"hatch run": "runs", "rye run": "runs",
		"uv run": "-q -v --quiet --verbose --frozen --locked --no-sync --offline --all-extras --extra:text --no-dev " +
			"--package:text --python:auto -p:auto runs",
		"node": "--test --check -c --version -v --trace-warnings --no-warnings --enable-source-maps " +
			"--experimental-vm-modules --max-old-space-size:num --stack-size:num --test-reporter:reporter " +
			"--test-reporter-destination:write --test-name-pattern:text --watch! @jsrun --inspect! --inspect-brk! " +
			"stop first:script args:text",
		// The TypeScript runners: node with a compiler in front.
		"tsx": "--tsconfig:path --no-cache -v --version -h --help @jsrun stop first:script args:text",
		"ts-node": "-T --transpile-only --swc --esm --files --skip-project --pretty --cwd-mode -H -P:path --project:path " +
			"-O:text --compiler-options:text -v --version -h --help @jsrun stop first:script args:text",
		// Tools reviewed as having no option that reaches beyond the project's own code and
		// files (their configs are the project's code already); values that may be paths are
		// checked.
		"tsc": "anyopts args:auto", "eslint": "anyopts args:auto", "prettier": "anyopts args:auto",
		"jest": "anyopts args:auto", "vitest": "anyopts args:auto", "mocha": "anyopts args:auto",
		"biome": "anyopts args:auto",
		"black": "anyopts args:auto", "ruff": "anyopts args:auto", "mypy": "anyopts args:auto",
		"isort": "anyopts args:auto", "flake8": "anyopts args:auto", "pylint": "anyopts --init-hook:text! args:auto",
		"rustfmt": "anyopts args:auto", "clang-format": "anyopts args:auto", "shellcheck": "anyopts args:auto",
		"shfmt": "anyopts args:auto", "golangci-lint": "anyopts args:auto", "staticcheck": "anyopts args:auto",

		// Python.
		"python":  "-V --version -u -B -O -OO -E -s -I -q -v -b -W:text -X:auto stop first:script args:text -m:text! -c:text!",
		"python3": "-V --version -u -B -O -OO -E -s -I -q -v -b -W:text -X:auto stop first:script args:text -m:text! -c:text!",
		// The modules python -m may run under a rule with a wildcard (see pyModules).
		"python -m unittest":  "-vqfcb --locals --durations:num -k:text -s:path -p:text -t:path args:auto",
		"python -m json.tool": "--sort-keys --no-ensure-ascii --json-lines --indent:num --tab --no-indent --compact first:path args:write max:2",
		"python -m venv": "--system-site-packages --symlinks --copies --clear --upgrade --without-pip " +
			"--without-scm-ignore-files --upgrade-deps --prompt:text args:out",
		"python -m pip":        "-V --version -q -v --quiet --verbose --disable-pip-version-check --no-color --no-input sub",
		"python -m pip list":   "-o -u -e -l --outdated --uptodate --editable --local --user --not-required --exclude-editable --include-editable --format:text args:none",
		"python -m pip show":   "-f --files args:text",
		"python -m pip freeze": "-l --local --user --all --exclude-editable args:none",
		"python -m pip check":  "args:none",
		"pytest":               "@pytest args:auto",

		// Rust.
		"cargo":       "-q -v -V --quiet --verbose --version --color:text --locked --frozen --offline sub",
		"cargo build": "@cargo args:none", "cargo b": "@cargo args:none",
		"cargo check": "@cargo args:none", "cargo c": "@cargo args:none",
		"cargo test": "@cargo args:auto", "cargo t": "@cargo args:auto",
		"cargo run": "@cargo args:auto", "cargo r": "@cargo args:auto",
		"cargo bench":    "@cargo args:auto",
		"cargo clippy":   "@cargo --fix --allow-dirty --allow-staged --no-deps args:auto",
		"cargo doc":      "@cargo --no-deps --open! --document-private-items args:none",
		"cargo fmt":      "--all --check -q -v -p:text --package:text --manifest-path:path --message-format:text args:auto",
		"cargo tree":     "@cargo -e:text --edges:text -i:text --invert:text --depth:num --prefix:text --no-dedupe -d --duplicates --charset:text -f:text --format:text args:none",
		"cargo metadata": "@cargo --format-version:num --no-deps --filter-platform:text args:none",
		"cargo update":   "@cargo --dry-run --precise:text --aggressive --recursive args:text",
		"cargo fetch":    "@cargo args:none",
		"cargo clean":    "@cargo --doc --dry-run args:none",
		"cargo add":      "@cargo --dev --build --optional --no-optional --rename:text --git:text --branch:text --tag:text --rev:text --path:path args:text",
		"cargo version":  "args:none",

		// What the machine is.
		"uname":  "-asnrvmpio --all --kernel-name --nodename --kernel-release --kernel-version --machine --processor --hardware-platform --operating-system args:none",
		"whoami": "args:none", "id": "-gGnruz --group --groups --name --real --user --zero args:text",
		"hostname": "-fsiIdAa --fqdn --short --ip-address --all-ip-addresses --domain --all-fqdns --alias args:none",
		"nproc":    "--all --ignore:num args:none", "arch": "args:none", "printenv": "-0 --null args:text",
		"uptime": "-psV --pretty --since args:none", "sleep": "args:num", "seq": "-w -f:text -s:text --equal-width --format:text --separator:text # args:num",
		"which": "-as args:text",
		// date -s sets the clock; -f reads dates from a file (and shows the lines it cannot read).
		"date": "-uR -d:text --date:text --utc --universal --rfc-email -I?:text --iso-8601?:text --rfc-3339:text " +
			"-r:path --reference:path --debug args:text max:1",

		// Build tools.
		"cmake": "-S:dir -B:out -G:text -D:auto -U:text -T:text -A:text -j:num -t:text --build:dir --target:text " +
			"--parallel?:num --config:text --clean-first --preset:text --fresh --toolchain:script -Wdev -Wno-dev " +
			"-Werror:text --log-level:text --verbose -v --list-presets?:text --version args:path",
		"make": "-BikeqnrRsStwW -j:optnum -l?:num -C:dir -f:script -I:path -o:text -W:text --always-make --directory:dir " +
			"--environment-overrides --file:script --makefile:script --ignore-errors --include-dir:path --jobs?:num " +
			"--keep-going --load-average?:num --just-print --dry-run --recon --no-builtin-rules " +
			"--no-builtin-variables --silent --quiet --no-silent --stop --touch --trace --print-directory " +
			"--no-print-directory --warn-undefined-variables --debug?:text --old-file:text --assume-old:text " +
			"--what-if:text --new-file:text --assume-new:text --output-sync?:text -O?:text --check-symlink-times " +
			"--question -d args:auto",
	} {
		grammars[name] = parseNamed(name, spec)
	}
	grammars["gmake"] = grammars["make"]
	grammars["egrep"] = grammars["grep"]
	grammars["ggrep"] = grammars["grep"]
	grammars["gsed"] = grammars["sed"]
	grammars["nawk"] = grammars["awk"]
	grammars["gtar"] = grammars["tar"]
	grammars["fgrep"] = grammars["grep"]
	grammars["git config"].check = gitConfigReadOnly
	grammars["make"].check = makeVariables
	grammars["sed"].check = sedBackup
	grammars["tar"].check = tarRemote
	for _, py := range []string{"python", "python3", "node", "tsx", "ts-node"} {
		grammars[py].check = needsScript(py)
	}
	for name, f := range treeFollows {
		grammars[name].check = f.check(name, grammars[name])
	}
	for _, m := range []string{"pytest", "mypy", "black", "isort", "flake8", "pylint", "ruff"} {
		grammars["python -m "+m] = grammars[m]
	}
})

// treeFollows are the commands that, walking a folder tree, can follow the symlinks they
// meet in it — to files and folders outside the workspace that no path check sees (the
// paths of the line are resolved, not what lies below them). They are unsafe with one of
// the recursive options and, for those that follow by default, without one of the noFollow
// options, for the others with one of the follow options.
var treeFollows = map[string]treeFollow{
	"cp":     {recursive: "-r -R -a --recursive --archive", follow: "-L --dereference"},
	"ls":     {recursive: "-R --recursive", follow: "-L --dereference"},
	"diff":   {recursive: "-r --recursive", noFollow: "--no-dereference"},
	"zip":    {recursive: "-r --recurse-paths", noFollow: "-y --symlinks"},
	"gzip":   {recursive: "-r --recursive", follow: "-f --force"},
	"gunzip": {recursive: "-r --recursive", follow: "-f --force"},
}

type treeFollow struct{ recursive, follow, noFollow string }

func (f treeFollow) check(name string, g *grammar) func([]word) string {
	return func(ws []word) string {
		seen := map[string]bool{}
		for _, o := range options(g, ws) {
			seen[o.name] = true
		}
		first := func(list string) string {
			for _, o := range strings.Fields(list) {
				if seen[o] {
					return o
				}
			}
			return ""
		}
		r, fl := first(f.recursive), first(f.follow)
		switch {
		case r == "" || f.noFollow != "" && first(f.noFollow) != "":
			return ""
		case f.follow == "":
			return name + " " + r + " follows the symlinks in the folders it walks, which may lead outside the workspace (add " +
				strings.Fields(f.noFollow)[len(strings.Fields(f.noFollow))-1] + ")"
		case fl != "":
			return name + " " + r + " " + fl + " follows the symlinks in the folders it walks, which may lead outside the workspace"
		}
		return ""
	}
}

// sedBackup refuses sed -i with a backup suffix that holds a slash: GNU sed then writes the
// backup into another folder (-i'../../x/*').
func sedBackup(ws []word) string {
	for _, o := range options(grammars["sed"], ws) {
		if (o.name == "-i" || o.name == "--in-place") && strings.Contains(o.val, "/") {
			return "sed " + o.name + " with a backup name that holds / writes the backup into another folder"
		}
	}
	return ""
}

// tarRemote refuses an archive name with a colon before any slash (host:file): GNU tar opens
// it on another machine through a remote shell program, unless --force-local.
func tarRemote(ws []word) string {
	var remote string
	for _, o := range options(grammars["tar"], ws) {
		if o.name == "--force-local" {
			return ""
		}
		if o.name == "-f" || o.name == "--file" {
			if i := strings.IndexByte(o.val, ':'); i > 0 && !strings.Contains(o.val[:i], "/") {
				remote = o.val
			}
		}
	}
	if remote != "" {
		return "tar -f " + remote + " opens an archive on another machine through a remote shell program (add --force-local, or write ./" + remote + ")"
	}
	return ""
}

// parseNamed parses spec for the grammar of name and sets the escape texts of the options
// marked with "!".
func parseNamed(name, spec string) *grammar {
	g := parseGrammar(spec, groups)
	base, _, _ := strings.Cut(name, " ")
	why := func(opt string) string {
		for _, key := range []string{name + " " + opt, base + " " + opt} {
			if w, ok := escapes[key]; ok {
				return w
			}
		}
		return "is not an option toolsd knows to be safe"
	}
	for n := range g.markedLong {
		o := g.long[n]
		dash := "--"
		if g.goStyle {
			dash = "-"
		}
		o.escape = why(dash + n)
		g.long[n] = o
	}
	for ch := range g.markedShort {
		o := g.short[ch]
		o.escape = why("-" + string(ch))
		g.short[ch] = o
	}
	return g
}

// needsScript makes the check of an interpreter: without a script (or -m, or --version) it
// runs code read from its input.
func needsScript(name string) func([]word) string {
	return func(ws []word) string {
		for _, w := range ws {
			if w.text == "--version" || w.text == "-V" || w.text == "-v" && !strings.HasPrefix(name, "python") || w.text == "--test" {
				return ""
			}
			if !(len(w.text) > 1 && w.text[0] == '-') {
				return ""
			}
		}
		return name + " without a script runs code read from its input"
	}
}

// makeVariables allows make's variable overrides (make CC=clang V=1) only as single plain
// words: a value with spaces or shell characters (CC='sh -c …') would choose what the
// Makefile's recipes run, and MAKEFLAGS, SHELL and the like change how make itself works.
func makeVariables(ws []word) string {
	for _, w := range ws {
		name, val, ok := strings.Cut(w.text, "=")
		if !ok || strings.HasPrefix(w.text, "-") {
			continue
		}
		if !isShellName(strings.TrimRight(name, ":+?!")) {
			// make takes any word with = as an assignment: .SHELLFLAGS, .RECIPEPREFIX and
			// the like change how recipes run.
			return "make " + name + "= sets a variable whose name is not a plain word (.SHELLFLAGS= chooses how recipes run)"
		}
		switch strings.TrimRight(name, ":+?!") {
		case "MAKEFLAGS", "MFLAGS", "MAKEFILES", "MAKEFILE_LIST", "MAKE", "SHELL", "MAKESHELL", "GNUMAKEFLAGS", "VPATH", "MAKEOVERRIDES":
			return "make " + name + "= changes how make itself runs"
		}
		if !w.static || strings.ContainsAny(val, " \t\n$`;|&()<>'\"\\*?[]{}~!#") {
			return "make " + name + "= with a value that is not one plain word could choose what the Makefile's recipes run"
		}
	}
	return ""
}

// gitConfigReadOnly allows git config only to read: one name (two with --get-regexp and
// --get-urlmatch), or --list; setting a value could name a program for later commands.
//
// Listing (--list, --get-regexp) shows the person's and the machine's configuration too,
// read from outside the workspace, unless it is limited to the repository's (--local,
// --worktree).
func gitConfigReadOnly(ws []word) string {
	n, getRegexp, list, local := 0, false, false, false
	for _, o := range options(grammars["git config"], ws) {
		switch o.name {
		case "--list", "-l", "--get-regexp":
			list = true
		case "--local", "--worktree":
			local = true
		}
	}
	if list && !local {
		return "git config --list (or --get-regexp) shows the person's configuration outside the workspace too: add --local"
	}
	for _, w := range ws {
		switch {
		case w.text == "--get-regexp" || w.text == "--get-urlmatch" || w.text == "--get-color" || w.text == "--get-colorbool":
			getRegexp = true
		case len(w.text) > 1 && w.text[0] == '-':
		default:
			n++
		}
	}
	if n > 1 && !(getRegexp && n <= 2) {
		return "git config with a value sets configuration, which can name programs for later commands to run"
	}
	return ""
}
