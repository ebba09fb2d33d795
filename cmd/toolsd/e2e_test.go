//go:build unix

package main_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/toolsd/toolsd/internal/harness"
	"github.com/toolsd/toolsd/internal/otlptest"
	"github.com/toolsd/toolsd/protocol"
)

func TestMain(m *testing.M) {
	if len(os.Args) == 5 && os.Args[1] == backlogArg {
		os.Exit(writeBacklog(os.Args[2:]))
	}
	otlptest.MaybeRun()
	goleak.VerifyTestMain(m)
}

// env is one daemon on a fresh workspace with its own store.
type env struct {
	t    *testing.T
	d    *harness.Daemon
	ws   string
	st   string
	ctx  context.Context
	init protocol.InitializeResult
}

type envOpts struct {
	noAsk   bool
	args    []string
	files   map[string]string
	ws      string // reuse a workspace
	store   string // reuse a store
	options any
	env     []string // more environment for the daemon
	bin     string   // the toolsd binary (default: harness.Binary)
}

func newEnv(t *testing.T, o envOpts) *env {
	t.Helper()
	ws := o.ws
	if ws == "" {
		ws = t.TempDir()
	}
	for name, content := range o.files {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	st := o.store
	if st == "" {
		st = filepath.Join(t.TempDir(), "store.db")
	}
	args := append([]string{"--store", st, "--log-level", "debug"}, o.args...)
	bin := o.bin
	if bin == "" {
		bin = harness.Binary(t)
	}
	d := harness.Start(t, bin, harness.Options{Args: args, Env: append([]string{"XDG_CONFIG_HOME=" + t.TempDir()}, o.env...)})
	ctx := harness.Deadline(t, 60*time.Second)
	e := &env{t: t, d: d, ws: ws, st: st, ctx: ctx}
	options := o.options
	if options == nil {
		// These tests are about asks: commands run confined, but ask as without a sandbox.
		options = map[string]any{"sandbox": map[string]any{"autoAllow": false}}
	}
	raw, err := d.Initialize(ctx, ws, !o.noAsk, options)
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if err := json.Unmarshal(raw, &e.init); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) execute(p protocol.ExecuteParams) (*protocol.ExecuteResult, error) {
	e.t.Helper()
	if p.SessionID == "" {
		p.SessionID = "s1"
	}
	if p.MessageID == "" {
		p.MessageID = "m1"
	}
	var res protocol.ExecuteResult
	err := e.d.Call(e.ctx, "tools/execute", p, &res)
	if err != nil {
		return nil, err
	}
	return &res, nil
}

// start dispatches an execute and returns a wait function.
func (e *env) start(p protocol.ExecuteParams) (uint64, func() (*protocol.ExecuteResult, error)) {
	e.t.Helper()
	if p.SessionID == "" {
		p.SessionID = "s1"
	}
	if p.MessageID == "" {
		p.MessageID = "m1"
	}
	id, wait, err := e.d.Dispatch(e.ctx, "tools/execute", p)
	if err != nil {
		e.t.Fatal(err)
	}
	return id, func() (*protocol.ExecuteResult, error) {
		var res protocol.ExecuteResult
		if err := wait(e.ctx, &res); err != nil {
			return nil, err
		}
		return &res, nil
	}
}

// waitAsk waits for the ask of a call after mark.
func (e *env) waitAsk(mark int, callID string) protocol.AskedParams {
	e.t.Helper()
	raw, _, err := e.d.WaitFor(e.ctx, mark, "permission/asked", func(r json.RawMessage) bool {
		var a protocol.AskedParams
		return json.Unmarshal(r, &a) == nil && a.CallID == callID
	})
	if err != nil {
		e.t.Fatal(err)
	}
	var a protocol.AskedParams
	if err := json.Unmarshal(raw, &a); err != nil {
		e.t.Fatal(err)
	}
	return a
}

func (e *env) reply(id, reply, message string) error {
	return e.d.Call(e.ctx, "permission/reply", protocol.ReplyParams{ID: id, Reply: reply, Message: message}, nil)
}

func args(kv ...any) json.RawMessage {
	m := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	b, _ := json.Marshal(m)
	return b
}

func TestLifecycle(t *testing.T) {
	d := harness.Start(t, harness.Binary(t), harness.Options{Args: []string{"--store", filepath.Join(t.TempDir(), "s.db")}})
	ctx := harness.Deadline(t, 30*time.Second)

	err := d.Call(ctx, "tools/resolve", map[string]any{"sessionID": "s"}, nil)
	if code := harness.RPCError(err); code != -32002 {
		t.Fatalf("resolve before initialize: got %v (code %d), want -32002", err, code)
	}
	err = d.Call(ctx, "initialize", map[string]any{"workspaceFolder": 42}, nil)
	if code := harness.RPCError(err); code != -32602 || !strings.Contains(err.Error(), "workspaceFolder") {
		t.Fatalf("initialize with a number: got %v, want -32602 naming workspaceFolder", err)
	}
	raw, err := d.Initialize(ctx, t.TempDir(), true, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ir protocol.InitializeResult
	if err := json.Unmarshal(raw, &ir); err != nil {
		t.Fatal(err)
	}
	if ir.ServerInfo.Name != "toolsd" || ir.StorePath == "" {
		t.Fatalf("initialize result: %s", raw)
	}
	err = d.Call(ctx, "no/such", nil, nil)
	if code := harness.RPCError(err); code != -32601 {
		t.Fatalf("unknown method: got %v, want -32601", err)
	}
	err = d.Call(ctx, "tools/execute", map[string]any{"sessionID": "s", "messageID": "m", "callID": 7, "tool": "read"}, nil)
	if code := harness.RPCError(err); code != -32602 || !strings.Contains(err.Error(), "callID") {
		t.Fatalf("callID of the wrong type: got %v, want -32602 naming callID", err)
	}
	err = d.Call(ctx, "tools/execute", map[string]any{"sessionID": "s", "messageID": "m", "tool": "read"}, nil)
	if code := harness.RPCError(err); code != -32602 || !strings.Contains(err.Error(), "callID") {
		t.Fatalf("missing callID: got %v, want -32602 naming callID", err)
	}
	// Still serving.
	var rr protocol.ResolveResult
	if err := d.Call(ctx, "tools/resolve", map[string]any{"sessionID": "s"}, &rr); err != nil || len(rr.Tools) == 0 {
		t.Fatalf("resolve: %v %+v", err, rr)
	}
	// exit ends the process at once, although the editor keeps stdin open.
	exitCtx := harness.Deadline(t, 1500*time.Millisecond)
	code, err := d.Shutdown(exitCtx)
	if err != nil || code != 0 {
		t.Fatalf("shutdown+exit: code %d, err %v", code, err)
	}
}

// exit without shutdown: exit code 1 (LSP's rule), also through the workspace's daemon.
func TestExitWithoutShutdown(t *testing.T) {
	e := newEnv(t, envOpts{})
	_ = e.d.Notify(e.ctx, "exit", nil)
	select {
	case <-e.d.Exited():
	case <-e.ctx.Done():
		t.Fatal("daemon did not exit")
	}
	if c := e.d.ExitCode(); c != 1 {
		t.Fatalf("exit without shutdown: code %d, want 1", c)
	}
}

func TestReadAndResolve(t *testing.T) {
	e := newEnv(t, envOpts{files: map[string]string{"hello.txt": "one\ntwo\nthree\n"}})
	var rr protocol.ResolveResult
	if err := e.d.Call(e.ctx, "tools/resolve", protocol.ResolveParams{SessionID: "s1"}, &rr); err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for _, tl := range rr.Tools {
		ids[tl.ID] = tl.Source
		if len(tl.InputSchema) == 0 || tl.Description == "" {
			t.Errorf("tool %s lacks a schema or description", tl.ID)
		}
	}
	for _, want := range []string{"read", "bash"} {
		if ids[want] != "builtin" {
			t.Errorf("resolve: %s missing or not builtin: %v", want, ids)
		}
	}

	res, err := e.execute(protocol.ExecuteParams{CallID: "c1", Tool: "read", Args: args("filePath", "hello.txt")})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "completed" || !strings.Contains(res.Output, "two") {
		t.Fatalf("read: %+v", res)
	}
	// A tool name that differs only in case is repaired.
	res, err = e.execute(protocol.ExecuteParams{CallID: "c2", Tool: "Read", Args: args("filePath", "hello.txt")})
	if err != nil || res.Status != "completed" {
		t.Fatalf("Read (case repaired): %+v %v", res, err)
	}
	var rec protocol.CallRecord
	if err := e.d.Call(e.ctx, "calls/get", protocol.CallsGetParams{CallID: "c2"}, &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Tool != "read" || rec.Status != "completed" || rec.EndedAt == nil || string(rec.Args) == "" {
		t.Fatalf("calls/get: %+v", rec)
	}
}

func TestBadCallsAreResults(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, envOpts{noAsk: true, files: map[string]string{"a.txt": "a\n", "bin.dat": "\x00\x01\x02\x03binary\x00"}})
	cases := []struct {
		name, tool string
		args       json.RawMessage
		want       []string
	}{
		{"unknown tool", "raed", args("filePath", "a.txt"), []string{`Unknown tool "raed"`, `"read"`}},
		{"missing required", "read", args(), []string{"filePath", "missing"}},
		{"wrong type", "read", args("filePath", 12), []string{"/filePath", "string"}},
		{"unknown argument", "read", args("filePath", "a.txt", "bogus", true), []string{"bogus"}},
		{"args not an object", "read", json.RawMessage(`[1,2]`), []string{"object"}},
		{"outside the workspace, no one to ask", "read", args("filePath", filepath.Join(outside, "secret.txt")), []string{"external_directory", "no one was there"}},
		{"binary file", "read", args("filePath", "bin.dat"), []string{"binary"}},
		{"bash without anyone to ask", "bash", args("command", "echo hi"), []string{"no one was there"}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := e.execute(protocol.ExecuteParams{CallID: "bad" + string(rune('a'+i)), Tool: c.tool, Args: c.args})
			if err != nil {
				t.Fatalf("want a result, got a JSON-RPC error: %v", err)
			}
			if res.Status != "error" {
				t.Fatalf("status %q, want error: %+v", res.Status, res)
			}
			for _, w := range c.want {
				if !strings.Contains(res.Error, w) {
					t.Errorf("error %q does not mention %q", res.Error, w)
				}
			}
			if strings.Contains(res.Output, "secret") {
				t.Errorf("output leaked the file outside the workspace: %q", res.Output)
			}
		})
	}
	// A duplicate callID in the same session is refused; in another session it is fine.
	if _, err := e.execute(protocol.ExecuteParams{CallID: "dup", Tool: "read", Args: args("filePath", "a.txt")}); err != nil {
		t.Fatal(err)
	}
	_, err := e.execute(protocol.ExecuteParams{CallID: "dup", Tool: "read", Args: args("filePath", "a.txt")})
	if code := harness.RPCError(err); code != protocol.CodeConflict {
		t.Fatalf("duplicate callID: %v, want code %d", err, protocol.CodeConflict)
	}
	if res, err := e.execute(protocol.ExecuteParams{SessionID: "s2", CallID: "dup", Tool: "read", Args: args("filePath", "a.txt")}); err != nil || res.Status != "completed" {
		t.Fatalf("same callID in another session: %+v %v", res, err)
	}
	// A reply to an unknown ask is an error.
	err = e.reply("ask_nope", "once", "")
	if code := harness.RPCError(err); code != protocol.CodeNotFound {
		t.Fatalf("reply to unknown ask: %v", err)
	}
}

func TestAskRoundTrip(t *testing.T) {
	e := newEnv(t, envOpts{})
	mark := e.d.Mark()
	_, wait := e.start(protocol.ExecuteParams{CallID: "b1", Tool: "bash", Args: args("command", "echo hello-from-bash")})
	ask := e.waitAsk(mark, "b1")
	if ask.Permission != "bash" || len(ask.Patterns) == 0 || !strings.Contains(ask.Patterns[0], "echo hello-from-bash") {
		t.Fatalf("ask: %+v", ask)
	}
	var list protocol.ListAsksResult
	if err := e.d.Call(e.ctx, "permission/list", nil, &list); err != nil || len(list.Asks) != 1 || list.Asks[0].ID != ask.ID {
		t.Fatalf("permission/list: %+v %v", list, err)
	}
	if err := e.reply(ask.ID, "once", ""); err != nil {
		t.Fatal(err)
	}
	res, err := wait()
	if err != nil || res.Status != "completed" || !strings.Contains(res.Output, "hello-from-bash") {
		t.Fatalf("bash after once: %+v %v", res, err)
	}
	// Answering the same ask again is an error.
	if err := e.reply(ask.ID, "once", ""); harness.RPCError(err) != protocol.CodeNotFound {
		t.Fatalf("second reply: %v", err)
	}

	// Reject with a message: the model reads it.
	mark = e.d.Mark()
	_, wait = e.start(protocol.ExecuteParams{CallID: "b2", Tool: "bash", Args: args("command", "rm -rf build")})
	ask = e.waitAsk(mark, "b2")
	if err := e.reply(ask.ID, "reject", "use make clean instead"); err != nil {
		t.Fatal(err)
	}
	res, err = wait()
	if err != nil || res.Status != "error" || !strings.Contains(res.Error, "use make clean instead") {
		t.Fatalf("rejected bash: %+v %v", res, err)
	}
	var rec protocol.CallRecord
	if err := e.d.Call(e.ctx, "calls/get", protocol.CallsGetParams{CallID: "b2"}, &rec); err != nil {
		t.Fatal(err)
	}
	if len(rec.Decisions) == 0 || rec.Decisions[len(rec.Decisions)-1].Reply != "reject" || rec.Decisions[len(rec.Decisions)-1].By != "person" {
		t.Fatalf("decision not recorded: %+v", rec.Decisions)
	}

	// Always (session): the same command runs again without asking.
	mark = e.d.Mark()
	_, wait = e.start(protocol.ExecuteParams{CallID: "b3", Tool: "bash", Args: args("command", "echo again")})
	ask = e.waitAsk(mark, "b3")
	if err := e.d.Call(e.ctx, "permission/reply", protocol.ReplyParams{ID: ask.ID, Reply: "always", Scope: "session", Always: []string{ask.Patterns[0]}}, nil); err != nil {
		t.Fatal(err)
	}
	if res, err := wait(); err != nil || res.Status != "completed" {
		t.Fatalf("after always: %+v %v", res, err)
	}
	mark = e.d.Mark()
	res, err = e.execute(protocol.ExecuteParams{CallID: "b4", Tool: "bash", Args: args("command", "echo again")})
	if err != nil || res.Status != "completed" {
		t.Fatalf("remembered: %+v %v", res, err)
	}
	if n := e.d.Count(mark, "permission/asked"); n != 0 {
		t.Fatalf("asked %d times for a remembered command", n)
	}
}

func TestCancel(t *testing.T) {
	e := newEnv(t, envOpts{})
	for _, how := range []string{"$/cancelRequest", "tools/cancel", "cancel while asking"} {
		t.Run(how, func(t *testing.T) {
			callID := "cancel-" + strings.ReplaceAll(how, " ", "-")
			mark := e.d.Mark()
			id, wait := e.start(protocol.ExecuteParams{CallID: callID, Tool: "bash", Args: args("command", "sleep 600")})
			ask := e.waitAsk(mark, callID)
			if how != "cancel while asking" {
				if err := e.reply(ask.ID, "once", ""); err != nil {
					t.Fatal(err)
				}
				if _, _, err := e.d.WaitFor(e.ctx, mark, "tools/progress", func(r json.RawMessage) bool {
					var p protocol.ProgressParams
					return json.Unmarshal(r, &p) == nil && p.CallID == callID && p.Status == "running"
				}); err != nil {
					t.Fatal(err)
				}
			}
			switch how {
			case "$/cancelRequest", "cancel while asking":
				if err := e.d.Notify(e.ctx, "$/cancelRequest", map[string]any{"id": id}); err != nil {
					t.Fatal(err)
				}
			case "tools/cancel":
				var cr protocol.CancelResult
				if err := e.d.Call(e.ctx, "tools/cancel", protocol.CancelParams{CallID: callID}, &cr); err != nil || !cr.Cancelled {
					t.Fatalf("tools/cancel: %+v %v", cr, err)
				}
			}
			_, err := wait()
			if code := harness.RPCError(err); code != protocol.CodeRequestCancelled {
				t.Fatalf("cancelled execute answered %v, want -32800", err)
			}
			var rec protocol.CallRecord
			if err := e.d.Call(e.ctx, "calls/get", protocol.CallsGetParams{CallID: callID}, &rec); err != nil || rec.Status != "cancelled" {
				t.Fatalf("record after cancel: %+v %v", rec, err)
			}
			var list protocol.ListAsksResult
			if err := e.d.Call(e.ctx, "permission/list", nil, &list); err != nil || len(list.Asks) != 0 {
				t.Fatalf("asks left pending after cancel: %+v %v", list, err)
			}
		})
	}
}

func TestTruncatedOutputReadBack(t *testing.T) {
	e := newEnv(t, envOpts{})
	mark := e.d.Mark()
	_, wait := e.start(protocol.ExecuteParams{CallID: "big", Tool: "bash", Args: args("command", "seq 1 30000")})
	ask := e.waitAsk(mark, "big")
	if err := e.reply(ask.ID, "once", ""); err != nil {
		t.Fatal(err)
	}
	res, err := wait()
	if err != nil || res.Status != "completed" {
		t.Fatalf("seq: %+v %v", res, err)
	}
	if !res.Truncated || res.OutputID == "" {
		t.Fatalf("30000 lines not truncated: truncated=%v outputID=%q len=%d", res.Truncated, res.OutputID, len(res.Output))
	}
	if !strings.HasPrefix(res.Output, "1\n2\n") || !strings.Contains(res.Output, "\n30000") || !strings.Contains(res.Output, "toolsd://output/"+res.OutputID) {
		t.Fatalf("truncated output lacks head, tail or hint:\n%s", clip(res.Output))
	}
	if len(res.Output) > 60*1024 || strings.Count(res.Output, "\n") > 2100 {
		t.Fatalf("truncated output too long: %d bytes, %d lines", len(res.Output), strings.Count(res.Output, "\n"))
	}
	// The editor reads every line back in pages.
	next := 1
	for off := 0; ; {
		var page protocol.OutputsReadResult
		if err := e.d.Call(e.ctx, "outputs/read", protocol.OutputsReadParams{OutputID: res.OutputID, Offset: off, Limit: 5000}, &page); err != nil {
			t.Fatal(err)
		}
		if page.TotalLines != 30000 {
			t.Fatalf("totalLines %d", page.TotalLines)
		}
		if page.Content == "" {
			break
		}
		for _, l := range strings.Split(page.Content, "\n") {
			if l != itoa(next) {
				t.Fatalf("line %d reads %q", next, l)
			}
			next++
		}
		off += 5000
	}
	if next != 30001 {
		t.Fatalf("read back %d lines", next-1)
	}
	// The model reads the cut part with the read tool, as the hint says.
	rres, err := e.execute(protocol.ExecuteParams{CallID: "readback", Tool: "read", Args: args("filePath", "toolsd://output/"+res.OutputID, "offset", 15000, "limit", 3)})
	if err != nil || rres.Status != "completed" || !strings.Contains(rres.Output, "15000") || !strings.Contains(rres.Output, "15002") {
		t.Fatalf("read of the stored output: %+v %v", rres, err)
	}
	// Unknown output ids are an error.
	err = e.d.Call(e.ctx, "outputs/read", protocol.OutputsReadParams{OutputID: "nope"}, nil)
	if code := harness.RPCError(err); code != protocol.CodeNotFound {
		t.Fatalf("unknown output: %v", err)
	}
	// History lists it, newest first.
	var cl protocol.CallsListResult
	if err := e.d.Call(e.ctx, "calls/list", protocol.CallsListParams{SessionID: "s1", Limit: 1}, &cl); err != nil || len(cl.Calls) != 1 || cl.Calls[0].CallID != "readback" || cl.NextCursor == "" {
		t.Fatalf("calls/list: %+v %v", cl, err)
	}
	var cl2 protocol.CallsListResult
	if err := e.d.Call(e.ctx, "calls/list", protocol.CallsListParams{SessionID: "s1", Limit: 1, Cursor: cl.NextCursor}, &cl2); err != nil || len(cl2.Calls) != 1 || cl2.Calls[0].CallID != "big" || !cl2.Calls[0].Truncated {
		t.Fatalf("calls/list page 2: %+v %v", cl2, err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func clip(s string) string {
	if len(s) > 2000 {
		return s[:1000] + "\n...\n" + s[len(s)-1000:]
	}
	return s
}

// Schemas are adapted to the model's provider; the arguments a strict-mode model sends back
// (null for every optional property) still validate against the original schema.
func TestProviderSchemasAndStrictNulls(t *testing.T) {
	e := newEnv(t, envOpts{files: map[string]string{"a.txt": "one\ntwo\n"}})
	var rr protocol.ResolveResult
	if err := e.d.Call(e.ctx, "tools/resolve", protocol.ResolveParams{SessionID: "s1", Model: &protocol.Model{ProviderID: "openai", ModelID: "gpt-5"}}, &rr); err != nil {
		t.Fatal(err)
	}
	ids := map[string]json.RawMessage{}
	for _, tl := range rr.Tools {
		ids[tl.ID] = tl.InputSchema
	}
	if _, ok := ids["apply_patch"]; !ok {
		t.Errorf("gpt-5 does not get apply_patch: %v", keys(ids))
	}
	if _, ok := ids["edit"]; ok {
		t.Errorf("gpt-5 gets edit too: %v", keys(ids))
	}
	var schema struct {
		Required             []string       `json:"required"`
		AdditionalProperties *bool          `json:"additionalProperties"`
		Properties           map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(ids["read"], &schema); err != nil {
		t.Fatal(err)
	}
	if len(schema.Required) != len(schema.Properties) || schema.AdditionalProperties == nil || *schema.AdditionalProperties {
		t.Fatalf("openai schema of read is not strict: %s", ids["read"])
	}
	res, err := e.execute(protocol.ExecuteParams{CallID: "strict", Tool: "read", Args: json.RawMessage(`{"filePath":"a.txt","offset":null,"limit":null}`)})
	if err != nil || res.Status != "completed" || !strings.Contains(res.Output, "two") {
		t.Fatalf("strict-mode nulls: %+v %v", res, err)
	}
}

func keys(m map[string]json.RawMessage) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A client without the progress capability gets no tools/progress.
func TestNoProgressCapability(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := harness.Start(t, harness.Binary(t), harness.Options{Args: []string{"--store", filepath.Join(t.TempDir(), "s.db")}})
	ctx := harness.Deadline(t, 30*time.Second)
	if err := d.Call(ctx, "initialize", map[string]any{"workspaceFolder": ws, "capabilities": map[string]bool{"ask": false, "progress": false}}, nil); err != nil {
		t.Fatal(err)
	}
	var res protocol.ExecuteResult
	if err := d.Call(ctx, "tools/execute", protocol.ExecuteParams{SessionID: "s", MessageID: "m", CallID: "c", Tool: "read", Args: args("filePath", "a.txt")}, &res); err != nil || res.Status != "completed" {
		t.Fatalf("read: %+v %v", res, err)
	}
	// permission/list is answered after anything the call queued; then no progress may be in.
	if err := d.Call(ctx, "permission/list", nil, nil); err != nil {
		t.Fatal(err)
	}
	if n := d.Count(0, "tools/progress"); n != 0 {
		t.Fatalf("%d tools/progress notifications without the capability", n)
	}
}

// Without --log-level, the settings' logLevel sets the level.
func TestLogLevelFromSettings(t *testing.T) {
	d := harness.Start(t, harness.Binary(t), harness.Options{Args: []string{"--store", filepath.Join(t.TempDir(), "s.db")}, Env: []string{"XDG_CONFIG_HOME=" + t.TempDir()}})
	ctx := harness.Deadline(t, 30*time.Second)
	if _, err := d.Initialize(ctx, t.TempDir(), true, map[string]any{"logLevel": "debug"}); err != nil {
		t.Fatal(err)
	}
	if err := d.Notify(ctx, "no/such/notification", nil); err != nil {
		t.Fatal(err)
	}
	// The debug line reaches the owner's log file: poll it, with a deadline.
	logs := filepath.Join(harness.RuntimeDir(t), "toolsd", "*.log")
	read := func() string {
		files, _ := filepath.Glob(logs)
		var b strings.Builder
		for _, f := range files {
			data, _ := os.ReadFile(f)
			b.Write(data)
		}
		return b.String()
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !strings.Contains(read(), "ignoring notification") {
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("no debug log after logLevel debug:\n%s", read())
		}
	}
}

// The model reading a stored output that does not exist is told so plainly.
func TestReadUnknownOutput(t *testing.T) {
	e := newEnv(t, envOpts{})
	res, err := e.execute(protocol.ExecuteParams{CallID: "r", Tool: "read", Args: args("filePath", "toolsd://output/out_nope")})
	if err != nil || res.Status != "error" {
		t.Fatalf("%+v %v", res, err)
	}
	t.Logf("error for the model: %s", res.Error)
	if strings.Contains(res.Error, "store:") {
		t.Fatalf("the model reads the store's internals: %s", res.Error)
	}
}
