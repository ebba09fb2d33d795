package fswalk

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/bmatcuk/doublestar/v4"
	ignore "github.com/sabhiram/go-gitignore"
)

// TestIgnoreRulesAgreeWithGoGitignore checks the fast paths of the ignore matcher against
// go-gitignore on one ignore file, for every path whose parent folders are not ignored
// (the walk never looks below an ignored folder). Where go-gitignore strays from git it is
// not the reference: a pattern with a slash in the middle is anchored to its folder, so
// "a/b/c" does not match "x/a/b/c" (go-gitignore says it does).
func TestIgnoreRulesAgreeWithGoGitignore(t *testing.T) {
	lines := strings.Split(`# comment
node_modules/
*.log
/bin/
/out
.env
build
!important.log
*.py[co]
**/generated/**
docs/_build/
npm-debug.log*
a/b/c
src/**/tmp
\#hash
trailing   
`, "\n")
	ours := &ignoreRules{rules: compileIgnore(lines)}
	ref := ignore.CompileIgnoreLines(lines...)
	paths := []struct {
		p   string
		dir bool
	}{
		{"node_modules", true}, {"node_modules", false}, {"x/node_modules", true}, {"app.log", false},
		{"x/y/app.log", false}, {"important.log", false}, {"x/important.log", false}, {"bin", true},
		{"bin", false}, {"x/bin", true}, {"out", false}, {"out", true}, {"x/out", false}, {".env", false},
		{"x/.env", true}, {"build", true}, {"x/build", false}, {"m.pyc", false}, {"m.pyo", false},
		{"m.py", false}, {"generated", true}, {"x/generated/f.go", false}, {"docs/_build", true},
		{"docs/_build", false}, {"npm-debug.log.1", false}, {"a/b/c", false},
		{"src/tmp", true}, {"src/x/tmp", true}, {"#hash", false}, {"trailing", false}, {"main.go", false},
		{"x", true}, {"x/y", true}, {"a", true}, {"a/b", true}, {"src", true}, {"docs", true},
	}
	refIgnored := func(p string, dir bool) bool {
		if dir {
			return ref.MatchesPath(p + "/")
		}
		return ref.MatchesPath(p)
	}
	for _, tc := range paths {
		// Skip paths below a folder the reference ignores.
		parts := strings.Split(tc.p, "/")
		below := false
		for i := 1; i < len(parts); i++ {
			if refIgnored(strings.Join(parts[:i], "/"), true) {
				below = true
			}
		}
		if below {
			continue
		}
		if got, want := ours.ignored(tc.p, tc.dir), refIgnored(tc.p, tc.dir); got != want {
			t.Errorf("%q (dir %v): ignored = %v, go-gitignore says %v", tc.p, tc.dir, got, want)
		}
	}
}

// TestIgnoreDeeperFileWins: a pattern in a deeper ignore file overrides a shallower one.
func TestIgnoreDeeperFileWins(t *testing.T) {
	root := &ignoreRules{rules: compileIgnore([]string{"*.txt"})}
	sub := &ignoreRules{parent: root, rules: compileIgnore([]string{"!keep.txt"}), strip: "sub/"}
	if !sub.ignored("sub/other.txt", false) || sub.ignored("sub/keep.txt", false) {
		t.Errorf("sub/other.txt ignored %v, sub/keep.txt ignored %v", sub.ignored("sub/other.txt", false), sub.ignored("sub/keep.txt", false))
	}
}

func TestIgnoreAnchoredMiddleSlash(t *testing.T) {
	r := &ignoreRules{rules: compileIgnore([]string{"a/b/c", "docs/*.md", "**/gen", "!/keep"})}
	for p, want := range map[string]bool{"a/b/c": true, "x/a/b/c": false, "docs/x.md": true, "x/docs/x.md": false, "gen": true, "q/r/gen": true, "keep": false} {
		if got := r.ignored(p, false); got != want {
			t.Errorf("%s: ignored = %v, want %v", p, got, want)
		}
	}
}

