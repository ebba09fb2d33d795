package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/toolsd/toolsd/internal/proc"
	"github.com/toolsd/toolsd/internal/sandbox"
	"github.com/toolsd/toolsd/permission"
	"github.com/toolsd/toolsd/permission/shell"
	"github.com/toolsd/toolsd/registry"
)

const bashDescription = `Runs a shell command with bash -c and returns its output (stdout and stderr interleaved, as a terminal shows them).

Usage:
- The command runs in the workspace root, or in workdir (relative to the workspace, or absolute). Use workdir instead of "cd <dir> && ...".
- It has no terminal and no input: stdin is empty, so anything that waits for input (a prompt, a pager, an editor, "git commit" without -m) fails at once instead of hanging. Pass flags that make commands non-interactive (-y, --yes, --no-edit).
- timeout is in milliseconds: %[1]d by default, at most %[2]d. When it runs out, the command and everything it started are killed and the output says so.
- Every process the command starts is killed when the command ends, also one started in the background, with nohup or setsid, or as a daemon: nothing outlives the call. To try a server, start it, use it and stop it in one command (./server >server.log 2>&1 & sleep 1; curl -s localhost:8080; kill %%1).
- A non-zero exit code is not an error: the output ends with "[exit code N]" and the metadata has the code.
- Long output is cut to its head and tail before you see it; the note names a toolsd://output/<id> path to read or grep the rest.
- Quote paths with spaces in double quotes. Chain dependent commands with &&; use ; only when a failure should not stop the rest.
- description: say in 5-10 words what the command does ("Runs the unit tests of the parser"), for the person watching.
- Prefer the dedicated tools: read instead of cat/head/tail, grep instead of grep/rg, glob instead of find, edit instead of sed.`

func bashTool(o *Options) *registry.Tool {
	s := schema{
		props: []prop{
			{"command", map[string]any{"type": "string", "minLength": 1, "description": "The command to run (bash syntax)."}},
			{"timeout", map[string]any{"type": "integer", "minimum": 1, "maximum": o.BashMaxTimeout.Milliseconds(), "description": fmt.Sprintf("Time limit in milliseconds (default %d, at most %d).", o.BashDefaultTimeout.Milliseconds(), o.BashMaxTimeout.Milliseconds())}},
			{"workdir", map[string]any{"type": "string", "minLength": 1, "description": "The folder to run the command in (default: the workspace root). Use it instead of cd."}},
			{"description", map[string]any{"type": "string", "description": "What the command does, in 5-10 words, for the person watching."}},
		},
		required: []string{"command"},
	}
	return &registry.Tool{
		ID:          "bash",
		Description: fmt.Sprintf(bashDescription, o.BashDefaultTimeout.Milliseconds(), o.BashMaxTimeout.Milliseconds()),
		Parameters:  s.raw(),
		Permission:  "bash",
		Execute: func(ctx context.Context, call *registry.Call, args json.RawMessage) (*registry.Result, error) {
			var a struct {
				Command     string  `json:"command"`
				Timeout     *int64  `json:"timeout"`
				Workdir     *string `json:"workdir"`
				Description *string `json:"description"`
			}
			if err := decode(args, &a); err != nil {
				return nil, err
			}
			return runBash(ctx, o, call, a.Command, a.Timeout, deref(a.Workdir), deref(a.Description))
		},
	}
}

func deref[T any](p *T) T {
	var z T
	if p == nil {
		return z
	}
	return *p
}

// bashEnv is set for every command so that nothing waits for a person.
var bashEnv = []string{
	"GIT_TERMINAL_PROMPT=0",
	"GIT_EDITOR=true",
	"GIT_SEQUENCE_EDITOR=true",
	"GIT_PAGER=cat",
	"PAGER=cat",
	"MANPAGER=cat",
	"SYSTEMD_PAGER=",
	"EDITOR=true",
	"VISUAL=true",
	"DEBIAN_FRONTEND=noninteractive",
	"GCM_INTERACTIVE=never",
	"SSH_ASKPASS=",
	"GIT_ASKPASS=",
	"SUDO_ASKPASS=/bin/false",
	"CDPATH=", // cd goes where the permission analysis saw it go
	"NO_COLOR=1",
	"TERM=dumb",
	"CI=true",
	"npm_config_yes=true",
	"PIP_NO_INPUT=1",
	"HOMEBREW_NO_AUTO_UPDATE=1",
}

