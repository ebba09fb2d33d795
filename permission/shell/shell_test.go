package shell

import (
	"reflect"
	"strings"
	"testing"
)

func cmdTexts(a *Analysis) []string {
	var out []string
	for _, c := range a.Commands {
		out = append(out, c.Text)
	}
	return out
}

func TestAnalyzeCommands(t *testing.T) {
	tests := []struct {
		script string
		want   []string
	}{
		{"git status --short", []string{"git status --short"}},
		{"'git' \"status\"", []string{"git status"}},
		{"git sta\\\ntus # comment", []string{"git status"}},
		{"CI=1 NODE_ENV=test git status", []string{"git status"}},
		{"a | b && c || d; e & f\ng", []string{"a", "b", "c", "d", "e", "f", "g"}},
		{"(a; b) && { c; }", []string{"a", "b", "c"}},
		{"x $(y $(z)) `w`", []string{"x $(y $(z)) `w`", "y $(z)", "z", "w"}},
		{"x \"in $(y) quotes\"", []string{"x in $(y) quotes", "y"}},
		{"x <(y) >(z)", []string{"x <(y) >(z)", "y", "z"}},
		{"a=$(y) x", []string{"x", "y"}},
		{"x > $(y)", []string{"x", "y"}},
		{"x ${v:-$(y)}", []string{"x ${v:-$(y)}", "y"}},
		{"cat <<EOF\n$(y)\nEOF", []string{"cat", "y"}},
		{"cat <<'EOF'\n$(y)\nEOF", []string{"cat"}},
		{"f() { y; }; f", []string{"y", "f"}},
		{"rm -rf ~; rm() { :; }", []string{"rm -rf ~", ":"}},
		{"if a; then b; elif c; then d; else e; fi", []string{"a", "b", "c", "d", "e"}},
		{"while a; do b; done; until c; do d; done", []string{"a", "b", "c", "d"}},
		{"for i in 1 2; do a $i; done", []string{"a $i"}},
		{"case x in a) b;; *) c;; esac", []string{"b", "c"}},
		{"[[ $(y) == x ]]", []string{"y"}},
		{"coproc y", []string{"y"}},
		{"time y", []string{"y"}},
		{"! y", []string{"y"}},
		{"bash -c 'a; b'", []string{"a", "b"}},
		{"sh -ec \"a && sh -c 'b'\"", []string{"a", "b"}},
		{"bash script.sh arg", []string{"bash script.sh arg"}},
		{"curl x | sh", []string{"curl x", "sh"}},
		{"env -i -- CI=1 y z", []string{"y z"}},
		{"env CI=1 -- y", []string{"-- y"}}, // env runs a command named "--"
		{"env", []string{"env"}},
		{"sudo -u root y z", []string{"sudo -u root y z", "y z"}},
		{"sudo -s y z", []string{"sudo -s y z", "y z"}},
		{"timeout --signal=KILL 5 y", []string{"y"}},
		{"timeout -k 1 5s y", []string{"y"}},
		{"nice -n 5 y", []string{"y"}},
		{"nice -5 y", []string{"y"}},
		{"nohup y &", []string{"y"}},
		{"command y", []string{"y"}},
		{"command -v y", []string{"command -v y"}},
		{"exec y", []string{"y"}},
		{"exec 3>&1", nil},
		{"builtin cd x", []string{"cd x"}},
		{"stdbuf -oL y", []string{"y"}},
		{"xargs -n 1 -I{} y {}", []string{"y {}"}},
		{"xargs", nil},
		{"watch -n 2 'a | b'", []string{"a", "b"}},
		{"watch -x y z", []string{"y z"}},
		{"find . -name '*.go' -exec gofmt -l {} + -execdir y \\;", []string{"find . -name *.go -exec gofmt -l {} + -execdir y ;", "gofmt -l {}", "y"}},
		{"trap 'y' EXIT", []string{"trap y EXIT", "y"}},
		{"/usr/bin/env y", []string{"y"}},
		{"/bin/bash -c y", []string{"y"}},
		{"ls/../../bin/rm x", []string{"../bin/rm x"}},
		{"./x", []string{"./x"}},
		{"./bin/server --version", []string{"./bin/server --version"}},
		{"./../x", []string{"../x"}},
		{"bin/../x", []string{"./x"}},
		{"timeout --weird 5 y", []string{"timeout --weird 5 y"}},
		{"x=1", nil},
		{"", nil},
		{"# just a comment", nil},
		{"ｌs", []string{"ｌs"}},
		{`printf '%s\n' "$x" PATH`, []string{`printf %s\n $x PATH`}},
		{"read -r -p \"$p\" line", []string{"read -r -p $p line"}},
	}
	// Outside the subset the analysis follows: the line is opaque, its commands still found.
	outside := map[string]bool{
		"f() { y; }; f": true, "rm -rf ~; rm() { :; }": true, "if a; then b; elif c; then d; else e; fi": true,
		"while a; do b; done; until c; do d; done": true, "for i in 1 2; do a $i; done": true,
		"case x in a) b;; *) c;; esac": true, "[[ $(y) == x ]]": true, "coproc y": true, "x ${v:-$(y)}": true,
		"curl x | sh": true, "read -r -p \"$p\" line": true, "trap 'y' EXIT": true, "builtin cd x": false,
	}
	for _, tt := range tests {
		t.Run(tt.script, func(t *testing.T) {
			a := Analyze(tt.script)
			if got := cmdTexts(a); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("commands = %q, want %q (opaque %q)", got, tt.want, a.Opaque)
			}
			if opaque := len(a.Opaque) > 0; opaque != outside[tt.script] {
				t.Errorf("opaque = %q (%q), want opaque %v", a.Opaque, a.Reasons, outside[tt.script])
			}
		})
	}
}

