package policy

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/toolsd/toolsd/builtin"
	"github.com/toolsd/toolsd/permission"
	"github.com/toolsd/toolsd/protocol"
	"github.com/toolsd/toolsd/registry"
)

// Call is a tool call to decide.
type Call struct {
	Tool  string          `json:"tool"`
	Args  json.RawMessage `json:"args,omitempty"`
	Agent string          `json:"agent,omitempty"`
}

// ParseCall reads a call as a person writes it: a tool and its main argument (`bash git
// push -f`, `edit src/a.go`: see the package doc), or a JSON object {"tool", "args",
// "agent"}.
func ParseCall(text string) (Call, error) {
	text = strings.TrimSpace(text)
	if strings.HasPrefix(text, "{") {
		var c Call
		dec := json.NewDecoder(strings.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			return Call{}, fmt.Errorf("a call written as JSON is {\"tool\": ..., \"args\": {...}, \"agent\": ...}: %v", err)
		}
		if c.Tool == "" {
			return Call{}, fmt.Errorf(`a call written as JSON needs a "tool"`)
		}
		return c, nil
	}
	tool, arg, _ := strings.Cut(text, " ")
	arg = strings.TrimSpace(arg)
	if tool == "" {
		return Call{}, fmt.Errorf("a call is a tool and its argument, like `bash git status` or `edit src/a.go`")
	}
	field := map[string]string{
		"bash": "command", "read": "filePath", "edit": "filePath", "write": "filePath", "list": "path",
		"glob": "pattern", "grep": "pattern", "webfetch": "url", "apply_patch": "patchText",
	}[tool]
	c := Call{Tool: tool}
	if field != "" {
		if arg == "" {
			return Call{}, fmt.Errorf("%s needs its %s: `%s <%s>`", tool, field, tool, field)
		}
		c.Args, _ = json.Marshal(map[string]string{field: arg})
	}
	return c, nil
}

// String writes the call back as ParseCall reads it (JSON when the arguments say more).
func (c Call) String() string {
	var m map[string]any
	if len(c.Args) == 0 || json.Unmarshal(c.Args, &m) == nil && len(m) == 0 {
		return c.Tool
	}
	if len(m) == 1 {
		for _, v := range m {
			if s, ok := v.(string); ok && !strings.Contains(s, "\n") {
				return c.Tool + " " + s
			}
		}
	}
	b, _ := json.Marshal(c)
	return string(b)
}

// Result is the decision of a call: the strictest of its requests'.
type Result struct {
	Call     string            `json:"call"`
	Agent    string            `json:"agent,omitempty"`
	Action   permission.Action `json:"action"`
	Requests []RequestDecision `json:"requests"`
	Error    string            `json:"error,omitempty"`
	Notes    []string          `json:"notes,omitempty"`
}

// RequestDecision is one permission request of the call and what decided it.
type RequestDecision struct {
	Permission string              `json:"permission"`
	Patterns   []string            `json:"patterns"`
	Action     permission.Action   `json:"action"`
	Provenance protocol.Provenance `json:"provenance"`
}

// Decide decides c in workspace (a real absolute path) with e, as the call's tool would ask
// in the session sessionID, without running anything. A call whose arguments the tool would
// refuse gives Error and the action deny.
func Decide(e *permission.Engine, workspace, sessionID string, c Call) Result {
	res := Result{Call: c.String(), Agent: c.Agent, Action: permission.Allow, Requests: []RequestDecision{}}
	reqs, builtinTool, err := builtin.Requests(workspace, c.Tool, c.Args)
	if err != nil {
		res.Action, res.Error = permission.Deny, err.Error()
		return res
	}
	readOnly := builtinTool && readOnlyTools()[c.Tool]
	if !builtinTool {
		// A project or MCP tool asks under its own id, for everything.
		reqs = append(reqs, registryRequest(c.Tool))
	}
	for _, r := range reqs {
		q := permission.Query{SessionID: sessionID, Agent: c.Agent, Tool: c.Tool, Permission: r.Permission, Patterns: r.Patterns,
			ReadOnly: readOnly && r.Permission == c.Tool, Opaque: r.Opaque, ExactOnly: r.ExactOnly, Reasons: r.Reasons}
		d := e.Decide(q)
		res.Requests = append(res.Requests, RequestDecision{Permission: r.Permission, Patterns: r.Patterns, Action: d.Action, Provenance: permission.ProvenanceOf(d)})
		if rank(d.Action) > rank(res.Action) {
			res.Action = d.Action
		}
	}
	return res
}

func rank(a permission.Action) int {
	return map[permission.Action]int{permission.Allow: 0, permission.Ask: 1, permission.Deny: 2}[a]
}

// readOnlyTools are the built-ins that change nothing, whose own permission the built-in
// defaults allow (session.Query.ReadOnly). Built on first use, not at init: a toolsd
// process that checks no call (a forwarder, a hook) would pay for building every built-in.
var readOnlyTools = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for _, t := range builtin.Tools(nil) {
		if t.ReadOnly && t.PermissionKey() == t.ID {
			m[t.ID] = true
		}
	}
	return m
})

// Text writes the result for a person: the call and its action, then each request, its
// action and what decided it.
func (r Result) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", r.Call, r.Action)
	if r.Agent != "" {
		fmt.Fprintf(&b, " (agent %s)", r.Agent)
	}
	b.WriteByte('\n')
	if r.Error != "" {
		fmt.Fprintf(&b, "  the tool would refuse it: %s\n", r.Error)
	}
	for _, q := range r.Requests {
		ps := make([]string, len(q.Patterns))
		for i, p := range q.Patterns {
			ps[i] = strconv.Quote(p)
		}
		fmt.Fprintf(&b, "  %s %s: %s\n    %s\n", q.Permission, strings.Join(ps, ", "), q.Action, q.Provenance.Text)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "  note: %s\n", n)
	}
	return b.String()
}

func registryRequest(tool string) registry.AskRequest {
	return registry.AskRequest{Permission: tool, Patterns: []string{"*"}}
}
