package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/toolsd/toolsd/internal/fspath"
)

// Network modes of a Policy.
const (
	// NetNone: no network at all (loopback inside the tool's own network namespace only).
	NetNone = "none"
	// NetProxy: only HTTP(S) through the daemon's egress proxy, which allows the domains of
	// the policy's allowlist.
	NetProxy = "proxy"
	// NetDirect: the network is not confined (a setting for MCP servers that need it).
	NetDirect = "direct"
)

// Policy is what one confined process may do. The daemon builds it (Build), the guard hands
// it to the process's stage (RunStage), which applies it right before it execs the tool. Every
// path is absolute and clean; the real location of each is what is confined. A Policy is a
// value: nothing in it changes after Build.
type Policy struct {
	// Read are folders (or files) whose contents may be read and executed: "/" by default.
	Read []string `json:"read"`
	// Write are folders (or files) that may be written: the workspace, the temp folder, the
	// sandbox's cache folder, and configured ones.
	Write []string `json:"write"`
	// Protect are paths inside Write that stay read-only: the workspace's git folder (or git
	// file) and the settings at its top level that internal/protect names (.toolsd, the
	// editors' and agents' folders, .envrc, …), the git folder a git file leads to, and the
	// nested git repositories found before the command starts (StartWatch).
	Protect []string `json:"protect"`
	// Workspace is the workspace folder: after the command, every git folder or git file
	// that appeared in it, at any depth, and every protected settings entry that appeared
	// at its top level, is moved aside (Watch).
	Workspace string `json:"workspace,omitempty"`
	// Watch are paths outside the workspace that the command may not create, checked the
	// same way after it: a git folder in a writable folder above the workspace (git would
	// take it for the workspace's repository), git's user configuration in a writable home.
	Watch []string `json:"watch,omitempty"`
	// Deny are paths that may be neither read nor written (secrets, the daemon's own
	// folders), wherever they are.
	Deny []string `json:"deny"`
	// Temp is the tool's temp folder (one of Write).
	Temp string `json:"temp,omitempty"`
	// Net is what network the process gets.
	Net Net `json:"net"`
	// UnixSockets lets the process create Unix sockets (socketpair always works). Off by
	// default: a Unix socket reaches the daemon's socket, an ssh-agent or a container engine.
	UnixSockets bool `json:"unixSockets,omitempty"`
	// MaxProcs bounds how many processes the tool's tree may hold at once (0: no bound).
	MaxProcs int `json:"maxProcs,omitempty"`
	// Env are variables set for the tool ("K=V"): its build caches in the sandbox's cache
	// folder.
	Env []string `json:"env,omitempty"`
	// Landlock, when set, confines without namespaces even where the kernel has them
	// (ModeLandlock): a setting for kernels whose namespaces misbehave, and the tests'.
	LandlockOnly bool `json:"landlockOnly,omitempty"`
	// Daemon is the daemon's pid: on kernels without Landlock's signal scoping, the seccomp
	// filter refuses signals to it.
	Daemon int `json:"daemon,omitempty"`
	// Checker is the pid of the daemon that looks, once the command's guard has ended, at
	// what the command made (StartWatch and Watch.Finish, with its Journal); 0: the guard
	// looks, before and after the command. The guard also looks if that process is no
	// longer its parent when the tree has ended (the daemon died), comparing with Seen.
	Checker int `json:"checker,omitempty"`
	// Seen is, with Checker, what the daemon saw before the command: the protected entries,
	// watched paths, git folders and git files, each with its identity (device, inode, type
	// and birth time: fileID).
	Seen map[string][4]uint64 `json:"seen,omitempty"`
	// Journal, in the daemon, is where StartWatch learns what is in the workspace and what
	// a command created in it without walking it (nil: it walks). Never sent to the guard.
	Journal Journal `json:"-"`
}

// Net is the network of a Policy.
type Net struct {
	// Mode is NetNone, NetProxy or NetDirect.
	Mode string `json:"mode"`
	// Proxy is the daemon's egress proxy ("127.0.0.1:port") in NetProxy mode. The process
	// finds it at the same address, inside its own network namespace when it has one.
	Proxy string `json:"proxy,omitempty"`
	// Allow are the proxy's allowed domains, for display.
	Allow []string `json:"allow,omitempty"`
}

