// Package harness drives a real toolsd binary over real pipes, as an editor would, for
// end-to-end tests and benchmarks.
//
// The client is github.com/sourcegraph/jsonrpc2, an implementation independent of the
// daemon's, so a framing or envelope bug cannot hide behind the same code on both ends.
// Tests wait on the daemon's notifications with deadlines, never on sleeps.
package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"
)

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

// Binary builds the toolsd binary once per process (with the race detector when the tests
// run with it, else static as the README builds it), and toolsd-guard beside it as an
// install puts it, and returns toolsd's path.
func Binary(tb testing.TB) string {
	tb.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "toolsd-bin-")
		if err != nil {
			buildErr = err
			return
		}
		buildPath = filepath.Join(dir, "toolsd")
		args := []string{"build", "-o", dir + "/"}
		if raceEnabled {
			args = append(args, "-race")
		}
		args = append(args, "github.com/toolsd/toolsd/cmd/toolsd", "github.com/toolsd/toolsd/cmd/toolsd-guard")
		cmd := exec.Command("go", args...)
		cmd.Dir = moduleRoot()
		if !raceEnabled {
			// Static, as the README builds it (the race detector needs cgo).
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		tb.Fatal(buildErr)
	}
	return buildPath
}

func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Notification is one notification the daemon sent.
type Notification struct {
	Method string
	Params json.RawMessage
}

// Daemon is a running toolsd process and a client connected to it.
type Daemon struct {
	Cmd    *exec.Cmd
	Conn   *jsonrpc2.Conn
	Stdin  io.WriteCloser // raw access to the daemon's stdin, for malformed-frame tests
	stdout io.ReadCloser
	stderr *syncBuffer
	exited chan struct{}
	err    error

	mu      sync.Mutex // guards notes and changed
	notes   []Notification
	changed chan struct{}

	nextID atomic.Uint64
}

// Options configure Start.
type Options struct {
	// Args are the daemon's arguments. Unless they name a --grace, "--grace=200ms" is added,
	// so that the workspace's owner exits soon after the test's last client.
	Args []string
	Env  []string
	// RuntimeDir is the daemon's XDG_RUNTIME_DIR, where owners put their sockets; empty
	// means the test's own (RuntimeDir), shared by every daemon the test starts.
	RuntimeDir string
	// Handler answers requests from the daemon (none in the protocol today).
	Handler func(ctx context.Context, req *jsonrpc2.Request) (any, error)
}

// Start spawns the binary and connects a client. The process is killed at the end of the
// test if it is still running.
func Start(tb testing.TB, bin string, o Options) *Daemon {
	tb.Helper()
	args := o.Args
	if !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--grace") || strings.HasPrefix(a, "-grace") }) {
		args = append([]string{"--grace=200ms"}, args...)
	}
	if o.RuntimeDir == "" {
		o.RuntimeDir = RuntimeDir(tb)
	}
	cmd := exec.Command(bin, args...)
	// A race-enabled binary sleeps a second at exit by default; exits are awaited here.
	cmd.Env = append(append(os.Environ(), "GORACE=atexit_sleep_ms=0", "XDG_RUNTIME_DIR="+o.RuntimeDir), o.Env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	d := &Daemon{Cmd: cmd, Stdin: stdin, stdout: stdout, stderr: &syncBuffer{}, exited: make(chan struct{}), changed: make(chan struct{})}
	cmd.Stderr = d.stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go func() {
		d.err = cmd.Wait()
		close(d.exited)
	}()
	rwc := &pipeRWC{r: stdout, w: stdin}
	d.Conn = jsonrpc2.NewConn(context.Background(), jsonrpc2.NewBufferedStream(rwc, jsonrpc2.VSCodeObjectCodec{}), jsonrpc2.AsyncHandler(handler{d, o.Handler}))
	tb.Cleanup(func() {
		// End of input: the daemon should exit by itself; kill it if it does not.
		_ = d.Conn.Close()
		select {
		case <-d.exited:
		case <-time.After(5 * time.Second):
			tb.Errorf("the daemon did not exit within 5 s of the end of its input")
			_ = cmd.Process.Kill()
			<-d.exited
		}
		if tb.Failed() {
			tb.Logf("daemon stderr:\n%s", d.Stderr())
		}
	})
	return d
}

