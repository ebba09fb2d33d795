package hook

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"

	"github.com/toolsd/toolsd/protocol"
)

// BeforeResult is what the before hooks made of a call.
type BeforeResult struct {
	// Args are the arguments to run with when a hook changed them (nil: unchanged); the
	// caller validates them again.
	Args json.RawMessage
	// Block, when set, refuses the call: its Reason is for the model.
	Block *Verdict
	// Verdict is the hooks' allow or ask, to combine with the rules (nil: none).
	Verdict *Verdict
	// Context is what the hooks added for the model.
	Context []Context
	// Runs are the hooks that ran.
	Runs []protocol.HookRun
}

// Before runs the before hooks that match the call, in order, each seeing the arguments as
// the hooks before it left them. A hook that blocks (exit code 2, a deny, continue: false)
// or that fails and is fail-closed stops the chain and refuses the call. Asks outweigh
// allows; an allow speaks only for the arguments its hook saw, so a later change of the
// arguments withdraws it; defer is read as Claude Code reads it outside print mode: no
// decision.
func (r *Runner) Before(ctx context.Context, c *Call) BeforeResult {
	var out BeforeResult
	list := r.snap.Load().points[protocol.HookPointBefore]
	if len(list) == 0 {
		return out
	}
	args := c.Args
	var allow *Verdict
	allowRun := -1
	for _, e := range list {
		if !e.matches(c, args) {
			continue
		}
		rep, run := r.run(ctx, e, &event{call: c, args: args})
		if rep.cancelled {
			out.Runs = append(out.Runs, run)
			return out
		}
		if rep.failed != nil {
			if e.spec.FailClosed {
				out.Block = &Verdict{Action: "deny", Hook: e.ref(), Reason: "it failed and is fail-closed: " + rep.failed.Error(),
					Message: fmt.Sprintf("The hook %q, which must check this call before it runs, failed (%s), so the call was not run. This is not a problem with your call: tell the person the hook is failing, or try again later.", e.spec.Name, rep.failed)}
				out.Runs = append(out.Runs, run)
				return out
			}
			out.Runs = append(out.Runs, run)
			continue
		}
		run.Decision, run.Reason = rep.decision, rep.reason
		if rep.block || rep.decision == "deny" || rep.stop != "" {
			reason := rep.reason
			if rep.stop != "" {
				reason = "it asks to stop: " + rep.stop
			}
			if reason == "" {
				reason = "(it gave no reason)"
			}
			run.Outcome, run.Decision, run.Reason = protocol.HookBlocked, "deny", reason
			out.Block = &Verdict{Action: "deny", Hook: e.ref(), Reason: reason, Message: fmt.Sprintf("The hook %q blocked this call: %s", e.spec.Name, reason)}
			out.Runs = append(out.Runs, run)
			return out
		}
		if rep.args != nil {
			var obj map[string]json.RawMessage
			if json.Unmarshal(rep.args, &obj) != nil || obj == nil {
				rep.notes = append(rep.notes, "its new arguments are not a JSON object, so they were ignored")
				run.Note = joinNotes(run.Note, rep.notes[len(rep.notes)-1])
			} else if !bytes.Equal(compact(rep.args), compact(args)) {
				args = compact(rep.args)
				run.Changed = append(run.Changed, "args")
				if allow != nil {
					out.Runs[allowRun].Note = joinNotes(out.Runs[allowRun].Note, "its allow was withdrawn: a later hook changed the arguments it allowed")
					allow, allowRun = nil, -1
				}
			}
		}
		switch rep.decision {
		case "ask":
			if out.Verdict == nil {
				out.Verdict = &Verdict{Action: "ask", Hook: e.ref(), Reason: rep.reason}
			}
		case "allow":
			if allow == nil {
				allow, allowRun = &Verdict{Action: "allow", Hook: e.ref(), Reason: rep.reason}, len(out.Runs)
			}
		case "defer":
			run.Note = joinNotes(run.Note, "defer pauses a call for a later resume in Claude Code's print mode; toolsd has no such mode and reads it as no decision, as Claude Code does interactively")
		}
		if rep.context != "" {
			run.Context = rep.context
			out.Context = append(out.Context, Context{Hook: e.ref(), Text: rep.context})
		}
		out.Runs = append(out.Runs, run)
	}
	if out.Verdict == nil && allow != nil {
		out.Verdict = allow
	}
	if !bytes.Equal(args, c.Args) {
		out.Args = args
	}
	return out
}

