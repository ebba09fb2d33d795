package permission

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/toolsd/toolsd/internal/jsondec"
)

// Layer names for SetLayer, in increasing precedence (but for LayerManaged). Agent layers
// are "agent:<name>".
const (
	// LayerManaged holds the rules of the system's administrator (a root-owned folder): they
	// sit above every other layer. Each is a floor no other layer nor remembered answer can
	// go below — a managed ask always asks, a managed deny always denies — and a managed
	// allow counts just above the built-in defaults, where any other layer may tighten it.
	LayerManaged     = "managed"
	LayerUser        = "user"
	LayerEditor      = "editor"
	LayerProject     = "project"
	LayerAgentPrefix = "agent:"
	// LayerProjectAgentPrefix is for an agent's rules that come from the project config
	// ("project-agent:<name>"): they follow the agent's other rules and, like the project
	// layer, only tighten while the workspace is untrusted.
	LayerProjectAgentPrefix = "project-agent:"
)

// Sources of rules that are not config layers.
const (
	SourceDefault   = "default"
	SourceSession   = "session"
	SourceWorkspace = "workspace"
)

// Query is one permission request of one call.
type Query struct {
	SessionID  string
	Agent      string
	Tool       string
	Permission string
	Patterns   []string
	// ReadOnly marks a request of a tool that changes nothing: the built-in defaults allow
	// it (config rules still apply). Set it only for tools whose claim is trusted (the
	// built-ins), never on the word of a project or MCP tool.
	ReadOnly bool
	// Opaque marks patterns no analysis could see through (shell text under eval, an
	// unparseable line): no rule or remembered answer allows them; a deny still denies.
	Opaque bool
	// ExactOnly are patterns (shell commands whose arguments do not fit the grammar toolsd
	// knows to be safe for them) that an allow rule or remembered answer with a wildcard
	// does not allow — only one that names the pattern exactly, or the rule "*" — with why.
	ExactOnly map[string]string
	// Reasons say why an Opaque query is opaque (the shell analysis's words); the decision
	// carries them.
	Reasons []string
}

// Decision is the outcome for a Query.
type Decision struct {
	Action Action
	// Rule is the rule that decided; nil when no rule matched (which means ask) or when
	// Opaque forced the ask.
	Rule *Rule
	// Pattern is the pattern the decision is about (the worst of the query's patterns).
	Pattern string
	// Untrusted is the project config rule that would have allowed the call had the person
	// trusted the workspace; nil otherwise. The UI can say so.
	Untrusted *Rule
	// Asks are the query's patterns that ask (when Action is Ask): what the person is asked
	// about, the others being allowed already.
	Asks []string
	// Reason says why a rule that matched could not allow the pattern (it is ExactOnly):
	// the person and the model read it.
	Reason string
	// Opaque is set when the query was Opaque and that made it ask (no rule could allow
	// it); Reasons are the query's, saying why.
	Opaque  bool
	Reasons []string
	// Protected says why a path the query writes is protected (Protected): it asks whatever
	// an allow rule or a remembered answer says; a deny still denies. "" when none is.
	Protected string
	// Tightening marks a Rule of the workspace's own config counted while the workspace is
	// untrusted: it decides only because it tightens (an ask or a deny).
	Tightening bool
}

// ApprovalStore persists workspace-scoped "always" answers and the workspace's trust.
// The store package implements it (through an adapter in session).
type ApprovalStore interface {
	Approvals() ([]Rule, error)
	AddApprovals(rules []Rule) error
	Trusted() (bool, error)
	SetTrusted(trusted bool) error
}

// ErrLayer is returned by SetLayer for a name that is not a layer.
var ErrLayer = errors.New("permission: unknown layer")

// Engine evaluates queries against its layers of rules and the answers people gave.
// It is owned by the workspace and safe for concurrent use.
type Engine struct {
	store ApprovalStore

	rememberMu sync.Mutex // serializes Remember: check for duplicates, persist, add

	now func() time.Time

	mu        sync.Mutex         // guards the fields below
	layers    map[string]Ruleset // managed, user, editor, project, agent:<name>
	trusted   bool
	session   map[string]Ruleset // remembered for a session, by session id
	workspace Ruleset            // remembered for the workspace (mirrors the store)
	loops     map[string]*loop   // doom-loop state by session id
	// hidden caches Hidden's answers, by permission and agent; emptied when the layers or
	// the trust change (which also counts layersGen up), and when it holds maxHidden answers.
	hidden    map[hiddenKey]bool
	layersGen uint64
}

