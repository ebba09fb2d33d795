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
		{"FOO=1 BAR=2 git status", []string{"git status"}},
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
		{"env -i -- A=1 y z", []string{"y z"}},
		{"env A=1 -- y", []string{"-- y"}}, // env runs a command named "--"
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
		{"trap 'y' EXIT", []string{"y"}},
		{"/usr/bin/env y", []string{"y"}},
		{"/bin/bash -c y", []string{"y"}},
		{"ls/../../bin/rm x", []string{"../bin/rm x"}},
		{"./x", []string{"./x"}},
		{"timeout --weird 5 y", []string{"timeout --weird 5 y"}},
		{"X=1", nil},
		{"", nil},
		{"# just a comment", nil},
		{"ｌs", []string{"ｌs"}},
		{`printf '%s\n' "$x" PATH`, []string{`printf %s\n $x PATH`}},
		{"read -r -p \"$p\" line", []string{"read -r -p $p line"}},
	}
	for _, tt := range tests {
		t.Run(tt.script, func(t *testing.T) {
			a := Analyze(tt.script)
			if got := cmdTexts(a); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("commands = %q, want %q (opaque %q)", got, tt.want, a.Opaque)
			}
			if len(a.Opaque) > 0 {
				t.Errorf("unexpected opaque %q", a.Opaque)
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
			found := false
			for _, o := range a.Opaque {
				found = found || o == tt.want
			}
			if !found {
				t.Fatalf("opaque = %q, want it to hold %q (commands %q)", a.Opaque, tt.want, cmdTexts(a))
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

func TestAnalyzeTouches(t *testing.T) {
	tests := []struct {
		script                       string
		writes, paths, dirs, dynamic []string
	}{
		{script: "git status > out 2>>err &>all >|clob 1<>rw", writes: []string{"out", "err", "all", "clob", "rw"}},
		{script: "x >/dev/null 2>/dev/stderr 2>&1 >&- >/dev/tty >/dev/fd/3"},
		{script: "x >/dev/fd/ >/dev/sda", writes: []string{"/dev/fd/", "/dev/sda"}},
		{script: "x >&file", writes: []string{"file"}},
		{script: "x < in <&3", paths: []string{"in"}},
		{script: "x | tee -a a b", writes: []string{"a", "b"}},
		{script: "dd if=/dev/sda of=disk.img", writes: []string{"disk.img"}, paths: []string{"/dev/sda"}},
		{script: "curl -o out http://x; wget -O o2 u; sort -o s f", writes: []string{"out", "o2", "s"}, paths: []string{"s", "f"}},
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
		{script: "cd -", dynamic: []string{"-"}},
		{script: "rm $f \"$g\" ~u/x {a,b}", paths: []string{"~u/x"}, dynamic: []string{"$f", "\"$g\"", "{a,b}"}},
		{script: "x > $out", dynamic: []string{"$out"}},
		{script: "cat ~/.ssh/id_rsa", paths: []string{"~/.ssh/id_rsa"}},
		{script: "xargs -a list y", paths: []string{"list"}},
		{script: "sudo -e /etc/hosts", writes: []string{"/etc/hosts"}},
		{script: "git status --output=/etc/x", writes: []string{"/etc/x"}},
		{script: "ls >(cat > /etc/passwd)", writes: []string{"/etc/passwd"}, dynamic: []string{">(cat > /etc/passwd)"}},
	}
	for _, tt := range tests {
		t.Run(tt.script, func(t *testing.T) {
			a := Analyze(tt.script)
			check := func(name string, got, want []string) {
				if len(got) == 0 && len(want) == 0 {
					return
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s = %q, want %q", name, got, want)
				}
			}
			check("writes", a.Writes, tt.writes)
			check("paths", a.Paths, tt.paths)
			check("dirs", a.Dirs, tt.dirs)
			check("dynamic", a.Dynamic, tt.dynamic)
		})
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
		{"docker compose up -d", []string{"docker compose up -d", "docker compose up *"}},
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
