package checkpoint

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolsd/toolsd/internal/posix"
)

// TestReadGitIndex: git's index, in each of its versions, gives every regular file of the
// workspace (a folder of the repository here) with its blob and the stat git recorded, and
// leaves out links, intent-to-add entries and files of another folder; a split index, whose
// entries are in another file, is not taken at all.
func TestReadGitIndex(t *testing.T) {
	repo, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(repo, "ws")
	files := map[string]string{"ws/a.txt": "a\n", "ws/run.sh": "#!/bin/sh\n", "ws/deep/er/than/that/with a longer name.c": "x\n", "ws/deep/er/b.c": "b\n", "other/o.txt": "o\n"}
	for p, body := range files {
		writeFile(t, filepath.Join(repo, p), body, 0o644)
	}
	if err := os.Chmod(filepath.Join(ws, "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.txt", filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	gitRun(t, repo, "init", "-q")
	gitRun(t, repo, "add", "-A")
	gitRun(t, repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "init")
	want := map[string]string{}
	out, err := exec.Command("git", "-C", ws, "ls-files", "-s").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(l) // mode oid stage path
		if f[0] == "100644" || f[0] == "100755" {
			want[strings.Join(f[3:], " ")] = f[1]
		}
	}
	if len(want) != 4 {
		t.Fatalf("ls-files: %v", want)
	}
	for _, version := range []string{"2", "3", "4", "split"} {
		t.Run(version, func(t *testing.T) {
			switch version {
			case "split":
				gitRun(t, repo, "update-index", "--split-index")
			case "3":
				// Intent-to-add: an entry with extended flags, which version 3 has.
				writeFile(t, filepath.Join(ws, "new.txt"), "n\n", 0o644)
				gitRun(t, repo, "add", "-N", "ws/new.txt")
				fallthrough
			default:
				gitRun(t, repo, "update-index", "--no-split-index", "--index-version", version)
				if b, err := os.ReadFile(filepath.Join(repo, ".git", "index")); err != nil || fmt.Sprint(b[7]) != version {
					t.Fatalf("the index is not of version %s (%v)", version, err)
				}
			}
			g := findGit("", ws)
			if g == nil || g.prefix != "ws/" {
				t.Fatalf("findGit: %+v", g)
			}
			got, racy := g.readIndex()
			if version == "split" {
				if got != nil {
					t.Fatalf("a split index gave %d entries", len(got))
				}
				return
			}
			if len(got) != len(want) || !slices.IsSortedFunc(got, func(a, b cleanEntry) int { return bytes.Compare(a.name, b.name) }) {
				t.Fatalf("%d entries (want %d), in order: %v", len(got), len(want), got)
			}
			byName := map[string]cleanEntry{}
			for _, e := range got {
				byName[string(e.name)] = e
			}
			for p, oid := range want {
				e, ok := byName[p]
				var st posix.Stat_t
				if err := posix.Fstatat(posix.AT_FDCWD, filepath.Join(ws, p), &st, posix.AT_SYMLINK_NOFOLLOW); err != nil {
					t.Fatal(err)
				}
				cur, _ := statState(&st)
				if !ok || hex.EncodeToString(e.oid) != oid || !e.matches(cur, racy+1) || e.exec != (p == "run.sh") {
					t.Errorf("%s: %+v (ok %v), want blob %s and the stat %s", p, e, ok, oid, fmt.Sprint(cur))
				}
			}
		})
	}
}
