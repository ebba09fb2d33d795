// Package permission decides whether a tool call may run: allow, ask or deny.
package permission

import (
	"strings"
	"sync"
)

// Action is what a rule says about a call.
type Action string

// Actions.
const (
	Allow Action = "allow"
	Ask   Action = "ask"
	Deny  Action = "deny"
)

// Rule says what to do with calls under a permission key whose pattern matches.
type Rule struct {
	Permission string `json:"permission"`
	Pattern    string `json:"pattern"`
	Action     Action `json:"action"`
	// Source names the layer the rule came from: "default", "user", "editor", "project",
	// "agent:<name>", "session", "workspace".
	Source string `json:"source,omitempty"`
}

// Ruleset is an ordered list of rules; the last matching rule wins.
type Ruleset []Rule

// Query is one permission request of one call.
type Query struct {
	SessionID  string
	Agent      string
	Tool       string
	Permission string
	Patterns   []string
	// ReadOnly marks a request of a tool that changes nothing.
	ReadOnly bool
}

// Decision is the outcome for a Query.
type Decision struct {
	Action Action
	// Rule is the rule that decided; nil when no rule matched (which means ask).
	Rule *Rule
}

// ApprovalStore persists workspace-scoped "always" answers and the workspace's trust.
// The store package implements it.
type ApprovalStore interface {
	Approvals() ([]Rule, error)
	AddApprovals(rules []Rule) error
}

// Engine evaluates queries against its layers of rules and the answers people gave.
// Safe for concurrent use.
type Engine struct {
	store ApprovalStore

	mu        sync.Mutex         // guards the fields below
	layers    []Ruleset          // in increasing precedence, without remembered answers
	session   map[string]Ruleset // remembered for a session, by session id
	workspace Ruleset            // remembered for the workspace (mirrors the store)
}

// NewEngine returns an engine with the built-in defaults. store may be nil.
func NewEngine(store ApprovalStore) (*Engine, error) {
	e := &Engine{store: store, session: map[string]Ruleset{}, layers: []Ruleset{Defaults()}}
	if store != nil {
		rs, err := store.Approvals()
		if err != nil {
			return nil, err
		}
		e.workspace = rs
	}
	return e, nil
}

// Defaults are the built-in rules: read-only tools run, everything else asks.
func Defaults() Ruleset {
	rs := Ruleset{{Permission: "*", Pattern: "*", Action: Ask, Source: "default"}}
	for _, p := range []string{"read", "glob", "grep", "list", "todoread", "todowrite"} {
		rs = append(rs, Rule{Permission: p, Pattern: "*", Action: Allow, Source: "default"})
	}
	return rs
}

// Decide evaluates q. With several patterns, any deny denies, else any ask asks, else allow.
func (e *Engine) Decide(q Query) Decision {
	e.mu.Lock()
	sets := append(append([]Ruleset{}, e.layers...), e.workspace, e.session[q.SessionID])
	e.mu.Unlock()
	return Evaluate(q.Permission, q.Patterns, sets...)
}

// Remember records an "always" answer for a session, or for the workspace when sessionID
// is empty (persisted through the store).
func (e *Engine) Remember(sessionID, permission string, patterns []string) error {
	var rules Ruleset
	for _, p := range patterns {
		src := "session"
		if sessionID == "" {
			src = "workspace"
		}
		rules = append(rules, Rule{Permission: permission, Pattern: p, Action: Allow, Source: src})
	}
	if sessionID == "" && e.store != nil {
		if err := e.store.AddApprovals(rules); err != nil {
			return err
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

// Evaluate returns the decision of the rulesets (later wins) for the patterns.
func Evaluate(permission string, patterns []string, sets ...Ruleset) Decision {
	if len(patterns) == 0 {
		patterns = []string{"*"}
	}
	var worst Decision
	for i, p := range patterns {
		d := evaluateOne(permission, p, sets)
		if i == 0 || rank(d.Action) > rank(worst.Action) {
			worst = d
		}
	}
	return worst
}

func rank(a Action) int {
	switch a {
	case Deny:
		return 2
	case Ask:
		return 1
	}
	return 0
}

func evaluateOne(permission, pattern string, sets []Ruleset) Decision {
	var found *Rule
	for _, rs := range sets {
		for i := range rs {
			r := &rs[i]
			if Match(r.Permission, permission) && Match(r.Pattern, pattern) {
				found = r
			}
		}
	}
	if found == nil {
		return Decision{Action: Ask}
	}
	r := *found
	return Decision{Action: r.Action, Rule: &r}
}

// Match reports whether s matches the wildcard pattern: '*' matches any run of characters,
// '?' one character. A pattern ending in " *" also matches the text before it alone ("git
// status *" matches "git status").
func Match(pattern, s string) bool {
	if strings.HasSuffix(pattern, " *") && s == strings.TrimSuffix(pattern, " *") {
		return true
	}
	return wildcard(pattern, s)
}

func wildcard(p, s string) bool {
	// Iterative matcher with backtracking on the last star: linear in practice.
	pi, si, star, mark := 0, 0, -1, 0
	for si < len(s) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == s[si]):
			pi++
			si++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, si
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}
