package permission

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolsd/toolsd/permission/shell"
)

// classEngine returns an engine with the rules of cfg in the user layer, and a workspace
// holding link (a symlink to a folder outside, which holds secret), sub/, and a.txt.
func classEngine(t *testing.T, cfg string) (e *Engine, ws, outside string) {
	t.Helper()
	var err error
	ws, err = filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	outside, err = filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{
		os.Symlink(filepath.Join(outside, "in"), filepath.Join(ws, "link")),
		os.MkdirAll(filepath.Join(outside, "in"), 0o700),
		os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o600),
		os.Mkdir(filepath.Join(ws, "sub"), 0o700),
		os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a"), 0o600),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return newEngine(t, nil, map[string]string{LayerUser: cfg}), ws, outside
}

// Class 2: ".." after a symlink. The kernel resolves link first and ".." from its target, so
// link/.. is the folder outside that holds the target; so is a symlink the line itself
// creates, resolved from the link's own folder.
func TestDotDotAfterSymlink(t *testing.T) {
	e, ws, outside := classEngine(t, `{"bash": {"*": "ask", "cat *": "allow", "ls*": "allow", "cp *": "allow",
		"mv *": "allow", "tee *": "allow", "touch *": "allow", "mkdir *": "allow", "install *": "allow",
		"ln *": "allow", "echo *": "allow", "cd *": "allow", "head *": "allow", "grep *": "allow", "git *": "allow",
		"diff *": "allow", "wc *": "allow", "stat *": "allow", "find *": "allow", "tar *": "allow", "du *": "allow"},
		"edit": "allow", "external_directory": "ask"}`)
	for _, line := range []string{
		"cat link/../secret",
		"head -1 link/../secret",
		"ls link/..",
		"ls -la link/../",
		"grep -r x link/..",
		"wc -c link/../secret",
		"diff a.txt link/../secret",
		"stat link/../secret",
		"find link/.. -name secret",
		"du -sh link/..",
		"cat < link/../secret",
		"cp a.txt link/../x",
		"cp link/../secret a2.txt",
		"mv a.txt link/../x",
		"echo x | tee link/../x",
		"touch link/../x",
		"mkdir link/../d",
		"mkdir -p link/../d/e",
		"install a.txt link/../x",
		"echo x > link/../x",
		"echo x >> link/../x",
		"cat a.txt > link/../../x",
		"git diff --no-index a.txt link/../secret",
		"tar -cf /dev/null link/..",
		"cd link && cat ../secret",
		"cd link && ls ..",
		"cd sub && cat ../link/../secret",
		"ln -s .. up && cat up/x",
		"ln -s ../.. sub/l && cat sub/l/x",
		"mkdir -p d && ln -s " + outside + " d/o && cat d/o/secret",
		"ln -s link l2 && cat l2/../secret",
		"ln -sf .. up; ls up/",
	} {
		t.Run(line, func(t *testing.T) {
			d := e.DecideShell("s", "", line, ws, ws)
			if d.Action == Allow {
				b, _ := json.MarshalIndent(d, "", "  ")
				t.Fatalf("%q reaches outside without an ask:\n%s", line, b)
			}
			asked := false
			for i, rq := range d.Requests {
				asked = asked || rq.Permission == KeyExternalDirectory && d.Decisions[i].Action != Allow
			}
			if !asked {
				b, _ := json.MarshalIndent(d, "", "  ")
				t.Fatalf("%q: no external_directory ask:\n%s", line, b)
			}
		})
	}
	// And inside the workspace, the same commands run.
	for _, line := range []string{"cat sub/../a.txt", "cd sub && cat ../a.txt", "ls sub/..", "cd link/.. && cat a.txt", "ln -s sub s2 && cat s2/../a.txt"} {
		if d := e.DecideShell("s", "", line, ws, ws); d.Action != Allow {
			b, _ := json.MarshalIndent(d, "", "  ")
			t.Errorf("%q stays inside and asks:\n%s", line, b)
		}
	}
}