var (
	runtimeMu   sync.Mutex                // guards runtimeDirs
	runtimeDirs = map[testing.TB]string{} // the tests' runtime folders
)

// RuntimeDir returns the test's XDG_RUNTIME_DIR (a short path: socket addresses are short),
// made on first use. When the test ends, after its daemons, it checks that no owner of a
// workspace still runs there (owners exit a grace period after their last client).
func RuntimeDir(tb testing.TB) string {
	tb.Helper()
	runtimeMu.Lock()
	defer runtimeMu.Unlock()
	if d, ok := runtimeDirs[tb]; ok {
		return d
	}
	dir, err := os.MkdirTemp("", "rt")
	if err != nil {
		tb.Fatal(err)
	}
	runtimeDirs[tb] = dir
	tb.Cleanup(func() {
		runtimeMu.Lock()
		delete(runtimeDirs, tb)
		runtimeMu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if err := WaitOwnersGone(ctx, dir); err != nil {
			tb.Errorf("%v", err)
			for _, pid := range OwnerPIDs(dir) {
				if pid > 0 {
					killPID(pid)
				}
			}
		}
		if tb.Failed() {
			logs, _ := filepath.Glob(filepath.Join(dir, "toolsd", "*.log"))
			for _, l := range logs {
				b, _ := os.ReadFile(l)
				tb.Logf("owner log %s:\n%s", l, b)
			}
		}
		_ = os.RemoveAll(dir)
	})
	return dir
}

// OwnerPIDs returns the pids of the owners that run in a runtime folder (those holding
// their lock files).
func OwnerPIDs(runtimeDir string) []int {
	locks, _ := filepath.Glob(filepath.Join(runtimeDir, "toolsd", "*.lock"))
	var pids []int
	for _, l := range locks {
		if held(l) {
			b, _ := os.ReadFile(l)
			pid, _ := strconv.Atoi(strings.TrimSpace(string(b))) // 0: it has not written it yet
			pids = append(pids, pid)
		}
	}
	return pids
}

// held reports whether a process holds the flock of a lock file.
func held(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	return lockedElsewhere(f)
}

// WaitOwnersGone waits until no owner runs in a runtime folder.
func WaitOwnersGone(ctx context.Context, runtimeDir string) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		pids := OwnerPIDs(runtimeDir)
		if len(pids) == 0 {
			return nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("owners still running in %s: %v", runtimeDir, pids)
		}
	}
}

// WaitOwners waits until n owners run in a runtime folder and returns their pids.
func WaitOwners(ctx context.Context, runtimeDir string, n int) ([]int, error) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		pids := OwnerPIDs(runtimeDir)
		if len(pids) >= n {
			return pids, nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return pids, fmt.Errorf("want %d owners in %s, have %v", n, runtimeDir, pids)
		}
	}
}

// Stderr returns what the daemon logged so far.
func (d *Daemon) Stderr() string { return d.stderr.String() }

// Exited is closed when the process has exited.
func (d *Daemon) Exited() <-chan struct{} { return d.exited }

// ExitCode returns the exit code once Exited is closed.
func (d *Daemon) ExitCode() int {
	<-d.exited
	if d.Cmd.ProcessState == nil {
		return -1
	}
	return d.Cmd.ProcessState.ExitCode()
}

// Call makes a request and decodes its result.
func (d *Daemon) Call(ctx context.Context, method string, params, result any) error {
	return d.Conn.Call(ctx, method, params, result)
}

// Dispatch starts a request with a known numeric id and returns a function that waits for
// its result.
func (d *Daemon) Dispatch(ctx context.Context, method string, params any) (id uint64, wait func(ctx context.Context, result any) error, err error) {
	id = 1_000_000 + d.nextID.Add(1)
	w, err := d.Conn.DispatchCall(ctx, method, params, jsonrpc2.PickID(jsonrpc2.ID{Num: id}))
	if err != nil {
		return 0, nil, err
	}
	return id, w.Wait, nil
}

// Notify sends a notification.
func (d *Daemon) Notify(ctx context.Context, method string, params any) error {
	return d.Conn.Notify(ctx, method, params)
}

