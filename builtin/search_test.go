//go:build unix

package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const searchTree = `
-- .gitignore --
*.log
/out/
-- app.log --
needle in a log
-- out/gen.go --
needle generated
-- src/main.go --
package main

func main() { needle() }
-- src/util.go --
package main

func needle() {}
// NEEDLE upper
-- src/sub/.gitignore --
secret.txt
!keep.txt
-- src/sub/secret.txt --
needle secret
-- src/sub/keep.txt --
needle kept
-- docs/readme.md --
needle docs
-- node_modules/pkg/index.js --
needle dep
`

func setMtimes(t *testing.T, e *env, order ...string) {
	t.Helper()
	base := time.Now().Add(-time.Hour)
	for i, p := range order {
		mt := base.Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(e.path(p), mt, mt); err != nil {
			t.Fatal(err)
		}
	}
}

func TestGrep(t *testing.T) {
	e := newEnv(t, searchTree)
	os.WriteFile(e.path("src/bin.dat"), []byte("needle\x00binary"), 0o644)
	setMtimes(t, e, "src/main.go", "docs/readme.md", "src/util.go", "src/sub/keep.txt", "node_modules/pkg/index.js")
	os.Symlink(e.path("src/main.go"), e.path("link.go"))
	e.outputs["o1"] = "alpha\nneedle one\nbeta\nneedle two\n"

	tests := []struct {
		name    string
		args    map[string]any
		want    []string
		notWant []string
		err     string
		matches int
	}{
		{name: "grouped newest first", args: map[string]any{"pattern": "needle"}, want: []string{
			"Found 5 matches in 5 files:\n\nnode_modules/pkg/index.js:\n  Line 1: needle dep\n\nsrc/sub/keep.txt:\n  Line 1: needle kept\n\nsrc/util.go:\n  Line 3: func needle() {}\n\ndocs/readme.md:\n  Line 1: needle docs\n\nsrc/main.go:\n  Line 3: func main() { needle() }\n",
		}, notWant: []string{"app.log", "gen.go", "secret", "bin.dat", "link.go"}, matches: 5},
		{name: "regex", args: map[string]any{"pattern": `func \w+\(\)`}, want: []string{"src/util.go:\n  Line 3: func needle() {}", "src/main.go:\n  Line 3"}, matches: 2},
		{name: "case insensitive", args: map[string]any{"pattern": "(?i)NEEDLE upper|needle docs"}, want: []string{"Line 4: // NEEDLE upper", "needle docs"}, matches: 2},
		{name: "include", args: map[string]any{"pattern": "needle", "include": "*.{go,md}"}, want: []string{"src/util.go", "docs/readme.md"}, notWant: []string{"keep.txt", "index.js"}, matches: 3},
		{name: "include with slash", args: map[string]any{"pattern": "needle", "include": "src/**/*.txt"}, want: []string{"src/sub/keep.txt"}, matches: 1},
		{name: "path folder", args: map[string]any{"pattern": "needle", "path": "src/sub"}, want: []string{"src/sub/keep.txt"}, notWant: []string{"secret"}, matches: 1},
		{name: "path file", args: map[string]any{"pattern": "needle", "path": "src/util.go"}, want: []string{"src/util.go:\n  Line 3"}, matches: 1},
		{name: "no match", args: map[string]any{"pattern": "zzz"}, want: []string{"No matches found."}},
		{name: "bad regex", args: map[string]any{"pattern": "a(b"}, err: "not a valid regular expression"},
		{name: "lookahead", args: map[string]any{"pattern": "a(?=b)"}, err: "RE2 syntax"},
		{name: "missing path", args: map[string]any{"pattern": "x", "path": "srcc"}, err: "file not found: srcc"},
		{name: "stored output", args: map[string]any{"pattern": "needle", "path": "toolsd://output/o1"}, want: []string{"toolsd://output/o1:\n  Line 2: needle one\n  Line 4: needle two"}, matches: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := e.run("grep", tc.args)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			mustContain(t, "output", res.Output, tc.want...)
			for _, nw := range tc.notWant {
				if strings.Contains(res.Output, nw) {
					t.Errorf("output contains %q:\n%s", nw, res.Output)
				}
			}
			if res.Metadata["matches"] != tc.matches {
				t.Errorf("matches = %v, want %d", res.Metadata["matches"], tc.matches)
			}
		})
	}
}

