package permission

import (
	"fmt"
	"strings"

	"github.com/toolsd/toolsd/protocol"
)

// ProvenanceOf says what decided d, for the call record, the ask, `toolsd policy check`
// and the audit trail.
func ProvenanceOf(d Decision) protocol.Provenance {
	p := protocol.Provenance{Pattern: d.Pattern, Reason: d.Reason, Protected: d.Protected}
	if d.Untrusted != nil {
		p.Untrusted = d.Untrusted.String()
	}
	r := d.Rule
	switch {
	case d.Protected != "" && d.Action != Deny:
		p.Kind = protocol.ProvenanceProtected
		p.Text = "protected path, so it always asks (no allow rule, hook, sandbox or remembered answer covers it): " + d.Protected
		if r != nil {
			p.Rule, p.Layer, p.File, p.Line, p.Column = r.String(), r.Source, r.File, r.Line, r.Column
			p.Text += fmt.Sprintf("; rule %s (%s)", r.String(), r.Where())
		}
	case r != nil:
		p.Rule, p.Layer, p.File, p.Line, p.Column = r.String(), r.Source, r.File, r.Line, r.Column
		switch {
		case r.Remembered():
			p.Kind = protocol.ProvenanceRemembered
			if !r.At.IsZero() {
				at := r.At.UTC()
				p.RememberedAt = &at
			}
			p.RememberedBy = r.By
			p.Text = fmt.Sprintf("remembered answer %s (%s)", r.String(), r.Where())
		case r.Source == SourceDefault:
			p.Kind = protocol.ProvenanceDefault
			p.Text = fmt.Sprintf("built-in default %s", r.String())
			if d.Reason != "" {
				p.Text += "; the command is outside what toolsd knows to be safe for it (" + d.Reason + "), so neither the sandbox nor a hook may allow it"
			}
		case d.Tightening:
			p.Kind = protocol.ProvenanceRule
			p.Text = fmt.Sprintf("rule %s (%s; untrusted workspace: only tightens)", r.String(), r.Where())
		default:
			p.Kind = protocol.ProvenanceRule
			p.Text = fmt.Sprintf("rule %s (%s)", r.String(), r.Where())
		}
	case d.Opaque:
		p.Kind, p.Reasons = protocol.ProvenanceOpaque, append([]string(nil), d.Reasons...)
		p.Text = "the shell line is not fully understood, so it always asks"
		if len(d.Reasons) > 0 {
			p.Text += ": " + strings.Join(d.Reasons, "; ")
		}
	case d.Reason != "":
		p.Kind = protocol.ProvenanceExactOnly
		p.Text = "a rule with a wildcard matches, but cannot allow this command: " + d.Reason
	default:
		p.Kind = protocol.ProvenanceNoRule
		p.Text = fmt.Sprintf("no rule matches %q, so it asks", d.Pattern)
	}
	if p.Untrusted != "" {
		p.Text += fmt.Sprintf("; the project rule %s would allow it once the workspace is trusted", p.Untrusted)
	}
	return p
}
