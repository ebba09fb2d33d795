package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/toolsd/toolsd/hook"
	"github.com/toolsd/toolsd/permission"
	"github.com/toolsd/toolsd/protocol"
	"github.com/toolsd/toolsd/registry"
)

// Policy decides permission queries and remembers "always" answers. *permission.Engine is
// the real one.
type Policy interface {
	Decide(q permission.Query) permission.Decision
	// Remember records an "always" answer for the session, or for the workspace when
	// sessionID is empty, given through the client by.
	Remember(sessionID, permission string, patterns []string, by string) error
}

// BySandbox is a decision's By when the sandbox's auto-allow allowed a confined call that
// only the built-in defaults asked for (its Rule is the default rule that would have asked).
const BySandbox = "sandbox"

// Sentinel errors of the broker; the rpc layer maps them to JSON-RPC codes.
var (
	ErrUnknownAsk = errors.New("session: unknown or already answered ask")
	ErrBadReply   = errors.New("session: invalid reply")
	ErrDuplicate  = errors.New("session: duplicate callID")
	ErrCancelled  = errors.New("session: call cancelled")
	ErrClosed     = errors.New("session: closed")
)

// AskRouter shows asks to the clients that can answer them (see Workspace, which routes
// them to every attached editor, or else back to the calling client). Its methods are called
// from many goroutines and must not block for long.
type AskRouter interface {
	// Targets returns the connection ids of the clients that can answer an ask of a call
	// that caller made (nil when the call came from no client), and nil when none can.
	Targets(caller *protocol.ClientRef) []string
	// Show shows the ask to the clients named.
	Show(targets []string, p protocol.AskedParams)
	// Answered tells the clients named that an ask shown to them is no longer pending.
	Answered(targets []string, p protocol.AnsweredParams)
}

// singleRouter is the router of a Service that serves one client (Options.Notifier and
// Options.CanAsk).
type singleRouter struct {
	canAsk bool
	n      Notifier
}

func (r singleRouter) Targets(*protocol.ClientRef) []string {
	if r.canAsk && r.n != nil {
		return []string{""}
	}
	return nil
}
func (r singleRouter) Show(_ []string, p protocol.AskedParams)        { r.n.Asked(p) }
func (r singleRouter) Answered(_ []string, _ protocol.AnsweredParams) {}

// broker holds the asks waiting for a person. Safe for concurrent use.
type broker struct {
	policy Policy
	router AskRouter
	now    func() time.Time
	hooks  *hook.Runner // nil: none

	mu      sync.Mutex // guards pending and seq
	pending map[string]*pendingAsk
	seq     uint64
}

type pendingAsk struct {
	params  protocol.AskedParams
	from    *protocol.ClientRef // the client the call came through, whose route it follows
	query   permission.Query
	reply   chan askAnswer // buffered 1; written once under broker.mu
	at      time.Time
	targets []string // the clients it was shown to; guarded by broker.mu
}

type askAnswer struct {
	reply   string // once, always, reject
	scope   string
	message string
	by      string              // "person", "rule" when an always answer released it, "no-ui" when nobody is left to answer
	client  *protocol.ClientRef // who answered (by "person")
}

