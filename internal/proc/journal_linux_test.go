package proc

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolsd/toolsd/internal/sandbox"
)

// walkingJournal stands in for the daemon's change journal (checkpoint), which this package
// does not have: it finds the git folders by walking, and reports every one there is as
// created.
type walkingJournal struct{ ws string }

func (j walkingJournal) Follow() ([]string, func() ([]string, bool), bool) {
	return j.git(), func() ([]string, bool) { return j.git(), true }, true
}

func (j walkingJournal) git() []string {
	var out []string
	_ = filepath.WalkDir(j.ws, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == ".git" {
			out = append(out, p)
			if d.IsDir() {
				return filepath.SkipDir
			}
		}
		return nil
	})
	return out
}

// A confined command whose policy has a journal is looked after by the daemon, through a
// guard started ahead as through one started with it: what it made is moved aside and said
// in its output. A guard started ahead before a nested repository appeared is not used (the
// policy the journal gives the next command differs): the repository is read-only for the
// command, and the next ones run ahead again.
func TestWarmWithJournal(t *testing.T) {
	useWarm(t)
	w := newWarmWorld(t, false, false)
	w.policy.Journal = walkingJournal{w.ws}
	if err, _ := w.run(t, context.Background(), 0, "true", newLineWriter()); err != nil {
		t.Fatal(err)
	}
	readyAhead(t)
	_, looked := sandbox.Looks()
	out := newLineWriter()
	err, warm := w.run(t, context.Background(), 0, "mkdir -p made/.git", out)
	if err != nil || !warm {
		t.Fatalf("err %v, ran ahead %v: %q", err, warm, out.String())
	}
	if _, err := os.Lstat(filepath.Join(w.ws, "made/.git"+sandbox.Quarantine)); err != nil || !strings.Contains(out.String(), "moved it aside") {
		t.Errorf("made/.git was not moved aside, or the output does not say so (%v): %q", err, out.String())
	}
	if _, n := sandbox.Looks(); n != looked+1 {
		t.Errorf("%d looks from the journal, want 1", n-looked)
	}

	readyAhead(t)
	if err := os.MkdirAll(filepath.Join(w.ws, "sub/.git"), 0o755); err != nil { // made unconfined, by the person
		t.Fatal(err)
	}
	out = newLineWriter()
	if err, warm = w.run(t, context.Background(), 0, "echo x > sub/.git/config", out); warm || err == nil {
		t.Errorf("err %v, ran ahead %v: want it refused, not by the guard started before sub/.git: %q", err, warm, out.String())
	}
	warm = false
	for i := 0; i < 5 && !warm; i++ {
		out = newLineWriter()
		if err, warm = w.run(t, context.Background(), 0, "echo x > sub/.git/config", out); err == nil {
			t.Errorf("err %v, ran ahead %v, output %q: want it refused", err, warm, out.String())
		}
	}
	if !warm {
		t.Error("no later command ran through a guard started ahead")
	}
}
