package session

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/toolsd/toolsd/builtin"
	"github.com/toolsd/toolsd/config"
	"github.com/toolsd/toolsd/hook"
	"github.com/toolsd/toolsd/protocol"
	"github.com/toolsd/toolsd/registry"
)

// hookSpecs are the command hooks of the settings: the user's, the editor's, and the
// workspace's own once it is trusted (the runner orders them).
func hookSpecs(l *config.Layers, trusted bool, workspace string) []hook.Spec {
	var out []hook.Spec
	for _, layer := range []*config.Layer{l.User, l.Editor, l.Project} {
		if layer == nil || (layer.Source == config.SourceProject && !trusted) {
			continue
		}
		for _, point := range config.HookPoints {
			for i, h := range layer.Settings.Hooks.Of(point) {
				sp := hook.Spec{
					Name: h.Name, Point: point, Layer: layer.Source, File: layer.Path,
					Match: h.Match, Source: h.Source, If: h.If, Env: h.Env, Sandbox: h.Sandbox,
					Command:    expandArgv(h.Command, workspace),
					Timeout:    time.Duration(h.Timeout) * time.Second,
					FailClosed: h.OnFailure == protocol.HookFailClosed,
				}
				if at := layer.HooksAt[point]; i < len(at) {
					sp.Line, sp.Column = at[i].Line, at[i].Column
				}
				if layer.Source == config.SourceEditor {
					sp.File = "initializationOptions" // as the editor's rules are named
				}
				if sp.Name == "" {
					sp.Name = hookName(h.Command)
				}
				out = append(out, sp)
			}
		}
	}
	return out
}

// hookCount counts a layer's hooks.
func hookCount(l *config.Layer) int {
	if l == nil {
		return 0
	}
	n := 0
	for _, p := range config.HookPoints {
		n += len(l.Settings.Hooks.Of(p))
	}
	return n
}

// interpreters run the script named after them: a hook is named for its script.
var interpreters = map[string]bool{"python": true, "python3": true, "bash": true, "sh": true, "node": true, "deno": true, "bun": true, "ruby": true, "perl": true, "uv": true, "npx": true}

// hookName is a hook's default name: its script's file name (the program's, when it is no
// interpreter).
func hookName(argv []string) string {
	if len(argv) == 0 {
		return "hook"
	}
	name := filepath.Base(argv[0])
	if interpreters[name] {
		for _, a := range argv[1:] {
			if !strings.HasPrefix(a, "-") {
				return filepath.Base(a)
			}
		}
	}
	return name
}

// expandArgv expands what a hook's argv may say without a shell: a leading "~/" (the home
// folder), $CLAUDE_PROJECT_DIR and $TOOLSD_WORKSPACE (the workspace); and makes a
// relative program path (one with a slash) the workspace's.
func expandArgv(argv []string, workspace string) []string {
	home, _ := os.UserHomeDir()
	out := make([]string, len(argv))
	for i, a := range argv {
		if home != "" && (a == "~" || strings.HasPrefix(a, "~/")) {
			a = home + a[1:]
		}
		for _, v := range []string{"${CLAUDE_PROJECT_DIR}", "$CLAUDE_PROJECT_DIR", "${TOOLSD_WORKSPACE}", "$TOOLSD_WORKSPACE"} {
			a = strings.ReplaceAll(a, v, workspace)
		}
		out[i] = a
	}
	if len(out) > 0 && strings.Contains(out[0], "/") && !filepath.IsAbs(out[0]) {
		out[0] = filepath.Join(workspace, out[0])
	}
	return out
}

// clientHookSpecs are the hooks an editor subscribed to.
func clientHookSpecs(c *Client) []hook.Spec {
	var out []hook.Spec
	for _, h := range c.hooks {
		ref := c.ref
		out = append(out, hook.Spec{
			Name: h.Name, Point: h.Point, Layer: hook.LayerClient, Match: h.Match, Source: h.Source, If: h.If,
			Client: &ref, Requester: c.requester,
			Timeout:    time.Duration(h.TimeoutMs) * time.Millisecond,
			FailClosed: h.OnFailure == protocol.HookFailClosed,
		})
	}
	return out
}

// checkSubscriptions refuses the hooks capability's subscriptions that cannot be run, and
// says why.
func checkSubscriptions(subs []protocol.HookSubscription) ([]protocol.HookSubscription, []string) {
	var ok []protocol.HookSubscription
	var bad []string
	for i, h := range subs {
		switch {
		case strings.TrimSpace(h.Name) == "":
			bad = append(bad, fmt.Sprintf("hooks[%d] has no name", i))
		case h.Point != protocol.HookPointBefore && h.Point != protocol.HookPointAfter && h.Point != protocol.HookPointPermission && h.Point != protocol.HookPointDefinition:
			bad = append(bad, fmt.Sprintf("hooks[%d] (%s): point %q is not definition, before, after or permission", i, h.Name, h.Point))
		case h.OnFailure != "" && h.OnFailure != protocol.HookFailOpen && h.OnFailure != protocol.HookFailClosed:
			bad = append(bad, fmt.Sprintf("hooks[%d] (%s): onFailure %q is not fail-open or fail-closed", i, h.Name, h.OnFailure))
		default:
			if h.If != "" {
				if _, _, err := hook.ParseIf(h.If); err != nil {
					bad = append(bad, fmt.Sprintf("hooks[%d] (%s): %v", i, h.Name, err))
					continue
				}
			}
			ok = append(ok, h)
		}
	}
	return ok, bad
}

