//go:build linux

package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/toolsd/toolsd/protocol"
	"github.com/toolsd/toolsd/registry"
)

func TestMain(m *testing.M) {
	if os.Getenv(testServerEnv) != "" {
		os.Exit(runTestServer())
	}
	goleak.VerifyTestMain(m)
}

type event struct {
	ch    registry.Change
	diags []protocol.Diagnostic
}

type fixture struct {
	reg    *registry.Registry
	src    *Source
	events chan event
}

func deadline(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// start starts a Source whose servers are this test binary in server mode.
func start(t *testing.T, modes map[string]string, tweak func(*SourceOptions)) *fixture {
	t.Helper()
	f := &fixture{reg: registry.New(), events: make(chan event, 100)}
	servers := map[string]Server{}
	for name, mode := range modes {
		servers[name] = Server{Command: []string{os.Args[0], "-test.run=^$"}, Env: map[string]string{testServerEnv: mode, "GORACE": "atexit_sleep_ms=0"}}
	}
	opts := SourceOptions{
		Servers: servers, Workspace: t.TempDir(), Backoff: 10 * time.Millisecond, TerminateDuration: 3 * time.Second,
		OnChange: func(ch registry.Change, d []protocol.Diagnostic) { f.events <- event{ch, d} },
	}
	if tweak != nil {
		tweak(&opts)
	}
	src, err := NewSource(f.reg, opts)
	if err != nil {
		t.Fatal(err)
	}
	f.src = src
	t.Cleanup(func() { _ = src.Close() })
	if err := src.WaitReady(deadline(t)); err != nil {
		t.Fatalf("servers not ready: %v", err)
	}
	return f
}

// waitEvent waits for an OnChange call that satisfies ok.
func (f *fixture) waitEvent(t *testing.T, what string, ok func(event) bool) event {
	t.Helper()
	ctx := deadline(t)
	for {
		select {
		case e := <-f.events:
			if ok(e) {
				return e
			}
		case <-ctx.Done():
			t.Fatalf("no change: %s", what)
		}
	}
}

func (f *fixture) entry(t *testing.T, id string) *registry.Entry {
	t.Helper()
	e, ok := f.reg.Catalog().Lookup(id)
	if !ok {
		t.Fatalf("tool %s not in the catalogue; diagnostics: %v", id, f.reg.Catalog().Diagnostics())
	}
	return e
}

// testCall is a registry.Call that records what the tool did.
type testCall struct {
	registry.Call
	out      bytes.Buffer
	mu       sync.Mutex
	asks     []registry.AskRequest
	progress chan string
}

func newCall(deny error) *testCall {
	c := &testCall{progress: make(chan string, 10)}
	c.Call.Output = &c.out
	c.Call.Ask = func(_ context.Context, req registry.AskRequest) error {
		c.mu.Lock()
		c.asks = append(c.asks, req)
		c.mu.Unlock()
		return deny
	}
	c.Call.Progress = func(title string, _ map[string]any) {
		select {
		case c.progress <- title:
		default:
		}
	}
	return c
}

func (f *fixture) exec(t *testing.T, ctx context.Context, id string, args string, c *testCall) (*registry.Result, error) {
	t.Helper()
	e := f.entry(t, id)
	if err := e.Validate([]byte(args)); err != nil {
		t.Fatalf("arguments %s rejected: %v", args, err)
	}
	return e.Execute(ctx, &c.Call, json.RawMessage(args))
}

func TestToolID(t *testing.T) {
	long := ToolID("srv", longToolName)
	tests := []struct {
		server, tool, want string
	}{
		{"github", "create_issue", "github_create_issue"},
		{"my.server", "do/it now", "my_server_do_it_now"},
		{"s", "ünïcode", "s__n_code"},
		{"srv", longToolName, long},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			got := ToolID(tt.server, tt.tool)
			if got != tt.want {
				t.Errorf("ToolID(%q, %q) = %q, want %q", tt.server, tt.tool, got, tt.want)
			}
			if !registry.ValidID(got) {
				t.Errorf("%q is not a valid tool id", got)
			}
		})
	}
	if len(long) != 64 || !strings.HasPrefix(long, "srv_very_long_tool_name_") || long != ToolID("srv", longToolName) {
		t.Errorf("long id %q: want 64 characters, the names' prefix, stable", long)
	}
	if ToolID("srv", longToolName+"x") == long {
		t.Errorf("two long names share the id %q", long)
	}
}