// Result is a call's result as the after hooks see and change it.
type Result struct {
	Status, Title, Output, Error string
	Metadata                     map[string]any
}

// AfterResult is what the after hooks made of a result.
type AfterResult struct {
	// Result is the result as the hooks left it.
	Result Result
	// Changed names what they changed (title, output, metadata).
	Changed []string
	// Context is what the hooks added for the model.
	Context []Context
	// Withheld, when set, keeps the result from the model: a fail-closed hook failed.
	Withheld *Verdict
	Runs     []protocol.HookRun
}

// After runs the after hooks that match the call, in order, each seeing the result as the
// hooks before it left them. A hook's block (exit code 2, decision block) is feedback for
// the model (the call already ran); a fail-closed hook that fails withholds the result.
func (r *Runner) After(ctx context.Context, c *Call, res Result) AfterResult {
	out := AfterResult{Result: res}
	list := r.snap.Load().points[protocol.HookPointAfter]
	if len(list) == 0 {
		return out
	}
	changed := map[string]bool{}
	for _, e := range list {
		if !e.matches(c, c.Args) {
			continue
		}
		cur := out.Result
		rep, run := r.run(ctx, e, &event{call: c, args: c.Args, result: &cur})
		if rep.cancelled {
			out.Runs = append(out.Runs, run)
			break
		}
		if rep.failed != nil {
			out.Runs = append(out.Runs, run)
			if e.spec.FailClosed {
				out.Withheld = &Verdict{Action: "deny", Hook: e.ref(), Reason: "it failed and is fail-closed: " + rep.failed.Error(),
					Message: fmt.Sprintf("The call ran, but the hook %q, which must see its result before you do, failed (%s), so the result is withheld. Do not run the call again only to see its result: what it did is done. Tell the person the hook is failing.", e.spec.Name, rep.failed)}
				break
			}
			continue
		}
		if rep.decision != "" {
			run.Note = joinNotes(run.Note, "a decision after the call ran cannot stop it; only its reason was passed on")
		}
		if rep.title != nil && *rep.title != out.Result.Title {
			out.Result.Title = *rep.title
			run.Changed, changed["title"] = append(run.Changed, "title"), true
		}
		if rep.output != nil && *rep.output != out.Result.Output {
			out.Result.Output = *rep.output
			run.Changed, changed["output"] = append(run.Changed, "output"), true
		}
		if len(rep.metadata) > 0 {
			md := maps.Clone(out.Result.Metadata)
			if md == nil {
				md = map[string]any{}
			}
			maps.Copy(md, rep.metadata)
			out.Result.Metadata = md
			run.Changed, changed["metadata"] = append(run.Changed, "metadata"), true
		}
		var say []string
		if rep.block || rep.decision == "deny" {
			reason := rep.reason
			if reason == "" {
				reason = "(it gave no reason)"
			}
			run.Reason = reason
			say = append(say, reason)
		}
		if rep.stop != "" {
			say = append(say, "it asks you to stop: "+rep.stop)
		}
		if rep.context != "" {
			say = append(say, rep.context)
		}
		if len(say) > 0 {
			text := joinLines(say)
			run.Context = text
			out.Context = append(out.Context, Context{Hook: e.ref(), Text: text})
		}
		out.Runs = append(out.Runs, run)
	}
	for _, k := range []string{"title", "output", "metadata"} {
		if changed[k] {
			out.Changed = append(out.Changed, k)
		}
	}
	return out
}

// PermissionResult is what the permission hooks made of a decision.
type PermissionResult struct {
	// Deny, when set, turns the decision into a deny.
	Deny *Verdict
	Runs []protocol.HookRun
}

