package session

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolsd/toolsd/permission"
	"github.com/toolsd/toolsd/protocol"
	"github.com/toolsd/toolsd/registry"
	"github.com/toolsd/toolsd/store"
)

// recorder is a Notifier that keeps everything.
type recorder struct {
	mu       sync.Mutex
	progress []protocol.ProgressParams
	asked    chan protocol.AskedParams
}

func (r *recorder) Progress(p protocol.ProgressParams) {
	r.mu.Lock()
	r.progress = append(r.progress, p)
	r.mu.Unlock()
}
func (r *recorder) Asked(p protocol.AskedParams) { r.asked <- p }

func (r *recorder) statuses(callID string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, p := range r.progress {
		if p.CallID == callID && (len(out) == 0 || out[len(out)-1] != p.Status) {
			out = append(out, p.Status)
		}
	}
	return out
}

type fixture struct {
	svc   *Service
	st    *store.Store
	notes *recorder
}

func newFixture(t *testing.T, canAsk bool, tools ...*registry.Tool) *fixture {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "s.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	reg := registry.New()
	for _, tl := range tools {
		tl.Source = registry.SourceBuiltin
	}
	reg.SetSource(registry.SourceBuiltin, tools, nil)
	eng, err := permission.NewEngine(nil)
	if err != nil {
		t.Fatal(err)
	}
	n := &recorder{asked: make(chan protocol.AskedParams, 8)}
	svc := New(Options{Workspace: t.TempDir(), Registry: reg, Store: storeAdapter{st}, Policy: eng, Notifier: n, CanAsk: canAsk, Limits: Limits{Lines: 10, Bytes: 1000}})
	t.Cleanup(svc.Close)
	return &fixture{svc: svc, st: st, notes: n}
}

