package hook

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/toolsd/toolsd/protocol"
)

// health is how a hook fared lately.
type health struct {
	ref     Ref
	point   string
	policy  string
	err     string    // the last failure
	at      time.Time // when
	count   int       // failures since it last ran well
	failing bool
}

// failed notes a failure of e, and tells the workspace when it is a new one (the hook was
// running well, or failed otherwise).
func (r *Runner) failed(e *entry, err error) {
	policy := protocol.HookFailOpen
	if e.spec.FailClosed {
		policy = protocol.HookFailClosed
	}
	r.log.Warn("a hook failed", "hook", e.spec.Name, "point", e.spec.Point, "layer", e.spec.Layer, "onFailure", policy, "err", err)
	r.mu.Lock()
	h, ok := r.health[e.key]
	if !ok {
		h = &health{ref: e.ref(), point: e.spec.Point, policy: policy}
		r.health[e.key] = h
	}
	changed := !h.failing || h.err != err.Error()
	h.failing, h.err, h.at = true, err.Error(), r.opts.Now()
	h.count++
	r.mu.Unlock()
	if changed {
		r.notify()
	}
}

// healthy notes that e ran well, and tells the workspace when it had been failing.
func (r *Runner) healthy(e *entry) {
	r.mu.Lock()
	h, ok := r.health[e.key]
	was := ok && h.failing
	if ok {
		delete(r.health, e.key)
	}
	r.mu.Unlock()
	if was {
		r.notify()
	}
}

// Diagnostics say which hooks are failing: a warning each, at the hook's place in its file.
func (r *Runner) Diagnostics() []protocol.Diagnostic {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := []protocol.Diagnostic{}
	for _, h := range r.health {
		if !h.failing {
			continue
		}
		then := "the calls went on without it (fail-open)"
		switch {
		case h.policy == protocol.HookFailClosed && h.point == protocol.HookPointDefinition:
			then = "the tools it guards are hidden (fail-closed)"
		case h.policy == protocol.HookFailClosed:
			then = "what it guards is refused (fail-closed)"
		case h.point == protocol.HookPointDefinition:
			then = "the tools are shown as they are (fail-open)"
		}
		path := h.ref.File
		if path == "" {
			path = "hooks"
		}
		out = append(out, protocol.Diagnostic{Path: path, Line: h.ref.Line, Column: h.ref.Column, Severity: "warning",
			Message: fmt.Sprintf("hook %q (%s, %s) failed at %s: %s; %s", h.ref.Name, h.point, h.ref.Where(), h.at.UTC().Format("15:04:05"), h.err, then)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Message < out[j].Message })
	return out
}

// notify hands the diagnostics to the workspace when they changed.
func (r *Runner) notify() {
	if r.opts.OnDiagnostics == nil {
		return
	}
	r.notifyMu.Lock()
	defer r.notifyMu.Unlock()
	d := r.Diagnostics()
	if r.told != nil && slices.Equal(d, r.told) {
		return
	}
	r.told = d
	r.opts.OnDiagnostics(d)
}