// ask decides req for the call, asking the person when the rules say ask. It returns the
// decision to record and nil when the call may proceed, or a *registry.PermissionError.
//
// The before hooks' verdict combines with the rules, and never loosens a deny: a hook's ask
// makes a request the rules allow ask a person (once per call). The sandbox's auto-allow and
// a hook's allow settle an ask only where permission.MayRelax says so: an ask that only the
// built-in defaults made, of a request toolsd fully understands, that writes no protected
// path — never one a rule someone wrote (any layer, trusted or not) makes (docs/security.md
// says why). The permission hooks then see the decision: they may deny an ask before a
// person sees it.
func (b *broker) ask(ctx context.Context, c *callState, req registry.AskRequest) (protocol.Decision, error) {
	q := permission.Query{SessionID: c.sessionID, Agent: c.agent, Tool: c.tool, Permission: req.Permission, Patterns: req.Patterns, ReadOnly: c.readOnly && req.Permission == c.permKey, Opaque: req.Opaque, ExactOnly: req.ExactOnly, Reasons: req.Reasons}
	d := b.policy.Decide(q)
	prov := permission.ProvenanceOf(d)
	dec := protocol.Decision{Permission: req.Permission, Patterns: nonNil(req.Patterns), Action: string(d.Action), By: "rule", Rule: ruleInfo(d.Rule), At: b.now(), Provenance: &prov}
	v := c.verdict
	forced := v != nil && v.Action == "ask" && !c.answered()
	switch d.Action {
	case permission.Allow:
		if !forced {
			return b.final(ctx, c, q, dec, nil)
		}
	case permission.Deny:
		return b.final(ctx, c, q, dec, &registry.PermissionError{Kind: "deny", Message: permission.DeniedText(d.Rule, q)})
	}
	relax := !forced && permission.MayRelax(q, d)
	if relax && req.Sandboxed {
		// The OS sandbox confines what runs, and only the defaults asked: no one wrote a
		// rule that wants this asked. The decision names the sandbox as what allowed it.
		dec.Action, dec.By = string(permission.Allow), BySandbox
		return b.final(ctx, c, q, dec, nil)
	}
	if relax && v != nil && v.Action == "allow" {
		hp := v.Provenance(fmt.Sprintf("hook %q (%s) allowed it%s; without it: %s", v.Hook.Name, v.Hook.Where(), because(v.Reason), prov.Text))
		dec.Action, dec.By, dec.Provenance = string(permission.Allow), "hook", &hp
		return b.final(ctx, c, q, dec, nil)
	}
	if forced {
		hp := v.Provenance(fmt.Sprintf("hook %q (%s) asks a person%s; the rules alone: %s", v.Hook.Name, v.Hook.Where(), because(v.Reason), prov.Text))
		prov = hp
		dec.Action = string(permission.Ask)
	}
	if pr := b.permissionHooks(ctx, c, dec, true); pr != nil {
		hp := pr.Provenance(fmt.Sprintf("hook %q (%s) denied the ask: %s", pr.Hook.Name, pr.Hook.Where(), pr.Reason))
		dec.Action, dec.By, dec.Provenance = string(permission.Deny), "hook", &hp
		return dec, &registry.PermissionError{Kind: "deny", Message: hookDeniedText(pr, q)}
	}
	targets := b.router.Targets(c.from())
	if len(targets) == 0 {
		dec.By, dec.Action = "no-ui", string(permission.Deny)
		return b.final(ctx, c, q, dec, &registry.PermissionError{Kind: "no-ui", Message: permission.NoUIText(q)})
	}
	// A call that waits for a person is on record first, so that a crash meanwhile leaves
	// it interrupted rather than unknown.
	if err := c.record(); err != nil {
		return dec, err
	}
	always := req.Always
	switch {
	case req.Opaque:
		always = nil // nothing to remember: the text hides what it runs
	case len(always) == 0:
		always = req.Patterns
	}
	always = rememberable(req.Permission, always)
	if d.Protected != "" {
		if req.Metadata == nil {
			req.Metadata = map[string]any{}
		}
		// Why the path is protected: the person reads it in the ask, which offers no
		// "always" for it.
		req.Metadata["protected"] = d.Protected
	}
	if d.Untrusted != nil {
		if req.Metadata == nil {
			req.Metadata = map[string]any{}
		}
		req.Metadata["untrustedRule"] = ruleInfo(d.Untrusted)
	}
	if d.Reason != "" {
		if req.Metadata == nil {
			req.Metadata = map[string]any{}
		}
		// Why a rule that matched could not allow it (an argument outside the command's
		// safe grammar): the person reads it in the ask.
		req.Metadata["reason"] = d.Reason
	}
	if forced && v.Reason != "" {
		if req.Metadata == nil {
			req.Metadata = map[string]any{}
		}
		req.Metadata["hookReason"] = v.Reason
	}
	meta, err := json.Marshal(nonNilMap(req.Metadata))
	if err != nil {
		meta = []byte("{}")
	}
	p := &pendingAsk{query: q, from: c.from(), reply: make(chan askAnswer, 1), at: b.now(), targets: targets}
	askedAt := p.at.UTC()
	dec.AskedAt = &askedAt
	b.mu.Lock()
	b.seq++
	id := "ask_" + strconv.FormatUint(b.seq, 10) + "_" + c.callID
	p.params = protocol.AskedParams{
		ID: id, SessionID: c.sessionID, MessageID: c.messageID, CallID: c.callID, Tool: c.tool,
		Permission: req.Permission, Patterns: nonNil(req.Patterns), Always: nonNil(always),
		Metadata: meta, Rule: ruleInfo(d.Rule), Destructive: req.Destructive, Provenance: &prov, Client: c.client,
	}
	b.pending[id] = p
	b.mu.Unlock()
	b.router.Show(targets, p.params)

	select {
	case a := <-p.reply:
		dec.By, dec.Reply, dec.Scope, dec.Message, dec.Client, dec.At = a.by, a.reply, a.scope, a.message, a.client, b.now()
		if a.client != nil {
			dec.AnsweredBy = a.client.Name
		}
		dec.WaitedMs = dec.At.Sub(p.at).Milliseconds()
		switch {
		case a.by == "no-ui":
			dec.Action = string(permission.Deny)
			return b.final(ctx, c, q, dec, &registry.PermissionError{Kind: "no-ui", Message: permission.NoUIText(q)})
		case a.reply == protocol.ReplyReject:
			dec.Action = string(permission.Deny)
			return b.final(ctx, c, q, dec, &registry.PermissionError{Kind: "reject", Message: permission.RejectedText(a.message, q)})
		}
		dec.Action = string(permission.Allow)
		if a.reply == protocol.ReplyAlways && d.Protected != "" {
			// Nothing about a protected path is remembered: the answer counts for this call.
			once := *dec.Provenance
			once.Text += `; the answer "always" counts as "once" for a protected path: nothing was remembered`
			dec.Provenance = &once
		}
		c.setAnswered()
		return b.final(ctx, c, q, dec, nil)
	case <-ctx.Done():
		b.withdraw(id)
		dec.By, dec.Action, dec.At = "cancel", string(permission.Deny), b.now()
		dec.WaitedMs = dec.At.Sub(p.at).Milliseconds()
		return dec, ctx.Err()
	}
}

