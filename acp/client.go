package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/toolsd/toolsd/agenthook"
	"github.com/toolsd/toolsd/internal/fspath"
	"github.com/toolsd/toolsd/protocol"
)

// The ACP v1 client methods toolsd serves itself instead of the editor, so that what the
// agent reads, writes and runs through them obeys the workspace's rules, runs in its sandbox
// and is revertible (docs/acp.md):
//
//   - fs/write_text_file is toolsd's write tool (tools/execute): its permission (an ask or a
//     deny as any write; a protected path always asks), its checkpoint (calls/revert), its
//     record.
//   - terminal/create runs toolsd's bash tool (tools/execute) in the background: confined by
//     the sandbox, its permission as the bash tool's own; terminal/output, wait_for_exit,
//     kill (tools/cancel) and release follow that call.
//   - fs/read_text_file is decided through the daemon as the read tool's request
//     (agents/before, the same table as toolsd hook) and recorded; the proxy then reads the
//     file exactly (the read tool numbers and cuts lines for a model, and ACP wants the
//     text as it is), opening the real path that was decided without following a link.

// clientMethods are the methods served, by name.
var clientMethods = map[string]func(*proxy, context.Context, json.RawMessage) (any, error){
	"fs/read_text_file":      (*proxy).readTextFile,
	"fs/write_text_file":     (*proxy).writeTextFile,
	"terminal/create":        (*proxy).createTerminal,
	"terminal/output":        (*proxy).terminalOutput,
	"terminal/wait_for_exit": (*proxy).waitForExit,
	"terminal/kill":          (*proxy).killTerminal,
	"terminal/release":       (*proxy).releaseTerminal,
}

// refusal is an error the agent reads as the reason its request was refused (toolsd's text
// for the model), answered with code -32000.
type refusal struct{ msg string }

func (r *refusal) Error() string { return r.msg }

// serveClient answers one of the agent's client requests (a clientMethods entry).
func (p *proxy) serveClient(m *msg) {
	v, err := clientMethods[m.Method](p, p.ctx, m.Params)
	var re *refusal
	switch {
	case err == nil:
		if v == nil {
			v = struct{}{}
		}
		_ = p.agent.send(resultReply(m.ID, v))
	case errors.As(err, &re):
		_ = p.agent.send(errorReply(m.ID, codeRefused, re.msg))
	default:
		_ = p.agent.send(errorReply(m.ID, codeInvalidParams, "toolsd acp: "+m.Method+": "+err.Error()))
	}
}

// codeRefused is the code of a request toolsd refused (a rule, a person, the tool's error).
const codeRefused = -32000

// served is the negotiated state of the client methods: toolsd advertised them to the
// agent in initialize (ACP v1) and the agent chose v1.
func (p *proxy) served() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.advertised && p.version == 1
}

// v2 reports whether the agent chose ACP v2 or later.
func (p *proxy) v2() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.version >= 2
}

// callID names one of the proxy's own calls in the record.
func (p *proxy) callID(kind string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seq++
	return "acp-" + p.labelBase + "-" + kind + "-" + strconv.Itoa(p.seq)
}

// execute runs one of toolsd's tools for the agent in its ACP session, through the daemon.
func (p *proxy) execute(ctx context.Context, session, callID, tool string, args any) (*protocol.ExecuteResult, error) {
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	var res protocol.ExecuteResult
	err = p.daemon.Call(ctx, protocol.MethodToolsExecute, protocol.ExecuteParams{SessionID: session, MessageID: callID, CallID: callID,
		Tool: tool, Args: raw, Agent: p.o.AgentID}, &res)
	if err != nil {
		return nil, fmt.Errorf("the workspace's toolsd daemon could not run it: %v", err)
	}
	return &res, nil
}