func TestGrepLimitAndLongFiles(t *testing.T) {
	e := newEnv(t, "")
	e.setOptions(&Options{SearchLimit: 10})
	var b strings.Builder
	for i := 1; i <= 100000; i++ {
		if i%1000 == 0 {
			fmt.Fprintf(&b, "match %d %s\n", i, strings.Repeat("y", 3000))
		} else {
			fmt.Fprintf(&b, "line %d\n", i)
		}
	}
	os.WriteFile(e.path("big.txt"), []byte(b.String()), 0o644)
	res, err := e.run("grep", map[string]any{"pattern": `^match \d+`})
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, "output", res.Output, "Found 100 matches in 1 files (showing 10", "  Line 1000: match 1000 ", "  Line 10000: match 10000", "(line truncated to 2000 characters)", "showing 10 of 100 matches")
	if strings.Contains(res.Output, "Line 11000") {
		t.Error("more than the limit shown")
	}
}

func TestGrepOutsideAsks(t *testing.T) {
	outside, _ := filepath.EvalSymlinks(t.TempDir())
	os.WriteFile(filepath.Join(outside, "f.txt"), []byte("needle\n"), 0o644)
	e := newEnv(t, "")
	e.asks.deny["external_directory"] = true
	if _, err := e.run("grep", map[string]any{"pattern": "needle", "path": outside}); !isPermissionError(err) {
		t.Fatalf("err = %v", err)
	}
	if r := e.asks.requests(); len(r) != 1 || r[0].Patterns[0] != outside+"/*" {
		t.Fatalf("asks %+v", r)
	}
}

func TestGlob(t *testing.T) {
	e := newEnv(t, searchTree)
	setMtimes(t, e, "src/main.go", "docs/readme.md", "src/util.go", "src/sub/keep.txt")
	tests := []struct {
		name string
		args map[string]any
		want string
		err  string
	}{
		{name: "any depth newest first", args: map[string]any{"pattern": "*.go"}, want: "src/util.go\nsrc/main.go"},
		{name: "doublestar", args: map[string]any{"pattern": "**/*.{md,txt}"}, want: "src/sub/keep.txt\ndocs/readme.md"},
		{name: "static folder only there", args: map[string]any{"pattern": "src/*.go"}, want: "src/util.go\nsrc/main.go"},
		{name: "static folder not deeper", args: map[string]any{"pattern": "src/*.txt"}, want: "No files found."},
		{name: "path", args: map[string]any{"pattern": "*.txt", "path": "src"}, want: "src/sub/keep.txt"},
		{name: "gitignored and node_modules", args: map[string]any{"pattern": "**/*.{log,js}"}, want: "node_modules/pkg/index.js"},
		{name: "bad pattern", args: map[string]any{"pattern": "src/[a"}, err: "not a valid glob"},
		{name: "path is a file", args: map[string]any{"pattern": "*", "path": "src/main.go"}, err: "is a file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := e.run("glob", tc.args)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Output != tc.want {
				t.Errorf("output:\n%s\nwant:\n%s", res.Output, tc.want)
			}
		})
	}
}

func TestGlobLimit(t *testing.T) {
	e := newEnv(t, "")
	e.setOptions(&Options{SearchLimit: 3})
	for i := range 5 {
		os.WriteFile(e.path(fmt.Sprintf("f%d.txt", i)), nil, 0o644)
	}
	res, err := e.run("glob", map[string]any{"pattern": "*.txt"})
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, "output", res.Output, "showing the 3 most recently modified of 5 files")
	if res.Metadata["truncated"] != true {
		t.Error("not marked truncated")
	}
}