// Encode returns the policy as the guard's -sandbox argument.
func (p *Policy) Encode() string {
	b, _ := json.Marshal(p)
	return string(b)
}

// Decode reads a policy from Encode's text and checks it.
func Decode(s string) (*Policy, error) {
	var p Policy
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("sandbox: bad policy: %w", err)
	}
	return &p, p.Check()
}

// Check reports a policy that cannot be applied: a path that is not absolute, or an
// unknown network mode.
func (p *Policy) Check() error {
	for _, list := range [][]string{p.Read, p.Write, p.Protect, p.Deny} {
		for _, x := range list {
			if !filepath.IsAbs(x) || strings.IndexByte(x, 0) >= 0 {
				return fmt.Errorf("sandbox: path %q is not absolute", x)
			}
		}
	}
	switch p.Net.Mode {
	case NetNone, NetDirect:
	case NetProxy:
		if p.Net.Proxy == "" {
			return fmt.Errorf("sandbox: network mode %q needs the proxy's address", NetProxy)
		}
	default:
		return fmt.Errorf("sandbox: unknown network mode %q", p.Net.Mode)
	}
	return nil
}

// within reports whether p lies in one of dirs (or is one).
func within(p string, dirs []string) bool {
	for _, d := range dirs {
		if _, ok := fspath.Within(d, p); ok {
			return true
		}
	}
	return false
}

