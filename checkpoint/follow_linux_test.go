package checkpoint

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/toolsd/toolsd/store"
)

// followBase is a workspace with a nested repository, a git file, and an ignored folder that
// holds a repository of its own.
var followBase = map[string]string{
	"a.txt":                      "a\n",
	"src/main.go":                "package main\n",
	"sub/.git/HEAD":              "ref: refs/heads/main\n",
	"wt/.git":                    "gitdir: /elsewhere\n",
	".gitignore":                 "node_modules/\n",
	"node_modules/pkg/.git/HEAD": "ref: refs/heads/main\n",
	"node_modules/pkg/index.js":  "x\n",
}

// run runs a shell command in the workspace, as a confined command would.
func (e *env) run(cmd string) {
	e.t.Helper()
	c := exec.Command("bash", "-c", cmd)
	c.Dir = e.ws
	c.Env = append(os.Environ(), "TMP="+e.t.TempDir())
	if out, err := c.CombinedOutput(); err != nil {
		e.t.Fatalf("%s: %v\n%s", cmd, err, out)
	}
}

// rels are paths relative to the workspace, sorted.
func (e *env) rels(abs []string) []string {
	var out []string
	for _, a := range abs {
		r, err := filepath.Rel(e.ws, a)
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, filepath.ToSlash(r))
	}
	sort.Strings(out)
	return out
}

// TestFollowFindsWhatWasMade: the journal tells the sandbox the git folders and git files
// there are (those in the ignored folder, which it does not watch, by a walk of it), and,
// after a command, every git folder or git file it made: in a folder that was there, in
// folders made at any depth, moved in from outside, as a git file, with every one in the
// ignored folder (walked again). The next command sees the list kept current, without a
// walk of what the journal watches.
func TestFollowFindsWhatWasMade(t *testing.T) {
	e := newEnv(t, envOpts{files: followBase, journal: true})
	git, end, ok := e.tr.Follow()
	if !ok {
		t.Fatal("the journal does not vouch after the first look")
	}
	if got := e.rels(git); !slices.Equal(got, []string{"node_modules/pkg/.git", "sub/.git", "wt/.git"}) {
		t.Errorf("git folders known: %v", got)
	}
	e.run(`mkdir -p src/made/.git deep/a/b/c/.git node_modules/evil/.git "$TMP/m/.git" && echo 'gitdir: /x' > src/.git && mv "$TMP/m" moved`)
	found, ok := end()
	if !ok {
		t.Fatal("the journal does not vouch for the command")
	}
	want := []string{"deep/a/b/c/.git", "moved/.git", "node_modules/evil/.git", "node_modules/pkg/.git", "src/.git", "src/made/.git"}
	if got := e.rels(found); !slices.Equal(got, want) {
		t.Errorf("found: %v, want %v", got, want)
	}

	e.run(`rm -rf src/made/.git`)
	git, end, ok = e.tr.Follow()
	if !ok {
		t.Fatal("the journal does not vouch for the next command")
	}
	defer end()
	want = []string{"deep/a/b/c/.git", "moved/.git", "node_modules/evil/.git", "node_modules/pkg/.git", "src/.git", "sub/.git", "wt/.git"}
	if got := e.rels(git); !slices.Equal(got, want) {
		t.Errorf("git folders known to the next command: %v, want %v", got, want)
	}
}

// TestFollowCannotVouch: the journal says it cannot vouch — so the sandbox walks — without a
// journal, before the first look is done, for a workspace too large to track, when its
// events overflowed or a folder was renamed during the command, and when the kernel
// refused a watch.
func TestFollowCannotVouch(t *testing.T) {
	t.Run("no journal", func(t *testing.T) {
		e := newEnv(t, envOpts{files: followBase})
		if _, _, ok := e.tr.Follow(); ok {
			t.Error("checkpoints without a journal vouch")
		}
	})
	open := func(t *testing.T, o Options) *Tracker {
		o.Workspace = t.TempDir()
		for p, body := range followBase {
			writeFile(t, filepath.Join(o.Workspace, p), body, 0o644)
		}
		st, err := store.Open(filepath.Join(t.TempDir(), "store.db"), &store.Options{Retention: -1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		o.Store, o.Git = st, "none"
		tr, err := Open(o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tr.Close() })
		return tr
	}
	t.Run("too large", func(t *testing.T) {
		tr := open(t, Options{MaxFiles: 3})
		<-tr.Ready()
		if _, _, ok := tr.Follow(); ok {
			t.Error("a workspace too large to track vouches")
		}
	})
	t.Run("first look not done", func(t *testing.T) {
		hold, held := make(chan struct{}), make(chan struct{}, 1)
		tr := open(t, Options{faults: &faults{addWatch: func(abs string) error {
			if strings.HasSuffix(abs, "src") {
				select {
				case held <- struct{}{}:
				default:
				}
				<-hold
			}
			return nil
		}}})
		ready := tr.Ready()
		<-held // the first look is walking
		_, _, ok := tr.Follow()
		close(hold)
		<-ready
		if ok {
			t.Error("the journal vouches before the first look is done")
		}
		if _, end, ok := tr.Follow(); !ok {
			t.Error("the journal does not vouch once the first look is done")
		} else {
			end()
		}
	})
	for _, c := range []struct {
		name   string
		break_ func(e *env)
	}{
		{"overflow", func(e *env) { e.tr.followed.Load().fault(fsnotify.ErrEventOverflow) }},
		{"folder renamed", func(e *env) { e.run("mv src src2") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, envOpts{files: followBase, journal: true})
			_, end, ok := e.tr.Follow()
			if !ok {
				t.Fatal("the journal does not vouch")
			}
			c.break_(e)
			if _, ok := end(); ok {
				t.Error("the journal vouches for a command during which it broke")
			}
			if _, _, ok := e.tr.Follow(); ok {
				t.Error("a broken journal vouches before a walk")
			}
		})
	}
	t.Run("watch refused", func(t *testing.T) {
		k := &kernel{}
		e := newEnv(t, envOpts{files: followBase, journal: true, opts: func(o *Options) {
			k.opts(o)
			o.faults = k.faults(o.Workspace)
		}})
		_, end, ok := e.tr.Follow()
		if !ok {
			t.Fatal("the journal does not vouch")
		}
		k.refuseWatches.Store(true)
		e.run("mkdir -p new/.git")
		if _, ok := end(); ok {
			t.Error("the journal vouches for a folder it could not watch")
		}
	})
}