func TestList(t *testing.T) {
	e := newEnv(t, searchTree)
	tests := []struct {
		name string
		args map[string]any
		want string
		err  string
	}{
		{name: "tree", args: map[string]any{}, want: "./\n  docs/\n    readme.md\n  src/\n    sub/\n      .gitignore\n      keep.txt\n    main.go\n    util.go\n  .gitignore"},
		{name: "ignore", args: map[string]any{"path": "src", "ignore": []string{"sub", "main.*"}}, want: "src/\n  util.go"},
		{name: "file", args: map[string]any{"path": "src/main.go"}, err: "is a file"},
		{name: "bad ignore", args: map[string]any{"ignore": []string{"[x"}}, err: "not a valid glob"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := e.run("list", tc.args)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Output != tc.want {
				t.Errorf("output:\n%s\nwant:\n%s", res.Output, tc.want)
			}
		})
	}
}

// TestSearchDoesNotFollowLinks: a folder link inside the workspace pointing out of it is
// not searched, listed or globbed.
func TestSearchDoesNotFollowLinks(t *testing.T) {
	outside, _ := filepath.EvalSymlinks(t.TempDir())
	os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("needle outside\n"), 0o644)
	e := newEnv(t, "-- in.txt --\nneedle inside\n")
	if err := os.Symlink(outside, e.path("out")); err != nil {
		t.Fatal(err)
	}
	os.Symlink(filepath.Join(outside, "secret.txt"), e.path("file-link.txt"))
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"grep", map[string]any{"pattern": "needle"}},
		{"glob", map[string]any{"pattern": "**/*.txt"}},
		{"list", map[string]any{}},
	} {
		res, err := e.run(c.tool, c.args)
		if err != nil {
			t.Fatalf("%s: %v", c.tool, err)
		}
		if strings.Contains(res.Output, "secret") || strings.Contains(res.Output, "outside") {
			t.Errorf("%s followed a link out of the workspace:\n%s", c.tool, res.Output)
		}
	}
	// Naming the link as the path resolves it: then external_directory is asked.
	e.asks.deny["external_directory"] = true
	for _, tool := range []string{"grep", "glob", "list"} {
		args := map[string]any{"path": "out"}
		switch tool {
		case "grep":
			args["pattern"] = "needle"
		case "glob":
			args["pattern"] = "*"
		}
		if _, err := e.run(tool, args); !isPermissionError(err) {
			t.Errorf("%s on the link: err = %v, want the external_directory refusal", tool, err)
		}
	}
}

func TestGrepSpecialFile(t *testing.T) {
	e := newEnv(t, "")
	if err := syscall.Mkfifo(e.path("fifo"), 0o644); err != nil {
		t.Skip(err)
	}
	_, err := e.run("grep", map[string]any{"pattern": "x", "path": "fifo"})
	if err == nil || !strings.Contains(err.Error(), "named pipe") {
		t.Fatalf("err = %v", err)
	}
	// In a walk it is skipped, not waited on.
	if _, err := e.run("grep", map[string]any{"pattern": "x"}); err != nil {
		t.Fatal(err)
	}
}

// TestSearchConcurrent runs searches at once (the tools are shared by every call).
func TestSearchConcurrent(t *testing.T) {
	e := newEnv(t, searchTree)
	var wg sync.WaitGroup
	errs := make(chan error, 12)
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tool := []string{"grep", "glob", "list"}[i%3]
			args := map[string]any{"pattern": "needle"}
			switch tool {
			case "glob":
				args = map[string]any{"pattern": "**/*.go"}
			case "list":
				args = map[string]any{}
			}
			raw, _ := json.Marshal(args)
			res, err := e.tools[tool].Execute(context.Background(), e.call(tool), raw)
			if err == nil && res.Output == "" {
				err = fmt.Errorf("%s: empty output", tool)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}