func TestAnalyzeOpaque(t *testing.T) {
	tests := []struct{ script, want string }{
		{"eval 'rm x'", "eval 'rm x'"},
		{"source $X", "source $X"},
		{". \"$X\"", ". \"$X\""},
		{"$CMD a b", "$CMD a b"},
		{"\"$(echo rm)\" x", "\"$(echo rm)\" x"},
		{"git$IFS status", "git$IFS status"},
		{"/bin/r? x", "/bin/r? x"},
		{"{rm,x}", "{rm,x}"},
		{"alias ls='rm'", "alias ls='rm'"},
		{"PATH=. ls", "PATH=."},
		{"X=1", "X=1"},
		{"FOO=1 git status", "FOO=1"},
		{"LD_PRELOAD=x ls", "LD_PRELOAD=x"},
		{"export GIT_DIR=x", "GIT_DIR=x"},
		{"export $X", "export $X"},
		{"declare -n r=PATH", "declare -n r=PATH"},
		{"local -n r=LD_PRELOAD", "local -n r=LD_PRELOAD"},
		{"read -r PATH", "read -r PATH"},
		{"printf -v GIT_DIR x", "printf -v GIT_DIR x"},
		{"builtin declare -x BASH_ENV=x", "builtin declare -x BASH_ENV=x"},
		{"hash -p /bin/rm ls", "hash -p /bin/rm ls"},
		{"env LD_PRELOAD=x y", "env LD_PRELOAD=x y"},
		{"env -S 'a b'", "env -S 'a b'"},
		{"bash -c \"$X\"", "bash -c \"$X\""},
		{"for PATH in x; do ls; done", "PATH in x"},
		{"x='a[$(y)]'; (( x ))", "x='a[$(y)]'; (( x ))"},
		{"ls (", "ls ("},
		{"if", "if"},
		{"git\\ status", "git\\ status"}, // a name with a space in it
		{"bash -c 'if'", "if"},
		{strings.Repeat("bash -c \"", 1) + "sh -c 'sh -c x'\"", ""}, // nesting within the limit: no opaque
	}
	for _, tt := range tests {
		t.Run(tt.script, func(t *testing.T) {
			a := Analyze(tt.script)
			if tt.want == "" {
				if len(a.Opaque) != 0 {
					t.Fatalf("opaque = %q, want none", a.Opaque)
				}
				return
			}
			if len(a.Opaque) != 1 || a.Opaque[0] != tt.script || len(a.Reasons) == 0 {
				t.Fatalf("opaque = %q (reasons %q), want the whole line (commands %q)", a.Opaque, a.Reasons, cmdTexts(a))
			}
		})
	}
}

func TestAnalyzeDeepNestingIsOpaque(t *testing.T) {
	s := "x"
	for i := 0; i < maxDepth+3; i++ {
		s = "sh -c " + quoteSingle(s)
	}
	if a := Analyze(s); len(a.Opaque) == 0 {
		t.Fatalf("nesting %d deep: no opaque text (commands %q)", maxDepth+3, cmdTexts(a))
	}
}

