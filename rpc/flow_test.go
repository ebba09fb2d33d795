package rpc

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.lsp.dev/jsonrpc2"

	"github.com/toolsd/toolsd/protocol"
)

// rawResponse is an answer as the client reads it.
type rawResponse struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func writeFrame(w io.Writer, body string) error {
	_, err := fmt.Fprintf(w, "Content-Length: %d\r\n\r\n%s", len(body), body)
	return err
}

// readResponses reads frames from r until it fails, sending the answers (not the
// notifications) on the returned channel, which it closes at the end.
func readResponses(r io.Reader) <-chan rawResponse { return readFrom(r, false) }

// readMessages is readResponses with the notifications.
func readMessages(r io.Reader) <-chan rawResponse { return readFrom(r, true) }

func readFrom(r io.Reader, notifications bool) <-chan rawResponse {
	ch := make(chan rawResponse, 16)
	go func() {
		defer close(ch)
		br := bufio.NewReader(r)
		for {
			n := -1
			for {
				line, err := br.ReadString('\n')
				if err != nil {
					return
				}
				line = strings.TrimRight(line, "\r\n")
				if line == "" {
					break
				}
				if v, ok := strings.CutPrefix(line, "Content-Length: "); ok {
					n, _ = strconv.Atoi(v)
				}
			}
			body := make([]byte, n)
			if _, err := io.ReadFull(br, body); err != nil {
				return
			}
			var resp rawResponse
			if json.Unmarshal(body, &resp) == nil && (notifications || resp.Method == "") {
				ch <- resp
			}
		}
	}()
	return ch
}

func next(t *testing.T, ch <-chan rawResponse) rawResponse {
	t.Helper()
	select {
	case r, ok := <-ch:
		if !ok {
			t.Fatal("the daemon closed its output")
		}
		return r
	case <-time.After(20 * time.Second):
		t.Fatal("no answer from the daemon")
	}
	return rawResponse{}
}

// signalHandler is a slog handler that closes a channel at the first record with a message.
type signalHandler struct {
	msg  string
	once sync.Once
	seen chan struct{}
}

func (h *signalHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *signalHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.once.Do(func() { close(h.seen) })
	}
	return nil
}
func (h *signalHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *signalHandler) WithGroup(string) slog.Handler      { return h }

func liveHeap() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// A client that sends 10,000 requests without reading the answers: the daemon stops
// reading instead of keeping every answer (and a goroutine for it) in memory, and every
// answer arrives once the client reads.
func TestBackpressureBoundsMemory(t *testing.T) {
	const n = 10000
	fb := &fakeBackend{executing: make(chan struct{}, 1), resolveBytes: 2 << 10}
	paused := &signalHandler{msg: "reading paused: the client has not read enough answers", seen: make(chan struct{})}
	out, in, exit := serveRaw(t, fb, slog.New(paused))
	answers := make(chan rawResponse)
	readNow := make(chan struct{})
	go func() {
		// The client reads the answer to initialize, then nothing until readNow.
		defer close(answers)
		all := readResponses(out)
		r, ok := <-all
		if !ok {
			return
		}
		answers <- r
		<-readNow
		for r := range all {
			answers <- r
		}
	}()
	if err := writeFrame(in, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"workspaceFolder":"/w"}}`); err != nil {
		t.Fatal(err)
	}
	if r := next(t, answers); r.Error != nil {
		t.Fatalf("initialize: %+v", r.Error)
	}
	heap0, goroutines0 := liveHeap(), runtime.NumGoroutine()

	written := make(chan error, 1)
	go func() {
		for i := 1; i <= n; i++ {
			if err := writeFrame(in, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/resolve","params":{"sessionID":"s"}}`, i)); err != nil {
				written <- err
				return
			}
		}
		written <- nil
	}()
	// The daemon says when it stops reading; a daemon that never stops reads all 10,000.
	select {
	case <-paused.seen:
	case err := <-written:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the daemon neither read every request nor paused")
	}
	heap, goroutines := liveHeap(), runtime.NumGoroutine()
	t.Logf("with %d requests unanswered: live heap %+d KiB, goroutines %+d", n, (int64(heap)-int64(heap0))>>10, goroutines-goroutines0)
	if grown := int64(heap) - int64(heap0); grown > 16<<20 {
		t.Errorf("the live heap grew by %d MiB while the client did not read; want it bounded (under 16 MiB)", grown>>20)
	}
	if grown := goroutines - goroutines0; grown > 4*maxInFlight {
		t.Errorf("%d goroutines more while the client did not read; want at most %d", grown, 4*maxInFlight)
	}

	close(readNow)
	seen := make(map[string]bool, n)
	for len(seen) < n {
		r := next(t, answers)
		if r.Error != nil || len(r.Result) == 0 {
			t.Fatalf("request %s: %+v", r.ID, r.Error)
		}
		if seen[string(r.ID)] {
			t.Fatalf("request %s answered twice", r.ID)
		}
		seen[string(r.ID)] = true
	}
	if err := <-written; err != nil {
		t.Fatal(err)
	}
	_ = in.Close()
	<-exit
}

