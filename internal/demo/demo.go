// Package demo walks a person through the daemon on a copy of testdata/workspace: resolve,
// a call, an ask answered in the terminal, a project tool hot-reloaded while the daemon
// runs, and a truncated output read back.
package demo

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/toolsd/toolsd/protocol"
)

// Options configure Run.
type Options struct {
	Daemon    string    // the toolsd binary
	Workspace string    // copied to a temporary folder first
	In        io.Reader // answers to asks; nil or not a terminal means "once"
	Out       io.Writer
	Tty       bool // In is a terminal: ask the person
}

// Run runs the demo.
func Run(ctx context.Context, o Options) error {
	ws, err := os.MkdirTemp("", "toolsd-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(ws)
	if err := copyTree(o.Workspace, ws); err != nil {
		return fmt.Errorf("copying %s: %w", o.Workspace, err)
	}
	d := &demo{o: o, out: o.Out, in: bufio.NewReader(orEmpty(o.In)), asks: make(chan protocol.AskedParams, 16), changed: make(chan protocol.ChangedParams, 16)}
	stateDir, err := os.MkdirTemp("", "toolsd-demo-state-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stateDir)
	cmd := exec.CommandContext(ctx, o.Daemon, "--store", filepath.Join(stateDir, "store.db"), "--log-level", "warn")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w (build it first: go build -o bin/ ./cmd/toolsd ./cmd/toolsd-guard)", o.Daemon, err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	d.conn = jsonrpc2.NewConn(ctx, jsonrpc2.NewBufferedStream(rwc{stdout, stdin}, jsonrpc2.VSCodeObjectCodec{}), jsonrpc2.AsyncHandler(jsonrpc2.HandlerWithError(d.handle)))
	defer d.conn.Close()
	return d.run(ctx, ws)
}

type demo struct {
	o       Options
	out     io.Writer
	in      *bufio.Reader
	conn    *jsonrpc2.Conn
	asks    chan protocol.AskedParams
	changed chan protocol.ChangedParams
	mu      sync.Mutex // guards progress
	n       int
}

func (d *demo) handle(_ context.Context, _ *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
	if req.Params == nil {
		return nil, nil
	}
	switch req.Method {
	case protocol.MethodPermissionAsked:
		var a protocol.AskedParams
		if json.Unmarshal(*req.Params, &a) == nil {
			d.asks <- a
		}
	case protocol.MethodToolsChanged:
		var c protocol.ChangedParams
		if json.Unmarshal(*req.Params, &c) == nil {
			d.changed <- c
		}
	}
	return nil, nil
}

func (d *demo) step(format string, args ...any) {
	d.mu.Lock()
	d.n++
	n := d.n
	d.mu.Unlock()
	fmt.Fprintf(d.out, "\n\033[1m== %d. %s\033[0m\n", n, fmt.Sprintf(format, args...))
}

func (d *demo) say(format string, args ...any) { fmt.Fprintf(d.out, "   "+format+"\n", args...) }

func (d *demo) call(ctx context.Context, method string, params, result any) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	return d.conn.Call(ctx, method, params, result)
}

// execute runs a call, answering its asks as the person says.
func (d *demo) execute(ctx context.Context, callID, tool string, args map[string]any) (*protocol.ExecuteResult, error) {
	raw, _ := json.Marshal(args)
	type res struct {
		r   protocol.ExecuteResult
		err error
	}
	done := make(chan res, 1)
	go func() {
		var r protocol.ExecuteResult
		err := d.call(ctx, protocol.MethodToolsExecute, protocol.ExecuteParams{SessionID: "demo", MessageID: "m1", CallID: callID, Tool: tool, Args: raw}, &r)
		done <- res{r, err}
	}()
	for {
		select {
		case r := <-done:
			if r.err != nil {
				return nil, r.err
			}
			return &r.r, nil
		case a := <-d.asks:
			if err := d.answer(ctx, a); err != nil {
				return nil, err
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (d *demo) answer(ctx context.Context, a protocol.AskedParams) error {
	d.say("\033[33mpermission/asked\033[0m: %s wants %q for %s", a.Tool, a.Permission, quoted(a.Patterns))
	if len(a.Always) > 0 {
		d.say("  an \"always\" answer would allow: %s", strings.Join(a.Always, " | "))
	}
	reply, msg := "once", ""
	if d.o.Tty {
		fmt.Fprintf(d.out, "   Allow? [o]nce, [a]lways (this session), [r]eject: ")
		line, _ := d.in.ReadString('\n')
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "a", "always":
			reply = "always"
		case "r", "reject":
			reply = "reject"
			fmt.Fprintf(d.out, "   A message for the model: ")
			msg, _ = d.in.ReadString('\n')
			msg = strings.TrimSpace(msg)
		}
	} else {
		d.say("(not a terminal: answering %q)", reply)
	}
	p := protocol.ReplyParams{ID: a.ID, Reply: reply, Message: msg}
	if reply == "always" {
		p.Scope = "session"
	}
	return d.call(ctx, protocol.MethodPermissionReply, p, nil)
}

func (d *demo) run(ctx context.Context, ws string) error {
	d.step("initialize on a copy of the demo workspace")
	var ir protocol.InitializeResult
	if err := d.call(ctx, protocol.MethodInitialize, protocol.InitializeParams{
		WorkspaceFolder: ws, ClientInfo: &protocol.ClientInfo{Name: "toolsd-demo"},
		Capabilities: &protocol.ClientCapabilities{Ask: true, Progress: true},
	}, &ir); err != nil {
		return err
	}
	_ = d.conn.Notify(ctx, protocol.MethodInitialized, struct{}{})
	d.say("%s %s, workspace %s", ir.ServerInfo.Name, ir.ServerInfo.Version, ws)
	d.say("store: %s", ir.StorePath)

	d.step("tools/resolve: the catalogue for this round")
	var rr protocol.ResolveResult
	if err := d.call(ctx, protocol.MethodToolsResolve, protocol.ResolveParams{SessionID: "demo", Model: &protocol.Model{ProviderID: "anthropic", ModelID: "claude"}}, &rr); err != nil {
		return err
	}
	bySource := map[string][]string{}
	for _, t := range rr.Tools {
		bySource[t.Source] = append(bySource[t.Source], t.ID)
	}
	for _, s := range sortedKeys(bySource) {
		d.say("%-8s %s", s, strings.Join(bySource[s], ", "))
	}
	for _, dg := range rr.Diagnostics {
		d.say("diagnostic: %s: %s", dg.Path, dg.Message)
	}

	d.step("tools/execute read README.md (read-only: allowed without asking)")
	r, err := d.execute(ctx, "read-1", "read", map[string]any{"filePath": "README.md", "limit": 5})
	if err != nil {
		return err
	}
	d.result(r)

	d.step("tools/execute bash: confined by the OS sandbox, and no rule denies it, so it runs (where the kernel can confine it; else the person decides)")
	r, err = d.execute(ctx, "bash-1", "bash", map[string]any{"command": "ls && echo \"files: $(ls | wc -l)\"", "description": "List the workspace"})
	if err != nil {
		return err
	}
	d.result(r)
	d.sandbox(r)

	d.step("tools/execute bash: a line the permission analysis does not fully understand (a loop) asks, sandbox or not")
	r, err = d.execute(ctx, "bash-loop", "bash", map[string]any{"command": "for f in *.md; do wc -l \"$f\"; done", "description": "Count the lines of each Markdown file"})
	if err != nil {
		return err
	}
	d.result(r)

	d.step("invalid arguments come back as a result the model can act on")
	r, err = d.execute(ctx, "read-bad", "read", map[string]any{"filePath": 42})
	if err != nil {
		return err
	}
	d.result(r)

	d.step("a project tool appears while the daemon runs (.toolsd/tool/line_count.json)")
	def := `{
  "description": "Count the lines of a file in the workspace.",
  "parameters": {"type": "object", "properties": {"path": {"type": "string", "description": "File to count"}}, "required": ["path"], "additionalProperties": false},
  "command": ["sh", "-c", "read -r args; p=$(printf '%s' \"$args\" | sed -n 's/.*\"path\":\"\\([^\"]*\\)\".*/\\1/p'); wc -l < \"$p\""]
}
`
	dir := filepath.Join(ws, ".toolsd", "tool")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	start := time.Now()
	if err := os.WriteFile(filepath.Join(dir, "line_count.json"), []byte(def), 0o644); err != nil {
		return err
	}
	select {
	case c := <-d.changed:
		d.say("tools/changed after %v: added %v, changed %v, removed %v", time.Since(start).Round(time.Millisecond), c.Added, c.Changed, c.Removed)
	case <-time.After(10 * time.Second):
		return errors.New("no tools/changed within 10 s")
	}
	r, err = d.execute(ctx, "project-1", "line_count", map[string]any{"path": "README.md"})
	if err != nil {
		return err
	}
	d.result(r)

	d.step("a long output is cut for the model and kept whole in the store")
	r, err = d.execute(ctx, "bash-2", "bash", map[string]any{"command": "seq 1 100000", "description": "Print many lines"})
	if err != nil {
		return err
	}
	lines := strings.Split(r.Output, "\n")
	d.say("status %s, truncated %v, outputID %s, %d lines reach the model", r.Status, r.Truncated, r.OutputID, len(lines))
	for _, l := range lines {
		if strings.HasPrefix(l, "[...") {
			d.say("hint: %s", l)
		}
	}
	if r.OutputID != "" {
		var page protocol.OutputsReadResult
		if err := d.call(ctx, protocol.MethodOutputsRead, protocol.OutputsReadParams{OutputID: r.OutputID, Offset: 49999, Limit: 3}, &page); err != nil {
			return err
		}
		d.say("outputs/read offset 49999 limit 3 of %d lines (%d bytes): %q", page.TotalLines, page.TotalBytes, page.Content)
	}

	d.step("calls/list: the record of this session, newest first")
	var cl protocol.CallsListResult
	if err := d.call(ctx, protocol.MethodCallsList, protocol.CallsListParams{SessionID: "demo"}, &cl); err != nil {
		return err
	}
	for _, c := range cl.Calls {
		d.say("%-10s %-10s %-10s %s", c.CallID, c.Tool, c.Status, c.Title)
	}

	d.step("shutdown, exit")
	if err := d.call(ctx, protocol.MethodShutdown, nil, nil); err != nil {
		return err
	}
	_ = d.conn.Notify(ctx, protocol.MethodExit, nil)
	d.say("done")
	return nil
}

func (d *demo) result(r *protocol.ExecuteResult) {
	d.say("status %s, title %q", r.Status, r.Title)
	if r.Error != "" {
		for _, l := range strings.Split(r.Error, "\n") {
			d.say("  error: %s", l)
		}
	}
	out := strings.Split(strings.TrimRight(r.Output, "\n"), "\n")
	for i, l := range out {
		if i == 8 {
			d.say("  ... (%d more lines)", len(out)-8)
			break
		}
		if l != "" {
			d.say("  | %s", l)
		}
	}
}

// sandbox says whether a call ran in the OS sandbox, from its record's metadata.
func (d *demo) sandbox(r *protocol.ExecuteResult) {
	var md struct {
		Sandbox *struct {
			Confined bool   `json:"confined"`
			Mode     string `json:"mode"`
			Why      string `json:"why"`
		} `json:"sandbox"`
	}
	if json.Unmarshal(r.Metadata, &md) != nil || md.Sandbox == nil {
		return
	}
	if md.Sandbox.Confined {
		d.say("ran in the sandbox (%s): it could write only the workspace and its temp folder, and reach no network", md.Sandbox.Mode)
	} else if md.Sandbox.Why != "" {
		d.say("ran outside the sandbox: %s", md.Sandbox.Why)
	}
}

func sortedKeys(m map[string][]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if e.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, info.Mode().Perm())
	})
}

func orEmpty(r io.Reader) io.Reader {
	if r == nil {
		return strings.NewReader("")
	}
	return r
}

type rwc struct {
	r io.ReadCloser
	w io.WriteCloser
}

func (c rwc) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c rwc) Write(p []byte) (int, error) { return c.w.Write(p) }
func (c rwc) Close() error                { _ = c.w.Close(); return c.r.Close() }

// quoted lists patterns as Go strings, so a pattern's own "|" or spaces read as its own.
func quoted(ps []string) string {
	q := make([]string, len(ps))
	for i, p := range ps {
		q[i] = strconv.Quote(p)
	}
	return strings.Join(q, ", ")
}