func tool(id string, exec func(ctx context.Context, c *registry.Call, args json.RawMessage) (*registry.Result, error)) *registry.Tool {
	return &registry.Tool{ID: id, Description: id, Parameters: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`), ReadOnly: true, Permission: "read", Execute: exec}
}

func (f *fixture) run(t *testing.T, callID, toolID string, args string) (*protocol.ExecuteResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return f.svc.Execute(ctx, protocol.ExecuteParams{SessionID: "s", MessageID: "m", CallID: callID, Tool: toolID, Args: json.RawMessage(args)})
}

func TestPipeline(t *testing.T) {
	leaked := make(chan error, 1)
	release := make(chan struct{})
	f := newFixture(t, true,
		tool("ok", func(_ context.Context, c *registry.Call, _ json.RawMessage) (*registry.Result, error) {
			c.Progress("working", map[string]any{"step": 1})
			return &registry.Result{Title: "done", Output: "fine", Metadata: map[string]any{"k": "v"}, Attachments: []registry.Attachment{{Mime: "image/png", Data: []byte{1, 2, 3}}}}, nil
		}),
		tool("panics", func(context.Context, *registry.Call, json.RawMessage) (*registry.Result, error) {
			panic("boom")
		}),
		tool("fails", func(_ context.Context, c *registry.Call, _ json.RawMessage) (*registry.Result, error) {
			_, _ = c.Output.Write([]byte("partial output\n"))
			return nil, errors.New("the file is locked; close it in the other program and call again")
		}),
		tool("streams", func(_ context.Context, c *registry.Call, _ json.RawMessage) (*registry.Result, error) {
			for i := range 100 {
				_, _ = c.Output.Write([]byte(strings.Repeat("x", 20) + string(rune('a'+i%26)) + "\n"))
			}
			// A goroutine the tool forgot cannot write into the finished result.
			go func() {
				<-release // until the call has ended
				_, err := c.Output.Write([]byte("late"))
				leaked <- err
			}()
			return &registry.Result{Output: "[exit code 0]"}, nil
		}),
		tool("pages", func(context.Context, *registry.Call, json.RawMessage) (*registry.Result, error) {
			return &registry.Result{Output: strings.Repeat("line\n", 50), NoTruncate: true}, nil
		}),
	)

	res, err := f.run(t, "c1", "ok", `{"n":1}`)
	if err != nil || res.Status != "completed" || res.Output != "fine" || res.Title != "done" {
		t.Fatalf("ok: %+v %v", res, err)
	}
	if len(res.Attachments) != 1 || res.Attachments[0].ID != "att_c1_1" || res.Attachments[0].SessionID != "s" || res.Attachments[0].MessageID != "m" || res.Attachments[0].Data != "AQID" {
		t.Fatalf("attachment: %+v", res.Attachments)
	}
	if got := f.notes.statuses("c1"); strings.Join(got, ",") != "pending,running,completed" {
		t.Fatalf("progress states %v", got)
	}

	res, err = f.run(t, "c2", "panics", `{}`)
	if err != nil || res.Status != "error" || !strings.Contains(res.Error, "internal error") {
		t.Fatalf("panic: %+v %v", res, err)
	}

	res, err = f.run(t, "c3", "fails", `{}`)
	if err != nil || res.Status != "error" || res.Output != "partial output\n" || !strings.Contains(res.Error, "locked") {
		t.Fatalf("fails: %+v %v", res, err)
	}

	res, err = f.run(t, "c4", "streams", `{}`)
	if err != nil || !res.Truncated || res.OutputID == "" || !strings.HasSuffix(res.Output, "[exit code 0]") {
		t.Fatalf("streams: %+v %v", res, err)
	}
	close(release)
	if werr := <-leaked; werr == nil {
		t.Fatal("a write after the call ended was accepted")
	}
	page, err := f.st.ReadOutput(res.OutputID, 100, 5)
	if err != nil || page.Content != "[exit code 0]" || page.TotalLines != 101 {
		t.Fatalf("stored output: %+v %v", page, err)
	}

	res, err = f.run(t, "c5", "pages", `{}`)
	if err != nil || res.Truncated || strings.Count(res.Output, "\n") != 50 {
		t.Fatalf("NoTruncate output was cut: %+v %v", res, err)
	}

	res, err = f.run(t, "c6", "Ok", `{"n":"one"}`)
	if err != nil || res.Status != "error" || !strings.Contains(res.Error, "/n") {
		t.Fatalf("case-repaired tool with invalid args: %+v %v", res, err)
	}
	rec, err := f.st.GetCall("s", "c6")
	if err != nil || rec.Tool != "ok" {
		t.Fatalf("record of the repaired call: %+v %v", rec, err)
	}

	res, err = f.run(t, "c7", "stream", `{}`)
	if err != nil || res.Status != "error" || !strings.Contains(res.Error, `"streams"`) {
		t.Fatalf("unknown tool does not suggest the closest: %+v %v", res, err)
	}

	if _, err := f.run(t, "c1", "ok", `{}`); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("duplicate: %v", err)
	}
	var pe *ParamsError
	if _, err := f.svc.Execute(context.Background(), protocol.ExecuteParams{SessionID: "s", MessageID: "m", Tool: "ok"}); !errors.As(err, &pe) || !strings.Contains(pe.Msg, "callID") {
		t.Fatalf("missing callID: %v", err)
	}
}

func TestAskReplyAndCancel(t *testing.T) {
	started := make(chan struct{}, 1)
	f := newFixture(t, true, &registry.Tool{ID: "risky", Description: "risky", Parameters: json.RawMessage(`{"type":"object"}`),
		Execute: func(ctx context.Context, c *registry.Call, _ json.RawMessage) (*registry.Result, error) {
			if err := c.Ask(ctx, registry.AskRequest{Permission: "risky", Patterns: []string{"a", "b"}, Always: []string{"a *"}}); err != nil {
				return nil, err
			}
			started <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		}})

	// Reject with a message.
	done := make(chan *protocol.ExecuteResult, 1)
	go func() { r, _ := f.run(t, "r1", "risky", `{}`); done <- r }()
	a := <-f.notes.asked
	if a.Permission != "risky" || strings.Join(a.Patterns, ",") != "a,b" || strings.Join(a.Always, ",") != "a *" {
		t.Fatalf("ask: %+v", a)
	}
	if _, err := f.svc.Reply(protocol.ReplyParams{ID: a.ID, Reply: "always", Always: []string{"not offered"}}); !errors.Is(err, ErrBadReply) {
		t.Fatalf("always with a pattern not offered: %v", err)
	}
	if _, err := f.svc.Reply(protocol.ReplyParams{ID: a.ID, Reply: "maybe"}); !errors.Is(err, ErrBadReply) {
		t.Fatalf("bad reply: %v", err)
	}
	if _, err := f.svc.Reply(protocol.ReplyParams{ID: a.ID, Reply: "reject", Message: "not now"}); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r == nil || r.Status != "error" || !strings.Contains(r.Error, "not now") {
		t.Fatalf("rejected: %+v", r)
	}

	// Allowed once, then cancelled while running.
	errc := make(chan error, 1)
	go func() { _, err := f.run(t, "r2", "risky", `{}`); errc <- err }()
	a = <-f.notes.asked
	if _, err := f.svc.Reply(protocol.ReplyParams{ID: a.ID, Reply: "once"}); err != nil {
		t.Fatal(err)
	}
	<-started
	if !f.svc.Cancel("s", "r2") {
		t.Fatal("cancel found no call")
	}
	if err := <-errc; !errors.Is(err, ErrCancelled) {
		t.Fatalf("cancelled call: %v", err)
	}
	rec, err := f.st.GetCall("s", "r2")
	if err != nil || rec.Status != "cancelled" || len(rec.Decisions) != 1 || rec.Decisions[0].Reply != "once" {
		t.Fatalf("record: %+v %v", rec, err)
	}
	if len(f.svc.PendingAsks()) != 0 {
		t.Fatal("asks left pending")
	}
}

func TestNoAskCapability(t *testing.T) {
	f := newFixture(t, false, &registry.Tool{ID: "risky", Description: "risky", Parameters: json.RawMessage(`{"type":"object"}`),
		Execute: func(ctx context.Context, c *registry.Call, _ json.RawMessage) (*registry.Result, error) {
			return nil, c.Ask(ctx, registry.AskRequest{Permission: "risky", Patterns: []string{"*"}})
		}})
	res, err := f.run(t, "n1", "risky", `{}`)
	if err != nil || res.Status != "error" || !strings.Contains(res.Error, "no one was there") {
		t.Fatalf("no-ui: %+v %v", res, err)
	}
}

// A read-only built-in is recorded once, when it ends; one that waits for a person is on
// record while it waits.
func TestReadOnlyCallsRecord(t *testing.T) {
	inside := make(chan struct{}, 1)
	proceed := make(chan struct{})
	f := newFixture(t, true,
		tool("quiet", func(context.Context, *registry.Call, json.RawMessage) (*registry.Result, error) {
			inside <- struct{}{}
			<-proceed
			return &registry.Result{Output: "ok"}, nil
		}),
		tool("asks", func(ctx context.Context, c *registry.Call, _ json.RawMessage) (*registry.Result, error) {
			return &registry.Result{Output: "ok"}, c.Ask(ctx, registry.AskRequest{Permission: "external_directory", Patterns: []string{"/elsewhere/*"}})
		}))

	done := make(chan error, 1)
	go func() { _, err := f.run(t, "q1", "quiet", `{}`); done <- err }()
	<-inside
	if _, err := f.st.GetCall("s", "q1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a read-only call was recorded before it ended: %v", err)
	}
	close(proceed)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if rec, err := f.st.GetCall("s", "q1"); err != nil || rec.Status != "completed" {
		t.Fatalf("final record: %+v %v", rec, err)
	}

	go func() { _, err := f.run(t, "a1", "asks", `{}`); done <- err }()
	a := <-f.notes.asked
	if rec, err := f.st.GetCall("s", "a1"); err != nil || rec.Status != "running" {
		t.Fatalf("a call waiting for a person is not on record as running: %+v %v", rec, err)
	}
	if _, err := f.svc.Reply(protocol.ReplyParams{ID: a.ID, Reply: "once"}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if rec, err := f.st.GetCall("s", "a1"); err != nil || rec.Status != "completed" || len(rec.Decisions) != 1 {
		t.Fatalf("final record: %+v %v", rec, err)
	}
	if _, err := f.run(t, "q1", "quiet", `{}`); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("a read-only call with a used callID: %v", err)
	}
}
