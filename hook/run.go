package hook

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/toolsd/toolsd/internal/proc"
	"github.com/toolsd/toolsd/internal/sandbox"
	"github.com/toolsd/toolsd/protocol"
)

const (
	maxStdout  = 4 << 20 // a hook's answer
	stderrTail = 4 << 10 // what of its stderr a reason or an error shows
	maxReason  = 8 << 10 // a reason or a context the model reads
)

// event is what one hook run sees.
type event struct {
	call       *Call
	args       json.RawMessage    // as the hooks before left them
	result     *Result            // after
	decision   *protocol.Decision // permission
	definition *Tool              // definition
	agent      string             // definition
	model      *protocol.Model    // definition
}

// params is the event as hooks/run's params (and the "toolsd" part of a command hook's
// input).
func (ev *event) params(e *entry) protocol.HookParams {
	p := protocol.HookParams{Name: e.spec.Name, Point: e.spec.Point}
	if c := ev.call; c != nil {
		p.SessionID, p.MessageID, p.CallID, p.Tool, p.Source, p.Agent, p.Model, p.Client = c.SessionID, c.MessageID, c.CallID, c.Tool, c.Source, c.Agent, c.Model, c.Client
		p.Args = ev.args
	}
	if r := ev.result; r != nil {
		md, err := json.Marshal(r.Metadata)
		if err != nil || r.Metadata == nil {
			md = json.RawMessage(`{}`)
		}
		p.Result = &protocol.HookCallResult{Status: r.Status, Title: r.Title, Output: r.Output, Metadata: md, Error: r.Error}
	}
	p.Decision = ev.decision
	if d := ev.definition; d != nil {
		p.Tool, p.Source, p.Agent, p.Model = d.ID, d.Source, ev.agent, ev.model
		p.Definition = &protocol.HookDefinition{Description: d.Description, InputSchema: d.Parameters}
	}
	return p
}

// reply is what one hook answered, whatever its kind.
type reply struct {
	failed    error // the run failed; nothing else is read
	cancelled bool  // the call went away while it ran
	exit      *int

	block         bool   // exit code 2: block (before), feedback (after), deny (permission), hide (definition)
	decision      string // allow, ask, deny, defer
	reason        string
	args          json.RawMessage // before: the arguments to run with (toolsd's names)
	context       string
	stop          string // continue: false (its stopReason)
	systemMessage string
	title, output *string
	metadata      map[string]any
	description   *string
	parameters    json.RawMessage
	hidden        bool
	notes         []string
}

// fromResult reads an editor's answer, or the "toolsd" part of a command hook's.
func (rep *reply) fromResult(t *protocol.HookResult) {
	if t.Decision != "" {
		rep.decision, rep.reason = t.Decision, t.Reason
	} else {
		rep.reason = cmp.Or(t.Reason, rep.reason)
	}
	if given(t.Args) {
		rep.args = t.Args
	}
	rep.context = cmp.Or(t.Context, rep.context)
	rep.title = cmp.Or(t.Title, rep.title)
	rep.output = cmp.Or(t.Output, rep.output)
	if given(t.Metadata) {
		var m map[string]any
		if json.Unmarshal(t.Metadata, &m) == nil {
			rep.metadata = m
		} else {
			rep.notes = append(rep.notes, "its metadata is not a JSON object, so it was ignored")
		}
	}
	rep.description = cmp.Or(t.Description, rep.description)
	if given(t.InputSchema) {
		rep.parameters = t.InputSchema
	}
	rep.hidden = rep.hidden || t.Hidden
}

// given reports whether a hook gave a JSON value: not left out, not null.
func given(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }

type hookError struct{ msg string }

func (e *hookError) Error() string { return e.msg }

func errorf(format string, args ...any) error { return &hookError{fmt.Sprintf(format, args...)} }

