package checkpoint

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/toolsd/toolsd/internal/posix"
	"github.com/toolsd/toolsd/protocol"
	"github.com/toolsd/toolsd/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// env is a workspace with a store and a tracker.
type env struct {
	t   *testing.T
	ws  string
	st  *store.Store
	tr  *Tracker
	seq int
}

type envOpts struct {
	git     bool
	journal bool
	files   map[string]string
	opts    func(*Options)
}

func newEnv(t *testing.T, o envOpts) *env {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for p, body := range o.files {
		writeFile(t, filepath.Join(ws, p), body, 0o644)
	}
	if o.git {
		gitRun(t, ws, "init", "-q")
		gitRun(t, ws, "add", "-A")
		gitRun(t, ws, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "init")
	}
	e := &env{t: t, ws: ws}
	e.st, err = store.Open(filepath.Join(t.TempDir(), "store.db"), &store.Options{Retention: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.st.Close() })
	e.open(o)
	return e
}

func (e *env) open(o envOpts) {
	e.t.Helper()
	opts := Options{Workspace: e.ws, Store: e.st, NoJournal: !o.journal}
	if !o.git {
		opts.Git = "none"
	}
	if o.opts != nil {
		o.opts(&opts)
	}
	tr, err := Open(opts)
	if err != nil {
		e.t.Fatal(err)
	}
	e.tr = tr
	e.t.Cleanup(func() { tr.Close() })
	select {
	case <-tr.Ready():
	case <-time.After(30 * time.Second):
		e.t.Fatal("the first look at the workspace did not end")
	}
	if tr.startErr != nil {
		e.t.Fatal(tr.startErr)
	}
}

func writeFile(t *testing.T, p, body string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
}

func gitRun(t *testing.T, dir string, args ...string) {
	t.Helper()
	c := exec.Command("git", append([]string{"-C", dir}, args...)...)
	c.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// call records a call in the store and returns its reference.
func (e *env) call(tool string) store.CallRef {
	e.t.Helper()
	e.seq++
	ref := store.CallRef{SessionID: "s1", CallID: fmt.Sprintf("c%d", e.seq), Tool: tool}
	if err := e.st.CreateCall(&protocol.CallRecord{SessionID: ref.SessionID, CallID: ref.CallID, MessageID: "m", Tool: tool, Status: protocol.StatusRunning}); err != nil {
		e.t.Fatal(err)
	}
	return ref
}

// shell runs a command in the workspace as a changing call and returns the call.
func (e *env) shell(cmd string) store.CallRef {
	e.t.Helper()
	ref := e.call("bash")
	w := e.tr.NewWindow(ref, false)
	ctx := context.Background()
	if err := w.Begin(ctx); err != nil {
		e.t.Fatal(err)
	}
	c := exec.Command("bash", "-c", cmd)
	c.Dir = e.ws
	c.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+e.ws)
	if out, err := c.CombinedOutput(); err != nil {
		e.t.Fatalf("%s: %v\n%s", cmd, err, out)
	}
	if _, err := w.End(ctx); err != nil {
		e.t.Fatal(err)
	}
	if off := w.Off(); off != "" {
		e.t.Fatalf("no checkpoint: %s", off)
	}
	return ref
}

func (e *env) changes(ref store.CallRef) map[string]protocol.FileChangeInfo {
	e.t.Helper()
	res, err := e.tr.Changes(context.Background(), protocol.CallsChangesParams{SessionID: ref.SessionID, CallID: ref.CallID, Contents: true})
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]protocol.FileChangeInfo{}
	for _, f := range res.Files {
		out[f.Path] = f
	}
	return out
}

// revert reverts a call (from: and every later one) as a recorded call of its own.
func (e *env) revert(ref store.CallRef, from, force bool) (*Plan, store.CallRef, int) {
	e.t.Helper()
	ctx := context.Background()
	plan, err := e.tr.Plan(ctx, ref.SessionID, ref.CallID, from)
	if err != nil {
		e.t.Fatal(err)
	}
	if plan.Conflicts() && !force {
		return plan, store.CallRef{}, 0
	}
	rv := e.call(protocol.ToolRevert)
	w := e.tr.NewWindow(rv, true)
	n, err := e.tr.Apply(ctx, plan, w, force)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := w.End(ctx); err != nil {
		e.t.Fatal(err)
	}
	return plan, rv, n
}