func (p *proxy) writeTextFile(ctx context.Context, params json.RawMessage) (any, error) {
	var r struct {
		SessionID string  `json:"sessionId"`
		Path      string  `json:"path"`
		Content   *string `json:"content"`
	}
	if err := json.Unmarshal(params, &r); err != nil || r.SessionID == "" || r.Path == "" || r.Content == nil {
		return nil, errors.New("needs sessionId, an absolute path and content")
	}
	res, err := p.execute(ctx, r.SessionID, p.callID("write"), "write", map[string]any{"filePath": r.Path, "content": *r.Content})
	if err != nil {
		return nil, err
	}
	if res.Status != protocol.StatusCompleted {
		return nil, &refusal{"toolsd: " + res.Error}
	}
	return nil, nil
}

func (p *proxy) readTextFile(ctx context.Context, params json.RawMessage) (any, error) {
	var r struct {
		SessionID string `json:"sessionId"`
		Path      string `json:"path"`
		Line      *int   `json:"line"`
		Limit     *int   `json:"limit"`
	}
	if err := json.Unmarshal(params, &r); err != nil || r.SessionID == "" || !filepath.IsAbs(r.Path) {
		return nil, errors.New("needs sessionId and an absolute path")
	}
	real, err := fspath.Real(filepath.Clean(r.Path))
	if err != nil {
		return nil, &refusal{fmt.Sprintf("toolsd: cannot read %s: %v", r.Path, err)}
	}
	input, _ := json.Marshal(map[string]string{"file_path": real})
	p.mu.Lock()
	cwd := p.cwd
	p.mu.Unlock()
	calls, err := agenthook.Map("Read", input, cwd)
	if err != nil {
		return nil, err
	}
	callID := p.callID("read")
	ap := protocol.AgentAfterParams{Agent: p.o.AgentID, AgentName: p.o.AgentName, SessionID: r.SessionID, CallID: callID, Tool: "fs/read_text_file", Input: params}
	var res protocol.AgentBeforeResult
	if err := p.daemon.Call(ctx, protocol.MethodAgentsBefore, protocol.AgentBeforeParams{Agent: p.o.AgentID, AgentName: p.o.AgentName,
		SessionID: r.SessionID, CallID: callID, Tool: ap.Tool, Input: params, Calls: calls, NoEditor: protocol.AgentDeny, Held: true}, &res); err != nil {
		return nil, fmt.Errorf("the workspace's toolsd daemon could not decide it: %v", err)
	}
	if res.Decision != protocol.AgentAllow {
		return nil, &refusal{res.Reason}
	}
	content, err := readLines(real, r.Line, r.Limit)
	if err != nil {
		ap.Error = err.Error()
	} else {
		ap.Output = fmt.Sprintf("served by toolsd acp: %d bytes of %s", len(content), real)
	}
	if aerr := p.daemon.Call(ctx, protocol.MethodAgentsAfter, ap, nil); aerr != nil {
		p.log.Warn("recording a read failed", "call", callID, "err", aerr)
	}
	if err != nil {
		return nil, &refusal{err.Error()}
	}
	return map[string]string{"content": content}, nil
}

// maxRead bounds a file read for the agent.
const maxRead = 64 << 20

// readLines is the text of the file at real (a real path: no link is followed), from line
// (1-based) for limit lines.
func readLines(real string, line, limit *int) (string, error) {
	// Without blocking: a FIFO opened for reading would wait for a writer (it is refused
	// below, as is every file that is not a regular one).
	fd, err := fspath.Open(real, os.O_RDONLY|syscall.O_NONBLOCK)
	if err != nil {
		return "", fmt.Errorf("cannot open %s: %v", real, err)
	}
	f := os.NewFile(uintptr(fd), real)
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", real)
	} else if fi.Size() > maxRead {
		return "", fmt.Errorf("%s is larger than %d MiB", real, maxRead>>20)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxRead+1))
	if err != nil {
		return "", fmt.Errorf("cannot read %s: %v", real, err)
	}
	if len(b) > maxRead {
		return "", fmt.Errorf("%s is larger than %d MiB", real, maxRead>>20)
	}
	if !utf8.Valid(b) {
		return "", fmt.Errorf("%s is not UTF-8 text", real)
	}
	text := string(b)
	if line == nil && limit == nil {
		return text, nil
	}
	start := 0
	if line != nil && *line > 1 {
		for n := 1; n < *line; n++ {
			i := strings.IndexByte(text[start:], '\n')
			if i < 0 {
				return "", nil
			}
			start += i + 1
		}
	}
	end := len(text)
	if limit != nil && *limit >= 0 {
		end = start
		for n := 0; n < *limit && end < len(text); n++ {
			i := strings.IndexByte(text[end:], '\n')
			if i < 0 {
				end = len(text)
				break
			}
			end += i + 1
		}
	}
	return text[start:end], nil
}