// run runs one hook and returns its reply and its record (Outcome ok; the point sets the
// rest). A panic, a crash or a hang of the hook is a failed reply, never more.
func (r *Runner) run(ctx context.Context, e *entry, ev *event) (rep reply, run protocol.HookRun) {
	s := e.spec
	start := r.opts.Now()
	run = protocol.HookRun{Hook: s.Name, Point: s.Point, Layer: s.Layer, File: s.File, Line: s.Line, Column: s.Column, Client: s.Client,
		StartedAt: start.UTC(), Outcome: protocol.HookOK}
	defer func() {
		if p := recover(); p != nil {
			r.log.Error("running a hook panicked", "hook", s.Name, "panic", p, "stack", string(debug.Stack()))
			rep = reply{failed: errorf("toolsd failed running it (%v); this is a bug in toolsd", p)}
		}
		run.DurationMs = r.opts.Now().Sub(start).Milliseconds()
		run.ExitCode = rep.exit
		if len(rep.notes) > 0 {
			run.Note = strings.Join(rep.notes, "; ")
		}
		switch {
		case rep.cancelled:
			run.Outcome, run.Error = protocol.HookFailed, "the call was cancelled while it ran"
		case rep.failed != nil:
			run.Outcome, run.Error = protocol.HookFailed, rep.failed.Error()
			run.OnFailure = protocol.HookFailOpen
			if s.FailClosed {
				run.OnFailure = protocol.HookFailClosed
			}
			r.failed(e, rep.failed)
		default:
			r.healthy(e)
		}
	}()
	if s.Requester != nil {
		rep = r.runEditor(ctx, e, ev)
	} else {
		rep = r.runCommand(ctx, e, ev)
	}
	if rep.systemMessage != "" {
		// Claude Code shows it to the person; toolsd keeps it in the record.
		rep.notes = append(rep.notes, "its message for the person: "+clip(rep.systemMessage, maxReason))
	}
	if rep.decision != "" && !validDecision(rep.decision) {
		rep.notes = append(rep.notes, "its decision "+strconv.Quote(rep.decision)+" is not allow, ask, deny or defer, so it was ignored")
		rep.decision = ""
	}
	rep.reason = clip(rep.reason, maxReason)
	rep.context = clip(rep.context, maxReason)
	return rep, run
}

func validDecision(d string) bool {
	switch d {
	case "allow", "ask", "deny", "defer":
		return true
	}
	return false
}

// runCommand runs a command hook: the event as JSON on stdin, in the workspace folder,
// through internal/proc (its whole process tree dies with it) and confined as Options.Confine
// says; its answer by Claude Code's contract (exit code 0 and JSON on stdout, 2 with the
// reason on stderr, any other code a failure).
func (r *Runner) runCommand(ctx context.Context, e *entry, ev *event) reply {
	s := e.spec
	if len(s.Command) == 0 {
		return reply{failed: errorf("it has no command")}
	}
	in := r.commandInput(e, ev)
	tctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	cmd := proc.Command(tctx, r.opts.Grace, s.Command[0], s.Command[1:]...)
	cmd.Stdin = bytes.NewReader(in) // after proc.Command, which sets it to nil
	cmd.Dir = r.opts.Workspace
	cmd.Env = r.env(s, ev)
	stdout := &capWriter{max: maxStdout}
	stderr := &proc.Tail{Max: stderrTail}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	var conf *sandbox.Confinement
	if r.opts.Confine != nil {
		conf = r.opts.Confine(&s)
		defer conf.Close()
	}
	if conf.Confined() {
		if err := proc.Confine(cmd, conf.Policy); err != nil {
			return reply{failed: errorf("it could not be confined: %v", err)}
		}
	}
	_, err := proc.Run(cmd)
	switch {
	case ctx.Err() != nil:
		return reply{cancelled: true}
	case tctx.Err() != nil:
		return reply{failed: errorf("it did not answer within %v and was stopped%s", s.Timeout, section(stderr))}
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return reply{failed: errorf("it could not start: the program %q was not found (%v)", s.Command[0], err)}
		}
		return reply{failed: errorf("it could not start: %v", err)}
	}
	code := proc.ExitCode(err)
	rep := reply{exit: &code}
	switch {
	case stdout.over:
		rep.failed = errorf("it wrote more than %d bytes to stdout; an answer is one JSON object", maxStdout)
	case code == 0:
		p := parseOutput(e, ev.call, stdout.Bytes())
		p.exit = &code
		return p
	case code == 2:
		rep.block = true
		rep.reason = strings.TrimSpace(stderr.String())
	default:
		msg := fmt.Sprintf("it exited with code %d%s", code, section(stderr))
		if conf.Confined() {
			if blocked := sandbox.Explain(conf.Policy, conf.Mode, r.opts.Workspace, stderr.String(), conf.Blocked()); len(blocked) > 0 {
				msg += "\n[the sandbox blocked: " + strings.Join(blocked, "; ") + "; the hook's \"sandbox\" setting decides what it may do]"
			}
		}
		rep.failed = errors.New(msg)
	}
	return rep
}

