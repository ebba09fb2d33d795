package session

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/toolsd/toolsd/config"
	"github.com/toolsd/toolsd/internal/proc"
	"github.com/toolsd/toolsd/internal/sandbox"
	"github.com/toolsd/toolsd/protocol"
)

// sandboxer decides how each tool process of the workspace is confined: from what the kernel
// offers (probed once), the sandbox settings (the workspace's own only once it is trusted),
// and the tool. Safe for concurrent use.
type sandboxer struct {
	folder string
	guard  string   // the guard's executable; "" when processes start unguarded
	ns     *nsProbe // the process's probe (tests give a workspace one of its own)
	// kernel is what the kernel offers without the namespace probe; support adds the
	// probe's answer (see nsProbe).
	kernel   sandbox.Support
	guarded  bool
	cacheDir string
	private  []string // the daemon's own folders: hidden from tools

	mu       sync.Mutex // guards settings, policies and journal
	settings config.Sandbox
	policies map[string]*sandbox.Policy // built, by the options they were built with
	// journal tells what a confined command made without walking the workspace: the
	// checkpoints' change journal (nil: checkpoints are off, and each command's guard walks).
	journal sandbox.Journal
}

// follow makes the checkpoints' change journal tell what a confined command made
// (sandbox.Policy.Journal).
func (s *sandboxer) follow(j sandbox.Journal) {
	s.mu.Lock()
	s.journal = j
	s.mu.Unlock()
}

// kernelSupport is what the kernel offers without user namespaces, probed once per process at
// the first workspace's open: Landlock and seccomp take two system calls, and the workspace's
// diagnostics and protected folders need the answer at once.
var kernelSupport = sync.OnceValue(func() sandbox.Support { return sandbox.Probe("") })

// probe is whether user namespaces can be had, probed once per process. It takes a run of
// the sandbox stage in new user, mount and network namespaces, a start of this binary of a
// few milliseconds: run inline at open it was about a third of spawn to initialize, and run
// in the background from the open it still competed with the daemon's start for the CPU
// (about 1.4 ms of spawn to initialize on 2 cores). So it starts once the client has its
// initialize result (the initialized notification: sandboxer.startProbe), or when a
// process is first confined, which waits for it either way.
var probe = newNSProbe(sandbox.ProbeNamespaces)

// nsProbe runs a namespace probe once, in the background. Safe for concurrent use.
type nsProbe struct {
	run     func(guard string) (bool, string)
	once    sync.Once
	started atomic.Bool
	done    chan struct{} // closed once ok and why are set
	ok      bool
	why     string
}

func newNSProbe(run func(guard string) (bool, string)) *nsProbe {
	return &nsProbe{run: run, done: make(chan struct{})}
}

// start starts the probe with the guard's executable, unless it has started already.
func (p *nsProbe) start(guard string) {
	p.once.Do(func() {
		p.started.Store(true)
		go func() {
			defer close(p.done)
			p.ok, p.why = p.run(guard)
		}()
	})
}

// result starts the probe if it has not started and waits for its answer.
func (p *nsProbe) result(guard string) (bool, string) {
	p.start(guard)
	<-p.done
	return p.ok, p.why
}

// settle waits for a probe that has started to end, so that its process does not outlive the
// workspace that started it (a daemon that exits at once would leave it to compete with what
// runs next).
func (p *nsProbe) settle() {
	if p.started.Load() {
		<-p.done
	}
}

func newSandboxer(folder, storePath string) *sandboxer {
	s := &sandboxer{folder: folder, guard: proc.GuardPath(), ns: probe}
	s.guarded = s.guard != ""
	if s.guarded {
		s.kernel = kernelSupport()
	}
	if base, err := os.UserCacheDir(); err == nil {
		// The workspace's own: a confined build never reads another project's cache.
		s.cacheDir, _ = sandbox.WorkspaceCache(filepath.Join(base, "toolsd", "sandbox"), folder)
	}
	// The store (the folder of the default one; only the file of one given on the command
	// line, whose folder may be anything).
	s.private = []string{storePath}
	if storePath == DefaultStorePath(folder) {
		s.private = []string{filepath.Dir(storePath)}
	}
	if rt := os.Getenv("XDG_RUNTIME_DIR"); rt != "" {
		s.private = append(s.private, filepath.Join(rt, "toolsd"))
	}
	s.private = append(s.private, filepath.Join(os.TempDir(), "toolsd-"+strconv.Itoa(os.Getuid())))
	if s.guarded && s.kernel.Available() {
		s.prepareProtected()
	}
	return s
}