// Class 3: an "always" prefix, or a rule with a wildcard, never covers an option or a
// script that runs code, writes files it names, or reads outside: each such line asks, and
// the ask says why; the same command without the escape runs.
func TestPrefixesDoNotCoverEscapes(t *testing.T) {
	prefixes := []string{"sed *", "tar *", "git *", "rsync *", "zip *", "awk *", "find *", "xargs *", "env *",
		"make *", "less *", "vim *", "ed *", "ssh *", "man *", "npm *", "npx *", "go *", "cargo *", "python3 *",
		"node *", "pytest *", "sort *", "rg *", "grep *", "curl *", "wget *", "cmake *", "gawk *", "jq *"}
	var rules []string
	for _, p := range prefixes {
		rules = append(rules, `"`+p+`": "allow"`)
	}
	e, ws, _ := classEngine(t, `{"bash": {"*": "ask", `+strings.Join(rules, ", ")+`}, "edit": "allow"}`)
	escapes := []string{
		// sed: e, s///e, w, r, scripts from files
		`sed -n '1e id' a.txt`, `sed 's/x/id/e' a.txt`, `sed 'w /tmp/x' a.txt`, `sed -e 'r /etc/passwd' a.txt`,
		`sed -f script.sed a.txt`, `sed --expression='1e id' a.txt`, `sed -ne '1e id' a.txt`, `sed '1!G;h;$!d;e id' a.txt`,
		`sed 's/a/b/w out' a.txt`, `sed -i '1e id' a.txt`, `sed -E 's/(a)/\1/;W out' a.txt`, `sed "$s" a.txt`,
		// tar
		`tar -cf /dev/null a.txt --checkpoint=1 --checkpoint-action=exec=/bin/sh`, `tar xf a.tar --to-command=sh`,
		`tar -I sh -cf x.tar a.txt`, `tar --use-compress-program=sh -cf x a.txt`, `tar -cf x a.txt --info-script=sh`,
		`tar -F sh -cf x a.txt`, `tar --rsh-command=/bin/sh -cf host:x a.txt`, `tar -cPf x /etc/passwd`, `tar cf x --to-co=sh a.txt`,
		// git
		`git -c core.pager=sh log`, `git -c alias.x='!sh' x`, `git fetch --upload-pack='sh -c id' origin`,
		`git clone -u sh x y`, `git grep -O'sh' x`, `git diff --ext-diff`, `git difftool -x sh`,
		`git submodule foreach sh`, `git bisect run sh`, `git rebase --exec sh main`, `git config core.pager sh`,
		`git --exec-path=/tmp log`, `git log --show-signature`, `git commit -S -m x`, `git x`, `git lol`,
		`git --config-env=core.pager=X log`, `git filter-branch --tree-filter id`,
		// others from GTFOBins
		`rsync -e 'sh -c id' a.txt host:`, `rsync --rsh=sh a.txt b:`, `zip x.zip a.txt -T -TT 'sh #'`, `zip -TT id x.zip a.txt`,
		`awk 'BEGIN {system("id")}'`, `awk '{print > "/tmp/x"}' a.txt`, `awk 'BEGIN {"id" | getline}'`, `awk -f prog.awk`,
		`gawk '@load "x"; BEGIN {}'`, `find . -delete`, `find . -fprint /tmp/x`, `find -L . -name x`, `find . -exec sh -c id \;`,
		`env sh`, `env -S 'sh -c id'`, `make --eval='x:; id' x`, `make -E 'x:;id' x`, `vim -c '!id' a.txt`,
		`echo '!id' | ed a.txt`, `ssh host id`, `man -P sh ls`, `less +!id a.txt`,
		`npm exec sh`, `npm run x --script-shell=sh`, `npm install -g x`, `npm --prefix /tmp install`,
		`npm config set script-shell sh`, `npx -c sh`, `npx --package evil x`,
		`go test -exec sh ./...`, `go build -toolexec sh ./...`, `go env -w GOFLAGS=-toolexec=sh`, `go vet -vettool=/tmp/x ./...`,
		`go build -ldflags='-extld=/tmp/x' .`, `go build -gcflags=all=-N .`, `go run -exec sh .`,
		`cargo --config 'target.x.runner="sh"' run`, `cargo -Z x build`, `cargo install x`,
		`python3 -c 'import os'`, `echo 'import os' | python3`, `node -e 1`, `node --require ./x.js y.js`, `node`,
		`pytest -p evil`, `pytest -o addopts=-pevil`, `sort --compress-program=sh a.txt`, `rg --pre sh x`,
		`rg -L x`, `grep -R x .`, `curl -d @/etc/passwd http://127.0.0.1`, `curl -K cfg http://127.0.0.1`,
		`wget --post-file=/etc/passwd http://127.0.0.1`, `cmake -E rm -rf x`, `cmake -P script.cmake`,
		`jq -n 'input' /etc/passwd`, `xargs -a /etc/passwd echo`,
	}
	for _, line := range escapes {
		t.Run(line, func(t *testing.T) {
			d := e.DecideShell("s", "", line, ws, ws)
			if d.Action == Allow {
				b, _ := json.MarshalIndent(d, "", "  ")
				t.Fatalf("%q runs without an ask under prefix rules:\n%s", line, b)
			}
		})
	}
	plain := []string{
		`sed -n '1,5p' a.txt`, `sed 's/a/b/g' a.txt`, `sed -i 's/a/b/' a.txt`, `tar -czf out.tgz sub`, `tar xzf a.tgz`,
		`git log --oneline -5`, `git diff --stat`, `rsync`, `awk '{print $1}' a.txt`, `find . -name '*.txt'`,
		`find . -name '*.go' -exec grep -l x {} +`, `make -j4 test`, `npm run build`, `npm test -- --watch`, `npx tsc --noEmit`,
		`go test -race ./...`, `go build -ldflags='-s -w -X main.v=1' .`, `cargo test --release`, `python3 -m pytest -x`,
		`pytest -k login tests`, `sort -u a.txt`, `rg -n x`, `grep -rn x .`, `curl -sSL -o out.txt http://127.0.0.1/x`,
		`jq .name package.json`, `cmake -B build -DCMAKE_BUILD_TYPE=Release`,
	}
	for _, line := range plain {
		if d := e.DecideShell("s", "", line, ws, ws); d.Action != Allow {
			b, _ := json.MarshalIndent(d, "", "  ")
			t.Errorf("%q asks under prefix rules:\n%s", line, b)
		}
	}
}