// final lets the permission hooks see a decision made; a fail-closed one that fails turns
// an allow into a deny.
func (b *broker) final(ctx context.Context, c *callState, q permission.Query, dec protocol.Decision, err error) (protocol.Decision, error) {
	v := b.permissionHooks(ctx, c, dec, false)
	if v == nil || dec.Action == string(permission.Deny) {
		return dec, err
	}
	hp := v.Provenance(fmt.Sprintf("hook %q (%s) is fail-closed: %s", v.Hook.Name, v.Hook.Where(), v.Reason))
	dec.Action, dec.By, dec.Provenance = string(permission.Deny), "hook", &hp
	return dec, &registry.PermissionError{Kind: "deny", Message: hookDeniedText(v, q)}
}

// permissionHooks runs the permission hooks on a decision (pending: an ask not yet shown)
// and returns their deny, if any.
func (b *broker) permissionHooks(ctx context.Context, c *callState, dec protocol.Decision, pending bool) *hook.Verdict {
	if c.hc == nil || !b.hooks.Active(protocol.HookPointPermission) {
		return nil
	}
	res := b.hooks.Permission(ctx, c.hc, c.hc.Args, dec, pending)
	c.addHookRuns(res.Runs)
	return res.Deny
}

// rememberable is the patterns an "always" answer may remember: all but protected paths,
// for which an "always" counts as "once" (permission.Protected).
func rememberable(perm string, patterns []string) []string {
	var out []string
	for _, p := range patterns {
		if _, ok := permission.Protected(perm, p); !ok {
			out = append(out, p)
		}
	}
	return out
}