func quoteSingle(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// uses returns the path words of a by kind: writes, reads (Maybe ones left out), the folders
// the line changes into (cd targets and Chdir uses).
func uses(a *Analysis) (writes, paths, dirs []string) {
	for _, u := range a.Uses {
		switch {
		case u.Kind == Write:
			writes = append(writes, u.Text)
		case u.Kind == Chdir:
			dirs = append(dirs, u.Text)
		case !u.Maybe:
			paths = append(paths, u.Text)
		}
	}
	for _, c := range a.Cwds[1:] {
		dirs = appendUnique(dirs, c.Text)
	}
	return
}

func TestAnalyzeTouches(t *testing.T) {
	tests := []struct {
		script                       string
		writes, paths, dirs, dynamic []string
	}{
		{script: "git status > out 2>>err &>all >|clob 1<>rw", writes: []string{"out", "err", "all", "clob", "rw"}},
		{script: "x >/dev/null 2>/dev/stderr 2>&1 >&- >/dev/tty >/dev/fd/1 >/proc/self/fd/2 1>&2"},
		// Written through a descriptor of the line, a file read on it would be written.
		{script: "x >/dev/fd/3 >/dev/stdin >/proc/self/fd/0", dynamic: []string{"/dev/fd/3", "/dev/stdin", "/proc/self/fd/0"}},
		{script: "x < /proc/1234/fd/3", paths: []string{"/proc/1234/fd/3"}},
		{script: "x >/dev/fd/ >/dev/sda", writes: []string{"/dev/fd/", "/dev/sda"}},
		{script: "x >&file", writes: []string{"file"}},
		{script: "x < in <&3", paths: []string{"in"}},
		{script: "x | tee -a a b", writes: []string{"a", "b"}},
		{script: "dd if=/dev/sda of=disk.img", writes: []string{"disk.img"}, paths: []string{"/dev/sda"}},
		{script: "curl -o out http://x; sort -o s f", writes: []string{"out", "s"}, paths: []string{"f"}},
		{script: "rm -rf a /b -- -c", paths: []string{"a", "/b", "-c"}},
		{script: "cp --target-directory=/t a", paths: []string{"/t", "a"}},
		{script: "grep -r pattern src ../x", paths: []string{"src", "../x"}},
		{script: "grep -e pat -e p2 src", paths: []string{"src"}},
		{script: "sed -i s/a/b/ f.go", paths: []string{"f.go"}},
		{script: "find /etc ~/x -name y -fprint out", writes: []string{"out"}, paths: []string{"/etc", "~/x"}},
		{script: "cd /tmp && pushd ~/x; cd", dirs: []string{"/tmp", "~/x", "~"}},
		{script: "git -C /repo status; make -C sub", dirs: []string{"/repo", "sub"}},
		{script: "env -C /d y", dirs: []string{"/d"}},
		{script: "find -L /etc -D tree -O2 x", paths: []string{"/etc"}},
		{script: "find -D tree /etc", paths: []string{"/etc"}},
		{script: "git --git-dir=/r/.git --work-tree=/r status", paths: []string{"/r/.git", "/r"}},
		{script: "git status /etc ../x", paths: []string{"/etc", "../x"}},
		{script: "cd -", dynamic: []string{"-"}},
		{script: "rm $f \"$g\" ~u/x {a,b}", paths: []string{"~u/x"}, dynamic: []string{"$f", "\"$g\"", "{a,b}"}},
		{script: "x > $out", dynamic: []string{"$out"}},
		{script: "cat ~/.ssh/id_rsa", paths: []string{"~/.ssh/id_rsa"}},
		{script: "xargs -a list y", paths: []string{"list"}, dynamic: []string{"(the arguments xargs reads from its input)"}},
		{script: "sudo -e /etc/hosts", writes: []string{"/etc/hosts"}},
		{script: "git diff --output=/etc/x", writes: []string{"/etc/x"}},
		{script: "ls >(cat > /etc/passwd)", writes: []string{"/etc/passwd"}, dynamic: []string{">(cat > /etc/passwd)"}},
		{script: "make CC=/tmp/cc", paths: []string{"/tmp/cc"}},
		// After a command that may create links, paths are only known when the line runs.
		{script: "tar xf a.tar && cat x/y", paths: []string{"a.tar"}, dynamic: []string{"x/y"}},
		{script: "cd \"$d\" && cat secret", dynamic: []string{"\"$d\"", "secret"}},
	}
	for _, tt := range tests {
		t.Run(tt.script, func(t *testing.T) {
			a := Analyze(tt.script)
			writes, paths, dirs := uses(a)
			check := func(name string, got, want []string) {
				if len(got) == 0 && len(want) == 0 {
					return
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s = %q, want %q", name, got, want)
				}
			}
			check("writes", writes, tt.writes)
			check("paths", paths, tt.paths)
			check("dirs", dirs, tt.dirs)
			check("dynamic", a.Dynamic, tt.dynamic)
		})
	}
}

// The folders a path is resolved from follow the line: && runs the next command in the
// folder cd reached; ; and || in either; a subshell or a pipeline does not move the line.
func TestAnalyzeCwds(t *testing.T) {
	tests := []struct {
		script string
		want   []string // for each use, the chain of cd targets of each folder it may be in
	}{
		{"cat a", []string{"a: ."}},
		{"cd x && cat a", []string{"a: x"}},
		{"cd x; cat a", []string{"a: x ."}},
		{"cd x || cat a", []string{"a: ."}},
		{"cd x && cd y && cat a", []string{"a: x/y"}},
		{"(cd x && cat a); cat b", []string{"a: x", "b: ."}},
		{"cd x | cat a; cat b", []string{"a: .", "b: ."}},
		{"cd x && cat a | cat b", []string{"a: x", "b: x"}},
		{"{ cd x; } && cat a", []string{"a: x ."}},
	}
	for _, tt := range tests {
		t.Run(tt.script, func(t *testing.T) {
			a := Analyze(tt.script)
			chain := func(i int) string {
				var parts []string
				for i > 0 {
					parts = append([]string{a.Cwds[i].Text}, parts...)
					i = a.Cwds[i].From
				}
				if len(parts) == 0 {
					return "."
				}
				return strings.Join(parts, "/")
			}
			var got []string
			for _, u := range a.Uses {
				var at []string
				for _, i := range u.At {
					at = append(at, chain(i))
				}
				got = append(got, u.Text+": "+strings.Join(at, " "))
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("uses = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestAnalyzeLinks(t *testing.T) {
	a := Analyze("ln -s ../../etc e && cat e/passwd")
	if len(a.Links) != 2 || a.Links[0].Path != "e" || a.Links[0].Target != "../../etc" {
		t.Fatalf("links = %+v", a.Links)
	}
	// A hard link's target is a path it reads: a later write through it would change it.
	_, paths, _ := uses(Analyze("ln /etc/passwd x"))
	if !reflect.DeepEqual(paths, []string{"x", "/etc/passwd"}) {
		t.Fatalf("hard link paths = %q", paths)
	}
}

func TestAlways(t *testing.T) {
	tests := []struct {
		script string
		want   []string
	}{
		{"git status --short", []string{"git status --short", "git status *"}},
		{"git status", []string{"git status", "git status *"}},
		{"npm run build -- --watch", []string{"npm run build -- --watch", "npm run build *"}},
		{"docker compose up", []string{"docker compose up", "docker compose up *"}},
		// docker has no grammar: with an option it is unsafe, offered exactly.
		{"docker compose up -d", []string{"docker compose up -d"}},
		{"go test ./...", []string{"go test ./...", "go test *"}},
		{"python -m pytest -x", []string{"python -m pytest -x", "python -m pytest *"}},
		{"ls -la", []string{"ls -la", "ls *"}},
		{"echo *", []string{`echo \*`, "echo *"}},
		{"rm -rf build", []string{"rm -rf build"}},
		{"rm *.o", []string{`rm \*.o`}},
		{"mv a b", []string{"mv a b"}},
		{"dd if=a of=b", []string{"dd if=a of=b"}},
		{"chmod +x f", []string{"chmod +x f"}},
		{"python x.py", []string{"python x.py"}},
		{"git push --force", []string{"git push --force"}},
		{"kubectl delete pod x", []string{"kubectl delete pod x"}},
		{"git -C x status", []string{"git -C x status"}},
		{"./script.sh a", []string{"./script.sh a"}},
		{"git $(x) y", []string{"git $(x) y"}},
	}
	for _, tt := range tests {
		t.Run(tt.script, func(t *testing.T) {
			a := Analyze(tt.script)
			if len(a.Commands) == 0 {
				t.Fatalf("no command (opaque %q)", a.Opaque)
			}
			if got := a.Commands[0].Always; !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("always = %q, want %q", got, tt.want)
			}
		})
	}
	// Every privileged or -c wrapped command offers only exact text for the wrapper.
	a := Analyze("sudo rm -rf /tmp/x")
	if got := a.Commands[0].Always; !reflect.DeepEqual(got, []string{"sudo rm -rf /tmp/x"}) {
		t.Fatalf("sudo always = %q", got)
	}
}

func TestDecodeANSIC(t *testing.T) {
	for in, want := range map[string]string{
		`\x72m`: "rm", `\162m`: "rm", `a\nb`: "a\nb", `\u00e9`: "é", `\'`: "'", `\cA`: "\x01", `\q`: `\q`, `\x`: `\x`,
	} {
		if got := decodeANSIC(in); got != want {
			t.Errorf("decodeANSIC(%q) = %q, want %q", in, got, want)
		}
	}
}
