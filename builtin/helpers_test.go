package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/tools/txtar"

	"github.com/toolsd/toolsd/registry"
)

// TestMain checks for leaked goroutines.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { removeBenchFiles() }))
}

// fakeAsk records permission requests and refuses the permissions in deny.
type fakeAsk struct {
	mu   sync.Mutex // guards reqs
	reqs []registry.AskRequest
	deny map[string]bool
}

func (f *fakeAsk) ask(ctx context.Context, req registry.AskRequest) error {
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	if f.deny[req.Permission] {
		return &registry.PermissionError{Kind: "reject", Message: "the person refused " + req.Permission + " for " + strings.Join(req.Patterns, ", ")}
	}
	return nil
}

func (f *fakeAsk) requests() []registry.AskRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]registry.AskRequest(nil), f.reqs...)
}

// asked returns the requests for perm.
func (f *fakeAsk) asked(perm string) []registry.AskRequest {
	var out []registry.AskRequest
	for _, r := range f.requests() {
		if r.Permission == perm {
			out = append(out, r)
		}
	}
	return out
}

// memOutputs is an in-memory OutputReader that pages like the store: a page stops before
// a line that would take it over memPageBytes, and a single line longer than that comes
// back cut, with a note.
type memOutputs map[string]string

// memPageBytes is the store's default page cap (store.DefaultMaxPageBytes).
const memPageBytes = 1 << 20

func (m memOutputs) ReadLines(ctx context.Context, id string, offset, limit int) (string, int, int64, error) {
	s, ok := m[id]
	if !ok {
		return "", 0, 0, registry.ErrOutputNotFound
	}
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	if s == "" {
		lines = nil
	}
	var out []byte
	for n := 0; offset+n < len(lines) && n < limit; n++ {
		l := lines[offset+n]
		sep := min(n, 1)
		if len(out)+sep+len(l) > memPageBytes {
			if n == 0 {
				out = append(out, l[:memPageBytes]...)
				out = fmt.Appendf(out, " … [toolsd: line %d is %d bytes long; cut here, %d bytes not shown]", offset, len(l), len(l)-memPageBytes)
			}
			break
		}
		if sep > 0 {
			out = append(out, '\n')
		}
		out = append(out, l...)
	}
	return string(out), len(lines), int64(len(s)), nil
}

// memState is an in-memory SessionState.
type memState struct {
	mu sync.Mutex // guards m
	m  map[string][]byte
}

func (s *memState) Get(ctx context.Context, key string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[key], nil
}

func (s *memState) Put(ctx context.Context, key string, v []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string][]byte{}
	}
	s.m[key] = append([]byte(nil), v...)
	return nil
}

// syncBuffer is a call Output that signals each write.
type syncBuffer struct {
	mu    sync.Mutex // guards buf
	buf   bytes.Buffer
	wrote chan struct{}
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{wrote: make(chan struct{}, 1)} }

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.buf.Write(p)
	select {
	case b.wrote <- struct{}{}:
	default:
	}
	return n, err
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor waits until cond holds for the buffer's text, or fails the test.
func (b *syncBuffer) waitFor(t *testing.T, d time.Duration, cond func(string) bool) string {
	t.Helper()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		if s := b.String(); cond(s) {
			return s
		}
		select {
		case <-b.wrote:
		case <-deadline.C:
			t.Fatalf("timed out waiting on output; have %q", b.String())
		}
	}
}

type progressEvent struct {
	title string
	meta  map[string]any
}

// env is a workspace and a call of a built-in tool on it.
type env struct {
	t        *testing.T
	ws       string
	opts     *Options
	asks     *fakeAsk
	out      *syncBuffer
	outputs  memOutputs
	state    *memState
	progress chan progressEvent
	tools    map[string]*registry.Tool
}

func newEnv(t *testing.T, archive string) *env {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, ws: ws, asks: &fakeAsk{deny: map[string]bool{}}, out: newSyncBuffer(), outputs: memOutputs{}, state: &memState{}, progress: make(chan progressEvent, 64)}
	e.writeTree(ws, archive)
	e.setOptions(nil)
	return e
}

func (e *env) setOptions(o *Options) {
	e.opts = o
	e.tools = map[string]*registry.Tool{}
	for _, t := range Tools(o) {
		e.tools[t.ID] = t
	}
}

// writeTree writes a txtar archive's files below dir.
func (e *env) writeTree(dir, archive string) {
	e.t.Helper()
	for _, f := range txtar.Parse([]byte(archive)).Files {
		p := filepath.Join(dir, f.Name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			e.t.Fatal(err)
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			e.t.Fatal(err)
		}
	}
}

func (e *env) path(rel string) string { return filepath.Join(e.ws, filepath.FromSlash(rel)) }

func (e *env) call(tool string) *registry.Call {
	return &registry.Call{
		SessionID: "s1", MessageID: "m1", CallID: "c1", Tool: tool,
		Workspace: e.ws,
		Output:    e.out,
		Progress: func(title string, meta map[string]any) {
			select {
			case e.progress <- progressEvent{title, meta}:
			default:
			}
		},
		Ask:     e.asks.ask,
		Outputs: e.outputs,
		State:   e.state,
	}
}

// run validates args against the tool's schema (failing the test if they do not pass) and
// executes the tool.
func (e *env) run(tool string, args any) (*registry.Result, error) {
	return e.runCtx(context.Background(), tool, args)
}

func (e *env) runCtx(ctx context.Context, tool string, args any) (*registry.Result, error) {
	e.t.Helper()
	t, ok := e.tools[tool]
	if !ok {
		e.t.Fatalf("no tool %q", tool)
	}
	raw, err := json.Marshal(args)
	if err != nil {
		e.t.Fatal(err)
	}
	s, err := registry.CompileSchema(t.ID, t.Parameters)
	if err != nil {
		e.t.Fatalf("schema of %s: %v", tool, err)
	}
	var v any
	_ = json.Unmarshal(raw, &v)
	if err := s.Validate(v); err != nil {
		e.t.Fatalf("args %s do not pass the schema of %s: %v", raw, tool, err)
	}
	return t.Execute(ctx, e.call(tool), raw)
}

// isPermissionError reports whether err is the fake's refusal, returned unchanged.
func isPermissionError(err error) bool {
	var pe *registry.PermissionError
	return errors.As(err, &pe) && err == error(pe)
}

func mustContain(t *testing.T, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%s does not contain %q:\n%s", what, sub, s)
		}
	}
}