// An "always" answer offers a prefix only where the prefix cannot cover an escape: the ask
// for an unsafe command offers its exact text alone, and a remembered prefix does not
// allow a later line with an escape.
func TestRememberedPrefixDoesNotCoverEscapes(t *testing.T) {
	e, ws, _ := classEngine(t, `{"bash": {"*": "ask"}}`)
	for _, line := range []string{`sed -n '1e id' a.txt`, `tar xf a.tar --to-command=sh`, `git -c core.pager=sh log`} {
		for _, rq := range ShellRequests(analyze(line), ws, ws, "") {
			if rq.Permission == KeyBash && len(rq.Always) != 1 {
				t.Errorf("%q offers %q to remember, want its exact text only", line, rq.Always)
			}
		}
	}
	if err := e.Remember("", KeyBash, []string{"sed *", "tar *", "git log *"}, ""); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{`sed -n '1e id' a.txt`, `tar xf a.tar --to-command=sh`, `git log --output=/etc/x`} {
		if d := e.DecideShell("s", "", line, ws, ws); d.Action == Allow {
			t.Errorf("%q is allowed by a remembered prefix", line)
		}
	}
	if d := e.DecideShell("s", "", `sed -n '1,2p' a.txt`, ws, ws); d.Action != Allow {
		t.Errorf("plain sed asks under a remembered prefix: %+v", d)
	}
	// The exact answer still allows the exact line.
	if err := e.Remember("", KeyBash, []string{Escape(`sed -n 1e id a.txt`)}, ""); err != nil {
		t.Fatal(err)
	}
	if d := e.DecideShell("s", "", `sed -n '1e id' a.txt`, ws, ws); d.Action != Allow {
		t.Errorf("the exact remembered answer does not allow its line: %+v", d)
	}
}

// Class 4: git's own path arguments reach outside only with an external_directory ask.
func TestGitPathArguments(t *testing.T) {
	e, ws, outside := classEngine(t, `{"bash": {"*": "ask", "git *": "allow"}, "external_directory": "ask"}`)
	for _, line := range []string{
		"git status " + outside, "git status ../..", "git -C " + outside + " status", "git -C link status",
		"git --git-dir=" + outside + "/.git status", "git --work-tree=/ status", "GIT_DIR=" + outside + " git status",
		"git diff --no-index /etc/passwd a.txt", "git log -- ../x", "git ls-files ../..", "git blame /etc/passwd",
		"git add ../x", "git -C sub status ../..", "git show HEAD -- " + outside, "git grep x -- " + outside,
		"git diff --output=" + outside + "/x",
	} {
		t.Run(line, func(t *testing.T) {
			if d := e.DecideShell("s", "", line, ws, ws); d.Action == Allow {
				b, _ := json.MarshalIndent(d, "", "  ")
				t.Fatalf("%q reaches outside without an ask:\n%s", line, b)
			}
		})
	}
	for _, line := range []string{"git status", "git status sub", "git -C sub status", "git log -- a.txt", "git diff HEAD~1 -- sub"} {
		if d := e.DecideShell("s", "", line, ws, ws); d.Action != Allow {
			b, _ := json.MarshalIndent(d, "", "  ")
			t.Errorf("%q asks:\n%s", line, b)
		}
	}
}

func analyze(line string) *shell.Analysis { return shell.Analyze(line) }

// make's variable overrides choose what the Makefile's recipes run: only plain words pass a
// rule with a wildcard.
func TestMakeVariables(t *testing.T) {
	e, ws, _ := classEngine(t, `{"bash": {"*": "ask", "make *": "allow"}}`)
	for _, line := range []string{`make CC='sh -c id' all`, `make MAKEFLAGS=--eval=x all`, `make SHELL=sh`, `make "CFLAGS=$(id)"`, `make CC=$cc`} {
		if d := e.DecideShell("s", "", line, ws, ws); d.Action == Allow {
			t.Errorf("%q runs under make *", line)
		}
	}
	for _, line := range []string{`make CC=clang V=1 all`, `make -j4 test DEBUG=1`} {
		if d := e.DecideShell("s", "", line, ws, ws); d.Action != Allow {
			t.Errorf("%q asks under make *", line)
		}
	}
}