// env is a command hook's environment: the daemon's (or Options.Env), the hook's own, and
// what says where and why it runs (CLAUDE_PROJECT_DIR for hooks written for Claude Code).
func (r *Runner) env(s Spec, ev *event) []string {
	env := r.opts.Env
	if env == nil {
		env = os.Environ()
	}
	env = append([]string{}, env...)
	keys := make([]string, 0, len(s.Env))
	for k := range s.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+s.Env[k])
	}
	env = append(env, "CLAUDE_PROJECT_DIR="+r.opts.Workspace, "TOOLSD_WORKSPACE="+r.opts.Workspace, "TOOLSD_HOOK="+s.Name, "TOOLSD_HOOK_POINT="+s.Point)
	if c := ev.call; c != nil {
		env = append(env, "TOOLSD_SESSION_ID="+c.SessionID, "TOOLSD_CALL_ID="+c.CallID, "TOOLSD_TOOL="+c.Tool)
	} else if d := ev.definition; d != nil {
		env = append(env, "TOOLSD_TOOL="+d.ID)
	}
	return env
}

// runEditor sends hooks/run to the editor that subscribed and reads its answer.
func (r *Runner) runEditor(ctx context.Context, e *entry, ev *event) reply {
	tctx, cancel := context.WithTimeout(ctx, e.spec.Timeout)
	defer cancel()
	res, err := e.spec.Requester.Hook(tctx, ev.params(e))
	switch {
	case ctx.Err() != nil:
		return reply{cancelled: true}
	case tctx.Err() != nil:
		return reply{failed: errorf("the editor did not answer within %v", e.spec.Timeout)}
	case err != nil:
		return reply{failed: errorf("the editor answered with an error: %v", err)}
	case res == nil:
		return reply{}
	}
	var rep reply
	rep.fromResult(res)
	return rep
}

// capWriter keeps what is written up to max bytes and notes that more came.
type capWriter struct {
	bytes.Buffer
	max  int
	over bool
}

func (w *capWriter) Write(p []byte) (int, error) {
	n := len(p)
	if room := w.max - w.Len(); len(p) > room {
		w.over = true
		p = p[:max(room, 0)]
	}
	w.Buffer.Write(p)
	return n, nil // keep draining the pipe past the limit
}

// section renders a process's stderr for an error text.
func section(t *proc.Tail) string {
	s := strings.TrimSpace(t.String())
	if s == "" {
		return ""
	}
	if cut, kept, total := t.Cut(); cut {
		return fmt.Sprintf("; the last %d bytes of its stderr (of %d): %s", kept, total, s)
	}
	return "; its stderr: " + s
}

// clip cuts s to at most n bytes, on a rune boundary, saying so.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("… [cut: %d bytes in all]", len(s))
}