// Initialize sends initialize and initialized for a workspace with the ask and progress
// capabilities.
func (d *Daemon) Initialize(ctx context.Context, workspace string, ask bool, initOptions any) (json.RawMessage, error) {
	p := map[string]any{
		"processId":       os.Getpid(),
		"clientInfo":      map[string]string{"name": "harness", "version": "1"},
		"workspaceFolder": workspace,
		"capabilities":    map[string]bool{"ask": ask, "progress": true},
	}
	if initOptions != nil {
		p["initializationOptions"] = initOptions
	}
	var res json.RawMessage
	if err := d.Call(ctx, "initialize", p, &res); err != nil {
		return nil, err
	}
	return res, d.Notify(ctx, "initialized", map[string]any{})
}

// Shutdown sends shutdown then exit and waits for the process to exit.
func (d *Daemon) Shutdown(ctx context.Context) (int, error) {
	if err := d.Call(ctx, "shutdown", nil, nil); err != nil {
		return -1, err
	}
	_ = d.Notify(ctx, "exit", nil)
	select {
	case <-d.exited:
		return d.ExitCode(), nil
	case <-ctx.Done():
		return -1, ctx.Err()
	}
}

// Kill sends SIGKILL to the daemon (not to its tool processes) and waits for it to exit.
func (d *Daemon) Kill() {
	_ = d.Cmd.Process.Signal(syscall.SIGKILL)
	<-d.exited
}

// Mark returns a position in the notification log: WaitFor(…, From(mark)) only looks at
// notifications after it.
func (d *Daemon) Mark() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.notes)
}

// WaitFor waits until a notification of method after position from satisfies match (nil
// matches any) and returns it with its position.
func (d *Daemon) WaitFor(ctx context.Context, from int, method string, match func(json.RawMessage) bool) (json.RawMessage, int, error) {
	for {
		d.mu.Lock()
		for i := from; i < len(d.notes); i++ {
			n := d.notes[i]
			if n.Method == method && (match == nil || match(n.Params)) {
				d.mu.Unlock()
				return n.Params, i, nil
			}
		}
		from = max(from, len(d.notes))
		ch := d.changed
		d.mu.Unlock()
		select {
		case <-ch:
		case <-d.exited:
			return nil, 0, fmt.Errorf("daemon exited while waiting for %s: %v\n%s", method, d.err, d.Stderr())
		case <-ctx.Done():
			return nil, 0, fmt.Errorf("waiting for %s: %w", method, ctx.Err())
		}
	}
}

// Count returns how many notifications of method arrived after position from.
func (d *Daemon) Count(from int, method string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, x := range d.notes[min(from, len(d.notes)):] {
		if x.Method == method {
			n++
		}
	}
	return n
}

type handler struct {
	d *Daemon
	f func(ctx context.Context, req *jsonrpc2.Request) (any, error)
}

func (h handler) Handle(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) {
	if req.Notif {
		var p json.RawMessage
		if req.Params != nil {
			p = append(p, *req.Params...)
		}
		h.d.mu.Lock()
		h.d.notes = append(h.d.notes, Notification{Method: req.Method, Params: p})
		close(h.d.changed)
		h.d.changed = make(chan struct{})
		h.d.mu.Unlock()
		return
	}
	if h.f == nil {
		_ = conn.ReplyWithError(ctx, req.ID, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "no handler"})
		return
	}
	res, err := h.f(ctx, req)
	if err != nil {
		_ = conn.ReplyWithError(ctx, req.ID, &jsonrpc2.Error{Code: jsonrpc2.CodeInternalError, Message: err.Error()})
		return
	}
	_ = conn.Reply(ctx, req.ID, res)
}

type pipeRWC struct {
	r io.ReadCloser
	w io.WriteCloser
}

func (p *pipeRWC) Read(b []byte) (int, error)  { return p.r.Read(b) }
func (p *pipeRWC) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p *pipeRWC) Close() error {
	err := p.w.Close()
	_ = p.r.Close()
	return err
}

type syncBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.b.Len() > 4<<20 {
		return len(p), nil
	}
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Deadline returns a context that ends after d, or at the test's deadline if sooner.
func Deadline(tb testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	tb.Cleanup(cancel)
	return ctx
}

// RPCError returns the JSON-RPC error code of err, or 0.
func RPCError(err error) int64 {
	if e, ok := err.(*jsonrpc2.Error); ok {
		return e.Code
	}
	return 0
}