// real returns where p really leads (symlinks resolved, also for a path not created yet).
func real(p string) string {
	if r, err := fspath.Real(filepath.Clean(p)); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// MayWrite reports whether the policy lets a process write the file or folder at abs.
func (p *Policy) MayWrite(abs string) bool {
	r := real(abs)
	return within(r, p.Write) && !within(r, p.Protect) && !within(r, p.Deny)
}

// MayRead reports whether the policy lets a process read the file or folder at abs.
func (p *Policy) MayRead(abs string) bool {
	r := real(abs)
	return (within(r, p.Read) || within(r, p.Write)) && !within(r, p.Deny)
}

// Summary is what a person and the model are shown of a policy.
type Summary struct {
	Confined bool     `json:"confined"`
	Mode     string   `json:"mode,omitempty"` // "namespaces" or "landlock"
	Write    []string `json:"write,omitempty"`
	ReadOnly []string `json:"readOnly,omitempty"`
	Hidden   []string `json:"hidden,omitempty"`
	Network  string   `json:"network,omitempty"`
	Allow    []string `json:"allow,omitempty"`
	// Why says why a call ran unconfined.
	Why string `json:"why,omitempty"`
}

// Summary returns the policy as shown in asks and call records.
func (p *Policy) Summary(mode string) Summary {
	return Summary{Confined: true, Mode: mode, Write: p.Write, ReadOnly: p.Protect, Hidden: p.Deny, Network: p.Net.Mode, Allow: p.Net.Allow}
}

// DefaultDeny are the paths a confined process can neither read nor write, "~" being the
// home folder: credentials of the usual tools. Settings add to the list.
var DefaultDeny = []string{
	"~/.ssh", "~/.gnupg", "~/.aws", "~/.azure", "~/.config/gcloud", "~/.config/gh",
	"~/.kube", "~/.docker/config.json", "~/.netrc", "~/.git-credentials",
	"~/.config/git/credentials", "~/.npmrc", "~/.pypirc", "~/.cargo/credentials.toml",
	"~/.cargo/credentials", "~/.password-store", "~/.local/share/keyrings",
	"~/.vault-token", "~/.terraform.d/credentials.tfrc.json",
}

// Options are what Build needs besides the settings.
type Options struct {
	// Workspace is the workspace folder (real path).
	Workspace string
	// Home is the user's home folder ("" when there is none).
	Home string
	// TempDir is the temp folder of the tool's environment ($TMPDIR, else the system's).
	TempDir string
	// CacheDir is the workspace's own sandbox cache folder (build caches of its confined
	// commands; WorkspaceCache).
	CacheDir string
	// Write are more writable folders (settings); "~/" is the home folder.
	Write []string
	// Deny are more unreadable paths (settings), added to DefaultDeny.
	Deny []string
	// Private are the daemon's own folders (its store, its socket folder): denied too.
	Private []string
	// Net is the network.
	Net Net
	// UnixSockets lets the tool create Unix sockets.
	UnixSockets bool
	// MaxProcs bounds the tool's tree (0: DefaultMaxProcs).
	MaxProcs int
}

// DefaultMaxProcs is how many processes a confined tool's tree may hold at once.
const DefaultMaxProcs = 1024

// Build returns the policy for a tool process: read the system, write the workspace, the
// temp folder, the cache folder and the configured folders; the workspace's git folder and
// protected settings read-only (protected); the secrets and the daemon's folders hidden.
func Build(o Options) *Policy {
	expand := func(x string) string {
		switch {
		case x == "~":
			return o.Home
		case strings.HasPrefix(x, "~/"):
			if o.Home == "" {
				return ""
			}
			return filepath.Join(o.Home, x[2:])
		}
		return x
	}
	var deny []string
	for _, d := range append(slices.Clone(DefaultDeny), o.Deny...) {
		if x := expand(d); x != "" && filepath.IsAbs(x) {
			deny = append(deny, real(x))
		}
	}
	for _, d := range o.Private {
		if d != "" && filepath.IsAbs(d) {
			deny = append(deny, real(d))
		}
	}
	write := []string{real(o.Workspace)}
	for _, d := range []string{o.TempDir, o.CacheDir, "/dev/shm"} {
		if d != "" {
			write = append(write, real(d))
		}
	}
	for _, d := range o.Write {
		if x := expand(d); x != "" && filepath.IsAbs(x) {
			write = append(write, real(x))
		}
	}
	ws := real(o.Workspace)
	write = dedupe(write)
	protect, watch := protected(ws, o.Home, write)
	maxProcs := o.MaxProcs
	if maxProcs <= 0 {
		maxProcs = DefaultMaxProcs
	}
	net := o.Net
	if net.Mode == "" {
		net.Mode = NetNone
	}
	var env []string
	if o.CacheDir != "" {
		// Build caches of confined commands are their own: a cache they could write and an
		// unconfined build would then trust is a way out.
		c := real(o.CacheDir)
		env = []string{"XDG_CACHE_HOME=" + c, "GOCACHE=" + filepath.Join(c, "go-build"), "npm_config_cache=" + filepath.Join(c, "npm"),
			"PIP_CACHE_DIR=" + filepath.Join(c, "pip"), "YARN_CACHE_FOLDER=" + filepath.Join(c, "yarn")}
	}
	return &Policy{
		Read: []string{"/"}, Write: write, Protect: protect, Workspace: ws, Watch: watch, Deny: dedupe(deny), Temp: tempReal(o.TempDir),
		Net: net, UnixSockets: o.UnixSockets, MaxProcs: maxProcs, Env: env, Daemon: os.Getpid(),
	}
}

func dedupe(xs []string) []string {
	var out []string
	for _, x := range xs {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// Confinement is how one tool process is to run, as the daemon decided it: its policy (nil:
// unconfined, and Why says why), the mode it runs in, whether a confined shell command that
// nothing but the defaults asks for may run without an ask, and the proxy its network goes
// through. Whoever got it calls Close when the process has ended.
type Confinement struct {
	Policy    *Policy
	Mode      string
	AutoAllow bool
	Why       string
	Proxy     *Proxy
}

// Confined reports whether the process runs confined.
func (c *Confinement) Confined() bool { return c != nil && c.Policy != nil }

// Summary is what the ask and the call record show.
func (c *Confinement) Summary() Summary {
	if !c.Confined() {
		why := "the sandbox is not set up"
		if c != nil && c.Why != "" {
			why = c.Why
		}
		return Summary{Why: why}
	}
	return c.Policy.Summary(c.Mode)
}

// Blocked returns what the proxy refused so far.
func (c *Confinement) Blocked() []string {
	if c == nil || c.Proxy == nil {
		return nil
	}
	return c.Proxy.Blocked()
}

// Close releases the proxy.
func (c *Confinement) Close() {
	if c != nil && c.Proxy != nil {
		_ = c.Proxy.Close()
	}
}

func tempReal(d string) string {
	if d == "" {
		return ""
	}
	return real(d)
}