func TestIgnoredAgreesWithWalk(t *testing.T) {
	ws := t.TempDir()
	for p, body := range map[string]string{
		".gitignore": "*.log\nbuild/\n", "sub/.gitignore": "!keep.log\nsecret\n", "a.log": "", "sub/keep.log": "",
		"sub/secret": "", "sub/ok.txt": "", "build/x.txt": "", "ok.txt": "", ".git/config": "",
	} {
		if err := os.MkdirAll(filepath.Join(ws, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	var mu sync.Mutex
	if err := Walk(context.Background(), Options{Root: ws, Workspace: ws}, func(e Entry) {
		mu.Lock()
		seen[e.Rel] = true
		mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{".gitignore", "sub/.gitignore", "a.log", "sub/keep.log", "sub/secret", "sub/ok.txt", "build/x.txt", "ok.txt", ".git/config"} {
		if got := Ignored(ws, p, false); got == seen[p] {
			t.Errorf("%s: Ignored = %v, but the walk visited it: %v", p, got, seen[p])
		}
	}
}

func TestGlobLiteral(t *testing.T) {
	for glob, want := range map[string]string{
		"*.asn1.[ch]":              ".asn1.",
		"*.c.[012]*.*":             ".c.",
		"**/generated/**":          "generated",
		"arch/*/include/generated": "generated",
		"a[bcdefgh]z":              "a",
		"x{long,alt}y":             "x",
		"\\#*#":                    "#",
		"a\\*b*":                   "a*b",
		"[\\]abc]xy":               "",
		"*":                        "",
		"docs/*.md":                "docs",
		"[}00]":                    "",
		"[]ab]cd":                  "",
		"[!x]yz":                   "yz",
	} {
		if got := GlobLiteral(glob); got != want {
			t.Errorf("GlobLiteral(%q) = %q, want %q", glob, got, want)
		}
	}
}

// lastLinear is ruleSet.last the plain way: every rule from the last, no index and no
// literal prefilter.
func lastLinear(rules []ignoreRule, sub, base string, isDir bool) int {
	for i := len(rules) - 1; i >= 0; i-- {
		r := rules[i]
		if r.dirOnly && !isDir {
			continue
		}
		var ok bool
		switch r.kind {
		case ruleName:
			ok = base == r.s
		case ruleSuffix:
			ok = strings.HasSuffix(base, r.s)
		case rulePrefix:
			ok = strings.HasPrefix(base, r.s)
		case ruleBaseGlob:
			ok = doublestar.MatchUnvalidated(r.s, base)
		case ruleExact:
			ok = sub == r.s
		default:
			ok = doublestar.MatchUnvalidated(r.s, sub)
		}
		if ok {
			return i
		}
	}
	return -1
}

// kernelIgnore is the root .gitignore of Linux 6.1 (its rules, without comments), with a
// few re-includes and folder rules added.
const kernelIgnore = `.*
*.a
*.asn1.[ch]
*.bin
*.bz2
*.c.[012]*.*
*.dtb.S
*.gz
*.ko
*.lex.c
*.mod.c
*.o
*.o.*
*.so.dbg
*.tab.[ch]
*.tar
Module.symvers
modules.order
/linux
/vmlinux
/*.spec
/include/config/
/arch/*/include/generated/
patches-*
tags
cscope.*
*~
\#*#
sphinx_*/
!.gitignore
!keep.o
build/
!/arch/x86/include/generated/
**/gen/**
src/**/tmp`

// TestRuleSetAgreesWithLinear: the indexed rules pick the same last rule as trying every
// rule in turn, on paths that hit each kind of rule.
func TestRuleSetAgreesWithLinear(t *testing.T) {
	rs := compileIgnore(strings.Split(kernelIgnore, "\n"))
	for _, p := range []string{
		".gitignore", ".mailmap", "a.o", "x/keep.o", "keep.o", "x.mod.c", "y.c", "y.lex.c", "q.asn1.c", "q.asn1.h",
		"q.asn1.x", "main.c.0r.x", "m.o.cmd", "linux", "x/linux", "vmlinux", "kernel.spec", "x/kernel.spec",
		"include/config", "arch/arm/include/generated", "arch/x86/include/generated", "patches-1", "tags",
		"cscope.out", "f~", "#f#", "sphinx_x", "build", "gen", "a/gen/b", "src/tmp", "src/a/b/tmp", "t.tar",
		"s.so.dbg", "a.dtb.S", "Module.symvers", "README", "",
	} {
		base := p[strings.LastIndexByte(p, '/')+1:]
		for _, dir := range []bool{false, true} {
			if got, want := rs.last(p, base, dir), lastLinear(rs.rules, p, base, dir); got != want {
				t.Errorf("%q (dir %v): rule %d, want %d", p, dir, got, want)
			}
		}
	}
}

// FuzzRuleSet compares the indexed rules with trying every rule, on any ignore file and path.
func FuzzRuleSet(f *testing.F) {
	f.Add(kernelIgnore, "arch/x86/include/generated", true)
	f.Add("*.o\n!keep.o\n", "src/keep.o", false)
	f.Add("*.tar.gz\n*.gz\n!a.tar.gz", "x/a.tar.gz", false)
	f.Add("/a/**/b\n**/c/**\n[x-z]*.q", "a/x/y/b", true)
	f.Fuzz(func(t *testing.T, lines, p string, dir bool) {
		rs := compileIgnore(strings.Split(lines, "\n"))
		if rs == nil {
			return
		}
		base := p[strings.LastIndexByte(p, '/')+1:]
		if got, want := rs.last(p, base, dir), lastLinear(rs.rules, p, base, dir); got != want {
			t.Errorf("%q (dir %v): rule %d, want %d", p, dir, got, want)
		}
	})
}

// FuzzGlobLiteral: every path a glob matches holds the glob's literal.
func FuzzGlobLiteral(f *testing.F) {
	f.Add("**/include/**/*.h", "arch/x86/include/asm/io.h")
	f.Add("\\#*#", "#x#")
	f.Add("[!x]yz{a,b}", "qyza")
	f.Add("a\\*b*", "a*bc")
	f.Fuzz(func(t *testing.T, glob, p string) {
		if !doublestar.ValidatePattern(glob) {
			return
		}
		if lit := GlobLiteral(glob); doublestar.MatchUnvalidated(glob, p) && !strings.Contains(p, lit) {
			t.Errorf("%q matches %q, which does not hold %q", glob, p, lit)
		}
	})
}
