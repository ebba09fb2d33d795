package attach

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"
	"go.uber.org/goleak"

	"github.com/toolsd/toolsd/protocol"
)

// dialEnv makes the test binary a client that dials the socket it names, says hello, and
// prints what came back (used as another user, see TestOtherUserRefused).
const dialEnv = "ATTACH_TEST_DIAL"

// readyChildEnv makes the test binary an owner that only says it is ready, on the
// descriptor (Windows: the handle) that ReadyFDEnv names, as cmd/toolsd's owner does.
const readyChildEnv = "ATTACH_TEST_READY"

func TestMain(m *testing.M) {
	if os.Getenv("ATTACH_TEST_WAIT") == "1" { // a child that lives until its stdin ends
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	if os.Getenv(readyChildEnv) == "1" {
		fd, err := strconv.Atoi(os.Getenv(ReadyFDEnv))
		if err != nil {
			os.Exit(2)
		}
		_, _ = fmt.Fprintf(os.NewFile(uintptr(fd), "ready"), "ready %d\n", os.Getpid())
		os.Exit(0)
	}
	if sock := os.Getenv(dialEnv); sock != "" {
		c, err := dialOwner(time.Now().Add(5*time.Second), sock)
		if err != nil {
			fmt.Printf("uid %d: dial: %v\n", os.Getuid(), err)
			os.Exit(0)
		}
		_ = writeLine(c, Hello{Proto: ProtoToolsd, PID: os.Getpid()})
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		b, err := io.ReadAll(c)
		fmt.Printf("uid %d: read %d bytes %q, %v\n", os.Getuid(), len(b), b, err)
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// testOwner is an owner running in this process on a fresh folder and runtime folder.
type testOwner struct {
	t      testing.TB
	folder string
	paths  Paths
	log    *syncBuffer
	done   chan int
	cancel context.CancelFunc
}

func startOwner(t testing.TB) *testOwner {
	t.Helper()
	rt, err := os.MkdirTemp("", "rt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(rt) })
	t.Setenv("XDG_RUNTIME_DIR", rt)
	t.Setenv("LOCALAPPDATA", rt) // Windows' runtime folder
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	o := &testOwner{t: t, folder: t.TempDir(), log: &syncBuffer{}, done: make(chan int, 1)}
	store := filepath.Join(t.TempDir(), "store.db")
	if o.paths, _, err = Locate(o.folder, store); err != nil {
		t.Fatal(err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	o.cancel = cancel
	go func() {
		o.done <- RunOwner(ctx, OwnerOptions{
			Folder: o.folder, StorePath: store, Grace: 100 * time.Millisecond, Version: "test", Ready: pw,
			Logger: slog.New(slog.NewTextHandler(o.log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		})
	}()
	line, _ := bufio.NewReader(pr).ReadString('\n')
	_ = pr.Close()
	if line != "ready\n" {
		t.Fatalf("owner: %q\n%s", line, o.log)
	}
	t.Cleanup(func() {
		cancel()
		select {
		case <-o.done:
		case <-time.After(15 * time.Second):
			t.Errorf("the owner did not stop")
		}
		if t.Failed() {
			t.Logf("owner log:\n%s", o.log)
		}
	})
	return o
}

// An owner is started detached and tells its starter that it is ready on the descriptor
// (Windows: the inherited handle) that ReadyFDEnv names.
func TestDetach(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), readyChildEnv+"=1")
	detach(cmd, pw)
	err = cmd.Start()
	_ = pw.Close()
	if err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(pr).ReadString('\n')
	_ = cmd.Wait()
	if want := fmt.Sprintf("ready %d\n", cmd.Process.Pid); line != want {
		t.Fatalf("the owner said %q, want %q", line, want)
	}
}

// waitExit waits for the owner to exit by itself (its grace after the last client).
func (o *testOwner) waitExit() {
	o.t.Helper()
	select {
	case code := <-o.done:
		o.done <- code
	case <-time.After(10 * time.Second):
		o.t.Fatal("the owner did not exit after its last client left")
	}
}

// editor is a toolsd-protocol client on a raw connection (sourcegraph/jsonrpc2, an
// independent implementation).
type editor struct {
	conn  *jsonrpc2.Conn
	mu    sync.Mutex
	notes []jsonrpc2.Request
	more  chan struct{}
}

func (o *testOwner) editor(ctx context.Context, name string, ask bool) *editor {
	o.t.Helper()
	c, err := Dial(DialOptions{Paths: o.paths, Hello: Hello{Proto: ProtoToolsd, PID: os.Getpid()}, Timeout: 10 * time.Second})
	if err != nil {
		o.t.Fatal(err)
	}
	e := &editor{more: make(chan struct{})}
	e.conn = jsonrpc2.NewConn(context.Background(), jsonrpc2.NewBufferedStream(c, jsonrpc2.VSCodeObjectCodec{}), jsonrpc2.HandlerWithError(func(_ context.Context, _ *jsonrpc2.Conn, r *jsonrpc2.Request) (any, error) {
		e.mu.Lock()
		e.notes = append(e.notes, *r)
		close(e.more)
		e.more = make(chan struct{})
		e.mu.Unlock()
		return nil, nil
	}))
	o.t.Cleanup(func() { _ = e.conn.Close() })
	var res protocol.InitializeResult
	if err := e.conn.Call(ctx, "initialize", map[string]any{
		"clientInfo": map[string]string{"name": name}, "workspaceFolder": o.folder,
		"capabilities": map[string]bool{"ask": ask, "progress": true},
	}, &res); err != nil {
		o.t.Fatalf("initialize: %v", err)
	}
	return e
}

func (e *editor) waitNote(ctx context.Context, method string) *json.RawMessage {
	for i := 0; ; i++ {
		e.mu.Lock()
		for ; i < len(e.notes); i++ {
			if e.notes[i].Method == method {
				p := e.notes[i].Params
				e.mu.Unlock()
				return p
			}
		}
		more := e.more
		e.mu.Unlock()
		select {
		case <-more:
			i--
		case <-ctx.Done():
			return nil
		}
	}
}

// Bad input on the socket: garbage, an overlong first line, a client that connects and
// never speaks, 200 clients at once. The owner answers or drops each and keeps serving.
func TestBadInputKeepsServing(t *testing.T) {
	o := startOwner(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	anchor := o.editor(ctx, "anchor", false) // keeps the owner from its grace meanwhile

	silent, err := dialOwner(time.Now().Add(10*time.Second), o.paths.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()

	for _, garbage := range []string{"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "\x00\x01\x02\xff\n", strings.Repeat("x", 10000) + "\n", `{"proto":"smtp"}` + "\n"} {
		c, err := dialOwner(time.Now().Add(10*time.Second), o.paths.Socket)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.Write([]byte(garbage))
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		var w Welcome
		err = readLine(bufio.NewReader(c), &w)
		_ = c.Close()
		if err != nil || w.Error == "" {
			t.Fatalf("garbage %q: welcome %+v, %v", garbage[:min(len(garbage), 20)], w, err)
		}
	}

	// 200 clients at once, each initializing and asking who is attached.
	const n = 200
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := Dial(DialOptions{Paths: o.paths, Hello: Hello{Proto: ProtoToolsd, PID: os.Getpid()}, Timeout: 30 * time.Second})
			if err != nil {
				errs <- err
				return
			}
			conn := jsonrpc2.NewConn(ctx, jsonrpc2.NewBufferedStream(c, jsonrpc2.VSCodeObjectCodec{}), jsonrpc2.HandlerWithError(func(context.Context, *jsonrpc2.Conn, *jsonrpc2.Request) (any, error) { return nil, nil }))
			defer conn.Close()
			if err := conn.Call(ctx, "initialize", map[string]any{"clientInfo": map[string]string{"name": fmt.Sprint("c", i)}, "workspaceFolder": o.folder}, nil); err != nil {
				errs <- err
				return
			}
			var rr protocol.ResolveResult
			if err := conn.Call(ctx, "tools/resolve", map[string]any{"sessionID": "s"}, &rr); err != nil || len(rr.Tools) == 0 {
				errs <- fmt.Errorf("tools/resolve: %v", err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// The owner still serves a client, although the silent one is still connected.
	e := o.editor(ctx, "after", true)
	var rr protocol.ResolveResult
	if err := e.conn.Call(ctx, "tools/resolve", map[string]any{"sessionID": "s"}, &rr); err != nil || len(rr.Tools) == 0 {
		t.Fatalf("resolve after bad input: %v", err)
	}
	_ = anchor.conn.Close()
	_ = e.conn.Close()
	_ = silent.Close()
	o.waitExit()
}

// The person's client disappears while the ask it shows waits: the ask goes to whoever can
// answer it now, here nobody, so the call is refused (no-ui) instead of waiting forever, and
// the owner keeps serving.
func TestClientGoneMidAsk(t *testing.T) {
	o := startOwner(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	person := o.editor(ctx, "person", true)
	caller := o.editor(ctx, "caller", false)
	var res protocol.ExecuteResult
	done := make(chan error, 1)
	go func() {
		done <- caller.conn.Call(ctx, "tools/execute", protocol.ExecuteParams{SessionID: "s", MessageID: "m", CallID: "c1", Tool: "bash", Args: json.RawMessage(`{"command":"date"}`)}, &res)
	}()
	p := person.waitNote(ctx, "permission/asked")
	if p == nil {
		t.Fatal("the person was not asked")
	}
	var ask protocol.AskedParams
	_ = json.Unmarshal(*p, &ask)
	if ask.Client == nil || ask.Client.Name != "caller" {
		t.Fatalf("the ask does not name the caller: %s", *p)
	}
	_ = person.conn.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if res.Status != "error" || !strings.Contains(res.Error, "no one was there to approve") {
		t.Fatalf("the call after its person left: %+v", res)
	}
	var rr protocol.ResolveResult
	if err := caller.conn.Call(ctx, "tools/resolve", map[string]any{"sessionID": "s"}, &rr); err != nil {
		t.Fatal(err)
	}
	_ = caller.conn.Close()
	o.waitExit()
}

// A client that gives the owner its standard streams, handed over (Linux and macOS) or
// relayed (as every client on Windows, which cannot hand them over; here forced): the owner
// serves the protocol on them, what the client read before attaching (the prefix) comes
// first, and the session's exit code comes back — 0 after shutdown and exit, 1 when the
// client's input ends without them, MCP's end of input is a clean end — and an owner that
// goes away is told apart from a session's end. Both ways give the same answers.
func TestClientStreams(t *testing.T) {
	for _, relayed := range []bool{false, true} {
		t.Run(map[bool]string{false: "handed over", true: "relayed"}[relayed], func(t *testing.T) {
			testClientStreams(t, relayed)
		})
	}
}

// lspFrame is body with an LSP header.
func lspFrame(body string) string {
	return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body)
}

// ended is how a client's Wait ended.
type ended struct {
	code int
	ok   bool
}

// attachStreams starts a client of o on pipes, its streams handed over or relayed, saying
// hello h with prefix; it returns the client's stdin (to write to), its stdout (to read),
// and its Wait's result. A hello without a pid is a client that dies at once.
func attachStreams(t testing.TB, o *testOwner, h Hello, prefix string, relayed bool) (io.WriteCloser, *bufio.Reader, chan ended) {
	t.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = inR.Close(); _ = inW.Close(); _ = outR.Close(); _ = outW.Close() })
	c, err := Dial(DialOptions{Paths: o.paths, Hello: h, Timeout: 10 * time.Second,
		Streams: [2]*os.File{inR, outW}, Prefix: []byte(prefix), relay: relayed})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan ended, 1)
	if h.PID == 0 {
		_ = c.Close()
		return inW, nil, done
	}
	go func() {
		defer c.Close()
		code, ok := c.Wait()
		done <- ended{code, ok}
	}()
	return inW, bufio.NewReader(outR), done
}

// readReply reads LSP frames from r up to the next reply (one with an id), skipping the
// notifications sent meanwhile (clients/changed), and returns its body.
func readReply(t testing.TB, r *bufio.Reader) []byte {
	t.Helper()
	for {
		body := readFrame(t, r)
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(body, &m) != nil || m.ID != nil {
			return body
		}
	}
}

// readFrame reads the next LSP frame's body from r.
func readFrame(t testing.TB, r *bufio.Reader) []byte {
	t.Helper()
	n := 0
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading a response header: %v", err)
		}
		if line == "\r\n" {
			break
		}
		_, _ = fmt.Sscanf(line, "Content-Length: %d", &n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		t.Fatal(err)
	}
	return body
}

func testClientStreams(t *testing.T, relayed bool) {
	if !relayed && !canHandOver {
		t.Skip("this system cannot hand streams over")
	}
	o := startOwner(t)
	frame := lspFrame
	initialize := func(o *testOwner) string {
		return frame(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"workspaceFolder":%q}}`, o.folder))
	}
	attach := func(o *testOwner, h Hello, prefix string) (io.WriteCloser, *bufio.Reader, chan ended) {
		t.Helper()
		return attachStreams(t, o, h, prefix, relayed)
	}
	toolsd := Hello{Proto: ProtoToolsd, PID: os.Getpid()}
	// response reads the next frame of the client's output and checks it answers id.
	response := func(r *bufio.Reader, id int) {
		t.Helper()
		checkResult(t, readReply(t, r), id)
	}
	wait := func(done chan ended, want ended) {
		t.Helper()
		select {
		case got := <-done:
			if got != want {
				t.Fatalf("the client ended with %+v, want %+v", got, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the client did not end")
		}
	}

	// Shutdown and exit: 0.
	in, out, done := attach(o, toolsd, initialize(o))
	response(out, 1) // the prefix's initialize
	_, _ = io.WriteString(in, frame(`{"jsonrpc":"2.0","id":2,"method":"tools/resolve","params":{"sessionID":"s"}}`))
	response(out, 2)
	_, _ = io.WriteString(in, frame(`{"jsonrpc":"2.0","id":3,"method":"shutdown"}`)+frame(`{"jsonrpc":"2.0","method":"exit"}`))
	response(out, 3)
	wait(done, ended{0, true})

	// The client's input ends without them: 1, and the session is over.
	in, out, done = attach(o, toolsd, initialize(o))
	response(out, 1)
	_ = in.Close()
	wait(done, ended{1, true})

	// MCP (newline-delimited JSON): a call, then the end of input, which ends it cleanly.
	in, out, done = attach(o, Hello{Proto: ProtoMCP, PID: os.Getpid()}, "")
	_, _ = io.WriteString(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n")
	line, err := out.ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, line, 1)
	_ = in.Close()
	wait(done, ended{0, true})

	// A client dies: its session ends, and the owner, left with no client, exits after its
	// grace.
	attach(o, Hello{Proto: ProtoToolsd}, initialize(o))
	o.waitExit()

	// The owner goes away mid-session: not ok.
	o = startOwner(t)
	_, out, done = attach(o, toolsd, initialize(o))
	response(out, 1)
	o.cancel()
	wait(done, ended{1, false})
}

// A small request's round trip through a client whose streams are handed over, and through
// one whose streams are relayed (as on Windows): an unknown method, answered with an
// error, so that the transport is most of what is timed. Run with -count to interleave.
func BenchmarkClientStreams(b *testing.B) {
	for _, relayed := range []bool{false, true} {
		b.Run(map[bool]string{false: "handed over", true: "relayed"}[relayed], func(b *testing.B) {
			if !relayed && !canHandOver {
				b.Skip("this system cannot hand streams over")
			}
			o := startOwner(b)
			init := lspFrame(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"workspaceFolder":%q}}`, o.folder))
			in, out, _ := attachStreams(b, o, Hello{Proto: ProtoToolsd, PID: os.Getpid()}, init, relayed)
			checkResult(b, readReply(b, out), 1)
			req := []byte(lspFrame(`{"jsonrpc":"2.0","id":2,"method":"bench/nothing"}`))
			for b.Loop() {
				if _, err := in.Write(req); err != nil {
					b.Fatal(err)
				}
				readReply(b, out)
			}
			_ = in.Close()
		})
	}
}

// checkResult checks that a JSON-RPC message is the result of request id.
func checkResult(t testing.TB, msg []byte, id int) {
	t.Helper()
	var m struct {
		ID     int             `json:"id"`
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(msg, &m); err != nil || m.ID != id || m.Result == nil {
		t.Fatalf("not the result of request %d: %s", id, msg)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