// prepareProtected makes .toolsd, when it does not exist yet, empty, once, when the workspace
// opens: toolsd reads it live (its rules, its tools), so a confined command must not be able
// to create it even for the time it runs, and a folder can only be held read-only once it
// exists. (Another protected entry a confined command makes is moved aside by the guard once
// the command ended: sandbox.Watch.) Made here rather than by each command's stage, the
// folder is part of the workspace before the first look of the checkpoints, not a change of
// a call.
func (s *sandboxer) prepareProtected() {
	_ = os.Mkdir(filepath.Join(s.folder, ".toolsd"), 0o755) // the stage says so when it cannot protect it
}

// noSandbox says why nothing is confined where the system offers no sandbox.
var noSandbox = map[string]string{
	"linux":   "the kernel offers no Landlock or seccomp",
	"darwin":  "macOS offers no Seatbelt here (" + sandbox.SeatbeltExec + " is missing)",
	"windows": "Windows has no OS sandbox in toolsd yet",
}[runtime.GOOS]

// support is what the kernel offers, the namespace probe included: it starts the probe if
// it has not started, and waits for it.
func (s *sandboxer) support() sandbox.Support {
	if !s.guarded {
		return sandbox.Support{}
	}
	full := s.kernel
	full.Namespaces, full.NamespacesWhy = s.ns.result(s.guard)
	return full
}

// startProbe starts the namespace probe in the background, if it has not started: once the
// client has its initialize result, when the daemon has time to spare.
func (s *sandboxer) startProbe() {
	if s.guarded {
		s.ns.start(s.guard)
	}
}

// settle waits for the namespace probe to end if it has started (see nsProbe.settle).
func (s *sandboxer) settle() error {
	s.ns.settle()
	return nil
}

func (s *sandboxer) set(c config.Sandbox) {
	s.mu.Lock()
	s.settings = c
	s.policies = nil
	s.mu.Unlock()
}

// enabled reports whether the sandbox is on in the settings.
func (s *sandboxer) enabled(c config.Sandbox) bool { return c.Enabled == nil || *c.Enabled }

// diagnostics says what the person must know about the sandbox: that the kernel cannot
// confine (once), that it was turned off.
func (s *sandboxer) diagnostics() []protocol.Diagnostic {
	if !s.guarded {
		return nil
	}
	s.mu.Lock()
	c := s.settings
	s.mu.Unlock()
	if !s.enabled(c) {
		return nil // config reports the setting itself, where it is
	}
	if !s.kernel.Available() {
		msg := noSandbox + ": tool processes run unconfined, and every command asks as it would without a sandbox (docs/sandbox.md; toolsd sandbox check says what is missing)"
		return []protocol.Diagnostic{{Path: "sandbox", Message: msg, Severity: "warning"}}
	}
	return nil
}

// confine returns how a process of tool runs: over, when set, are a per-process setting (an
// MCP server's) that replace the per-tool ones.
func (s *sandboxer) confine(tool string, over *config.SandboxTool) *sandbox.Confinement {
	s.mu.Lock()
	c, journal := s.settings, s.journal
	s.mu.Unlock()
	t, ok := c.Tools[tool]
	if over != nil {
		t, ok = *over, true
	}
	switch {
	case !s.guarded:
		return &sandbox.Confinement{Why: "processes start without the guard here (no toolsd binary)"}
	case !s.enabled(c):
		return &sandbox.Confinement{Why: "the sandbox is turned off in the settings (sandbox.enabled)"}
	case ok && t.Enabled != nil && !*t.Enabled:
		return &sandbox.Confinement{Why: "the sandbox is turned off for " + tool + " in the settings"}
	case !s.kernel.Available():
		return &sandbox.Confinement{Why: noSandbox}
	}
	net := c.Network
	if ok && t.Network != nil {
		net = t.Network
	}
	unix := c.UnixSockets != nil && *c.UnixSockets
	if ok && t.UnixSockets != nil {
		unix = *t.UnixSockets
	}
	write := append([]string{}, c.Write...)
	if ok {
		write = append(write, t.Write...)
	}
	home, _ := os.UserHomeDir()
	tmp := os.Getenv("TMPDIR")
	if tmp == "" || !filepath.IsAbs(tmp) {
		tmp = os.TempDir()
	}
	var private []string
	for _, p := range s.private {
		if _, err := os.Lstat(p); err == nil {
			private = append(private, p)
		}
	}
	o := sandbox.Options{
		Workspace: s.folder, Home: home, TempDir: tmp, CacheDir: s.cacheDir,
		Write: write, Deny: c.Deny, Private: private, UnixSockets: unix,
		Net: sandbox.Net{Mode: sandbox.NetNone},
	}
	conf := &sandbox.Confinement{Mode: s.support().Mode(c.Mode == "landlock"), AutoAllow: c.AutoAllow == nil || *c.AutoAllow}
	var proxied *sandbox.Net
	if net != nil {
		switch {
		case net.Direct:
			o.Net.Mode = sandbox.NetDirect
		case len(net.Allow) > 0:
			p, err := sandbox.NewProxy(net.Allow, nil)
			if err != nil {
				// Still confined, without the network it could not be given.
				break
			}
			allow := append([]string{}, net.Allow...)
			sort.Strings(allow)
			proxied = &sandbox.Net{Mode: sandbox.NetProxy, Proxy: p.Addr(), Allow: allow}
			conf.Proxy = p
		}
	}
	// A copy of the policy built for these options: its lists are shared, and read only.
	p := *s.built(o)
	if proxied != nil {
		p.Net = *proxied // each process has a proxy of its own
	}
	p.LandlockOnly = c.Mode == "landlock"
	p.Journal = journal
	conf.Policy = &p
	return conf
}

