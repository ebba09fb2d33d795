package session

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolsd/toolsd/config"
	"github.com/toolsd/toolsd/internal/proc"
	"github.com/toolsd/toolsd/internal/sandbox"
	"github.com/toolsd/toolsd/protocol"
)

// answerer answers every ask once, counting them.
type answerer struct {
	w    *Client
	mu   sync.Mutex // guards asks
	asks []protocol.AskedParams
	wg   sync.WaitGroup
}

func (a *answerer) Progress(protocol.ProgressParams) {}
func (a *answerer) Answered(protocol.AnsweredParams) {}
func (a *answerer) Changed(protocol.ChangedParams)   {}
func (a *answerer) Clients(protocol.ClientsParams)   {}
func (a *answerer) Asked(p protocol.AskedParams) {
	a.mu.Lock()
	a.asks = append(a.asks, p)
	a.mu.Unlock()
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		_, _ = a.w.Reply(protocol.ReplyParams{ID: p.ID, Reply: protocol.ReplyOnce})
	}()
}

func (a *answerer) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.asks)
}

// day is a scripted day of ordinary work, as an agent runs it.
var day = []string{
	"go build ./...",
	"go vet ./...",
	"go test ./...",
	"go test -run TestGreet -v ./...",
	"gofmt -l .",
	"gofmt -w main.go",
	"git status",
	"git diff",
	"grep -rn TODO .",
	"sed -i 's/hello/hi/' main.go",
	"git diff --stat",
	"git add -A && git commit -qm 'say hi'",
	"git log --oneline -3",
	"make build",
	"ls -la bin",
	"npm test",
	"cat package.json",
	"mkdir -p internal/greet && echo 'package greet' > internal/greet/greet.go",
	"go build ./... && go run .",
	"rm -f bin/app",
	"wc -l *.go",
	"head -5 main.go",
	"find . -name '*.go' -not -path './.git/*'",
	"echo done > /tmp/toolsd-day-$$.txt",
}

// outside are the lines of the day that cannot run confined: they write the git folder,
// which a confined command cannot change (docs/sandbox.md). The daemon offers to run them
// outside the sandbox.
var outside = map[string]bool{"git add -A && git commit -qm 'say hi'": true}

// dayFiles are the workspace the day works in.
var dayFiles = map[string]string{
	"go.mod":       "module example.com/day\n\ngo 1.22\n",
	"main.go":      "package main\n\nimport \"fmt\"\n\n// TODO: more greetings\nfunc greet() string { return \"hello\" }\n\nfunc main() { fmt.Println(greet()) }\n",
	"main_test.go": "package main\n\nimport \"testing\"\n\nfunc TestGreet(t *testing.T) {\n\tif greet() == \"\" {\n\t\tt.Fatal(\"empty\")\n\t}\n}\n",
	"Makefile":     "build:\n\tgo build -o bin/app .\n",
	"package.json": `{"name": "day", "version": "1.0.0", "scripts": {"test": "node test.js"}}` + "\n",
	"test.js":      "console.log('1 passed, 0 failed');\n",
}