// hookCall describes a prepared call to its hooks.
func (s *Service) hookCall(c *callState, p protocol.ExecuteParams, e *registry.Entry, args json.RawMessage) *hook.Call {
	id, key, src := e.ID, e.PermissionKey(), e.Source
	return &hook.Call{
		SessionID: c.sessionID, MessageID: c.messageID, CallID: c.callID, Tool: id, Source: src,
		Agent: c.agent, Model: p.Model, Client: c.client, Args: args,
		Requests: func(args json.RawMessage) []hook.Request {
			if src != registry.SourceBuiltin {
				return []hook.Request{{Permission: key, Patterns: []string{"*"}}}
			}
			reqs, ok, err := builtin.Requests(s.opts.Workspace, id, args)
			if !ok {
				return []hook.Request{{Permission: key, Patterns: []string{"*"}}}
			}
			if err != nil {
				return nil
			}
			out := make([]hook.Request, len(reqs))
			for i, r := range reqs {
				out[i] = hook.Request{Permission: r.Permission, Patterns: r.Patterns}
			}
			return out
		},
	}
}

// hooksActive reports whether hooks run at any point of a call.
func (s *Service) hooksActive() bool {
	h := s.opts.Hooks
	return h.Active(protocol.HookPointBefore) || h.Active(protocol.HookPointAfter) || h.Active(protocol.HookPointPermission)
}

// before runs the before hooks of a prepared call. It returns the arguments to run with, or
// the outcome of a call they refused (blocked, or changed into arguments the tool does not
// take).
func (s *Service) before(ctx context.Context, c *callState, p protocol.ExecuteParams, e *registry.Entry, args json.RawMessage) (json.RawMessage, *outcome) {
	if c.hc == nil || !s.opts.Hooks.Active(protocol.HookPointBefore) {
		return args, nil
	}
	res := s.opts.Hooks.Before(ctx, c.hc)
	c.addHookRuns(res.Runs)
	c.contexts = append(c.contexts, res.Context...)
	if ctx.Err() != nil {
		o := outcome{status: protocol.StatusCancelled, tool: e.ID, errText: "the call was cancelled"}
		return nil, &o
	}
	if b := res.Block; b != nil {
		prov := b.Provenance(fmt.Sprintf("hook %q (%s) blocked the call: %s", b.Hook.Name, b.Hook.Where(), b.Reason))
		c.addDecision(protocol.Decision{Permission: c.permKey, Patterns: []string{"*"}, Action: "deny", By: "hook", At: s.opts.Now(), Provenance: &prov})
		o := failed(b.Message)
		o.tool = e.ID
		return nil, &o
	}
	c.verdict = res.Verdict
	if res.Args == nil {
		return args, nil
	}
	changed := res.Args
	if s.opts.PrepareArgs != nil {
		changed = s.opts.PrepareArgs(e.Parameters, changed)
	}
	c.modelArgs, c.hookArgs = args, changed
	if err := e.Validate(changed); err != nil {
		var names []string
		for _, r := range res.Runs {
			if contains(r.Changed, "args") {
				names = append(names, fmt.Sprintf("%q", r.Hook))
			}
		}
		o := failed(fmt.Sprintf("The hook %s changed this call's arguments into ones the tool %q does not take, so nothing ran: %v. This is not a problem with your call: tell the person the hook rewrites calls wrongly.", strings.Join(names, " and "), e.ID, err))
		o.tool = e.ID
		return nil, &o
	}
	c.hc.Args = changed
	return changed, nil
}

// after runs the after hooks of a call that ran, on its outcome (before the model reads it),
// and returns the names of those that ran.
func (s *Service) after(ctx context.Context, c *callState, o *outcome) []string {
	if c.hc == nil || !s.opts.Hooks.Active(protocol.HookPointAfter) || ctx.Err() != nil {
		return nil
	}
	res := s.opts.Hooks.After(ctx, c.hc, hook.Result{Status: o.status, Title: o.title, Output: o.output, Error: o.errText, Metadata: o.metadata})
	c.addHookRuns(res.Runs)
	c.contexts = append(c.contexts, res.Context...)
	var names []string
	for _, r := range res.Runs {
		names = append(names, strconv.Quote(r.Hook))
	}
	if w := res.Withheld; w != nil {
		o.status, o.errText, o.output = protocol.StatusError, w.Message, ""
		return names
	}
	o.title, o.metadata = res.Result.Title, res.Result.Metadata
	if contains(res.Changed, "output") {
		out := res.Result.Output
		if max := s.opts.Limits.Bytes; len(out) > max {
			out = out[:max] + fmt.Sprintf("\n[output cut: an after hook returned %d bytes; you see the first %d]", len(out), max)
		}
		o.output = out
	}
	return names
}

// withContext adds what the hooks said for the model to the text it reads.
func withContext(text string, cs []hook.Context) string {
	if len(cs) == 0 {
		return text
	}
	var b strings.Builder
	b.WriteString(text)
	for _, c := range cs {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "[hook %q: %s]", c.Hook.Name, c.Text)
	}
	return b.String()
}

// definition is a tool as the definition hooks make it for a round; hidden when one hides it.
func (s *Service) definition(e *registry.Entry, agent string, model *protocol.Model) (hook.Tool, bool) {
	t := hook.Tool{ID: e.ID, Source: e.Source, Description: e.Description, Parameters: e.Parameters}
	if !s.opts.Hooks.Active(protocol.HookPointDefinition) {
		return t, false
	}
	return s.opts.Hooks.Definition(context.Background(), t, agent, model)
}