type hiddenKey struct{ permission, agent string }

// maxHidden bounds the cache of Hidden's answers (agent names come from clients).
const maxHidden = 1024

type loop struct {
	key   [32]byte
	count int
}

// DoomLoopThreshold is how many identical calls in a row make Observe report a loop.
const DoomLoopThreshold = 3

// NewEngine returns an engine with the built-in defaults and the remembered answers and
// trust of store. store may be nil (nothing persists; the workspace is untrusted).
func NewEngine(store ApprovalStore) (*Engine, error) {
	e := &Engine{store: store, now: time.Now, layers: map[string]Ruleset{}, session: map[string]Ruleset{}, loops: map[string]*loop{}}
	if store != nil {
		rs, err := store.Approvals()
		if err != nil {
			return nil, fmt.Errorf("permission: loading approvals: %w", err)
		}
		for _, r := range rs {
			r.Source, r.Action, r.File, r.Line, r.Column = SourceWorkspace, Allow, "", 0, 0
			e.workspace = append(e.workspace, r)
		}
		t, err := store.Trusted()
		if err != nil {
			return nil, fmt.Errorf("permission: loading trust: %w", err)
		}
		e.trusted = t
	}
	return e, nil
}

// Defaults are the built-in rules: everything asks, except the read-only tools; .env files
// ask to be read (.env.example does not).
func Defaults() Ruleset {
	d := func(perm, pattern string, a Action) Rule {
		return Rule{Permission: perm, Pattern: pattern, Action: a, Source: SourceDefault}
	}
	rs := Ruleset{d("*", "*", Ask)}
	for _, p := range []string{KeyRead, KeyGlob, KeyGrep, KeyList, KeyTodoRead, KeyTodoWrite} {
		rs = append(rs, d(p, "*", Allow))
	}
	return append(rs,
		d(KeyRead, "*.env", Ask),
		d(KeyRead, "*.env.*", Ask),
		d(KeyRead, "*.env.example", Allow),
		d(KeyEdit, "*", Ask),
		d(KeyBash, "*", Ask),
		d(KeyExternalDirectory, "*", Ask),
		d(KeyDoomLoop, "*", Ask),
	)
}

var defaults = Defaults()

// SetLayer replaces the rules of a config layer: "managed" (the administrator's), "user"
// (the user's config file), "editor"
// (initializationOptions), "project" (.toolsd/config.json), "agent:<name>" (an agent's
// rules from the user or editor config) or "project-agent:<name>" (an agent's rules from the
// project config). Rules without a Source get the layer's name. An empty rs clears the
// layer.
func (e *Engine) SetLayer(name string, rs Ruleset) error {
	switch {
	case name == LayerManaged || name == LayerUser || name == LayerEditor || name == LayerProject:
	case strings.HasPrefix(name, LayerAgentPrefix) && len(name) > len(LayerAgentPrefix):
	case strings.HasPrefix(name, LayerProjectAgentPrefix) && len(name) > len(LayerProjectAgentPrefix):
	default:
		return fmt.Errorf("%w %q: use %q, %q, %q, %q, %q or %q", ErrLayer, name, LayerManaged, LayerUser, LayerEditor, LayerProject,
			LayerAgentPrefix+"<name>", LayerProjectAgentPrefix+"<name>")
	}
	cp := make(Ruleset, len(rs))
	for i, r := range rs {
		if r.Source == "" {
			r.Source = name
		}
		cp[i] = r
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(cp) == 0 {
		delete(e.layers, name)
	} else {
		e.layers[name] = cp
	}
	clear(e.hidden)
	e.layersGen++
	return nil
}

// Layer returns a copy of a layer's rules.
func (e *Engine) Layer(name string) Ruleset {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append(Ruleset(nil), e.layers[name]...)
}

// Trusted reports whether the person trusts the workspace's own config.
func (e *Engine) Trusted() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.trusted
}

// SetTrusted records the person's trust in the workspace's own config, in the store first.
func (e *Engine) SetTrusted(trusted bool) error {
	if e.store != nil {
		if err := e.store.SetTrusted(trusted); err != nil {
			return fmt.Errorf("permission: saving trust: %w", err)
		}
	}
	e.mu.Lock()
	e.trusted = trusted
	clear(e.hidden)
	e.layersGen++
	e.mu.Unlock()
	return nil
}