// A client that goes away while the daemon has stopped reading ends the daemon.
func TestClientGoneWhilePaused(t *testing.T) {
	fb := &fakeBackend{executing: make(chan struct{}, 1)}
	paused := &signalHandler{msg: "reading paused: the client has not read enough answers", seen: make(chan struct{})}
	out, in, exit := serveRaw(t, fb, slog.New(paused))
	answers := readResponses(out)
	if err := writeFrame(in, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"workspaceFolder":"/w"}}`); err != nil {
		t.Fatal(err)
	}
	next(t, answers) // and no answer after it
	go func() {
		// Until the daemon stops reading: after maxInFlight+maxHeld requests (the first
		// answer's write waits for a reader). Closing in ends the write.
		for i := 1; ; i++ {
			if writeFrame(in, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"calls/get","params":{"callID":"c"}}`, i)) != nil {
				return
			}
		}
	}()
	select {
	case <-paused.seen:
	case <-time.After(60 * time.Second):
		t.Fatal("the daemon did not stop reading")
	}
	_ = out.Close()
	_ = in.Close()
	select {
	case <-exit:
	case <-time.After(20 * time.Second):
		t.Fatal("the daemon did not end after the client went away")
	}
	for range answers {
	}
}

// Once answers cannot be written (the client closed its end for them), the flow control
// holds nothing back: the requests read after that are refused by the library without
// running, so they never free a slot, and holding them would stop the daemon from reading
// to the end of its input, which ends it.
func TestAnswersClosedEndsTheDaemon(t *testing.T) {
	fb := &fakeBackend{executing: make(chan struct{}, 1)}
	out, in, exit := serveRaw(t, fb, nil)
	answers := readResponses(out)
	if err := writeFrame(in, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"workspaceFolder":"/w"}}`); err != nil {
		t.Fatal(err)
	}
	next(t, answers)
	// A call that runs until the daemon ends keeps the connection busy.
	if err := writeFrame(in, `{"jsonrpc":"2.0","id":1,"method":"tools/execute","params":{"sessionID":"s","messageID":"m","callID":"c","tool":"t"}}`); err != nil {
		t.Fatal(err)
	}
	<-fb.executing
	_ = out.Close()
	wrote := make(chan error, 1)
	go func() {
		for i := 2; i <= 3*(maxInFlight+maxHeld); i++ {
			if err := writeFrame(in, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"calls/get","params":{"callID":"c"}}`, i)); err != nil {
				wrote <- err
				return
			}
		}
		wrote <- nil
	}()
	select {
	case err := <-wrote:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Error("the daemon stopped reading although no answer can be written")
	}
	_ = in.Close()
	select {
	case <-exit:
	case <-time.After(20 * time.Second):
		t.Fatal("the daemon did not end at the end of its input")
	}
	for range answers {
	}
}