func TestListing(t *testing.T) {
	f := start(t, map[string]string{"test": "1", "two": "1"}, nil)
	cat := f.reg.Catalog()
	for _, id := range []string{"test_echo", "test_rich", "test_fail", "test_slow", "test_pid", "two_echo", "test_a_b", ToolID("test", longToolName)} {
		e := f.entry(t, id)
		if e.Source != "mcp:"+strings.SplitN(id, "_", 2)[0] {
			t.Errorf("%s: source %q", id, e.Source)
		}
		if e.PermissionKey() != id || e.ReadOnly {
			t.Errorf("%s: permission %q readOnly %v; want its own id and never read-only", id, e.PermissionKey(), e.ReadOnly)
		}
	}
	if e := f.entry(t, "test_echo"); !strings.Contains(string(e.Parameters), `"text"`) || e.Description != "Echoes text." {
		t.Errorf("echo: schema %s description %q", e.Parameters, e.Description)
	}
	// Every id fits providers' limit.
	for _, e := range cat.Entries() {
		if len(e.ID) > 64 {
			t.Errorf("id %q longer than 64", e.ID)
		}
	}
	// a.b and a_b: one keeps test_a_b, the other gets a hashed id, with a warning.
	hashedAB := hashed("test", "a_b")
	f.entry(t, hashedAB)
	// Paging (3 a page) listed all 15 tools of the server, minus bad_schema.
	n := 0
	for _, e := range cat.Entries() {
		if e.Source == "mcp:test" {
			n++
		}
	}
	if n != 14 {
		t.Errorf("test server has %d tools in the catalogue, want 14", n)
	}
	if _, ok := cat.Lookup("test_bad_schema"); ok {
		t.Error("a tool whose schema does not compile was kept")
	}
	var sawBad, sawCollision bool
	for _, d := range cat.Diagnostics() {
		sawBad = sawBad || (strings.Contains(d.Message, `"bad_schema"`) && d.Path == "mcp:test" && d.Severity == "error")
		sawCollision = sawCollision || (strings.Contains(d.Message, hashedAB) && d.Severity == "warning")
	}
	if !sawBad || !sawCollision {
		t.Errorf("diagnostics %v: want the bad schema (%v) and the collision (%v)", cat.Diagnostics(), sawBad, sawCollision)
	}
}

func TestCall(t *testing.T) {
	f := start(t, map[string]string{"test": "1"}, nil)
	rejected := &registry.PermissionError{Kind: "reject", Message: "the person rejected it"}
	tests := []struct {
		name, tool, args string
		deny             error
		wantOut          string
		wantErr          string
		check            func(t *testing.T, r *registry.Result, c *testCall)
	}{
		{name: "echo", tool: "test_echo", args: `{"text":"hello"}`, wantOut: "hello", check: func(t *testing.T, _ *registry.Result, c *testCall) {
			if len(c.asks) != 1 {
				t.Fatalf("asks %v, want one", c.asks)
			}
			a := c.asks[0]
			ann, _ := a.Metadata["annotations"].(map[string]any)
			if a.Permission != "test_echo" || len(a.Patterns) != 1 || a.Patterns[0] != "*" || a.Metadata["server"] != "test" || a.Metadata["tool"] != "echo" || ann["readOnlyHint"] != true {
				t.Errorf("ask %+v", a)
			}
		}},
		{name: "image kept with structuredContent", tool: "test_rich", args: `{}`, wantOut: "a chart", check: func(t *testing.T, r *registry.Result, _ *testCall) {
			if len(r.Attachments) != 1 || r.Attachments[0].Mime != "image/png" || !bytes.Equal(r.Attachments[0].Data, pngBytes) {
				t.Errorf("attachments %+v", r.Attachments)
			}
			if sc, _ := r.Metadata["structuredContent"].(map[string]any); sc["points"] != float64(3) {
				t.Errorf("metadata %v", r.Metadata)
			}
		}},
		{name: "structured only", tool: "test_structured", args: `{}`, wantOut: "{\n  \"n\": 1\n}"},
		{name: "isError", tool: "test_fail", args: `{}`, wantErr: "the widget is broken"},
		{name: "rejected", tool: "test_echo", args: `{"text":"x"}`, deny: rejected, wantErr: "the person rejected it"},
		{name: "long name", tool: ToolID("test", longToolName), args: `{"text":"long"}`, wantOut: "long"},
		{name: "big output to the writer", tool: "test_big", args: `{}`, check: func(t *testing.T, _ *registry.Result, c *testCall) {
			if n := strings.Count(c.out.String(), "\n"); n != 5000 || !strings.HasPrefix(c.out.String(), "line 0\n") {
				t.Errorf("output has %d lines", n)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCall(tt.deny)
			r, err := f.exec(t, deadline(t), tt.tool, tt.args, c)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if tt.wantOut != "" && c.out.String() != tt.wantOut {
				t.Errorf("output %q, want %q", c.out.String(), tt.wantOut)
			}
			if tt.check != nil {
				tt.check(t, r, c)
			}
		})
	}
}

func TestCancel(t *testing.T) {
	f := start(t, map[string]string{"test": "1"}, nil)
	ctx, cancel := context.WithCancel(deadline(t))
	c := newCall(nil)
	done := make(chan error, 1)
	go func() {
		_, err := f.exec(t, ctx, "test_slow", `{}`, c)
		done <- err
	}()
	select {
	case title := <-c.progress:
		if title != "step 1 of 10" {
			t.Errorf("progress title %q", title)
		}
	case <-deadline(t).Done():
		t.Fatal("no progress")
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled call returned %v", err)
		}
	case <-deadline(t).Done():
		t.Fatal("the cancelled call did not return")
	}
	// The server saw notifications/cancelled.
	c2 := newCall(nil)
	if _, err := f.exec(t, deadline(t), "test_was_cancelled", `{}`, c2); err != nil || c2.out.String() != "yes" {
		t.Errorf("server saw the cancellation: %q %v", c2.out.String(), err)
	}
}