// snapshot is every file, link and folder of the workspace (but .git) with its mode and
// content or target.
func (e *env) snapshot() map[string]string {
	e.t.Helper()
	out := map[string]string{}
	err := filepath.Walk(e.ws, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(e.ws, p)
		if rel == ".git" && fi.IsDir() {
			return filepath.SkipDir
		}
		if rel == "." {
			return nil
		}
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			tgt, _ := os.Readlink(p)
			out[rel] = "link -> " + tgt
		case fi.IsDir():
			out[rel] = fmt.Sprintf("dir %o", fi.Mode().Perm())
		default:
			b, _ := os.ReadFile(p)
			out[rel] = fmt.Sprintf("file %o %q", fi.Mode().Perm(), b)
		}
		return nil
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

func diffSnap(a, b map[string]string) string {
	var keys []string
	seen := map[string]bool{}
	for k := range a {
		keys, seen[k] = append(keys, k), true
	}
	for k := range b {
		if !seen[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var d strings.Builder
	for _, k := range keys {
		if a[k] != b[k] {
			fmt.Fprintf(&d, "%s: %s != %s\n", k, a[k], b[k])
		}
	}
	return d.String()
}

var base = map[string]string{
	"a.txt":          "alpha\nbeta\ngamma\n",
	"b.txt":          "one\ntwo\n",
	"dir/c.txt":      "c\n",
	"dir/sub/d.txt":  "d\n",
	"bin/tool.sh":    "#!/bin/sh\necho hi\n",
	"img.bin":        "\x00\x01\x02\xff",
	".gitignore":     "ignored/\n*.log\n",
	"ignored/big.js": "ignored content\n",
}

// TestShellChangeKinds: every kind of change a shell command makes is found, described, and
// reverted byte for byte (and mode), with and without the journal and a git repository.
func TestShellChangeKinds(t *testing.T) {
	cases := []struct {
		name, cmd string
		want      map[string]string // path -> status
	}{
		{"sed -i", "sed -i 's/beta/BETA/' a.txt", map[string]string{"a.txt": protocol.ChangeModified}},
		{"same size, same inode, modification time set back", `t=$(stat -c %y a.txt); printf 'alpha\nBETA\ngamma\n' 1<>a.txt; touch -d "$t" a.txt`, map[string]string{"a.txt": protocol.ChangeModified}},
		{"rm -rf dir", "rm -rf dir", map[string]string{"dir": protocol.ChangeDeleted, "dir/c.txt": protocol.ChangeDeleted, "dir/sub": protocol.ChangeDeleted, "dir/sub/d.txt": protocol.ChangeDeleted}},
		{"mv", "mv b.txt renamed.txt", map[string]string{"renamed.txt": protocol.ChangeRenamed}},
		{"chmod +x", "chmod +x a.txt", map[string]string{"a.txt": protocol.ChangeModified}},
		{"symlink replaced by a file", "ln -s a.txt link && true", map[string]string{"link": protocol.ChangeAdded}},
		{"new file and folder", "mkdir -p new/deep && printf 'x' > new/deep/f.txt", map[string]string{"new": protocol.ChangeAdded, "new/deep": protocol.ChangeAdded, "new/deep/f.txt": protocol.ChangeAdded}},
		{"binary", "printf '\\x00\\x09' >> img.bin", map[string]string{"img.bin": protocol.ChangeModified}},
		{"mv dir", "mv dir dir2", map[string]string{"dir": protocol.ChangeDeleted, "dir/sub": protocol.ChangeDeleted, "dir2": protocol.ChangeAdded, "dir2/sub": protocol.ChangeAdded, "dir2/c.txt": protocol.ChangeRenamed, "dir2/sub/d.txt": protocol.ChangeRenamed}},
		{"ignored files are not tracked", "echo more >> ignored/big.js && echo x > run.log", map[string]string{}},
	}
	for _, mode := range []struct {
		name string
		o    envOpts
	}{{"walk", envOpts{}}, {"journal", envOpts{journal: true}}, {"git", envOpts{git: true, journal: true}}} {
		for _, tc := range cases {
			t.Run(mode.name+"/"+tc.name, func(t *testing.T) {
				o := mode.o
				o.files = base
				e := newEnv(t, o)
				if err := os.Chmod(filepath.Join(e.ws, "bin/tool.sh"), 0o755); err != nil {
					t.Fatal(err)
				}
				// Give the first look's ctime check a tick: a file made in the same
				// nanosecond as a look is never ambiguous in practice, but tests are fast.
				before := e.snapshot()
				ref := e.shell(tc.cmd)
				got := e.changes(ref)
				statuses := map[string]string{}
				for p, f := range got {
					statuses[p] = f.Status
				}
				if fmt.Sprint(statuses) != fmt.Sprint(tc.want) {
					t.Fatalf("changes = %v, want %v", statuses, tc.want)
				}
				if f, ok := got["a.txt"]; ok && (tc.name == "sed -i" || strings.HasPrefix(tc.name, "same size")) {
					if !strings.Contains(f.Diff, "-beta\n+BETA\n") || f.Attribution != AttrDuring || f.Before == nil || *f.After != "alpha\nBETA\ngamma\n" {
						t.Errorf("a.txt: %+v", f)
					}
				}
				if len(tc.want) == 0 {
					return
				}
				plan, rv, n := e.revert(ref, false, false)
				if n == 0 || plan.Conflicts() {
					t.Fatalf("revert restored %d paths; plan %+v", n, plan)
				}
				if d := diffSnap(before, e.snapshot()); d != "" && tc.name != "ignored files are not tracked" {
					t.Fatalf("after the revert the workspace differs:\n%s", d)
				}
				// The revert is a call that can be reverted: the change comes back.
				after := e.snapshot()
				e.revert(rv, false, false)
				again := e.snapshot()
				if d := diffSnap(after, again); d == "" {
					t.Fatalf("reverting the revert changed nothing")
				}
				e.revert(ref, false, true) // and forward again is fine
			})
		}
	}
}

// TestSymlinkReplacedByFile: a link turned into a regular file is a type change, and the
// revert brings the link back.
func TestSymlinkReplacedByFile(t *testing.T) {
	e := newEnv(t, envOpts{files: map[string]string{"target.txt": "t\n"}, journal: true})
	if err := os.Symlink("target.txt", filepath.Join(e.ws, "link")); err != nil {
		t.Fatal(err)
	}
	before := e.snapshot()
	ref := e.shell("rm link && echo file > link")
	got := e.changes(ref)
	if f := got["link"]; f.Status != protocol.ChangeTypeChanged || f.OldKind != store.KindLink || f.Kind != store.KindFile {
		t.Fatalf("link: %+v (all %v)", f, got)
	}
	e.revert(ref, false, false)
	if d := diffSnap(before, e.snapshot()); d != "" {
		t.Fatalf("after the revert:\n%s", d)
	}
}

// TestGitCheckout: `git checkout -- .` in a repository puts back what git has; the files'
// earlier content (dirty, kept by toolsd) comes back with a revert, and clean files are
// never read at the first look.
func TestGitCheckout(t *testing.T) {
	e := newEnv(t, envOpts{files: base, git: true, journal: true})
	clean := 0
	e.tr.mu.Lock()
	e.tr.index.each(func(_ string, s store.FileState) {
		if s.Kind == store.KindFile && s.Git != "" && s.Content == "" {
			clean++
		}
	})
	e.tr.mu.Unlock()
	if clean < 5 {
		t.Fatalf("only %d files were taken from git's index without reading them", clean)
	}
	e.shell("echo local >> a.txt && echo local >> dir/c.txt")
	before := e.snapshot()
	ref := e.shell("git checkout -- .")
	got := e.changes(ref)
	if len(got) != 2 || got["a.txt"].Status != protocol.ChangeModified || !strings.Contains(got["dir/c.txt"].Diff, "-local") {
		t.Fatalf("changes: %+v", got)
	}
	e.revert(ref, false, false)
	if d := diffSnap(before, e.snapshot()); d != "" {
		t.Fatalf("after the revert:\n%s", d)
	}
	// A clean file's content comes from git's object store when a call changes it.
	ref = e.shell("echo more >> b.txt")
	snap := e.snapshot()
	e.revert(ref, false, false)
	if got := e.snapshot()["b.txt"]; got != fmt.Sprintf("file 644 %q", base["b.txt"]) {
		t.Fatalf("b.txt after the revert: %s (was %s)", got, snap["b.txt"])
	}
}

// TestConflictRefusedAndReported: a file changed since the call (by a later call, or outside
// toolsd) is not overwritten unless forced, and the report names who changed it.
func TestConflictRefusedAndReported(t *testing.T) {
	e := newEnv(t, envOpts{files: base, journal: true})
	first := e.shell("echo first >> a.txt && echo first >> b.txt")
	later := e.shell("echo later >> a.txt")
	writeFile(t, filepath.Join(e.ws, "b.txt"), "the person's edit\n", 0o644)
	plan, _, n := e.revert(first, false, false)
	if n != 0 || !plan.Conflicts() {
		t.Fatalf("the revert went ahead: %d files, %+v", n, plan)
	}
	res := plan.Result(protocol.RevertConflict)
	byPath := map[string]protocol.RevertFile{}
	for _, f := range res.Files {
		byPath[f.Path] = f
	}
	if a := byPath["a.txt"]; len(a.ChangedBy) != 1 || a.ChangedBy[0].CallID != later.CallID || !strings.Contains(a.Conflict, later.CallID) {
		t.Errorf("a.txt: %+v", a)
	}
	if b := byPath["b.txt"]; len(b.ChangedBy) != 0 || !strings.Contains(b.Conflict, "outside toolsd") {
		t.Errorf("b.txt: %+v", b)
	}
	if got := e.snapshot()["b.txt"]; !strings.Contains(got, "the person's edit") {
		t.Fatalf("the refused revert touched b.txt: %s", got)
	}
	// Reverting from the first call on reverts the later call too: a.txt is no conflict
	// then, b.txt still is.
	plan, _, _ = e.revert(first, true, false)
	for _, f := range plan.Files {
		if f.Path == "a.txt" && f.Conflict != "" || f.Path == "b.txt" && f.Conflict == "" {
			t.Errorf("from-revert plan: %+v", f)
		}
	}
	_, _, n = e.revert(first, true, true)
	if n != 2 || e.snapshot()["b.txt"] != fmt.Sprintf("file 644 %q", base["b.txt"]) || e.snapshot()["a.txt"] != fmt.Sprintf("file 644 %q", base["a.txt"]) {
		t.Fatalf("forced revert: %d files, %v", n, e.snapshot())
	}
}

// TestExactWindow: a tool that reports its files gets exactly them, with its own bytes as
// the state before, even while a shell call changes other files at the same time; the two
// name each other.
func TestExactWindow(t *testing.T) {
	e := newEnv(t, envOpts{files: base, journal: true})
	ctx := context.Background()
	shellRef := e.call("bash")
	sw := e.tr.NewWindow(shellRef, false)
	if err := sw.Begin(ctx); err != nil {
		t.Fatal(err)
	}
	writeRef := e.call("write")
	ww := e.tr.NewWindow(writeRef, true)
	old, _ := os.ReadFile(filepath.Join(e.ws, "a.txt"))
	if err := ww.Before(ctx, filepath.Join(e.ws, "a.txt"), old, 0o644, true); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(e.ws, "a.txt"), "written\n", 0o644)
	writeFile(t, filepath.Join(e.ws, "b.txt"), "by the shell\n", 0o644) // the shell's
	if n, err := ww.End(ctx); err != nil || n != 1 {
		t.Fatalf("write's window: %d files, %v", n, err)
	}
	if _, err := sw.End(ctx); err != nil {
		t.Fatal(err)
	}
	wc := e.changes(writeRef)
	if len(wc) != 1 || wc["a.txt"].Attribution != AttrCall {
		t.Fatalf("write's changes: %+v", wc)
	}
	sc := e.changes(shellRef)
	if a := sc["a.txt"]; len(a.AlsoTouchedBy) != 1 || a.AlsoTouchedBy[0].CallID != writeRef.CallID {
		t.Fatalf("the shell's a.txt should name the write call: %+v", a)
	}
	if _, ok := sc["b.txt"]; !ok {
		t.Fatalf("the shell's changes lack b.txt: %v", sc)
	}
	plan, err := e.tr.Plan(ctx, shellRef.SessionID, shellRef.CallID, false)
	if err != nil {
		t.Fatal(err)
	}
	res := plan.Result(protocol.RevertPlanned)
	if len(res.Concurrent) != 1 || res.Concurrent[0].CallID != writeRef.CallID {
		t.Fatalf("the plan should name the concurrent write: %+v", res)
	}
}

// TestContentIsChunked: ten edits of a 1 MiB file do not cost 10 MiB of store.
func TestContentIsChunked(t *testing.T) {
	var big bytes.Buffer
	for i := 0; big.Len() < 1<<20; i++ {
		fmt.Fprintf(&big, "line %d of a large file, with some text to make it long enough %x\n", i, i*7919)
	}
	e := newEnv(t, envOpts{files: map[string]string{"big.txt": big.String()}, journal: true})
	st0, _ := os.Stat(e.st.Path())
	for i := range 10 {
		e.shell(fmt.Sprintf("sed -i '%ds/line/LINE/' big.txt", 1000+i*1000))
	}
	st1, _ := os.Stat(e.st.Path())
	if grew := st1.Size() - st0.Size(); grew > 3<<20 {
		t.Fatalf("the store grew by %d bytes for ten one-line edits of a 1 MiB file", grew)
	}
}

// TestJournalAfterFolderRename: after a folder is renamed, changes inside it are still found
// (the journal's watches below it would report the old names: it walks and watches anew).
func TestJournalAfterFolderRename(t *testing.T) {
	e := newEnv(t, envOpts{files: base, journal: true})
	e.shell("mv dir moved")
	ref := e.shell("echo more >> moved/sub/d.txt && mkdir moved/sub/new && echo n > moved/sub/new/f.txt")
	got := e.changes(ref)
	if got["moved/sub/d.txt"].Status != protocol.ChangeModified || got["moved/sub/new/f.txt"].Status != protocol.ChangeAdded {
		t.Fatalf("changes after the rename: %v", got)
	}
	ref = e.shell("echo again >> moved/sub/new/f.txt")
	if got := e.changes(ref); got["moved/sub/new/f.txt"].Status != protocol.ChangeModified {
		t.Fatalf("a change in a folder made after the rename: %v", got)
	}
}

// TestIgnoreRulesChange: a call that changes .gitignore does not claim the files that become
// ignored (deleted) or no longer ignored (added): only the ignore file changed.
func TestIgnoreRulesChange(t *testing.T) {
	for _, journal := range []bool{false, true} {
		t.Run(fmt.Sprint("journal=", journal), func(t *testing.T) {
			e := newEnv(t, envOpts{files: base, journal: journal})
			ref := e.shell("printf 'dir/\\n*.log\\n' > .gitignore") // dir/ ignored, ignored/ no longer
			got := e.changes(ref)
			if len(got) != 1 || got[".gitignore"].Status != protocol.ChangeModified {
				t.Fatalf("changes: %v", got)
			}
			ref = e.shell("echo x >> ignored/big.js && echo y >> dir/c.txt")
			if got := e.changes(ref); len(got) != 1 || got["ignored/big.js"].Status != protocol.ChangeModified {
				t.Fatalf("after the rules changed: %v", got)
			}
		})
	}
}

// TestConcurrentShellCalls: two shell calls at the same time that change the same file name
// each other; a file only one of them could have changed (it changed before the other
// began) is not shared.
func TestConcurrentShellCalls(t *testing.T) {
	e := newEnv(t, envOpts{files: base, journal: true})
	ctx := context.Background()
	a, b := e.call("bash"), e.call("bash")
	wa := e.tr.NewWindow(a, false)
	if err := wa.Begin(ctx); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(e.ws, "b.txt"), "only while a ran\n", 0o644)
	wb := e.tr.NewWindow(b, false)
	if err := wb.Begin(ctx); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(e.ws, "a.txt"), "while both ran\n", 0o644)
	if _, err := wb.End(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := wa.End(ctx); err != nil {
		t.Fatal(err)
	}
	ca, cb := e.changes(a), e.changes(b)
	if len(ca) != 2 || len(cb) != 1 {
		t.Fatalf("a changed %v, b changed %v", ca, cb)
	}
	if x := ca["a.txt"].AlsoTouchedBy; len(x) != 1 || x[0].CallID != b.CallID {
		t.Errorf("a's a.txt: %+v", ca["a.txt"])
	}
	if x := cb["a.txt"].AlsoTouchedBy; len(x) != 1 || x[0].CallID != a.CallID {
		t.Errorf("b's a.txt: %+v", cb["a.txt"])
	}
	if x := ca["b.txt"].AlsoTouchedBy; len(x) != 0 {
		t.Errorf("a's b.txt changed before b began: %+v", ca["b.txt"])
	}
}

// TestSizeCap: a file over the size cap is recorded as changed with its content not kept, and
// a revert leaves it as it is while restoring the rest.
func TestSizeCap(t *testing.T) {
	e := newEnv(t, envOpts{files: map[string]string{"small.txt": "s\n", "big.txt": strings.Repeat("x", 2000)}, journal: true,
		opts: func(o *Options) { o.MaxFileBytes = 1000 }})
	ref := e.shell("echo more >> big.txt && echo more >> small.txt")
	got := e.changes(ref)
	if got["big.txt"].NotKept == "" || got["small.txt"].NotKept != "" {
		t.Fatalf("changes: %+v", got)
	}
	plan, _, n := e.revert(ref, false, false)
	if n != 1 {
		t.Fatalf("restored %d paths: %+v", n, plan)
	}
	res := plan.Result(protocol.RevertDone)
	for _, f := range res.Files {
		if (f.Path == "big.txt") != (f.Skipped != "") {
			t.Errorf("%s: skipped %q", f.Path, f.Skipped)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(e.ws, "small.txt")); string(b) != "s\n" {
		t.Errorf("small.txt: %q", b)
	}
}

// TestWriteIntoNewFolders: a file written into folders that did not exist: the revert takes
// the folders away too.
func TestWriteIntoNewFolders(t *testing.T) {
	e := newEnv(t, envOpts{files: map[string]string{"a.txt": "a\n"}, journal: true})
	before := e.snapshot()
	ctx := context.Background()
	ref := e.call("write")
	w := e.tr.NewWindow(ref, true)
	p := filepath.Join(e.ws, "x", "y", "new.txt")
	if err := w.Before(ctx, p, nil, 0, false); err != nil {
		t.Fatal(err)
	}
	writeFile(t, p, "new\n", 0o644)
	if n, err := w.End(ctx); err != nil || n != 3 {
		t.Fatalf("%d paths, %v: %v", n, err, e.changes(ref))
	}
	e.revert(ref, false, false)
	if d := diffSnap(before, e.snapshot()); d != "" {
		t.Fatalf("after the revert:\n%s", d)
	}
}

// TestOwnFilesSkipped: toolsd's own files in the workspace (a store put there) are never
// tracked.
func TestOwnFilesSkipped(t *testing.T) {
	e := newEnv(t, envOpts{files: map[string]string{"a.txt": "a\n"}, journal: true, opts: func(o *Options) {
		o.Skip = func(abs string) bool { return filepath.Base(abs) == "own.db" }
	}})
	ref := e.shell("echo x > own.db && echo y >> a.txt")
	if got := e.changes(ref); len(got) != 1 || got["a.txt"].Status != protocol.ChangeModified {
		t.Fatalf("changes: %v", got)
	}
}

// TestFirstIndexWritten: the first look's index reaches the store as a base, the changes
// after it one by one, and the next start reads back the index it left; many changes are
// folded into a new base.
func TestFirstIndexWritten(t *testing.T) {
	for _, git := range []bool{false, true} {
		e := newEnv(t, envOpts{files: base, git: git, journal: true})
		<-e.tr.durable
		stored := func() map[string]store.FileState {
			t.Helper()
			out := map[string]store.FileState{}
			if complete, _, err := e.st.LoadCheckpointIndex(func(p string, s store.FileState) {
				if s.Kind == store.KindAbsent {
					delete(out, p)
				} else {
					out[p] = s
				}
			}); err != nil || !complete {
				t.Fatalf("git %v: the stored index: complete %v, %v", git, complete, err)
			}
			return out
		}
		inMemory := func() map[string]store.FileState {
			out := map[string]store.FileState{}
			e.tr.mu.Lock()
			e.tr.index.each(func(p string, s store.FileState) { out[p] = s })
			e.tr.mu.Unlock()
			return out
		}
		if got, want := stored(), inMemory(); !maps.Equal(got, want) || len(got) < 8 {
			t.Fatalf("git %v: stored %d paths, the index has %d", git, len(got), len(want))
		}
		e.shell("echo more >> dir/c.txt && rm b.txt && echo new > n.txt")
		want := inMemory()
		e.tr.Close()
		if got := stored(); !maps.Equal(got, want) {
			t.Fatalf("git %v: after a call the store has %v, the index %v", git, got, want)
		}
		e.open(envOpts{git: git, journal: true})
		if got := inMemory(); !maps.Equal(got, want) {
			t.Fatalf("git %v: reopened, the index is %v, want %v", git, got, want)
		}
		ref := e.shell("echo more >> dir/c.txt")
		if ch := e.changes(ref); len(ch) != 1 || ch["dir/c.txt"].Status != "modified" {
			t.Fatalf("git %v: the call after: %+v", git, ch)
		}
		foldAfter = 16
		t.Cleanup(func() { foldAfter = 4096 })
		e.shell("mkdir many && for i in $(seq 50); do echo $i > many/$i; done")
		want = inMemory()
		e.tr.Close() // waits for the base written after so many changes
		if _, changes, err := e.st.LoadCheckpointIndex(func(string, store.FileState) {}); err != nil || changes != 0 {
			t.Fatalf("git %v: %d changes after the base, %v: they were not folded into a new base", git, changes, err)
		}
		if got := stored(); !maps.Equal(got, want) {
			t.Fatalf("git %v: the new base has %d paths, the index %d", git, len(got), len(want))
		}
	}
}

// TestGitConvertedFilesRead: a file whose bytes are not its blob's (git converts it: here
// eol=crlf, with CRLF in the work tree and LF in the blob) is read at the first look rather
// than taken from git's index, whether the attributes file that says so is tracked or not;
// a revert gives back its CRLF bytes.
func TestGitConvertedFilesRead(t *testing.T) {
	files := map[string]string{"a.txt": "one\r\ntwo\r\n", "b.c": "plain\n", ".gitattributes": "*.txt text eol=crlf\n"}
	for _, tracked := range []bool{true, false} {
		t.Run(fmt.Sprintf("tracked=%v", tracked), func(t *testing.T) {
			e := newEnv(t, envOpts{files: files, git: true, journal: true})
			if !tracked {
				e.tr.Close()
				gitRun(t, e.ws, "rm", "-q", "--cached", ".gitattributes")
				gitRun(t, e.ws, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "untrack")
				e.st.Close()
				st, err := store.Open(filepath.Join(t.TempDir(), "store.db"), &store.Options{Retention: -1})
				if err != nil {
					t.Fatal(err)
				}
				e.st = st
				t.Cleanup(func() { st.Close() })
				e.open(envOpts{git: true, journal: true})
			}
			if a, _ := e.tr.index.get("a.txt"); a.Content == "" {
				t.Fatalf("a.txt was taken from git's index: %+v", a)
			}
			if b, _ := e.tr.index.get("b.c"); b.Git == "" || b.Content != "" {
				t.Fatalf("b.c was read: %+v", b)
			}
			before := e.snapshot()
			ref := e.shell("printf 'new\\n' > a.txt")
			e.revert(ref, false, false)
			if d := diffSnap(before, e.snapshot()); d != "" {
				t.Fatalf("after the revert:\n%s", d)
			}
		})
	}
}

// TestRacilyCleanFileIsReadAgain: a file the index holds with a stat identity that a write
// in the same tick of the clock would leave equal (a write of the same size, in place) is
// read again at the next sync, and its new bytes are seen. The index entry is forged to what
// such a write leaves: the file's stat now, with the content id of the bytes before.
func TestRacilyCleanFileIsReadAgain(t *testing.T) {
	for _, mode := range []struct {
		name string
		o    envOpts
	}{{"walk", envOpts{}}, {"journal", envOpts{journal: true}}} {
		t.Run(mode.name, func(t *testing.T) {
			o := mode.o
			o.files = map[string]string{"a.txt": "alpha\nbeta\n"}
			e := newEnv(t, o)
			p := filepath.Join(e.ws, "a.txt")
			f, err := os.OpenFile(p, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt([]byte("BETA"), 6); err != nil {
				t.Fatal(err)
			}
			f.Close()
			var st posix.Stat_t
			if err := posix.Fstatat(posix.AT_FDCWD, p, &st, posix.AT_SYMLINK_NOFOLLOW); err != nil {
				t.Fatal(err)
			}
			now, _ := statState(&st)
			e.tr.syncMu.Lock()
			defer e.tr.syncMu.Unlock()
			old, ok := e.tr.index.get("a.txt")
			if !ok {
				t.Fatal("a.txt is not in the index")
			}
			now.Content, now.Git = old.Content, old.Git
			e.tr.index.set("a.txt", now)
			if err := e.tr.syncLocked(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got, _ := e.tr.index.get("a.txt"); got.Content != store.ContentID([]byte("alpha\nBETA\n")) {
				t.Errorf("the index still holds the bytes before the write (%s)", got.Content)
			}
		})
	}
}
