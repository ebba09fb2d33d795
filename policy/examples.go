package policy

import (
	"fmt"

	"github.com/toolsd/toolsd/config"
	"github.com/toolsd/toolsd/internal/jsonpos"
	"github.com/toolsd/toolsd/permission"
	"github.com/toolsd/toolsd/protocol"
)

// Example is a call declared next to the rules with the decision it must get.
type Example struct {
	Want permission.Action
	Call Call
	// Text is the example as written; File, Line and Column where.
	Text         string
	File         string
	Line, Column int
}

// Failure is an example whose decision differs from the one declared.
type Failure struct {
	Example Example
	Got     Result
}

// Message says what failed, for a person: the example, what it should get, what it gets
// and what decided that.
func (f Failure) Message() string {
	why := ""
	for _, r := range f.Got.Requests {
		if r.Action == f.Got.Action {
			why = r.Provenance.Text
			break
		}
	}
	if f.Got.Error != "" {
		why = "the tool would refuse the call: " + f.Got.Error
	}
	return fmt.Sprintf("example %q should be %s but is %s: %s", f.Example.Text, f.Example.Want, f.Got.Action, why)
}

// Examples reads the examples of every config layer ("examples", globally and in each
// agent). A malformed example is a positioned diagnostic and is left out.
func Examples(l *config.Layers) ([]Example, []protocol.Diagnostic) {
	var out []Example
	var diags []protocol.Diagnostic
	for _, x := range append([]*config.Layer{l.Managed}, l.List()...) {
		if x == nil {
			continue
		}
		root, err := jsonpos.Parse(x.Raw)
		if err != nil || root.Kind != jsonpos.Object {
			continue
		}
		file := x.Path
		if x.Source == config.SourceEditor {
			file = "initializationOptions"
		}
		pos := func(off int) (int, int) { return jsonpos.Position(x.Raw, off) }
		read := func(n *jsonpos.Node, agent, where string) {
			if n == nil || n.Kind == jsonpos.Null {
				return
			}
			bad := func(off int, format string, args ...any) {
				d := protocol.Diagnostic{Path: file, Severity: "error", Message: where + fmt.Sprintf(format, args...)}
				d.Line, d.Column = pos(off)
				diags = append(diags, d)
			}
			if n.Kind != jsonpos.Object {
				bad(n.Offset, `examples must be an object {"allow": [...], "ask": [...], "deny": [...]}, not %v`, n.Kind)
				return
			}
			for _, f := range n.Fields {
				want := permission.Action(f.Name)
				if want != permission.Allow && want != permission.Ask && want != permission.Deny {
					bad(f.KeyOffset, `examples.%s: the keys of examples are "allow", "ask" and "deny"`, f.Name)
					continue
				}
				if f.Value.Kind != jsonpos.Array {
					bad(f.Value.Offset, "examples.%s must be an array of calls, not %v", f.Name, f.Value.Kind)
					continue
				}
				for i, e := range f.Value.Elems {
					var c Call
					var err error
					text := string(e.Raw)
					switch e.Kind {
					case jsonpos.String:
						text = e.Value.(string)
						c, err = ParseCall(text)
					case jsonpos.Object:
						c, err = ParseCall(string(e.Raw))
					default:
						err = fmt.Errorf("a call is a string (`bash git status`) or an object {\"tool\", \"args\"}, not %v", e.Kind)
					}
					if err != nil {
						bad(e.Offset, "examples.%s[%d]: %v", f.Name, i, err)
						continue
					}
					if c.Agent == "" {
						c.Agent = agent
					}
					ex := Example{Want: want, Call: c, Text: text, File: file}
					ex.Line, ex.Column = pos(e.Offset)
					out = append(out, ex)
				}
			}
		}
		ex, _ := root.Get("examples")
		read(ex, "", "")
		if agents, _ := root.Get("agents"); agents != nil && agents.Kind == jsonpos.Object {
			for _, f := range agents.Fields {
				if f.Value.Kind == jsonpos.Object {
					ex, _ := f.Value.Get("examples")
					read(ex, f.Name, "agents."+f.Name+".")
				}
			}
		}
	}
	return out, diags
}

// Test decides every example against the rules alone (no remembered answer; the
// workspace's own rules counted as trusted) and returns those whose decision differs.
func Test(r *Rules, workspace string, examples []Example) []Failure {
	if len(examples) == 0 {
		return nil
	}
	e, err := permission.NewEngine(nil)
	if err != nil {
		return nil // a nil store cannot fail
	}
	Apply(e, r, nil)
	_ = e.SetTrusted(true)
	var out []Failure
	for _, ex := range examples {
		got := Decide(e, workspace, "policy-test", ex.Call)
		if got.Action != ex.Want {
			out = append(out, Failure{Example: ex, Got: got})
		}
	}
	return out
}

// Diagnostics are the failures as positioned diagnostics (tools/changed and tools/resolve
// show them).
func Diagnostics(fs []Failure) []protocol.Diagnostic {
	var out []protocol.Diagnostic
	for _, f := range fs {
		out = append(out, protocol.Diagnostic{Path: f.Example.File, Line: f.Example.Line, Column: f.Example.Column, Severity: "error", Message: f.Message()})
	}
	return out
}

// CheckSettings is what the daemon runs when the settings load: the rules assembled (see
// Assemble), and the examples read and tested, with every diagnostic.
func CheckSettings(l *config.Layers, prev *Rules, workspace string) (*Rules, []protocol.Diagnostic) {
	r, diags := Assemble(l, prev)
	ex, ds := Examples(l)
	diags = append(diags, ds...)
	diags = append(diags, Diagnostics(Test(r, workspace, ex))...)
	return r, diags
}