func TestListChanged(t *testing.T) {
	f := start(t, map[string]string{"test": "1"}, nil)
	if _, err := f.exec(t, deadline(t), "test_add_tool", `{"name":"added"}`, newCall(nil)); err != nil {
		t.Fatal(err)
	}
	f.waitEvent(t, "test_added added", func(e event) bool { return len(e.ch.Added) == 1 && e.ch.Added[0] == "test_added" })
	c := newCall(nil)
	if _, err := f.exec(t, deadline(t), "test_added", `{"text":"new"}`, c); err != nil || c.out.String() != "new" {
		t.Errorf("calling the added tool: %q %v", c.out.String(), err)
	}
}

func TestCrashRestart(t *testing.T) {
	f := start(t, map[string]string{"test": "1"}, func(o *SourceOptions) { o.Restarts = 1 })
	if _, err := f.exec(t, deadline(t), "test_crash", `{}`, newCall(nil)); err == nil {
		t.Error("the call that crashed the server succeeded")
	}
	e := f.waitEvent(t, "tools removed", func(e event) bool { return len(e.ch.Removed) > 0 })
	if !strings.Contains(strings.Join(e.ch.Removed, " "), "test_echo") {
		t.Errorf("removed %v", e.ch.Removed)
	}
	var msg string
	for _, d := range e.diags {
		if d.Path == "mcp:test" {
			msg = d.Message
		}
	}
	for _, want := range []string{`MCP server "test"`, "boom: crashing on purpose", "exit status 3", "restarting it"} {
		if !strings.Contains(msg, want) {
			t.Errorf("diagnostic %q lacks %q", msg, want)
		}
	}
	f.waitEvent(t, "tools back after the restart", func(e event) bool {
		return strings.Contains(strings.Join(e.ch.Added, " "), "test_echo")
	})
	if _, err := f.exec(t, deadline(t), "test_echo", `{"text":"again"}`, newCall(nil)); err != nil {
		t.Errorf("after the restart: %v", err)
	}
}

func TestFailedStart(t *testing.T) {
	f := start(t, map[string]string{"bad": "fail-start"}, func(o *SourceOptions) { o.Restarts = -1 })
	var msg string
	for _, d := range f.reg.Catalog().Diagnostics() {
		if d.Path == "mcp:bad" {
			msg = d.Message
		}
	}
	for _, want := range []string{`MCP server "bad"`, "failed to start", "the API token is missing", "not restarting"} {
		if !strings.Contains(msg, want) {
			t.Errorf("diagnostic %q lacks %q", msg, want)
		}
	}
	if n := len(f.reg.Catalog().Entries()); n != 0 {
		t.Errorf("%d tools from a server that did not start", n)
	}
}

func TestNoCommand(t *testing.T) {
	reg := registry.New()
	src, err := NewSource(reg, SourceOptions{Servers: map[string]Server{"empty": {}}})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if err := src.WaitReady(deadline(t)); err != nil {
		t.Fatal(err)
	}
	d := reg.Catalog().Diagnostics()
	if len(d) != 1 || !strings.Contains(d[0].Message, `"command"`) {
		t.Errorf("diagnostics %v", d)
	}
}

// alive reports whether pid is a live (not zombie) process.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// gone waits until pid has exited (a zombie counts), at most d, through a pidfd.
func gone(pid int, d time.Duration) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return !alive(pid) // ESRCH: reaped already
	}
	defer unix.Close(fd)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, int(d.Milliseconds()))
		if err == unix.EINTR {
			continue
		}
		return n == 1 || !alive(pid)
	}
}