// Permission runs the permission hooks that match the call with a decision made: with
// pending, an ask not yet shown to a person (a hook may deny it); otherwise a final one
// (rules, sandbox, person), which they only see. A fail-closed hook that fails denies what
// the decision would let through.
func (r *Runner) Permission(ctx context.Context, c *Call, args json.RawMessage, d protocol.Decision, pending bool) PermissionResult {
	var out PermissionResult
	list := r.snap.Load().points[protocol.HookPointPermission]
	if len(list) == 0 {
		return out
	}
	for _, e := range list {
		if !e.matches(c, args) {
			continue
		}
		dec := d
		rep, run := r.run(ctx, e, &event{call: c, args: args, decision: &dec})
		out.Runs = append(out.Runs, run)
		last := &out.Runs[len(out.Runs)-1]
		switch {
		case rep.cancelled:
			return out
		case rep.failed != nil:
			if e.spec.FailClosed && d.Action != "deny" {
				out.Deny = &Verdict{Action: "deny", Hook: e.ref(), Reason: fmt.Sprintf("it must see every decision, and failed (%s)", rep.failed)}
				return out
			}
			continue
		}
		last.Decision, last.Reason = rep.decision, rep.reason
		if rep.block || rep.decision == "deny" {
			if pending {
				reason := rep.reason
				if reason == "" {
					reason = "(it gave no reason)"
				}
				last.Outcome, last.Decision, last.Reason = protocol.HookBlocked, "deny", reason
				out.Deny = &Verdict{Action: "deny", Hook: e.ref(), Reason: reason}
				return out
			}
			last.Note = joinNotes(last.Note, "a permission hook turns an ask into a deny; this decision was not an ask waiting for a person, so its deny was not followed")
		} else if rep.decision == "allow" || rep.decision == "ask" {
			last.Note = joinNotes(last.Note, "a permission hook may only turn an ask into a deny; its "+rep.decision+" was not followed")
		}
	}
	return out
}

// Tool is a tool's definition as definition hooks see and change it.
type Tool struct {
	ID, Source, Description string
	Parameters              json.RawMessage
}

type definitionResult struct {
	tool   Tool
	hidden bool
}

// maxDefinitions bounds the remembered definitions (tools × agents × models).
const maxDefinitions = 4096

// Definition runs the definition hooks that match a tool, in order, each seeing the tool
// as the hooks before it left it, and reports the tool as the model is to see it, or that
// it is hidden. Answers are remembered until the hooks, or the tool, change.
func (r *Runner) Definition(ctx context.Context, t Tool, agent string, model *protocol.Model) (Tool, bool) {
	list := r.snap.Load().points[protocol.HookPointDefinition]
	if len(list) == 0 {
		return t, false
	}
	key := definitionKey(t, agent, model)
	r.mu.Lock()
	snap := r.snap.Load()
	res, ok := r.defs[key]
	r.mu.Unlock()
	if ok {
		return res.tool, res.hidden
	}
	res = definitionResult{tool: t}
	remember := true
	for _, e := range snap.points[protocol.HookPointDefinition] {
		if !e.matchesTool(t.ID, t.Source) {
			continue
		}
		cur := res.tool
		rep, _ := r.run(ctx, e, &event{definition: &cur, agent: agent, model: model})
		if rep.cancelled {
			return t, false
		}
		if rep.failed != nil {
			if e.spec.FailClosed {
				res.hidden = true
				break
			}
			remember = false // a hook that failed is asked again next time
			continue
		}
		if rep.block || rep.hidden {
			res.hidden = true
			break
		}
		if rep.description != nil {
			res.tool.Description = *rep.description
		}
		if rep.parameters != nil {
			var obj map[string]any
			if json.Unmarshal(rep.parameters, &obj) == nil && obj != nil {
				res.tool.Parameters = compact(rep.parameters)
			} else {
				r.log.Warn("a definition hook gave parameters that are not a JSON object; they were ignored", "hook", e.spec.Name, "tool", t.ID)
			}
		}
	}
	if remember {
		r.mu.Lock()
		if r.snap.Load() == snap { // not reloaded meanwhile
			if len(r.defs) >= maxDefinitions {
				r.defs = map[string]definitionResult{}
			}
			r.defs[key] = res
		}
		r.mu.Unlock()
	}
	return res.tool, res.hidden
}

func definitionKey(t Tool, agent string, m *protocol.Model) string {
	h := sha256.New()
	for _, s := range []string{t.ID, t.Source, t.Description, string(t.Parameters), agent} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	if m != nil {
		h.Write([]byte(m.ProviderID + "\x00" + m.ModelID))
	}
	return hex.EncodeToString(h.Sum(nil))
}

func compact(b json.RawMessage) json.RawMessage {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return b
	}
	return buf.Bytes()
}

func joinNotes(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func joinLines(xs []string) string {
	out := ""
	for i, x := range xs {
		if i > 0 {
			out += "\n"
		}
		out += x
	}
	return out
}