// TestFollowIgnoredFromListings: in the ignored folder, which the journal does not watch, the
// looks before and after a command read only the folders whose ctime or identity changed
// (ignored.go), and still find every git folder and git file a command makes there: deep in
// a folder that was there, with the folder's times set back after (touch -d), in a folder
// moved in from outside or from elsewhere in the tree, as a git file, and in a folder
// replaced by one of the same name (its parent's times set back). A listing taken less than
// racyMargin after its folder's ctime is read again at the next look; then the listings'
// clock is an hour ahead, so that every listing is kept: only ctime and identity say what to
// read again.
func TestFollowIgnoredFromListings(t *testing.T) {
	files := maps.Clone(followBase)
	for _, p := range []string{"node_modules/pkg/lib/a/b/c.js", "node_modules/pkg/lib/d/e.js", "node_modules/other/dist/x.js", "node_modules/other/src/y/z.js"} {
		files[p] = "x\n"
	}
	e := newEnv(t, envOpts{files: files, journal: true})
	l := e.tr.followed.Load().listed
	reads := func() int {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.reads
	}
	look := func(cmd string) []string {
		t.Helper()
		_, end, ok := e.tr.Follow()
		if !ok {
			t.Fatal("the journal does not vouch")
		}
		if cmd != "" {
			e.run(cmd)
		}
		found, ok := end()
		if !ok {
			t.Fatalf("%s: the journal does not vouch for the command", cmd)
		}
		return e.rels(found)
	}
	look("")
	n := reads()
	look("") // the tree was made just now: within racyMargin of every folder's ctime
	if r := reads() - n; r != 2*10 {
		t.Errorf("%d folders of the ignored tree read again by the two looks of a command after listings taken just after they changed, want all 10 twice", r)
	}
	l.mu.Lock()
	l.now = func() time.Time { return time.Now().Add(time.Hour) }
	l.mu.Unlock()
	look("")
	n = reads()
	if found := look(""); !slices.Equal(found, []string{"node_modules/pkg/.git"}) {
		t.Errorf("found %v in the untouched workspace", found)
	}
	if r := reads() - n; r != 0 && steadyCtime(e.ws) {
		t.Errorf("%d folders read again in an ignored tree nothing changed", r)
	} else if r != 0 {
		t.Logf("the temp folder's file system is not one whose folders' listings are kept: %d folders read again", r)
	}
	for _, c := range []struct{ name, cmd, want string }{
		{"deep", `mkdir node_modules/pkg/lib/a/b/.git`, "node_modules/pkg/lib/a/b/.git"},
		{"times set back", `m=$(stat -c %y node_modules/other/src/y) && mkdir node_modules/other/src/y/.git && touch -d "$m" node_modules/other/src/y`, "node_modules/other/src/y/.git"},
		{"moved in", `mkdir -p "$TMP/m/.git" && m=$(stat -c %y node_modules/other) && mv "$TMP/m" node_modules/other/m && touch -d "$m" node_modules/other`, "node_modules/other/m/.git"},
		{"moved within", `m=$(stat -c %y node_modules/pkg/lib) && n=$(stat -c %y node_modules/pkg/lib/d) && mv node_modules/pkg/lib/a node_modules/pkg/lib/d/a2 && touch -d "$m" node_modules/pkg/lib && touch -d "$n" node_modules/pkg/lib/d`, "node_modules/pkg/lib/d/a2/b/.git"},
		{"git file", `m=$(stat -c %y node_modules/pkg/lib/d) && echo 'gitdir: /x' > node_modules/pkg/lib/d/.git && touch -d "$m" node_modules/pkg/lib/d`, "node_modules/pkg/lib/d/.git"},
		{"replaced", `m=$(stat -c %y node_modules/other) && mv node_modules/other/dist "$TMP/old" && mkdir -p "$TMP/new/.git" && touch -d "$(stat -c %y "$TMP/old")" "$TMP/new" && mv "$TMP/new" node_modules/other/dist && touch -d "$m" node_modules/other`, "node_modules/other/dist/.git"},
	} {
		if found := look(c.cmd); !slices.Contains(found, c.want) {
			t.Errorf("%s: %s not found: %v", c.name, c.want, found)
		}
	}
}
