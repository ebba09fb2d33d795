package config

import (
	"fmt"
	"strings"

	"github.com/toolsd/toolsd/internal/jsonpos"
	"github.com/toolsd/toolsd/internal/sandbox"
)

// maxHookTimeout is the longest a hook may take, in seconds.
const maxHookTimeout = 600

// checkHooks checks a layer's hooks, reporting through at, and returns where each hook that
// is kept is written. A hook without a command is dropped. A hook whose settings are wrong
// runs the stricter way: an unknown onFailure is fail-closed, an "if" that cannot be read is
// dropped (so the hook runs for every call of the tools it matches), sandbox settings that
// cannot be taken are replaced by the defaults (which confine).
func checkHooks(root *jsonpos.Node, data []byte, h *Hooks, at func(off int, severity, format string, args ...any)) map[string][]HookAt {
	hn := field(root, "hooks")
	out := map[string][]HookAt{}
	for _, point := range HookPoints {
		pn := field(hn, point)
		list := h.Of(point)
		var kept []Hook
		for i, hk := range list {
			var n *jsonpos.Node
			if pn != nil && i < len(pn.Elems) {
				n = pn.Elems[i]
			}
			where := fmt.Sprintf("hooks.%s[%d]", point, i)
			if len(hk.Command) == 0 || strings.TrimSpace(hk.Command[0]) == "" {
				at(offset(n), "error", "%s needs a \"command\": the program and its arguments, like [\"python3\", \"~/.config/toolsd/hooks/guard.py\"]; the hook is left out", where)
				continue
			}
			switch hk.OnFailure {
			case "", "fail-open", "fail-closed":
			default:
				at(offset(field(n, "onFailure")), "error", "%s.onFailure must be \"fail-open\" or \"fail-closed\", not %q; until it is fixed the hook runs fail-closed", where, hk.OnFailure)
				hk.OnFailure = "fail-closed"
			}
			switch {
			case hk.Timeout < 0:
				at(offset(field(n, "timeout")), "error", "%s.timeout must not be negative (seconds; leave it out for 60)", where)
				hk.Timeout = 0
			case hk.Timeout > maxHookTimeout:
				at(offset(field(n, "timeout")), "warning", "%s.timeout %d is above the greatest allowed, %d seconds, which is used instead", where, hk.Timeout, maxHookTimeout)
				hk.Timeout = maxHookTimeout
			}
			if hk.If != "" {
				switch {
				case point == "definition":
					at(offset(field(n, "if")), "warning", "%s.if is ignored: a definition hook runs for a tool, not for a call", where)
					hk.If = ""
				case !ruleLike(hk.If):
					at(offset(field(n, "if")), "error", "%s.if %q is not a rule pattern: write permission(pattern), like \"bash(git push *)\"; until it is fixed the hook runs for every call of the tools it matches", where, hk.If)
					hk.If = ""
				}
			}
			if hk.Sandbox != nil {
				sn := field(n, "sandbox")
				ok := true
				for j, p := range hk.Sandbox.Write {
					if !sandboxPath(p) {
						var e *jsonpos.Node
						if w := field(sn, "write"); w != nil && j < len(w.Elems) {
							e = w.Elems[j]
						}
						at(offset(e), "error", "%s.sandbox.write[%d] %q is not a path toolsd can confine: write an absolute path or one that starts with ~/; the hook runs with the sandbox's defaults until it is fixed", where, j, p)
						ok = false
					}
				}
				if hk.Sandbox.Network != nil {
					for j, a := range hk.Sandbox.Network.Allow {
						if err := sandbox.ParseAllow(a); err != nil {
							var e *jsonpos.Node
							if al := field(field(sn, "network"), "allow"); al != nil && j < len(al.Elems) {
								e = al.Elems[j]
							}
							at(offset(e), "error", "%s.sandbox.network.allow[%d]: %v; the hook runs with the sandbox's defaults until it is fixed", where, j, err)
							ok = false
						}
					}
				}
				if !ok {
					hk.Sandbox = nil
				} else if en := field(sn, "enabled"); en != nil && en.Kind == jsonpos.Bool && string(en.Raw) == "false" {
					at(en.Offset, "warning", "%s.sandbox.enabled is false: the hook runs outside the sandbox, with everything the daemon may do", where)
				}
			}
			kept = append(kept, hk)
			pos := HookAt{}
			if n != nil {
				pos.Line, pos.Column = jsonpos.Position(data, n.Offset)
			}
			out[point] = append(out[point], pos)
		}
		switch point {
		case "definition":
			h.Definition = kept
		case "before":
			h.Before = kept
		case "after":
			h.After = kept
		case "permission":
			h.Permission = kept
		}
	}
	return out
}

// ruleLike reports whether s reads as permission(pattern) or a permission key alone.
func ruleLike(s string) bool {
	s = strings.TrimSpace(s)
	open := strings.IndexByte(s, '(')
	if open < 0 {
		return s != "" && !strings.ContainsAny(s, ")")
	}
	return open > 0 && strings.HasSuffix(s, ")")
}
