//go:build unix

package sandbox

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakeJournal stands in for the checkpoints' change journal: it knows what the test says.
type fakeJournal struct {
	ok, endOK bool     // it vouches before the command, and after it
	git       []string // what it knows before
	found     []string // what it reports after
	ended     int
}

func (j *fakeJournal) Follow() ([]string, func() ([]string, bool), bool) {
	if !j.ok {
		return nil, nil, false
	}
	return j.git, func() ([]string, bool) { j.ended++; return j.found, j.endOK }, true
}

// watchWorld is a workspace with a git folder and two nested repositories.
func watchWorld(t *testing.T) (ws string, p *Policy) {
	t.Helper()
	ws = real(t.TempDir())
	for _, d := range []string{".git", "sub/.git", "node_modules/pkg/.git", "src"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return ws, Build(Options{Workspace: ws, TempDir: t.TempDir()})
}

// mkdirs makes the workspace's folders rel.
func mkdirs(t *testing.T, ws string, rel ...string) {
	t.Helper()
	for _, r := range rel {
		if err := os.MkdirAll(filepath.Join(ws, r), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWatchFromJournal: with a journal that vouches, nothing walks the whole workspace: the
// git folders it knows are read-only for the command and given to its guard, which looks
// only if the daemon is gone; what the journal reports after the command that was not there
// before, and a protected entry at the top level, are moved aside; one it reports that was
// there is not; a git folder the journal did not report is not looked for.
func TestWatchFromJournal(t *testing.T) {
	ws, p := watchWorld(t)
	j := &fakeJournal{ok: true, endOK: true, git: []string{filepath.Join(ws, ".git"), filepath.Join(ws, "sub/.git"), filepath.Join(ws, "node_modules/pkg/.git")}}
	p.Journal = j
	walked, journaled := Looks()
	q, w := StartWatch(p)
	if w == nil {
		t.Fatal("no watch from a journal that vouches")
	}
	if q.Checker != os.Getpid() || q.Journal != nil {
		t.Errorf("the guard's policy: checker %d, journal %v; want this process, none", q.Checker, q.Journal)
	}
	for _, rel := range []string{"sub/.git", "node_modules/pkg/.git"} {
		abs := filepath.Join(ws, rel)
		if !slices.Contains(q.Protect, abs) {
			t.Errorf("%s is not read-only for the command: %v", rel, q.Protect)
		}
		if _, ok := q.Seen[abs]; !ok {
			t.Errorf("%s is not among what the guard is told was there: %v", rel, q.Seen)
		}
	}
	// The command:
	mkdirs(t, ws, "src/new/.git", "node_modules/evil/.git", ".vscode", "unreported/.git")
	j.found = []string{filepath.Join(ws, "src/new/.git"), filepath.Join(ws, "node_modules/evil/.git"), filepath.Join(ws, "node_modules/pkg/.git")}
	moved := w.Finish(io.Discard)
	want := []string{filepath.Join(ws, ".vscode"), filepath.Join(ws, "node_modules/evil/.git"), filepath.Join(ws, "src/new/.git")}
	if !slices.Equal(moved, want) {
		t.Errorf("moved %v, want %v", moved, want)
	}
	if n, m := Looks(); n != walked || m != journaled+1 || j.ended != 1 {
		t.Errorf("%d walks of the whole workspace, %d looks from the journal, which ended %d times; want 0, 1, 1", n-walked, m-journaled, j.ended)
	}
	if _, err := os.Stat(filepath.Join(ws, "unreported/.git")); err != nil {
		t.Errorf("a git folder the journal did not report was looked for: %v", err)
	}
}

// TestWatchJournalFallback: when the journal cannot vouch after the command, the whole
// workspace is walked; when it cannot vouch before, the daemon does not look after the
// command: its guard walks, as without a journal.
func TestWatchJournalFallback(t *testing.T) {
	ws, p := watchWorld(t)
	j := &fakeJournal{ok: true, git: []string{filepath.Join(ws, ".git"), filepath.Join(ws, "sub/.git"), filepath.Join(ws, "node_modules/pkg/.git")}}
	p.Journal = j
	walked, _ := Looks()
	_, w := StartWatch(p)
	mkdirs(t, ws, "unreported/.git")
	if moved := w.Finish(io.Discard); !slices.Equal(moved, []string{filepath.Join(ws, "unreported/.git")}) {
		t.Errorf("moved %v: want the git folder the walk finds", moved)
	}
	if n, _ := Looks(); n != walked+1 {
		t.Errorf("%d walks of the whole workspace, want 1", n-walked)
	}

	j.ok = false
	if q, w := StartWatch(p); w != nil || q != p {
		t.Errorf("a journal that cannot vouch: the daemon looks after the command (%v)", w)
	}
}

// TestWatchInTheGuard: the guard of a command the daemon looks after walks nothing while the
// daemon is its parent, and walks the whole workspace when the daemon is gone, comparing with
// what the daemon saw.
func TestWatchInTheGuard(t *testing.T) {
	ws, p := watchWorld(t)
	p.Journal = &fakeJournal{ok: true, endOK: true, git: []string{filepath.Join(ws, ".git"), filepath.Join(ws, "sub/.git"), filepath.Join(ws, "node_modules/pkg/.git")}}
	q, _ := StartWatch(p)
	g, err := Decode(q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	g.Checker = os.Getppid() // the process that started this one stands in for the daemon
	walked, _ := Looks()
	_, w := StartWatch(g)
	mkdirs(t, ws, "made/.git")
	if moved := w.Finish(io.Discard); len(moved) != 0 {
		t.Errorf("with the daemon alive the guard moved %v", moved)
	}
	if n, _ := Looks(); n != walked {
		t.Errorf("with the daemon alive the guard walked %d times", n-walked)
	}
	g.Checker = os.Getpid() // not this process's parent: the daemon is gone
	_, w = StartWatch(g)
	var out strings.Builder
	if moved := w.Finish(&out); !slices.Equal(moved, []string{filepath.Join(ws, "made/.git")}) || !strings.Contains(out.String(), "moved it aside") {
		t.Errorf("with the daemon gone the guard moved %v, said %q; want made/.git", moved, out.String())
	}
	if n, _ := Looks(); n != walked+1 {
		t.Errorf("with the daemon gone the guard walked %d times, want 1", n-walked)
	}
}

// TestWatchSeesAGitEntryMadeAgain: a git folder removed and made again during the command, as
// a folder or as a link, is moved aside like any git folder made then — also when the file
// system gave it the inode number the one removed had (ext4 does, in the same folder), in
// each way of looking: the guard's walk, the journal's report, the guard's walk against what
// the daemon saw once the daemon is gone.
func TestWatchSeesAGitEntryMadeAgain(t *testing.T) {
	looks := map[string]func(t *testing.T, ws string, p *Policy) *Watch{
		"walk": func(t *testing.T, ws string, p *Policy) *Watch { _, w := StartWatch(p); return w },
		"journal": func(t *testing.T, ws string, p *Policy) *Watch {
			git := []string{filepath.Join(ws, ".git"), filepath.Join(ws, "sub/.git"), filepath.Join(ws, "node_modules/pkg/.git")}
			p.Journal = &fakeJournal{ok: true, endOK: true, git: git, found: git[1:]}
			_, w := StartWatch(p)
			return w
		},
		"guard, the daemon gone": func(t *testing.T, ws string, p *Policy) *Watch {
			p.Journal = &fakeJournal{ok: true, endOK: true, git: []string{filepath.Join(ws, ".git"), filepath.Join(ws, "sub/.git"), filepath.Join(ws, "node_modules/pkg/.git")}}
			q, _ := StartWatch(p)
			g, err := Decode(q.Encode())
			if err != nil {
				t.Fatal(err)
			}
			g.Checker = os.Getpid() // not this process's parent
			_, w := StartWatch(g)
			return w
		},
	}
	for name, look := range looks {
		t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
			ws, p := watchWorld(t)
			// Birth times have the clock's coarse tick as grain: the ones made again are
			// made in a later tick, as a command's are.
			time.Sleep(20 * time.Millisecond)
			w := look(t, ws, p)
			sub, pkg := filepath.Join(ws, "sub/.git"), filepath.Join(ws, "node_modules/pkg/.git")
			subID, _ := fileIDOf(sub)
			pkgID, _ := fileIDOf(pkg)
			// The command:
			if err := os.Remove(sub); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(pkg); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(ws, "src"), pkg); err != nil {
				t.Fatal(err)
			}
			subAgain, _ := fileIDOf(sub)
			pkgAgain, _ := fileIDOf(pkg)
			t.Logf("inode numbers reused: %v, %v", subAgain.ino == subID.ino, pkgAgain.ino == pkgID.ino)

			moved := w.Finish(io.Discard)
			if want := []string{pkg, sub}; !slices.Equal(moved, want) {
				t.Errorf("moved %v, want %v", moved, want)
			}
		})
	}
}