// While requests are held back, what frees the calls in flight gets through: permission/list
// and permission/reply are answered, $/cancelRequest cancels both a held request (answered
// here, never started) and a running one (which frees a slot for the next held request),
// and exit ends the daemon.
func TestHeldRequestsLetControlThrough(t *testing.T) {
	fb := &fakeBackend{executing: make(chan struct{}, 2*maxInFlight)}
	out, in, exit := serveRaw(t, fb, nil)
	answers := readResponses(out)
	send := func(body string) {
		t.Helper()
		if err := writeFrame(in, body); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"workspaceFolder":"/w"}}`)
	if r := next(t, answers); r.Error != nil {
		t.Fatalf("initialize: %+v", r.Error)
	}
	const calls = maxInFlight + 5
	for i := 1; i <= calls; i++ {
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/execute","params":{"sessionID":"s","messageID":"m","callID":"c%d","tool":"t"}}`, i, i))
	}
	for range maxInFlight {
		select {
		case <-fb.executing:
		case <-time.After(20 * time.Second):
			t.Fatal("the calls did not start")
		}
	}
	// Read after the calls: answered although all slots are taken.
	send(`{"jsonrpc":"2.0","id":"list","method":"permission/list"}`)
	if r := next(t, answers); string(r.ID) != `"list"` || r.Error != nil {
		t.Fatalf("permission/list while requests are held back: %s %+v", r.ID, r.Error)
	}
	send(`{"jsonrpc":"2.0","id":"reply","method":"permission/reply","params":{"id":"ask_1","reply":"once"}}`)
	if r := next(t, answers); string(r.ID) != `"reply"` || r.Error != nil {
		t.Fatalf("permission/reply while requests are held back: %s %+v", r.ID, r.Error)
	}
	held := maxInFlight + 2
	send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":%d}}`, held))
	if r := next(t, answers); string(r.ID) != strconv.Itoa(held) || r.Error == nil || r.Error.Code != -32800 {
		t.Fatalf("cancelling a held request: %s %+v", r.ID, r.Error)
	}
	send(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":3}}`)
	if r := next(t, answers); string(r.ID) != "3" || r.Error == nil || r.Error.Code != -32800 {
		t.Fatalf("cancelling a running request: %s %+v", r.ID, r.Error)
	}
	select {
	case <-fb.executing: // the first held request took the freed slot
	case <-time.After(20 * time.Second):
		t.Fatal("a freed slot did not start the next held request")
	}
	fb.mu.Lock()
	started, maxRunning := strings.Join(fb.started, " "), fb.maxRunning
	fb.mu.Unlock()
	if maxRunning > maxInFlight {
		t.Errorf("%d calls ran at once, want at most %d", maxRunning, maxInFlight)
	}
	if want := fmt.Sprintf("c%d", maxInFlight+1); !strings.HasSuffix(started, " "+want) {
		t.Errorf("the freed slot went to %q, want %s (the first held request)", started[strings.LastIndex(started, " ")+1:], want)
	}
	if strings.Contains(started+" ", fmt.Sprintf(" c%d ", held)) {
		t.Errorf("the cancelled held request c%d ran", held)
	}
	send(`{"jsonrpc":"2.0","method":"exit"}`)
	select {
	case c := <-exit:
		if c != 1 {
			t.Fatalf("exit code %d, want 1 (no shutdown)", c)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("exit did not get through while requests were held back")
	}
	_ = in.Close()
	for range answers {
	}
}

// The routing rules of admission, with every slot taken.
func TestFlowRouting(t *testing.T) {
	s, out := newTestStream("", 1<<20)
	var held, dropped []string
	s.onHold = func(c *jsonrpc2.Call) { held = append(held, idKey(c.ID())) }
	s.onDrop = func(c *jsonrpc2.Call) { dropped = append(dropped, idKey(c.ID())) }
	for i := int64(1000); s.acquire(idKey(jsonrpc2.NewNumberID(i))); i++ {
	}
	mk := func(body string) *message {
		m, refusal := decode([]byte(body))
		if refusal != nil {
			t.Fatalf("%s: %s", body, refusal)
		}
		return m
	}
	call := mk(`{"jsonrpc":"2.0","id":7,"method":"tools/execute"}`)
	shutdown := mk(`{"jsonrpc":"2.0","id":8,"method":"shutdown"}`)
	exit := mk(`{"jsonrpc":"2.0","method":"exit"}`)
	for _, step := range []struct {
		name string
		m    *message
		out  bool // handed out at once
	}{
		{"a call waits for a slot", call, false},
		{"permission/reply overtakes it", mk(`{"jsonrpc":"2.0","id":1,"method":"permission/reply"}`), true},
		{"permission/list overtakes it", mk(`{"jsonrpc":"2.0","id":2,"method":"permission/list"}`), true},
		{"a notification overtakes it", mk(`{"jsonrpc":"2.0","method":"initialized"}`), true},
		{"a cancel of another request passes", mk(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":99}}`), true},
		{"shutdown keeps its place", shutdown, false},
		{"exit stays behind shutdown", exit, false},
		{"a cancel of the held call answers it", mk(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":7}}`), false},
	} {
		if got := s.route(step.m); got != step.out {
			t.Fatalf("%s: handed out %v", step.name, got)
		}
	}
	if got := codeAndID(t, splitFrames(t, out.String())); got != "-32800 7" {
		t.Fatalf("answers %s, want the held call's cancellation", got)
	}
	if strings.Join(held, " ") != "n:7" || strings.Join(dropped, " ") != "n:7" {
		t.Fatalf("held %q, dropped %q: want the call held, then dropped", held, dropped)
	}
	// Behind the cancelled call: shutdown and exit go in order, without a slot.
	if m := s.admit(); m != shutdown {
		t.Fatalf("first out %+v", m)
	}
	if m := s.admit(); m != exit {
		t.Fatalf("second out %+v", m)
	}
	// Once nothing is held a call waits for a slot, and takes one freed when an answer of a
	// request that holds one is written; other writes free none.
	if s.route(call) {
		t.Fatal("a call went out with no free slot")
	}
	ctx := context.Background()
	for _, m := range []jsonrpc2.Message{
		jsonrpc2.NewNotification("tools/progress", jsonrpc2.RawMessage(`{}`)),
		jsonrpc2.NewResponse(jsonrpc2.NewNumberID(99), jsonrpc2.RawMessage(`{}`), nil),
		jsonrpc2.NewCall(jsonrpc2.NewNumberID(1000), "hooks/run", nil),
	} {
		if _, err := s.Write(ctx, m); err != nil {
			t.Fatal(err)
		}
		if m := s.admit(); m != nil {
			t.Fatalf("a write that answers no request in flight freed a slot: %+v", m)
		}
	}
	if _, err := s.Write(ctx, jsonrpc2.NewResponse(jsonrpc2.NewNumberID(1000), nil, jsonrpc2.NewError(1, "x"))); err != nil {
		t.Fatal(err)
	}
	if m := s.admit(); m != call {
		t.Fatalf("after an answer was written: %+v", m)
	}
}

// A call held back is not silent: a client with the progress capability gets its
// tools/progress "queued" (and "cancelled" when it is cancelled while held), and the call
// runs once a slot is free.
func TestHeldCallIsQueued(t *testing.T) {
	fb := &fakeBackend{executing: make(chan struct{}, 2*maxInFlight)}
	out, in, exit := serveRaw(t, fb, nil)
	all := readMessages(out)
	send := func(body string) {
		t.Helper()
		if err := writeFrame(in, body); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"workspaceFolder":"/w","capabilities":{"progress":true}}}`)
	if r := next(t, all); r.Error != nil {
		t.Fatalf("initialize: %+v", r.Error)
	}
	execute := func(i int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/execute","params":{"sessionID":"s","messageID":"m","callID":"c%d","tool":"t"}}`, i, i)
	}
	for i := 1; i <= maxInFlight; i++ {
		send(execute(i))
	}
	for range maxInFlight {
		select {
		case <-fb.executing:
		case <-time.After(20 * time.Second):
			t.Fatal("the calls did not start")
		}
	}
	queued, cancelled := maxInFlight+1, maxInFlight+2
	send(execute(queued))
	send(execute(cancelled))
	progress := func() protocol.ProgressParams {
		t.Helper()
		r := next(t, all)
		var p protocol.ProgressParams
		if r.Method != protocol.MethodToolsProgress || json.Unmarshal(r.Params, &p) != nil {
			t.Fatalf("got %+v, want tools/progress", r)
		}
		return p
	}
	got := map[string]string{}
	for range 2 {
		p := progress()
		got[p.CallID] = p.Status
		if p.SessionID != "s" || p.MessageID != "m" || p.Tool != "t" {
			t.Fatalf("progress of a held call: %+v", p)
		}
	}
	want := map[string]string{fmt.Sprint("c", queued): "queued", fmt.Sprint("c", cancelled): "queued"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("progress %v, want %v", got, want)
	}
	send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":%d}}`, cancelled))
	if r := next(t, all); string(r.ID) != fmt.Sprint(cancelled) || r.Error == nil || r.Error.Code != -32800 {
		t.Fatalf("cancelling the held call: %+v", r)
	}
	if p := progress(); p.CallID != fmt.Sprint("c", cancelled) || p.Status != protocol.StatusCancelled {
		t.Fatalf("after the held call was cancelled: %+v", p)
	}
	send(`{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":1}}`)
	if r := next(t, all); string(r.ID) != "1" || r.Error == nil || r.Error.Code != -32800 {
		t.Fatalf("cancelling a running call: %+v", r)
	}
	select {
	case <-fb.executing:
	case <-time.After(20 * time.Second):
		t.Fatal("the queued call did not start when a slot was freed")
	}
	fb.mu.Lock()
	last := fb.started[len(fb.started)-1]
	fb.mu.Unlock()
	if last != fmt.Sprint("c", queued) {
		t.Fatalf("the freed slot went to %s, want c%d", last, queued)
	}
	_ = in.Close()
	<-exit
	for range all {
	}
}
