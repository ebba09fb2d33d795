package sandbox_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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
	journal := func(t *testing.T, ws string) sandbox.Journal {
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