// terminal is one terminal/create: toolsd's bash tool running the command.
type terminal struct {
	session, callID string
	limit           int // outputByteLimit; 0: none
	done            chan struct{}
	res             *protocol.ExecuteResult // set before done closes
	err             error
}

// exitStatus is an ACP TerminalExitStatus.
type exitStatus struct {
	ExitCode *int    `json:"exitCode"`
	Signal   *string `json:"signal"`
}

func (t *terminal) status() exitStatus {
	if t.err != nil || t.res == nil || t.res.Status == protocol.StatusCancelled {
		sig := "SIGTERM"
		return exitStatus{Signal: &sig}
	}
	var meta struct {
		Exit *int `json:"exit"`
	}
	_ = json.Unmarshal(t.res.Metadata, &meta)
	if meta.Exit == nil {
		one := 1 // refused, or the tool failed before it ran
		return exitStatus{ExitCode: &one}
	}
	return exitStatus{ExitCode: meta.Exit}
}

// output is what the terminal printed, cut from the start to its byte limit at a character
// boundary, and whether it was cut.
func (t *terminal) output() (string, bool) {
	if t.err != nil {
		return t.err.Error(), false
	}
	out, cut := t.res.Output, t.res.Truncated
	if t.res.Status != protocol.StatusCompleted && out == "" {
		out = t.res.Error
	}
	if out == "(no output)" {
		out = ""
	}
	if t.limit > 0 && len(out) > t.limit {
		i := len(out) - t.limit
		for i < len(out) && !utf8.RuneStart(out[i]) {
			i++
		}
		out, cut = out[i:], true
	}
	return out, cut
}

func (p *proxy) createTerminal(_ context.Context, params json.RawMessage) (any, error) {
	var r struct {
		SessionID string   `json:"sessionId"`
		Command   string   `json:"command"`
		Args      []string `json:"args"`
		Env       []struct {
			Name  string `json:"name"`
			Value string `json:"value"`
		} `json:"env"`
		Cwd             string `json:"cwd"`
		OutputByteLimit *int   `json:"outputByteLimit"`
	}
	if err := json.Unmarshal(params, &r); err != nil || r.SessionID == "" || strings.TrimSpace(r.Command) == "" {
		return nil, errors.New("needs sessionId and a command")
	}
	var line strings.Builder
	for _, e := range r.Env {
		if !validEnvName(e.Name) {
			return nil, fmt.Errorf("%q is not an environment variable name", e.Name)
		}
		line.WriteString(e.Name + "=" + shellQuote(e.Value) + " ")
	}
	line.WriteString(commandLine(r.Command, r.Args))
	args := map[string]any{"command": line.String(), "description": "terminal/create of " + p.o.AgentName}
	if r.Cwd != "" {
		args["workdir"] = r.Cwd
	}
	t := &terminal{session: r.SessionID, callID: p.callID("terminal"), done: make(chan struct{})}
	if r.OutputByteLimit != nil && *r.OutputByteLimit > 0 {
		t.limit = *r.OutputByteLimit
	}
	p.mu.Lock()
	if len(p.terminals) >= maxTerminals {
		p.mu.Unlock()
		return nil, &refusal{fmt.Sprintf("toolsd: %d terminals are open: release some first", maxTerminals)}
	}
	p.terminals[t.callID] = t
	p.mu.Unlock()
	p.bg.Add(1)
	go func() {
		defer p.bg.Done()
		t.res, t.err = p.execute(p.ctx, t.session, t.callID, "bash", args)
		close(t.done)
	}()
	return map[string]string{"terminalId": t.callID}, nil
}