func TestCloseLeavesNoProcess(t *testing.T) {
	f := start(t, map[string]string{"test": "1"}, nil)
	pids := map[string]int{}
	for _, tool := range []string{"pid", "spawn"} {
		c := newCall(nil)
		if _, err := f.exec(t, deadline(t), "test_"+tool, `{}`, c); err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(c.out.String())
		if err != nil || !alive(pid) {
			t.Fatalf("%s: %q %v", tool, c.out.String(), err)
		}
		pids[tool] = pid
	}
	if err := f.src.Close(); err != nil {
		t.Fatal(err)
	}
	for what, pid := range pids {
		if !gone(pid, 10*time.Second) {
			t.Errorf("%s (pid %d) still runs after Close", what, pid)
		}
	}
	if n := len(f.reg.Catalog().Entries()); n != 0 {
		t.Errorf("%d tools left after Close", n)
	}
	c := newCall(nil)
	if _, err := f.src.servers["test"].call(deadline(t), &c.Call, "test_echo", "echo", nil, json.RawMessage(`{}`)); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Errorf("a call after Close: %v", err)
	}
}

func TestCloseKillsStubbornServer(t *testing.T) {
	f := start(t, map[string]string{"test": "stubborn"}, func(o *SourceOptions) { o.TerminateDuration = 50 * time.Millisecond })
	c := newCall(nil)
	if _, err := f.exec(t, deadline(t), "test_pid", `{}`, c); err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(c.out.String())
	_ = f.src.Close()
	if !gone(pid, 10*time.Second) {
		t.Errorf("a server that ignores stdin closing and SIGTERM (pid %d) survived Close", pid)
	}
}

func TestSetServers(t *testing.T) {
	f := start(t, map[string]string{"one": "1", "two": "1"}, nil)
	pidOf := func(server string) int {
		c := newCall(nil)
		if _, err := f.exec(t, deadline(t), server+"_pid", `{}`, c); err != nil {
			t.Fatal(err)
		}
		pid, _ := strconv.Atoi(c.out.String())
		return pid
	}
	onePID, twoPID := pidOf("one"), pidOf("two")
	cmd := []string{os.Args[0], "-test.run=^$"}
	env := map[string]string{testServerEnv: "1", "GORACE": "atexit_sleep_ms=0"}
	f.src.SetServers(map[string]Server{
		"one":   {Command: cmd, Env: env},                                                                      // unchanged: keeps running
		"three": {Command: cmd, Env: env},                                                                      // new
		"two":   {Command: cmd, Env: map[string]string{testServerEnv: "other", "GORACE": "atexit_sleep_ms=0"}}, // changed: restarted
	})
	f.waitEvent(t, "three's tools", func(e event) bool { return slices.Contains(e.ch.Added, "three_echo") })
	if _, ok := f.reg.Catalog().Lookup("two_echo"); !ok {
		f.waitEvent(t, "two back", func(e event) bool { return slices.Contains(e.ch.Added, "two_echo") })
	}
	if pidOf("one") != onePID {
		t.Error("an unchanged server was restarted")
	}
	if pidOf("two") == twoPID || !gone(twoPID, 10*time.Second) {
		t.Error("a changed server was not restarted")
	}
	threePID := pidOf("three")
	f.src.SetServers(map[string]Server{"one": {Command: cmd, Env: env}})
	for _, id := range []string{"two_echo", "three_echo"} {
		if _, ok := f.reg.Catalog().Lookup(id); ok {
			t.Errorf("%s still in the catalogue after its server was removed", id)
		}
	}
	if !gone(threePID, 10*time.Second) {
		t.Error("a removed server still runs")
	}
	f.entry(t, "one_echo")
}

// beginCounter is a registry.ChangeRecorder that counts Begin.
type beginCounter struct{ begins int }

func (b *beginCounter) Begin(context.Context) error { b.begins++; return nil }
func (b *beginCounter) Before(context.Context, string, []byte, uint32, bool) error {
	return nil
}

// TestCheckpointKinds: a tool marked read-only has no checkpoint; any other begins its
// checkpoint's window before its request, once.
func TestCheckpointKinds(t *testing.T) {
	f := start(t, map[string]string{"test": "1"}, nil)
	if e := f.entry(t, "test_echo"); e.Changes != registry.ChangesNone {
		t.Errorf("test_echo (readOnlyHint): Changes %v", e.Changes)
	}
	if e := f.entry(t, "test_rich"); e.Changes != registry.ChangesFound {
		t.Errorf("test_rich: Changes %v", e.Changes)
	}
	c := newCall(nil)
	rec := &beginCounter{}
	c.Call.Changes = rec
	if _, err := f.exec(t, deadline(t), "test_rich", `{}`, c); err != nil {
		t.Fatal(err)
	}
	if rec.begins != 1 {
		t.Fatalf("Begin called %d times, want once", rec.begins)
	}
}