// UntrustedAllows returns the project config's allow rules that are ignored while the
// workspace is untrusted (nil when it is trusted).
func (e *Engine) UntrustedAllows() Ruleset {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.trusted {
		return nil
	}
	var out Ruleset
	names := []string{LayerProject}
	for name := range e.layers {
		if strings.HasPrefix(name, LayerProjectAgentPrefix) {
			names = append(names, name)
		}
	}
	sort.Strings(names[1:])
	for _, name := range names {
		for _, r := range e.layers[name] {
			if r.Action == Allow {
				out = append(out, r)
			}
		}
	}
	return out
}

// view is a consistent snapshot of what a query is evaluated against.
type view struct {
	config  []Ruleset // defaults, managed, user, editor, project, agent:<name>, project-agent:<name>
	project []bool    // config[i] came from the workspace's own config
	trusted bool
	remem   []Ruleset // workspace, session
	managed Ruleset   // the floor
}

func (e *Engine) view(sessionID, agent string) view {
	e.mu.Lock()
	defer e.mu.Unlock()
	v := view{
		config:  []Ruleset{defaults, e.layers[LayerManaged], e.layers[LayerUser], e.layers[LayerEditor], e.layers[LayerProject]},
		project: []bool{false, false, false, false, true},
		trusted: e.trusted,
		remem:   []Ruleset{e.workspace, e.session[sessionID]},
		managed: e.layers[LayerManaged],
	}
	if agent != "" {
		v.config = append(v.config, e.layers[LayerAgentPrefix+agent], e.layers[LayerProjectAgentPrefix+agent])
		v.project = append(v.project, false, true)
	}
	return v
}

// split returns the config sets that count as they are and those that only tighten.
func (v view) split(readOnly Rule, haveReadOnly bool) (plain, project, all []Ruleset) {
	plain, all = make([]Ruleset, 0, len(v.config)+2), make([]Ruleset, 0, len(v.config)+2)
	for i, rs := range v.config {
		if i == 0 && haveReadOnly {
			// Right after the catch-all ask of the defaults, before their specific rules.
			parts := []Ruleset{rs[:1], {readOnly}, rs[1:]}
			plain = append(plain, parts...)
			all = append(all, parts...)
			continue
		}
		all = append(all, rs)
		if v.project[i] && !v.trusted {
			project = append(project, rs)
		} else {
			plain = append(plain, rs)
		}
	}
	return plain, project, all
}

// Decide evaluates q. The layers, lowest first (later wins, the last matching rule wins, no
// match means ask):
//
//	defaults < managed < user < editor < project < agent:<q.Agent> < project-agent:<q.Agent> < remembered answers
//
// and then the managed rules again, as a floor: the decision is at least as strict as the
// last managed rule that matches says, whatever the layers and remembered answers say.
//
// The project layers (the project's own rules and its rules for agents) only tighten while
// the workspace is untrusted: they take effect only where they are stricter than the rest
// (an allow never does; the decision reports it as Untrusted). Remembered answers
// (workspace, then session) turn an ask into an allow; they never undo a deny. With several
// patterns, any deny denies, else any ask asks, else allow.
func (e *Engine) Decide(q Query) Decision {
	v := e.view(q.SessionID, q.Agent)
	patterns := q.Patterns
	if len(patterns) == 0 {
		patterns = []string{"*"}
	}
	plain, project, all := v.split(Rule{Permission: q.Permission, Pattern: "*", Action: Allow, Source: SourceDefault}, q.ReadOnly)
	var worst Decision
	var asks []string
	protected := ""
	for i, p := range patterns {
		d := v.decide(q, p, plain, project, all)
		if d.Action == Ask {
			asks = append(asks, p)
		}
		if protected == "" && d.Protected != "" && d.Action != Deny {
			protected = d.Protected
		}
		if i == 0 || weight(d) > weight(worst) {
			worst = d
		}
	}
	if worst.Action == Ask {
		worst.Asks = asks
		if worst.Protected == "" {
			worst.Protected = protected
		}
	}
	return worst
}