func environ() []string {
	env := os.Environ()
	keep := env[:0]
	set := map[string]bool{}
	for _, kv := range bashEnv {
		k, _, _ := strings.Cut(kv, "=")
		set[k] = true
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if k == "PATH" {
			kv = "PATH=" + absolutePath(v)
		}
		if !set[k] {
			keep = append(keep, kv)
		}
	}
	return append(keep, bashEnv...)
}

// absolutePath keeps the absolute folders of a PATH: an empty entry, "." or any relative
// one would let a file in the workspace (or wherever a command cd's to) run as "ls".
func absolutePath(path string) string {
	var keep []string
	for _, dir := range filepath.SplitList(path) {
		if filepath.IsAbs(dir) {
			keep = append(keep, dir)
		}
	}
	return strings.Join(keep, string(filepath.ListSeparator))
}

func runBash(ctx context.Context, o *Options, call *registry.Call, command string, timeoutMs *int64, workdir, description string) (*registry.Result, error) {
	if strings.TrimSpace(command) == "" {
		return nil, errors.New("command is empty: pass the shell command to run")
	}
	if strings.IndexByte(command, 0) >= 0 {
		return nil, errors.New("command contains a NUL byte, which no shell command can hold")
	}
	timeout := o.BashDefaultTimeout
	if timeoutMs != nil {
		if *timeoutMs <= 0 {
			return nil, fmt.Errorf("timeout must be a positive number of milliseconds (at most %d)", o.BashMaxTimeout.Milliseconds())
		}
		timeout = min(time.Duration(*timeoutMs)*time.Millisecond, o.BashMaxTimeout)
	}

	// Working directory.
	dir := call.Workspace
	var wdTarget *target
	if workdir != "" {
		t, err := resolvePath(call.Workspace, "", "workdir", workdir)
		if err != nil {
			return nil, err
		}
		if !t.Exists() {
			return nil, fmt.Errorf("workdir %s does not exist: pass an existing folder (relative to the workspace root or absolute)", t.Display())
		}
		if fi, err := os.Stat(t.Abs); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("workdir %s is not a folder: pass a folder", t.Display())
		}
		wdTarget = t
		dir = t.Abs
	}

	var conf *sandbox.Confinement
	if o.Sandbox != nil {
		conf = o.Sandbox("bash")
		defer conf.Close()
	}
	if err := askBash(ctx, call, command, dir, wdTarget, description, conf); err != nil {
		return nil, err
	}

	out := call.Output
	if out == nil {
		out = io.Discard
	}
	sink := &bashSink{out: out}
	title := description
	if title == "" {
		title = command
	}

	// Publish the live tail while the command runs.
	stopProgress := make(chan struct{})
	var progressWG sync.WaitGroup
	if call.Progress != nil {
		progressWG.Add(1)
		go func() {
			defer progressWG.Done()
			tick := time.NewTicker(o.BashProgressInterval)
			defer tick.Stop()
			var lastN int64 = -1
			for {
				select {
				case <-stopProgress:
					return
				case <-tick.C:
					tail, n := sink.snapshot()
					if n == lastN {
						continue
					}
					lastN = n
					call.Progress(title, map[string]any{"output": tail, "bytes": n, "description": description})
				}
			}
		}()
	}
	defer func() {
		close(stopProgress)
		progressWG.Wait()
	}()

	// The checkpoint looks at the workspace now, after the asks: what the person changes
	// while an ask waits is theirs, not the command's.
	if err := call.BeginChanges(ctx); err != nil {
		close(stopProgress)
		progressWG.Wait()
		return nil, err
	}
	start := time.Now()
	r := runBashOnce(ctx, o, command, dir, sink, timeout, conf)
	if r.startErr != nil {
		return nil, r.startErr
	}
	summary := conf.Summary()
	var blocked []string
	var escape string // what became of running it outside the sandbox
	if conf.Confined() && r.code != 0 && !r.timedOut && ctx.Err() == nil {
		tail, _ := sink.snapshot()
		blocked = sandbox.Explain(conf.Policy, conf.Mode, dir, tail, conf.Blocked())
	}
	if len(blocked) > 0 {
		// The daemon, never the model, offers to run it again unconfined: the person
		// decides, with the reason in front of them.
		err := call.Ask(ctx, registry.AskRequest{
			Permission: KeyUnsandboxed, Patterns: []string{strings.TrimSpace(command)},
			Metadata: map[string]any{"command": command, "workdir": relOrAbs(call.Workspace, dir), "description": description,
				"blocked": blocked, "sandbox": summary, "reason": "the sandbox blocked this command: " + strings.Join(blocked, "; ")},
		})
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case err == nil:
			fmt.Fprintf(sink, "\n[the sandbox blocked this command (%s); the person allowed running it outside the sandbox: running it again]\n", strings.Join(blocked, "; "))
			r = runBashOnce(ctx, o, command, dir, sink, timeout, nil)
			if r.startErr != nil {
				return nil, r.startErr
			}
			escape = "ran again outside the sandbox, as the person allowed"
			summary = sandbox.Summary{Why: "the person allowed running it outside the sandbox after the sandbox blocked it"}
		default:
			escape = "not run outside the sandbox: " + err.Error()
		}
	}
	dur := time.Since(start)

	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	timedOut, code, cut := r.timedOut, r.code, r.cut
	tail, n, last, werr := sink.final()
	meta := map[string]any{
		"exit":        code,
		"durationMs":  dur.Milliseconds(),
		"timedOut":    timedOut,
		"description": description,
		"workdir":     relOrAbs(call.Workspace, dir),
		"bytes":       n,
		"output":      tail,
		"sandbox":     summary,
	}
	if len(blocked) > 0 {
		meta["sandboxBlocked"] = blocked
	}
	if werr != nil {
		meta["outputError"] = werr.Error()
	}
	var note strings.Builder
	sep := func() {
		if n > 0 && last != '\n' && note.Len() == 0 {
			note.WriteByte('\n')
		}
	}
	if cut {
		meta["outputCut"] = true
		sep()
		note.WriteString(outputCutNote)
		if code != 0 || timedOut {
			note.WriteByte('\n')
		}
	}
	switch {
	case timedOut:
		sep()
		fmt.Fprintf(&note, "[timed out after %s: the command and every process it started were killed (SIGTERM, then SIGKILL). Pass a larger timeout (at most %d ms), or run it in the background with output to a file]", timeout, o.BashMaxTimeout.Milliseconds())
	case code > 128 && code < 128+65:
		sep()
		fmt.Fprintf(&note, "[exit code %d: killed by signal %d (%v)]", code, code-128, syscall.Signal(code-128))
	case code != 0:
		sep()
		fmt.Fprintf(&note, "[exit code %d]", code)
	case n == 0 && !cut:
		note.WriteString("(no output)")
	}
	if len(blocked) > 0 && escape != "ran again outside the sandbox, as the person allowed" {
		fmt.Fprintf(&note, "\n[the sandbox blocked this command: %s. It runs confined: it may write only %s, reads no secrets, and has %s. Do the work inside those folders instead, or ask the person to change the sandbox settings; %s]",
			strings.Join(blocked, "; "), strings.Join(conf.Policy.Write, ", "), netWords(conf.Policy), escape)
	}
	return &registry.Result{Title: title, Output: note.String(), Metadata: meta}, nil
}