// built returns sandbox.Build(o), built once per options until the settings change: a Build
// resolves every path of the policy (some 40 stats of the home folder), the same for every
// call of a tool.
func (s *sandboxer) built(o sandbox.Options) *sandbox.Policy {
	key := fmt.Sprintf("%#v", o)
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.policies[key]
	if !ok {
		p = sandbox.Build(o)
		if s.policies == nil {
			s.policies = map[string]*sandbox.Policy{}
		}
		s.policies[key] = p
	}
	return p
}

// appArmorBinaries are the binaries that make user namespaces: this one (the namespace probe)
// and the guard (each tool's stage).
func appArmorBinaries() []string {
	exe, err := os.Executable()
	if err != nil {
		return []string{proc.GuardPath()}
	}
	return []string{exe, proc.GuardPath()}
}

// SandboxCheck describes what the kernel offers the sandbox and the policy a bash command
// in folder would run with, under the user's settings (the workspace's own sandbox settings
// count only once the workspace is trusted, which this does not assume): what
// `toolsd sandbox check` prints.
func SandboxCheck(folder string) (string, error) {
	real, err := filepath.EvalSymlinks(folder)
	if err != nil {
		return "", err
	}
	l, diags := config.Load(real, nil)
	s := newSandboxer(real, DefaultStorePath(real))
	s.set(config.Merge(l.User, l.Editor).Sandbox)
	var b strings.Builder
	fmt.Fprintf(&b, "toolsd sandbox check: %s\n\nkernel:\n", real)
	support := s.support()
	for _, line := range support.Describe() {
		fmt.Fprintf(&b, "  %s\n", line)
	}
	if support.Available() && !support.Namespaces && support.AppArmorUserns && proc.GuardPath() != "" {
		fmt.Fprintf(&b, "\nto give toolsd's tools their namespaces, run (as a user who may use sudo), then this check again:\n\n")
		for _, line := range strings.SplitAfter(strings.TrimSuffix(sandbox.AppArmorFix(appArmorBinaries()...), "\n"), "\n") {
			fmt.Fprintf(&b, "    %s", line)
		}
		fmt.Fprintln(&b)
	}
	for _, d := range append(diags, s.diagnostics()...) {
		if strings.Contains(d.Message, "sandbox") || d.Path == "sandbox" {
			fmt.Fprintf(&b, "  %s: %s:%d:%d: %s\n", d.Severity, d.Path, d.Line, d.Column, d.Message)
		}
	}
	conf := s.confine("bash", nil)
	defer conf.Close()
	if !conf.Confined() {
		fmt.Fprintf(&b, "\nbash runs unconfined: %s\n", conf.Why)
		return b.String(), nil
	}
	p := conf.Policy
	fmt.Fprintf(&b, "\npolicy of a bash command (mode %s, auto-allow %v):\n", conf.Mode, conf.AutoAllow)
	fmt.Fprintf(&b, "  read:      %s\n", strings.Join(p.Read, ", "))
	fmt.Fprintf(&b, "  write:     %s\n", strings.Join(p.Write, ", "))
	fmt.Fprintf(&b, "  read-only: %s\n", strings.Join(p.Protect, ", "))
	fmt.Fprintf(&b, "  moved aside once a command ended, if it made them: a read-only entry above that did not exist, a git folder or git file anywhere in the workspace%s (they exist while it runs: docs/sandbox.md)\n", watchWords(p.Watch))
	fmt.Fprintf(&b, "  hidden:    %s\n", strings.Join(p.Deny, ", "))
	fmt.Fprintf(&b, "  network:   %s", p.Net.Mode)
	if len(p.Net.Allow) > 0 {
		fmt.Fprintf(&b, " (through the proxy to %s)", strings.Join(p.Net.Allow, ", "))
	}
	fmt.Fprintf(&b, "\n  unix sockets: %v; at most %d processes at once\n", p.UnixSockets, p.MaxProcs)
	return b.String(), nil
}

func watchWords(watch []string) string {
	if len(watch) == 0 {
		return ""
	}
	return ", " + strings.Join(watch, ", ")
}