// weight orders the decisions of a query's patterns: the strictest action first; among
// equal actions one a written rule (not a built-in default) decided, so that the decision
// names the rule someone wrote whenever one asks or denies any pattern of the query (what
// MayRelax looks at); then one about a protected path; then one an untrusted project rule
// would allow.
func weight(d Decision) int {
	w := rank(d.Action) * 8
	if d.Rule != nil && d.Rule.Source != SourceDefault {
		w += 4
	}
	if d.Protected != "" {
		w += 2
	}
	if d.Untrusted != nil {
		w++
	}
	return w
}

// lastMatch returns the last rule of sets that matches, scanning from the end.
func lastMatch(perm, pattern string, sets ...Ruleset) *Rule {
	for i := len(sets) - 1; i >= 0; i-- {
		rs := sets[i]
		for j := len(rs) - 1; j >= 0; j-- {
			if r := &rs[j]; Match(r.Permission, perm) && Match(r.Pattern, pattern) {
				return r
			}
		}
	}
	return nil
}

func (v view) decide(q Query, pattern string, plain, project, all []Ruleset) Decision {
	var untrusted *Rule
	tightening := false
	r := lastMatch(q.Permission, pattern, plain...)
	if len(project) > 0 {
		if pr := lastMatch(q.Permission, pattern, project...); pr != nil {
			// An untrusted ask or deny is kept wherever it is at least as strict as the rest
			// and only a built-in default (or nothing) says so too: the person reads that the
			// workspace asked for it, and nothing may relax it as if only the defaults asked.
			if pr.Action != Allow && (r == nil || rank(pr.Action) > rank(r.Action) || rank(pr.Action) == rank(r.Action) && r.Source == SourceDefault) {
				r, tightening = pr, true
			}
			if pr.Action == Allow && (r == nil || r.Action != Allow) {
				// Would it have allowed, trusted? Then the project rule decides there.
				if t := lastMatch(q.Permission, pattern, all...); t == pr {
					c := *pr
					untrusted = &c
				}
			}
		}
	}
	d := Decision{Action: Ask, Pattern: pattern, Untrusted: untrusted, Tightening: tightening}
	if r != nil {
		c := *r
		d.Action, d.Rule = c.Action, &c
	}
	if why, ok := Protected(q.Permission, pattern); ok {
		// A protected path asks whatever allows it; a remembered answer does not count.
		if d.Action == Allow {
			d.Action, d.Rule, d.Tightening = Ask, nil, false
		}
		if d.Action == Ask {
			d.Protected = why
		}
		return v.floor(q, pattern, d)
	}
	if q.Opaque {
		if d.Action != Deny {
			d.Action, d.Rule, d.Opaque, d.Reasons = Ask, nil, true, q.Reasons
		}
		return v.floor(q, pattern, d)
	}
	why, exactOnly := q.ExactOnly[pattern]
	if exactOnly && d.Action == Allow && coversByWildcard(d.Rule.Pattern) {
		d.Action, d.Rule, d.Reason = Ask, nil, why
	}
	if exactOnly && d.Action == Ask && (d.Rule == nil || d.Rule.Source == SourceDefault) {
		d.Reason = why // the person reads why nothing but they may allow it (MayRelax)
	}
	if d.Action == Ask {
		if m := lastMatch(q.Permission, pattern, v.remem...); m != nil && !(exactOnly && coversByWildcard(m.Pattern)) {
			c := *m
			d.Action, d.Rule, d.Untrusted, d.Reason = Allow, &c, nil, ""
		} else if m != nil && d.Reason == "" {
			d.Reason = why
		}
	}
	return v.floor(q, pattern, d)
}

// floor makes d at least as strict as the last managed rule matching pattern.
func (v view) floor(q Query, pattern string, d Decision) Decision {
	m := lastMatch(q.Permission, pattern, v.managed)
	if m == nil || rank(m.Action) <= rank(d.Action) {
		return d
	}
	c := *m
	return Decision{Action: c.Action, Rule: &c, Pattern: pattern, Untrusted: d.Untrusted, Protected: d.Protected}
}

// coversByWildcard reports a pattern that matches by a wildcard, other than "*" alone
// (which allows every command as it is: the person said so).
func coversByWildcard(pattern string) bool {
	if pattern == "*" {
		return false
	}
	for i := 0; i < len(pattern); i++ {
		if (pattern[i] == '*' || pattern[i] == '?') && !escapedAt(pattern, i) {
			return true
		}
	}
	return false
}