// KeyUnsandboxed is the permission the daemon asks for when the sandbox blocked a command:
// run it again outside the sandbox. A rule may deny it ("unsandboxed": "deny").
const KeyUnsandboxed = "unsandboxed"

// netWords says what network a policy gives, for the model.
func netWords(p *sandbox.Policy) string {
	switch p.Net.Mode {
	case sandbox.NetProxy:
		return "HTTP(S) only to " + strings.Join(p.Net.Allow, ", ") + " through a proxy"
	case sandbox.NetDirect:
		return "the network"
	}
	return "no network"
}

// bashRun is how one run of a command ended.
type bashRun struct {
	code     int
	cut      bool
	timedOut bool
	startErr error // it could not run at all
}

// runBashOnce runs command once, its output into sink, confined by conf when it is.
func runBashOnce(ctx context.Context, o *Options, command, dir string, sink io.Writer, timeout time.Duration, conf *sandbox.Confinement) bashRun {
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := proc.Command(runCtx, o.BashGrace, o.Shell, "-c", command)
	cmd.Dir = dir
	cmd.Env = environ()
	cmd.Stdout = sink
	cmd.Stderr = sink
	if conf.Confined() {
		if err := proc.Confine(cmd, conf.Policy); err != nil {
			return bashRun{startErr: fmt.Errorf("cannot run the command in the sandbox: %v", err)}
		}
	}
	cut, err := proc.Run(cmd)
	r := bashRun{cut: cut, timedOut: errors.Is(runCtx.Err(), context.DeadlineExceeded), code: proc.ExitCode(err)}
	if err != nil && r.code == -1 && !r.timedOut && ctx.Err() == nil {
		r.startErr = fmt.Errorf("cannot run the command: %v", err)
	}
	return r
}

