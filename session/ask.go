package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

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

// broker holds the asks waiting for a person. Safe for concurrent use.
type broker struct {
	policy Policy
	canAsk bool
	client string                     // who answers: the editor's name
	notify func(protocol.AskedParams) // sends permission/asked; must not block for long
	now    func() time.Time

	mu      sync.Mutex // guards pending and seq
	pending map[string]*pendingAsk
	seq     uint64
}

type pendingAsk struct {
	params protocol.AskedParams
	query  permission.Query
	reply  chan askAnswer // buffered 1; written once under broker.mu
	at     time.Time
}

type askAnswer struct {
	reply   string // once, always, reject
	scope   string
	message string
	by      string // "person", or "rule" when an always answer released it
	client  string // the client the answer came through
}

// ask decides req for the call, asking the person when the rules say ask. It returns the
// decision to record and nil when the call may proceed, or a *registry.PermissionError.
func (b *broker) ask(ctx context.Context, c *callState, req registry.AskRequest) (protocol.Decision, error) {
	q := permission.Query{SessionID: c.sessionID, Agent: c.agent, Tool: c.tool, Permission: req.Permission, Patterns: req.Patterns, ReadOnly: c.readOnly && req.Permission == c.permKey, Opaque: req.Opaque, ExactOnly: req.ExactOnly, Reasons: req.Reasons}
	d := b.policy.Decide(q)
	prov := permission.ProvenanceOf(d)
	dec := protocol.Decision{Permission: req.Permission, Patterns: nonNil(req.Patterns), Action: string(d.Action), By: "rule", Rule: ruleInfo(d.Rule), At: b.now(), Provenance: &prov}
	switch d.Action {
	case permission.Allow:
		return dec, nil
	case permission.Deny:
		return dec, &registry.PermissionError{Kind: "deny", Message: permission.DeniedText(d.Rule, q)}
	}
	if req.Sandboxed && !req.Opaque && (d.Rule == nil || d.Rule.Source == permission.SourceDefault) {
		// The OS sandbox confines what runs, and only the defaults asked: no one wrote a
		// rule that wants this asked. The decision names the sandbox as what allowed it.
		dec.Action, dec.By = string(permission.Allow), BySandbox
		return dec, nil
	}
	if !b.canAsk {
		dec.By, dec.Action = "no-ui", string(permission.Deny)
		return dec, &registry.PermissionError{Kind: "no-ui", Message: permission.NoUIText(q)}
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
	meta, err := json.Marshal(nonNilMap(req.Metadata))
	if err != nil {
		meta = []byte("{}")
	}
	p := &pendingAsk{query: q, reply: make(chan askAnswer, 1), at: b.now()}
	askedAt := p.at.UTC()
	dec.AskedAt = &askedAt
	b.mu.Lock()
	b.seq++
	id := "ask_" + strconv.FormatUint(b.seq, 10) + "_" + c.callID
	p.params = protocol.AskedParams{
		ID: id, SessionID: c.sessionID, MessageID: c.messageID, CallID: c.callID, Tool: c.tool,
		Permission: req.Permission, Patterns: nonNil(req.Patterns), Always: nonNil(always),
		Metadata: meta, Rule: ruleInfo(d.Rule), Destructive: req.Destructive, Provenance: &prov,
	}
	b.pending[id] = p
	b.mu.Unlock()
	b.notify(p.params)

	select {
	case a := <-p.reply:
		dec.By, dec.Reply, dec.Scope, dec.Message, dec.At, dec.AnsweredBy = a.by, a.reply, a.scope, a.message, b.now(), a.client
		dec.WaitedMs = dec.At.Sub(p.at).Milliseconds()
		if a.reply == protocol.ReplyReject {
			dec.Action = string(permission.Deny)
			return dec, &registry.PermissionError{Kind: "reject", Message: permission.RejectedText(a.message, q)}
		}
		dec.Action = string(permission.Allow)
		return dec, nil
	case <-ctx.Done():
		b.withdraw(id)
		dec.By, dec.Action, dec.At = "cancel", string(permission.Deny), b.now()
		dec.WaitedMs = dec.At.Sub(p.at).Milliseconds()
		return dec, ctx.Err()
	}
}

// withdraw removes a pending ask whose call went away.
func (b *broker) withdraw(id string) {
	b.mu.Lock()
	delete(b.pending, id)
	b.mu.Unlock()
}

// reply answers a pending ask. It returns the ids of other pending asks it settled too: those
// an "always" answer now allows, or the session's other asks after a rejection.
func (b *broker) reply(p protocol.ReplyParams) ([]string, error) {
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
		p.Always = chosen
	}
	delete(b.pending, p.ID)
	a.reply <- askAnswer{reply: p.Reply, scope: p.Scope, message: p.Message, by: "person", client: b.client}
	b.mu.Unlock()

	released := []string{}
	switch p.Reply {
	case protocol.ReplyAlways:
		sid := a.query.SessionID
		if p.Scope == protocol.ScopeWorkspace {
			sid = ""
		}
		if err := b.policy.Remember(sid, a.query.Permission, p.Always, b.client); err != nil {
			return released, fmt.Errorf("the answer was applied to this call, but could not be remembered: %w", err)
		}
		released = b.settle(func(o *pendingAsk) (askAnswer, bool) {
			if b.policy.Decide(o.query).Action == permission.Allow {
				return askAnswer{reply: protocol.ReplyAlways, scope: p.Scope, by: "rule", client: b.client}, true
			}
			return askAnswer{}, false
		})
	case protocol.ReplyReject:
		released = b.settle(func(o *pendingAsk) (askAnswer, bool) {
			if o.query.SessionID == a.query.SessionID {
				return askAnswer{reply: protocol.ReplyReject, message: "another request of this session was rejected: " + p.Message, by: "person", client: b.client}, true
			}
			return askAnswer{}, false
		})
	}
	return released, nil
}

// settle answers every pending ask for which f returns an answer.
func (b *broker) settle(f func(*pendingAsk) (askAnswer, bool)) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := []string{}
	for id, o := range b.pending {
		if ans, ok := f(o); ok {
			delete(b.pending, id)
			o.reply <- ans
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// list returns the pending asks, oldest first.
func (b *broker) list() []protocol.AskedParams {
	b.mu.Lock()
	ps := make([]*pendingAsk, 0, len(b.pending))
	for _, p := range b.pending {
		ps = append(ps, p)
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
