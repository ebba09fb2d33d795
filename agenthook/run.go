package agenthook

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/toolsd/toolsd/protocol"
)

// DefaultTimeout bounds a hook run, an ask waiting for a person included. `toolsd hook
// install` gives the agent a time-out 20 s longer (AgentTimeout), so that the hook always
// answers first: an agent that kills a hook it waited too long for runs the tool (Claude
// Code, Codex).
const DefaultTimeout = 280 * time.Second

// AgentTimeout is the time-out `toolsd hook install` writes for the agent.
const AgentTimeout = DefaultTimeout + 20*time.Second

// RunOptions configure Run.
type RunOptions struct {
	Agent *Agent
	// Event is the hook event the agent ran the hook for (its argument).
	Event string
	// Workspace is the folder whose daemon decides; empty takes it from the payload
	// (Folder).
	Workspace string
	// Timeout bounds the run (DefaultTimeout when zero).
	Timeout time.Duration
	// NoEditor is what an ask becomes when no editor can show it: protocol.AgentAsk (the
	// agent's own prompt) or protocol.AgentDeny.
	NoEditor string
	// Connect reaches the owner daemon of folder (starting it if none runs), over a
	// stream that carries the toolsd protocol.
	Connect func(ctx context.Context, folder string) (io.ReadWriteCloser, error)
	// Version is toolsd's, for the initialize.
	Version string
}

// Run serves one hook event: it reads the agent's payload from stdin, has the workspace's
// daemon decide or record it, and returns what to answer. Whatever fails before a decision
// is made, a malformed payload, a daemon that cannot be reached, a time-out, denies the
// call (fail-closed) with a reason the model reads.
func Run(o RunOptions, stdin io.Reader) Reply {
	a := o.Agent
	kind, ok := a.Kind(o.Event)
	if !ok {
		kind = KindPre
	}
	refuse := func(format string, args ...any) Reply {
		if kind == KindPost || kind == KindFailure {
			// The tool has run: nothing to refuse, and the agent must go on.
			return Reply{Stderr: "toolsd hook: the call could not be recorded: " + fmt.Sprintf(format, args...)}
		}
		return a.Refuse(kind, "toolsd denied this call because its check could not be made: "+fmt.Sprintf(format, args...)+
			". Nothing ran. Tell the user; they can run `toolsd hook` by hand to see the error, or uninstall the hook (`toolsd hook uninstall "+a.Key+"`).")
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()

	data, err := io.ReadAll(io.LimitReader(stdin, 64<<20))
	if err != nil {
		return refuse("reading the %s payload failed (%v)", a.Name, err)
	}
	ev, err := a.Parse(o.Event, data)
	if err != nil {
		return refuse("%v", err)
	}
	folder := o.Workspace
	if folder == "" {
		folder = Folder(a, ev)
	}
	if folder == "" {
		return refuse("no workspace folder: the payload names no cwd and the hook was given no --workspace")
	}
	rwc, err := o.Connect(ctx, folder)
	if err != nil {
		return refuse("the toolsd daemon of %s could not be reached (%v)", folder, err)
	}
	defer rwc.Close()
	conn := jsonrpc2.NewConn(ctx, jsonrpc2.NewBufferedStream(rwc, jsonrpc2.VSCodeObjectCodec{}), jsonrpc2.HandlerWithError(
		func(_ context.Context, _ *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
			if req.Notif {
				return nil, nil // clients/changed, tools/progress: not for a hook
			}
			return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "toolsd hook serves no requests"}
		}), jsonrpc2.SetLogger(log.New(io.Discard, "", 0)))
	defer conn.Close()
	init := protocol.InitializeParams{WorkspaceFolder: folder, ClientInfo: &protocol.ClientInfo{Name: "toolsd hook (" + a.Name + ")", Version: o.Version}}
	if err := conn.Call(ctx, protocol.MethodInitialize, init, nil); err != nil {
		return refuse("the toolsd daemon of %s did not start a session (%v)", folder, timedOut(ctx, err))
	}
	agentName := a.Name
	switch ev.Kind {
	case KindPost, KindFailure:
		p := protocol.AgentAfterParams{Agent: a.ID, AgentName: agentName, SessionID: ev.SessionID, CallID: ev.CallID, Tool: ev.Tool, Input: ev.Input,
			Output: ev.Output, Error: ev.Error, Interrupted: ev.Interrupted}
		if ev.Kind == KindPost {
			p.Error = ""
		}
		var res protocol.AgentAfterResult
		if err := conn.Call(ctx, protocol.MethodAgentsAfter, p, &res); err != nil {
			return refuse("%v", timedOut(ctx, err))
		}
		return Reply{}
	}
	calls, err := Map(ev.Tool, ev.Input, ev.Cwd)
	if err != nil {
		return refuse("%v", err)
	}
	p := protocol.AgentBeforeParams{Agent: a.ID, AgentName: agentName, SessionID: ev.SessionID, CallID: ev.CallID, Tool: ev.Tool, Input: ev.Input,
		Calls: calls, Permission: ev.Kind == KindPermission, NoEditor: o.NoEditor}
	var res protocol.AgentBeforeResult
	if err := conn.Call(ctx, protocol.MethodAgentsBefore, p, &res); err != nil {
		return refuse("%v", timedOut(ctx, err))
	}
	switch res.Decision {
	case protocol.AgentAllow, protocol.AgentDeny, protocol.AgentAsk:
	default:
		return refuse("the daemon answered %q, not allow, deny or ask", res.Decision)
	}
	return a.Answer(ev.Kind, res.Decision, res.Reason)
}

func timedOut(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("no answer within the hook's time-out (%w)", ctx.Err())
	}
	return err
}

// Folder is the workspace a payload belongs to: Claude Code's project folder
// (CLAUDE_PROJECT_DIR, which stays the same when its shell changes folder), Cursor's first
// workspace root, or the agent's working folder.
func Folder(a *Agent, ev *Event) string {
	if a.Key == "claude" {
		if d := os.Getenv("CLAUDE_PROJECT_DIR"); d != "" && filepath.IsAbs(d) {
			return d
		}
	}
	if len(ev.Roots) > 0 && filepath.IsAbs(ev.Roots[0]) {
		return ev.Roots[0]
	}
	if filepath.IsAbs(ev.Cwd) {
		return ev.Cwd
	}
	return ""
}