// outputCutNote ends the output of a command whose output pipe something outside its process
// tree still held after it ended (proc.Run stopped reading).
const outputCutNote = "[output cut here: the command ended, but a process outside its process tree still held its output open, so reading stopped and whatever that process wrote later was not read. Every process the command starts is killed when it ends; one that holds the output after that was given it by a program outside the call (a service manager, a daemon it asked) or could not be killed. Send the output of such processes to a file (... > log 2>&1)]"

// askBash asks for everything a command line would touch (bashRequests), in order.
func askBash(ctx context.Context, call *registry.Call, command, dir string, wd *target, description string, conf *sandbox.Confinement) error {
	for _, req := range bashRequests(call.Workspace, command, dir, wd, description, conf) {
		if err := call.Ask(ctx, req); err != nil {
			return err
		}
	}
	return nil
}

// bashRequests are the requests of a command line, as permission.ShellRequests lists
// them: folders outside the workspace (and path words only known at run time), files it
// writes, the commands it runs, and the parts no parser can see through. A workdir
// outside the workspace is asked for first.
//
// When the command runs confined (conf) with the sandbox's auto-allow on, each request the
// policy would allow is marked Sandboxed (the pipeline may then allow it without asking):
// the commands, writes into folders the policy lets it write, folders outside that it may
// read. conf may be nil (not confined).
func bashRequests(workspace, command, dir string, wd *target, description string, conf *sandbox.Confinement) []registry.AskRequest {
	an := shell.Analyze(command)
	var texts []string
	for _, c := range an.Commands {
		texts = append(texts, c.Text)
	}
	summary := conf.Summary()
	meta := func() map[string]any {
		return map[string]any{"command": command, "workdir": relOrAbs(workspace, dir), "commands": texts, "description": description, "sandbox": summary}
	}
	auto := conf.Confined() && conf.AutoAllow
	sandboxed := func(r permission.Request) bool {
		if !auto {
			return false
		}
		for _, p := range r.Patterns {
			switch r.Permission {
			case permission.KeyEdit:
				if !filepath.IsAbs(p) {
					p = filepath.Join(workspace, p)
				}
				if !conf.Policy.MayWrite(p) {
					return false
				}
			case permission.KeyExternalDirectory:
				folder := strings.TrimSuffix(p, "/*")
				if !filepath.IsAbs(folder) || !conf.Policy.MayRead(folder) {
					return false
				}
			}
		}
		return true
	}
	var out []registry.AskRequest
	if wd != nil && !wd.Inside {
		folder := strings.TrimSuffix(filepath.ToSlash(wd.Abs), "/")
		m := meta()
		m["folder"] = folder
		out = append(out, registry.AskRequest{Permission: "external_directory", Patterns: []string{folder + "/*"}, Always: []string{permission.Escape(folder) + "/*"}, Metadata: m})
	}
	for _, r := range permission.ShellRequests(an, dir, workspace, "") {
		m := meta()
		switch {
		case r.Permission == permission.KeyExternalDirectory:
			m["folders"] = r.Patterns
			if len(an.Dynamic) > 0 {
				m["dynamic"] = an.Dynamic
			}
		case r.Permission == permission.KeyEdit:
			m["writes"] = r.Patterns
		case r.Opaque:
			m["opaque"] = true
			m["reasons"] = r.Reasons
		}
		if len(r.ExactOnly) > 0 {
			m["unsafe"] = r.ExactOnly
		}
		// An empty Always means no "always" may be offered (a request made only of words
		// known at run time): that is what Opaque says to the pipeline.
		reasons := r.Reasons
		if !r.Opaque && len(r.Always) == 0 {
			reasons = []string{"a path only known when the line runs (" + strings.Join(r.Patterns, ", ") + "): it cannot be checked or remembered"}
		}
		out = append(out, registry.AskRequest{Permission: r.Permission, Patterns: r.Patterns, Always: r.Always, Opaque: r.Opaque || len(r.Always) == 0,
			ExactOnly: r.ExactOnly, Reasons: reasons, Metadata: m, Sandboxed: sandboxed(r)})
	}
	if len(an.Commands) == 0 && len(an.Opaque) == 0 {
		// Nothing the analysis could name (a bare assignment, say): ask with the raw line,
		// so that no call runs without a bash permission.
		out = append(out, registry.AskRequest{Permission: "bash", Patterns: []string{strings.TrimSpace(command)}, Opaque: true, Metadata: meta()})
	}
	return out
}