// TestSandboxDayOfWork runs a day of ordinary work with the default rules, confined, once
// with the sandbox's auto-allow and once without: every command must work in the sandbox
// (but those that write the git folder, which run outside it once the person allows), and
// the auto-allow must save at least 80% of the asks.
func TestSandboxDayOfWork(t *testing.T) {
	if !sandbox.Probe("").Available() {
		t.Skip("the kernel offers no Landlock")
	}
	for _, tool := range []string{"go", "git", "make", "npm", "node"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("GORACE", "atexit_sleep_ms=0")
	for k, v := range map[string]string{"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com", "XDG_CONFIG_HOME": t.TempDir(), "GOFLAGS": "-mod=mod", "GOTOOLCHAIN": "local"} {
		t.Setenv(k, v)
	}
	proc.SetGuardPath(exe)
	defer proc.SetGuardPath("")

	run := func(t *testing.T, autoAllow bool) (asks int) {
		ws := t.TempDir()
		for name, content := range dayFiles {
			if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if out, err := exec.Command("git", "-C", ws, "init", "-q").CombinedOutput(); err != nil {
			t.Fatalf("git init: %v %s", err, out)
		}
		if out, err := exec.Command("git", "-C", ws, "add", "-A").CombinedOutput(); err != nil {
			t.Fatalf("git add: %v %s", err, out)
		}
		if out, err := exec.Command("git", "-C", ws, "commit", "-qm", "start").CombinedOutput(); err != nil {
			t.Fatalf("git commit: %v %s", err, out)
		}
		a := &answerer{}
		opts, _ := json.Marshal(map[string]any{"sandbox": map[string]any{"autoAllow": autoAllow}})
		w, err := Open(context.Background(), WorkspaceOptions{Folder: ws, StorePath: filepath.Join(t.TempDir(), "s.db"), InitOptions: opts},
			ClientOptions{Name: "test", Kind: protocol.ClientEditor, CanAsk: true, Sink: a})
		if err != nil {
			t.Fatal(err)
		}
		a.w = w
		defer func() {
			a.wg.Wait()
			_ = w.Close()
		}()
		for i, line := range day {
			// Each workspace's first confined go build fills its own build cache (docs/sandbox.md): on a
			// busy machine that alone takes minutes.
			args, _ := json.Marshal(map[string]any{"command": line, "timeout": 600000})
			ctx, cancel := context.WithTimeout(context.Background(), 11*time.Minute)
			res, err := w.Execute(ctx, protocol.ExecuteParams{SessionID: "day", MessageID: "m", CallID: fmt.Sprint("c", i), Tool: "bash", Args: args})
			cancel()
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			var md map[string]any
			_ = json.Unmarshal(res.Metadata, &md)
			if res.Status != protocol.StatusCompleted || md["exit"] != float64(0) {
				t.Errorf("%q failed in the sandbox (%s, exit %v): %s%s", line, res.Status, md["exit"], res.Output, res.Error)
			}
			sb, _ := md["sandbox"].(map[string]any)
			if outside[line] {
				// The git folder is read-only in the sandbox: the daemon asked to run it
				// outside, and the answerer allowed it.
				if sb["confined"] == true || !strings.Contains(res.Output, "outside the sandbox") {
					t.Errorf("%q: want it blocked in the sandbox and run outside it as the person allowed: %v\n%s", line, md["sandbox"], res.Output)
				}
			} else if sb["confined"] != true {
				t.Errorf("%q did not run confined: %v", line, md["sandbox"])
			}
		}
		return a.count()
	}
	var with, without int
	t.Run("auto-allow", func(t *testing.T) { with = run(t, true) })
	t.Run("asking", func(t *testing.T) { without = run(t, false) })
	t.Logf("asks over a day of %d commands: %d with the sandbox's auto-allow, %d without", len(day), with, without)
	if without == 0 || float64(without-with) < 0.8*float64(without) {
		t.Errorf("asks: %d with the auto-allow, %d without: want at least 80%% fewer", with, without)
	}
}

// TestSandboxHidesTheStore: tool processes do not get the store, wherever it is.
func TestSandboxHidesTheStore(t *testing.T) {
	ws := t.TempDir()
	custom := filepath.Join(t.TempDir(), "s.db")
	if s := newSandboxer(ws, custom); !slices.Contains(s.private, custom) {
		t.Fatalf("private %v: want the store %s", s.private, custom)
	}
	def := DefaultStorePath(ws)
	if s := newSandboxer(ws, def); !slices.Contains(s.private, filepath.Dir(def)) {
		t.Fatalf("private %v: want the default store's folder %s", s.private, filepath.Dir(def))
	}
}

// TestNamespaceProbeWaitsForInitialized: opening a workspace does not start the namespace
// probe, a start of this binary that would compete with the daemon's own start for the CPU
// before the initialize answer; the client's initialized notification starts it, once per
// process (a client attached later starts nothing), and without it the first confined
// process does, and waits for its answer.
func TestNamespaceProbeWaitsForInitialized(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	proc.SetGuardPath(exe)
	defer proc.SetGuardPath("")
	// open opens a workspace whose namespace probe is a fake that counts its runs.
	open := func(t *testing.T) (*Client, *nsProbe, *atomic.Int32) {
		runs := &atomic.Int32{}
		p := newNSProbe(func(guard string) (bool, string) {
			if guard != exe {
				t.Errorf("the probe ran %q, not the guard %q", guard, exe)
			}
			runs.Add(1)
			return false, "test: no namespaces"
		})
		old := probe
		probe = p
		defer func() { probe = old }()
		c, err := Open(context.Background(), WorkspaceOptions{Folder: t.TempDir(), StorePath: filepath.Join(t.TempDir(), "s.db")},
			ClientOptions{Name: "test", Kind: protocol.ClientEditor, Sink: &answerer{}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		if p.started.Load() {
			t.Fatal("opening the workspace started the namespace probe")
		}
		return c, p, runs
	}
	waitDone := func(t *testing.T, p *nsProbe) {
		select {
		case <-p.done:
		case <-time.After(20 * time.Second):
			t.Fatal("the namespace probe did not end")
		}
	}

	t.Run("initialized", func(t *testing.T) {
		c, p, runs := open(t)
		c.Initialized()
		if !p.started.Load() {
			t.Fatal("initialized did not start the namespace probe")
		}
		waitDone(t, p)
		other, err := c.Workspace().Attach(ClientOptions{Name: "second", Kind: protocol.ClientEditor, Sink: &answerer{}})
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		other.Initialized()
		c.Initialized()
		if n := runs.Load(); n != 1 {
			t.Fatalf("the namespace probe ran %d times, want once", n)
		}
	})

	t.Run("first confined process", func(t *testing.T) {
		if !sandbox.Probe("").Available() {
			t.Skip("the kernel offers no Landlock")
		}
		c, _, runs := open(t)
		conf := c.Workspace().sandbox.confine("bash", nil)
		defer conf.Close()
		if n := runs.Load(); n != 1 {
			t.Fatalf("confining a process ran the namespace probe %d times, want once", n)
		}
		if conf.Mode != sandbox.ModeLandlock {
			t.Fatalf("confined in mode %q; the probe said no namespaces, so want %q", conf.Mode, sandbox.ModeLandlock)
		}
	})
}

// TestSandboxPolicyBuiltOncePerSettings: the calls of a workspace share one policy, built
// once (each build resolves every path of the home folder), until the settings change.
func TestSandboxPolicyBuiltOncePerSettings(t *testing.T) {
	s := &sandboxer{folder: t.TempDir(), guard: "/toolsd", guarded: true, kernel: sandbox.Support{LandlockABI: 7, Seccomp: true},
		ns: newNSProbe(func(string) (bool, string) { return false, "not here" })}
	first, second := s.confine("bash", nil), s.confine("bash", nil)
	if &first.Policy.Deny[0] != &second.Policy.Deny[0] {
		t.Fatal("two calls with the same settings built the policy twice")
	}
	s.set(config.Sandbox{Mode: "landlock"})
	if !s.confine("bash", nil).Policy.LandlockOnly || first.Policy.LandlockOnly {
		t.Fatal("a policy's copy is shared between calls")
	}
	extra := t.TempDir()
	s.set(config.Sandbox{Write: []string{extra}})
	if third := s.confine("bash", nil); !slices.Contains(third.Policy.Write, extra) || &third.Policy.Deny[0] == &first.Policy.Deny[0] {
		t.Fatalf("the settings changed and the policy did not: write %v", third.Policy.Write)
	}
}

// TestSandboxCachePerWorkspace: confined builds of two workspaces get two build caches, so
// that a hostile repository's build cannot poison another project's.
func TestSandboxCachePerWorkspace(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	a, b := newSandboxer(t.TempDir(), filepath.Join(t.TempDir(), "s.db")), newSandboxer(t.TempDir(), filepath.Join(t.TempDir(), "s.db"))
	if a.cacheDir == "" || a.cacheDir == b.cacheDir {
		t.Fatalf("caches %q and %q: want one per workspace", a.cacheDir, b.cacheDir)
	}
}

// TestSandboxLooksFromTheJournal: with checkpoints on, what a confined command made is found
// from the change journal, not by walking the workspace before and after it: a git folder
// made in a folder that was there, one made by git init in new folders, one in the ignored
// node_modules (looked into from listings kept while each folder's ctime stays: the journal
// does not watch it), also one whose folder's times were set back after, are moved aside, and the nested
// repository the journal knows is read-only for the command, with no walk of the whole
// workspace. A command during which the journal cannot vouch (it renamed a folder) is looked
// at by a walk.
func TestSandboxLooksFromTheJournal(t *testing.T) {
	if !sandbox.Probe("").Available() {
		t.Skip("the kernel offers no Landlock")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("GORACE", "atexit_sleep_ms=0")
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	proc.SetGuardPath(exe)
	defer proc.SetGuardPath("")
	ws := t.TempDir()
	for name, content := range map[string]string{"src/main.go": "package main\n", ".gitignore": "node_modules/\n", "node_modules/pkg/index.js": "x\n"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(ws, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, dir := range []string{ws, filepath.Join(ws, "sub")} {
		if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
			t.Fatalf("git init: %v %s", err, out)
		}
	}
	for made := time.Now(); time.Since(made) < 2500*time.Millisecond; {
		time.Sleep(100 * time.Millisecond) // past the look's racy margin: the listings of node_modules are kept
	}
	w := openAnswering(t, ws, false)
	bash := func(command string) string {
		t.Helper()
		args, _ := json.Marshal(map[string]any{"command": command})
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res, err := w.Execute(ctx, protocol.ExecuteParams{SessionID: "s", MessageID: "m", CallID: fmt.Sprint("c", time.Now().UnixNano()), Tool: "bash", Args: args})
		if err != nil || res.Status != protocol.StatusCompleted {
			t.Fatalf("%s: %v %+v", command, err, res)
		}
		return res.Output
	}
	moved := func(out string, rels ...string) {
		t.Helper()
		for _, rel := range rels {
			if _, err := os.Lstat(filepath.Join(ws, rel)); err == nil {
				t.Errorf("%s is still there:\n%s", rel, out)
			}
			if _, err := os.Lstat(filepath.Join(ws, rel+sandbox.Quarantine)); err != nil || !strings.Contains(out, rel) {
				t.Errorf("%s was not moved aside, or the output does not say so (%v):\n%s", rel, err, out)
			}
		}
	}

	walks, journaled := sandbox.Looks()
	out := bash(`mkdir -p src/made/.git node_modules/evil/.git && git init -q deep/a/b && { echo x > sub/.git/planted; true; }`)
	moved(out, "src/made/.git", "node_modules/evil/.git", "deep/a/b/.git")
	if _, err := os.Lstat(filepath.Join(ws, "sub/.git/planted")); err == nil {
		t.Errorf("the nested repository was written:\n%s", out)
	}
	if n, m := sandbox.Looks(); n != walks || m != journaled+1 {
		t.Errorf("%d walks of the workspace, %d looks from the journal for a command the journal vouches for: want 0 and 1", n-walks, m-journaled)
	}
	walks, journaled = sandbox.Looks()
	out = bash(`m=$(stat -c %y node_modules/pkg) && mkdir node_modules/pkg/.git && touch -d "$m" node_modules/pkg`)
	moved(out, "node_modules/pkg/.git")
	if n, m := sandbox.Looks(); n != walks || m != journaled+1 {
		t.Errorf("%d walks of the workspace, %d looks from the journal for a command in the ignored folder: want 0 and 1", n-walks, m-journaled)
	}

	walks, journaled = sandbox.Looks()
	out = bash(`mv src src2 && mkdir -p src2/x/.git`)
	moved(out, "src2/x/.git")
	if n, m := sandbox.Looks(); n != walks+1 || m != journaled {
		t.Errorf("%d walks of the workspace, %d looks from the journal for a command during which the journal broke: want 1 and 0", n-walks, m-journaled)
	}

	// Checkpoints off: no journal; the guard looks, walking, and the daemon takes no look.
	w = openAnswering(t, t.TempDir(), true)
	walks, journaled = sandbox.Looks()
	out = bash(`mkdir -p src/x/.git`)
	if !strings.Contains(out, "src/x/.git") || !strings.Contains(out, "moved it aside") {
		t.Errorf("with checkpoints off, the git folder made was not moved aside:\n%s", out)
	}
	if n, m := sandbox.Looks(); n != walks || m != journaled {
		t.Errorf("with checkpoints off the daemon took a look (%d walks, %d from a journal): the guard looks", n-walks, m-journaled)
	}
}

// openAnswering opens the workspace ws (with checkpoints unless noCheckpoints) for a client
// that allows every ask once.
func openAnswering(t *testing.T, ws string, noCheckpoints bool) *Client {
	t.Helper()
	a := &answerer{}
	w, err := Open(context.Background(), WorkspaceOptions{Folder: ws, StorePath: filepath.Join(t.TempDir(), "s.db"), NoCheckpoints: noCheckpoints},
		ClientOptions{Name: "test", Kind: protocol.ClientEditor, CanAsk: true, Sink: a})
	if err != nil {
		t.Fatal(err)
	}
	a.w = w
	t.Cleanup(func() {
		a.wg.Wait()
		_ = w.Close()
	})
	return w
}
