package sandbox_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/toolsd/toolsd/checkpoint"
	"github.com/toolsd/toolsd/internal/sandbox"
	"github.com/toolsd/toolsd/store"
)

// TestGitRunsNothingPlantedFromTheJournal: every git attack of TestGitRunsNothingPlanted, in
// both modes, with the daemon looking from the checkpoints' change journal (as toolsd runs
// with checkpoints on) rather than the guard walking: afterwards a real unconfined git status
// and git commit run nothing planted, and the daemon took its looks from the journal.
func TestGitRunsNothingPlantedFromTheJournal(t *testing.T) {
	if runtime.GOOS != "linux" || !sandbox.Probe("").Available() {
		t.Skip("the kernel offers no Landlock")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	for _, landlockOnly := range []bool{false, true} {
		t.Run(modeName(landlockOnly), func(t *testing.T) {
			_, before := sandbox.Looks()
			runGitAttacksWith(t, newWorld(t, os.Getuid(), landlockOnly, ""), journal)
			if _, n := sandbox.Looks(); n == before {
				t.Error("no look was taken from the journal")
			} else {
				t.Logf("%d of %d looks from the journal", n-before, len(gitAttacks))
			}
		})
	}
}

// journal opens the checkpoints of the workspace ws, with their change journal, once their
// first look is done.
func journal(t *testing.T, ws string) sandbox.Journal {
	st, err := store.Open(filepath.Join(t.TempDir(), "store.db"), &store.Options{Retention: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tr, err := checkpoint.Open(checkpoint.Options{Workspace: ws, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	select {
	case <-tr.Ready():
	case <-time.After(30 * time.Second):
		t.Fatal("the first look at the workspace did not end")
	}
	return tr
}

// ignoredAttacks plant a git folder or git file in the workspace's ignored node_modules,
// which the journal does not watch (the look keeps a listing of each folder there while its
// ctime stays): deep in a folder that was there, with the folder's times set back after, in a
// folder moved in, as a git file, in a folder replaced by one of the same name.
var ignoredAttacks = []gitAttack{
	{"deep", plant("node_modules/pkg/lib/a/b/.git"), []string{"node_modules/pkg/lib/a/b"}},
	{"times set back", `m=$(stat -c %y node_modules/other/src/y) && ` + plant("node_modules/other/src/y/.git") + `touch -d "$m" node_modules/other/src/y`, []string{"node_modules/other/src/y"}},
	{"moved in", `m=$(stat -c %y node_modules/other) && ` + plant(`"$TMPDIR/m/.git"`) + `mv "$TMPDIR/m" node_modules/other/m && touch -d "$m" node_modules/other`, []string{"node_modules/other/m"}},
	{"git file", `m=$(stat -c %y node_modules/pkg/lib) && ` + plant(`"$TMPDIR/gd"`) + `echo "gitdir: $TMPDIR/gd" > node_modules/pkg/lib/.git && touch -d "$m" node_modules/pkg/lib`, []string{"node_modules/pkg/lib"}},
	{"replaced", `m=$(stat -c %y node_modules/other) && mkdir -p "$TMPDIR/new" && ` + plant(`"$TMPDIR/new/.git"`) + `mv node_modules/other/dist "$TMPDIR/old" && mv "$TMPDIR/new" node_modules/other/dist && touch -d "$m" node_modules/other`, []string{"node_modules/other/dist"}},
}

// TestGitRunsNothingPlantedInIgnored: the attacks of ignoredAttacks, in both modes, with the
// daemon looking from the journal: afterwards a real unconfined git status and git commit in
// the folder attacked run nothing planted. The ignored tree is older than the look's racy
// margin (2 s) when the command starts, so that the look after it uses the listings kept.
func TestGitRunsNothingPlantedInIgnored(t *testing.T) {
	if runtime.GOOS != "linux" || !sandbox.Probe("").Available() {
		t.Skip("the kernel offers no Landlock")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	type repo struct {
		ws string
		p  *sandbox.Policy
	}
	worlds := map[bool]*world{}
	repos := map[bool][]repo{}
	for _, landlockOnly := range []bool{false, true} {
		w := newWorld(t, os.Getuid(), landlockOnly, "")
		worlds[landlockOnly] = w
		for i := range ignoredAttacks {
			ws, p := w.repo(t, fmt.Sprint("ignored-", i))
			for _, f := range []string{".gitignore", "node_modules/pkg/lib/a/b/c.js", "node_modules/pkg/lib/d/e.js", "node_modules/other/dist/x.js", "node_modules/other/src/y/z.js"} {
				body := "x\n"
				if f == ".gitignore" {
					body = "node_modules/\n"
				}
				if err := os.MkdirAll(filepath.Dir(filepath.Join(ws, f)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(ws, f), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			repos[landlockOnly] = append(repos[landlockOnly], repo{ws, p})
		}
	}
	for made := time.Now(); time.Since(made) < 2500*time.Millisecond; {
		time.Sleep(100 * time.Millisecond) // the racy margin, past which a listing is kept
	}
	for _, landlockOnly := range []bool{false, true} {
		w := worlds[landlockOnly]
		t.Run(modeName(landlockOnly), func(t *testing.T) {
			for i, a := range ignoredAttacks {
				t.Run(strings.ReplaceAll(a.name, " ", "_"), func(t *testing.T) {
					r := repos[landlockOnly][i]
					r.p.Journal = journal(t, r.ws)
					_, before := sandbox.Looks()
					w.attack(t, r.ws, r.p, a, fmt.Sprintf("ran-ignored-%s-%d", w.mode, i))
					if _, n := sandbox.Looks(); n == before {
						t.Error("the look was not taken from the journal")
					}
				})
			}
		})
	}
}
