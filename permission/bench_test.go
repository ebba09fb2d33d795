package permission

import (
	"fmt"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"

	"github.com/toolsd/toolsd/permission/shell"
)

// rules1000 is a user layer of 1,000 bash rules of the shapes people write.
func rules1000() Ruleset {
	rs := make(Ruleset, 0, 1000)
	for i := 0; len(rs) < 1000; i++ {
		a := []Action{Allow, Ask, Deny}[i%3]
		rs = append(rs,
			Rule{Permission: "bash", Pattern: fmt.Sprintf("tool%d *", i), Action: a},
			Rule{Permission: "bash", Pattern: fmt.Sprintf("npm run script%d*", i), Action: a},
			Rule{Permission: "edit", Pattern: fmt.Sprintf("src/pkg%d/*.go", i), Action: a},
			Rule{Permission: fmt.Sprintf("mcp%d_*", i), Pattern: "*", Action: a},
		)
	}
	return rs[:1000]
}

// BenchmarkDecide1000Rules evaluates one call (a shell line of three commands) against a
// user layer of 1,000 rules plus the defaults and remembered answers.
func BenchmarkDecide1000Rules(b *testing.B) {
	e, err := NewEngine(nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := e.SetLayer(LayerUser, rules1000()); err != nil {
		b.Fatal(err)
	}
	_ = e.Remember("s", "bash", []string{"git status *", "go test *"}, "")
	q := Query{SessionID: "s", Permission: "bash", Patterns: []string{"git status --short", "go test ./...", "npm run script500 --watch"}}
	want := e.Decide(q).Action
	for b.Loop() {
		if e.Decide(q).Action != want {
			b.Fatal("decision changed")
		}
	}
}

// script4K is a 4 KiB shell script of the kind models write: pipelines, substitutions,
// loops, here-docs, wrappers and quoting.
func script4K() string {
	parts := []string{
		`set -euo pipefail`,
		`cd "$(git rev-parse --show-toplevel)"`,
		`for f in $(git diff --name-only HEAD~1 -- '*.go'); do gofmt -l "$f" | tee -a /tmp/fmt.log; done`,
		`if [[ -f go.mod ]] && grep -q 'module github.com/x/y' go.mod; then go test -race ./... 2>&1 | tail -n 50; fi`,
		`cat <<EOF > notes.md
# Notes $(date +%F)
- branch: $(git branch --show-current)
EOF`,
		`find . -name '*.tmp' -mtime +7 -exec rm -f {} \; || true`,
		`timeout 30 npm run build -- --watch=false && npm test -- --coverage > coverage.txt`,
		`docker compose up -d db && until docker compose exec db pg_isready; do sleep 1; done`,
		`bash -c 'echo "nested $(whoami)"; ls -la /var/log | head'`,
		`xargs -n1 -I{} sh -c 'wc -l {}' < files.txt | sort -n | awk '{s+=$1} END {print s}'`,
		`export GOFLAGS=-mod=mod; FOO=bar env -i PATH=/usr/bin make -C sub all`,
	}
	var b strings.Builder
	for b.Len() < 4096 {
		for _, p := range parts {
			if b.Len() >= 4096 {
				break
			}
			b.WriteString(p)
			b.WriteString("\n")
		}
	}
	return b.String()
}

func BenchmarkAnalyze4KiB(b *testing.B) {
	s := script4K()
	b.SetBytes(int64(len(s)))
	n := len(shell.Analyze(s).Commands)
	if n < 50 {
		b.Fatalf("only %d commands in the benchmark script", n)
	}
	for b.Loop() {
		shell.Analyze(s)
	}
}

// BenchmarkDecideShell is the whole bash check of a typical one-line command: parse,
// resolve paths, decide three requests.
func BenchmarkDecideShell(b *testing.B) {
	e, err := NewEngine(nil)
	if err != nil {
		b.Fatal(err)
	}
	_ = e.SetLayer(LayerUser, rules1000())
	ws := b.TempDir()
	for b.Loop() {
		e.DecideShell("s", "", `git status --short && go test ./... 2>&1 | tee out.txt`, ws, ws)
	}
}

// BenchmarkSyntaxParse4KiB is the floor for BenchmarkAnalyze4KiB: mvdan.cc/sh parsing the
// same script (without the nested -c strings) and nothing else.
func BenchmarkSyntaxParse4KiB(b *testing.B) {
	s := script4K()
	b.SetBytes(int64(len(s)))
	p := syntax.NewParser(syntax.Variant(syntax.LangBash))
	for b.Loop() {
		if _, err := p.Parse(strings.NewReader(s), ""); err != nil {
			b.Fatal(err)
		}
	}
}