// hookDeniedText is what the model reads when a hook denied a request.
func hookDeniedText(v *hook.Verdict, q permission.Query) string {
	what := q.Permission
	if len(q.Patterns) > 0 && !(len(q.Patterns) == 1 && q.Patterns[0] == "*") {
		what += " " + strings.Join(quoteAll(q.Patterns), ", ")
	}
	return fmt.Sprintf("permission denied by the hook %q: %s is not allowed (%s), so nothing ran. Do not retry this call or a variant of it; "+
		"do the task another way, or tell the user what you needed and why.", v.Hook.Name, what, v.Reason)
}

func because(reason string) string {
	if reason == "" {
		return ""
	}
	return " (" + reason + ")"
}

// withdraw removes a pending ask whose call went away, and tells the clients that showed it.
func (b *broker) withdraw(id string) {
	b.mu.Lock()
	p, ok := b.pending[id]
	delete(b.pending, id)
	b.mu.Unlock()
	if ok {
		b.router.Answered(p.targets, protocol.AnsweredParams{ID: id, By: "cancel"})
	}
}

// detached takes a client that went away off the asks shown to it. An ask it was the last
// to show goes to whoever can answer it now, or is refused (no-ui) when nobody can, so that
// no call waits for a person who is gone.
func (b *broker) detached(clientID string) {
	type reroute struct {
		p       *pendingAsk
		targets []string
	}
	var again []reroute
	b.mu.Lock()
	for id, p := range b.pending {
		i := slices.Index(p.targets, clientID)
		if i < 0 {
			continue
		}
		p.targets = slices.Delete(slices.Clone(p.targets), i, i+1)
		if len(p.targets) > 0 {
			continue
		}
		targets := b.router.Targets(p.from)
		if slices.Contains(targets, clientID) {
			targets = slices.DeleteFunc(targets, func(t string) bool { return t == clientID })
		}
		if len(targets) == 0 {
			delete(b.pending, id)
			p.reply <- askAnswer{by: "no-ui"}
			continue
		}
		p.targets = targets
		again = append(again, reroute{p, targets})
	}
	b.mu.Unlock()
	for _, r := range again {
		b.router.Show(r.targets, r.p.params)
	}
}