// maxTerminals bounds the terminals not yet released.
const maxTerminals = 256

func (p *proxy) terminalOf(params json.RawMessage) (*terminal, error) {
	var r struct {
		SessionID  string `json:"sessionId"`
		TerminalID string `json:"terminalId"`
	}
	if err := json.Unmarshal(params, &r); err != nil || r.TerminalID == "" {
		return nil, errors.New("needs sessionId and terminalId")
	}
	p.mu.Lock()
	t := p.terminals[r.TerminalID]
	p.mu.Unlock()
	if t == nil || t.session != r.SessionID {
		return nil, fmt.Errorf("no terminal %q in session %q (released, or never created)", r.TerminalID, r.SessionID)
	}
	return t, nil
}

// terminalOutput answers the output so far: toolsd's bash tool gives it at its end, so a
// running terminal has printed nothing yet as far as the agent can see.
func (p *proxy) terminalOutput(_ context.Context, params json.RawMessage) (any, error) {
	t, err := p.terminalOf(params)
	if err != nil {
		return nil, err
	}
	select {
	case <-t.done:
		out, cut := t.output()
		st := t.status()
		return map[string]any{"output": out, "truncated": cut, "exitStatus": st}, nil
	default:
		return map[string]any{"output": "", "truncated": false}, nil
	}
}

func (p *proxy) waitForExit(ctx context.Context, params json.RawMessage) (any, error) {
	t, err := p.terminalOf(params)
	if err != nil {
		return nil, err
	}
	select {
	case <-t.done:
		return t.status(), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// killTerminal stops the command (tools/cancel: its process tree is killed); the terminal
// stays until released.
func (p *proxy) killTerminal(ctx context.Context, params json.RawMessage) (any, error) {
	t, err := p.terminalOf(params)
	if err != nil {
		return nil, err
	}
	p.stop(ctx, t)
	return nil, nil
}

func (p *proxy) releaseTerminal(ctx context.Context, params json.RawMessage) (any, error) {
	t, err := p.terminalOf(params)
	if err != nil {
		return nil, err
	}
	p.stop(ctx, t)
	p.mu.Lock()
	delete(p.terminals, t.callID)
	p.mu.Unlock()
	return nil, nil
}

// stop cancels a terminal's command if it still runs, and waits for its end.
func (p *proxy) stop(ctx context.Context, t *terminal) {
	select {
	case <-t.done:
		return
	default:
	}
	if err := p.daemon.Call(ctx, protocol.MethodToolsCancel, protocol.CancelParams{SessionID: t.session, CallID: t.callID}, nil); err != nil {
		p.log.Debug("tools/cancel of a terminal", "terminal", t.callID, "err", err)
	}
	select {
	case <-t.done:
	case <-ctx.Done():
	}
}

// commandLine is the shell line of an ACP command and its arguments: `sh -c LINE` (and bash's)
// is LINE itself, so that toolsd's shell analysis sees what runs; other arguments are quoted.
func commandLine(command string, args []string) string {
	switch filepath.Base(command) {
	case "sh", "bash", "zsh", "dash":
		if len(args) == 2 && (args[0] == "-c" || args[0] == "-lc") {
			return args[1]
		}
	}
	if len(args) == 0 {
		return command // a shell line, as agents that send one command send it
	}
	var b strings.Builder
	b.WriteString(shellQuote(command))
	for _, a := range args {
		b.WriteString(" " + shellQuote(a))
	}
	return b.String()
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func validEnvName(s string) bool {
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for _, c := range s {
		if c != '_' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}