// bashSink receives a command's output: everything goes on to the call's Output, and the
// last tailBytes stay for progress. exec writes to it from one goroutine (stdout and stderr
// share one pipe); the progress goroutine reads the tail. Safe for concurrent use.
type bashSink struct {
	out io.Writer

	mu   sync.Mutex // guards tail, n and werr
	tail []byte
	n    int64
	werr error
}

const (
	tailBytes = 4096
	tailLines = 20
)

func (s *bashSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n += int64(len(p))
	if s.werr == nil {
		if _, err := s.out.Write(p); err != nil {
			// Keep draining the command so it does not die of SIGPIPE; the error shows in
			// the result.
			s.werr = err
		}
	}
	if len(p) >= tailBytes {
		s.tail = append(s.tail[:0], p[len(p)-tailBytes:]...)
	} else {
		if over := len(s.tail) + len(p) - tailBytes; over > 0 {
			s.tail = append(s.tail[:0], s.tail[over:]...)
		}
		s.tail = append(s.tail, p...)
	}
	return len(p), nil
}

// snapshot returns the last lines of the output and how many bytes came so far.
func (s *bashSink) snapshot() (string, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return lastLines(s.tail, tailLines), s.n
}

func (s *bashSink) final() (tail string, n int64, last byte, werr error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.tail) > 0 {
		last = s.tail[len(s.tail)-1]
	}
	return lastLines(s.tail, tailLines), s.n, last, s.werr
}

// lastLines returns the last n lines of b as valid UTF-8.
func lastLines(b []byte, n int) string {
	b = bytes.TrimSuffix(b, []byte("\n"))
	i := len(b)
	for range n {
		j := bytes.LastIndexByte(b[:i], '\n')
		if j < 0 {
			i = -1
			break
		}
		i = j
	}
	return strings.ToValidUTF8(string(b[i+1:]), "\uFFFD")
}