// reply answers a pending ask. It returns the ids of other pending asks it settled too: those
// an "always" answer now allows, or the session's other asks after a rejection.
// by is the client the person answered on (nil for a Service without clients): it must be
// one the ask was shown to.
func (b *broker) reply(p protocol.ReplyParams, by *protocol.ClientRef) ([]string, error) {
	switch p.Reply {
	case protocol.ReplyOnce, protocol.ReplyReject:
	case protocol.ReplyAlways:
		if p.Scope == "" {
			p.Scope = protocol.ScopeSession
		}
		if p.Scope != protocol.ScopeSession && p.Scope != protocol.ScopeWorkspace {
			return nil, fmt.Errorf("%w: scope must be %q or %q, not %q", ErrBadReply, protocol.ScopeSession, protocol.ScopeWorkspace, p.Scope)
		}
	default:
		return nil, fmt.Errorf("%w: reply must be %q, %q or %q, not %q", ErrBadReply, protocol.ReplyOnce, protocol.ReplyAlways, protocol.ReplyReject, p.Reply)
	}

	b.mu.Lock()
	a, ok := b.pending[p.ID]
	if !ok {
		b.mu.Unlock()
		return nil, fmt.Errorf("%w: %q", ErrUnknownAsk, p.ID)
	}
	if by != nil && !slices.Contains(a.targets, by.ID) {
		// An ask is answered where it was shown: the person at another editor does not
		// know what it is about (docs/security.md).
		b.mu.Unlock()
		return nil, fmt.Errorf("%w: %q was not shown to this client", ErrUnknownAsk, p.ID)
	}
	if p.Reply == protocol.ReplyAlways {
		chosen := p.Always
		if len(chosen) == 0 {
			chosen = a.params.Always
		}
		for _, c := range chosen {
			if !contains(a.params.Always, c) && !contains(a.params.Patterns, c) {
				b.mu.Unlock()
				return nil, fmt.Errorf("%w: %q is not among the patterns this ask offered (%s)", ErrBadReply, c, strings.Join(a.params.Always, ", "))
			}
		}
		p.Always = rememberable(a.query.Permission, chosen)
	}
	delete(b.pending, p.ID)
	a.reply <- askAnswer{reply: p.Reply, scope: p.Scope, message: p.Message, by: "person", client: by}
	targets := a.targets
	b.mu.Unlock()
	b.router.Answered(targets, protocol.AnsweredParams{ID: p.ID, Reply: p.Reply, By: "person", Client: by})

	released := []string{}
	switch p.Reply {
	case protocol.ReplyAlways:
		sid := a.query.SessionID
		if p.Scope == protocol.ScopeWorkspace {
			sid = ""
		}
		byName := ""
		if by != nil {
			byName = by.Name
		}
		if err := b.policy.Remember(sid, a.query.Permission, p.Always, byName); err != nil {
			return released, fmt.Errorf("the answer was applied to this call, but could not be remembered: %w", err)
		}
		released = b.settle(func(o *pendingAsk) (askAnswer, bool) {
			if b.policy.Decide(o.query).Action == permission.Allow {
				return askAnswer{reply: protocol.ReplyAlways, scope: p.Scope, by: "rule", client: by}, true
			}
			return askAnswer{}, false
		})
	case protocol.ReplyReject:
		released = b.settle(func(o *pendingAsk) (askAnswer, bool) {
			if o.query.SessionID == a.query.SessionID {
				return askAnswer{reply: protocol.ReplyReject, message: "another request of this session was rejected: " + p.Message, by: "person", client: by}, true
			}
			return askAnswer{}, false
		})
	}
	return released, nil
}

// settle answers every pending ask for which f returns an answer, and tells the clients that
// showed them.
func (b *broker) settle(f func(*pendingAsk) (askAnswer, bool)) []string {
	type settled struct {
		targets []string
		p       protocol.AnsweredParams
	}
	var told []settled
	b.mu.Lock()
	out := []string{}
	for id, o := range b.pending {
		if ans, ok := f(o); ok {
			delete(b.pending, id)
			o.reply <- ans
			out = append(out, id)
			told = append(told, settled{o.targets, protocol.AnsweredParams{ID: id, Reply: ans.reply, By: ans.by, Client: ans.client}})
		}
	}
	b.mu.Unlock()
	for _, t := range told {
		b.router.Answered(t.targets, t.p)
	}
	sort.Strings(out)
	return out
}

// list returns the pending asks shown to the client (every one for ""), oldest first.
func (b *broker) list(clientID string) []protocol.AskedParams {
	b.mu.Lock()
	ps := make([]*pendingAsk, 0, len(b.pending))
	for _, p := range b.pending {
		if clientID == "" || slices.Contains(p.targets, clientID) {
			ps = append(ps, p)
		}
	}
	b.mu.Unlock()
	sort.Slice(ps, func(i, j int) bool {
		return ps[i].at.Before(ps[j].at) || (ps[i].at.Equal(ps[j].at) && ps[i].params.ID < ps[j].params.ID)
	})
	out := make([]protocol.AskedParams, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.params)
	}
	return out
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

func nonNil(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return xs
}

func nonNilMap(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

func ruleInfo(r *permission.Rule) *protocol.RuleInfo {
	if r == nil {
		return nil
	}
	return &protocol.RuleInfo{Permission: r.Permission, Pattern: r.Pattern, Action: string(r.Action), Source: r.Source}
}

func quoteAll(xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = strconv.Quote(x)
	}
	return out
}