// Remember records an "always" answer for a session, or for the workspace when sessionID
// is empty (persisted through the store first), given by by (a client's name; may be
// empty). Patterns already remembered are skipped, and so are protected paths (Protected):
// an "always" for one counts as "once".
func (e *Engine) Remember(sessionID, permission string, patterns []string, by string) error {
	src := SourceSession
	if sessionID == "" {
		src = SourceWorkspace
	}
	e.rememberMu.Lock()
	defer e.rememberMu.Unlock()
	e.mu.Lock()
	have := e.workspace
	if sessionID != "" {
		have = e.session[sessionID]
	}
	var rules Ruleset
	for _, p := range patterns {
		if _, ok := Protected(permission, p); ok {
			continue
		}
		r := Rule{Permission: permission, Pattern: p, Action: Allow, Source: src, At: e.now().UTC(), By: by}
		dup := false
		for _, h := range append(have, rules...) {
			if h.Permission == r.Permission && h.Pattern == r.Pattern {
				dup = true
				break
			}
		}
		if !dup {
			rules = append(rules, r)
		}
	}
	e.mu.Unlock()
	if len(rules) == 0 {
		return nil
	}
	if sessionID == "" && e.store != nil {
		if err := e.store.AddApprovals(rules); err != nil {
			return fmt.Errorf("permission: saving approvals: %w", err)
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if sessionID == "" {
		e.workspace = append(e.workspace, rules...)
	} else {
		e.session[sessionID] = append(e.session[sessionID], rules...)
	}
	return nil
}

// Remembered returns the answers remembered for a session and for the workspace.
func (e *Engine) Remembered(sessionID string) (session, workspace Ruleset) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append(Ruleset(nil), e.session[sessionID]...), append(Ruleset(nil), e.workspace...)
}

// EndSession forgets a session's remembered answers and doom-loop state.
func (e *Engine) EndSession(sessionID string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.session, sessionID)
	delete(e.loops, sessionID)
}

// Hidden reports whether a tool checked under permission is left out of tools/resolve for
// agent: the last rule for the permission in the config layers (defaults, user, editor,
// project, the agent's) is a deny for pattern "*". An untrusted project's "*" deny hides the
// tool too (it tightens); its later allows do not bring it back.
//
// It is asked for every call (is the tool still there for the caller?), so its answers are
// kept until the config layers or the trust change.
func (e *Engine) Hidden(permission, agent string) bool {
	k := hiddenKey{permission, agent}
	e.mu.Lock()
	h, ok := e.hidden[k]
	gen := e.layersGen
	e.mu.Unlock()
	if ok {
		return h
	}
	h = e.hiddenNow(permission, agent)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.layersGen == gen { // no layer or trust changed meanwhile
		if e.hidden == nil || len(e.hidden) >= maxHidden {
			e.hidden = map[hiddenKey]bool{}
		}
		e.hidden[k] = h
	}
	return h
}

// hiddenNow is Hidden, computed.
func (e *Engine) hiddenNow(permission, agent string) bool {
	v := e.view("", agent)
	plain, project, _ := v.split(Rule{}, false)
	last := func(sets []Ruleset) *Rule {
		for i := len(sets) - 1; i >= 0; i-- {
			for j := len(sets[i]) - 1; j >= 0; j-- {
				if Match(sets[i][j].Permission, permission) {
					return &sets[i][j]
				}
			}
		}
		return nil
	}
	denies := func(r *Rule) bool { return r != nil && r.Pattern == "*" && r.Action == Deny }
	return denies(last(plain)) || denies(last(project)) || denies(last([]Ruleset{v.managed}))
}

// Observe records a call of tool with args in a session and reports whether it is the
// DoomLoopThreshold-th identical call in a row (or later): the pipeline then asks under
// "doom_loop" with the tool's name as the pattern. Args are compared as canonical JSON (key
// order and spacing do not matter); args that are not JSON are compared as bytes.
func (e *Engine) Observe(sessionID, tool string, args []byte) bool {
	h := sha256.New()
	h.Write([]byte(tool))
	h.Write([]byte{0})
	h.Write(jsondec.Canonical(args))
	var key [32]byte
	h.Sum(key[:0])
	e.mu.Lock()
	defer e.mu.Unlock()
	l := e.loops[sessionID]
	if l == nil {
		l = &loop{}
		e.loops[sessionID] = l
	}
	if l.count > 0 && l.key == key {
		l.count++
	} else {
		l.key, l.count = key, 1
	}
	return l.count >= DoomLoopThreshold
}
