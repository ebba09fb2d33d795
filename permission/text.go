package permission

import (
	"fmt"
	"strconv"
	"strings"
)

// describeSource names a rule's layer for a model or a person.
func describeSource(src string) string {
	switch {
	case src == SourceDefault:
		return "built-in defaults"
	case src == LayerUser:
		return "user config"
	case src == LayerEditor:
		return "editor settings"
	case src == LayerProject:
		return "project config .toolsd/config.json"
	case src == LayerManaged:
		return "managed policy"
	case strings.HasPrefix(src, LayerProjectAgentPrefix):
		return fmt.Sprintf("project rules of agent %q", strings.TrimPrefix(src, LayerProjectAgentPrefix))
	case strings.HasPrefix(src, LayerAgentPrefix):
		return fmt.Sprintf("rules of agent %q", strings.TrimPrefix(src, LayerAgentPrefix))
	case src == SourceSession:
		return "an answer given in this session"
	case src == SourceWorkspace:
		return "an answer remembered for this workspace"
	case src == "":
		return "config"
	}
	return src
}

// what names what a query asked for: `bash "rm -rf x"`, `edit "src/a.go", "b.go"`.
func what(q Query) string {
	key := q.Permission
	if key == "" {
		key = q.Tool
	}
	if len(q.Patterns) == 0 || len(q.Patterns) == 1 && q.Patterns[0] == "*" {
		return key
	}
	ps := make([]string, 0, len(q.Patterns))
	for i, p := range q.Patterns {
		if i == 5 {
			ps = append(ps, fmt.Sprintf("and %d more", len(q.Patterns)-5))
			break
		}
		ps = append(ps, strconv.Quote(p))
	}
	return key + " " + strings.Join(ps, ", ")
}

// DeniedText is what the model reads when a rule denied its call. It names the rule and the
// patterns it matched.
func DeniedText(rule *Rule, q Query) string {
	if rule != nil {
		var hit []string
		for _, p := range q.Patterns {
			if Match(rule.Pattern, p) {
				hit = append(hit, p)
			}
		}
		if len(hit) > 0 {
			q.Patterns = hit
		}
	}
	by := "a rule"
	if rule != nil {
		by = fmt.Sprintf("rule %q (%s)", rule.Pattern+": "+string(rule.Action), rule.Where())
		if rule.Permission != q.Permission && rule.Permission != "" {
			by = fmt.Sprintf("rule %q under %q (%s)", rule.Pattern+": "+string(rule.Action), rule.Permission, rule.Where())
		}
	}
	return fmt.Sprintf("permission denied by %s: %s is not allowed, so nothing ran. Do not retry this call or a variant of it "+
		"(another spelling, a wrapper, a script that does the same); do the task another way with allowed tools, or tell the user "+
		"what you needed and why, so they can change the rule.", by, what(q))
}

// RejectedText is what the model reads when the person rejected its call; message is theirs.
func RejectedText(message string, q Query) string {
	s := fmt.Sprintf("the user rejected %s, so nothing ran.", what(q))
	if m := strings.TrimSpace(message); m != "" {
		return s + " Their message: " + strconv.Quote(m) + ". Follow it; do not retry the same call unless it says to."
	}
	return s + " They gave no reason: do not retry it; stop and ask the user how they want to proceed."
}

// NoUIText is what the model reads when a call needed a person's approval and no editor
// could show the ask.
func NoUIText(q Query) string {
	if q.Opaque {
		return fmt.Sprintf("no one was there to approve %s (the editor cannot show permission asks), so nothing ran. "+
			"This command line uses shell features the permission check does not follow (control flow such as if/for/while, "+
			"functions, eval or source, [[ ]] or (( )), declare/read/export of variables that change what runs, "+
			"${...} with operators, or text the shell parser rejects), so it always needs a person. "+
			"Rewrite it as plain commands joined by &&, ||, ; or |, with literal names and arguments, "+
			"or do the task with tools that are already allowed.", what(q))
	}
	for _, p := range q.Patterns {
		if why, ok := Protected(q.Permission, p); ok {
			return fmt.Sprintf("no one was there to approve %s (the editor cannot show permission asks), so nothing ran. "+
				"%q is a protected path (%s): a write to it always needs a person, whatever the rules allow. "+
				"Leave it alone and do the task without changing it, or tell the user what change it needs and why, so they make it.", what(q), p, why)
		}
		if why, ok := q.ExactOnly[p]; ok {
			return fmt.Sprintf("no one was there to approve %s (the editor cannot show permission asks), so nothing ran. "+
				"A rule allows commands like it, but not this one: %s. Run it without that (use the options a rule allows, "+
				"or a dedicated tool), or ask the user to allow this exact command.", what(q), why)
		}
	}
	example := fmt.Sprintf(`{"permission": {%q: "allow"}}`, q.Permission)
	if n := len(q.Patterns); n > 0 && !(n == 1 && q.Patterns[0] == "*") {
		var ps []string
		for i, p := range q.Patterns {
			if i == 3 {
				break
			}
			ps = append(ps, fmt.Sprintf(`%q: "allow"`, Escape(p)))
		}
		example = fmt.Sprintf(`{"permission": {%q: {%s}}}`, q.Permission, strings.Join(ps, ", "))
	}
	return fmt.Sprintf("no one was there to approve %s (the editor cannot show permission asks), so nothing ran. "+
		"Ask the user to allow it in the editor or in toolsd config (.toolsd/config.json or the user config, e.g. %s), "+
		"or do the task with tools that are already allowed.", what(q), example)
}

// DoomLoopText is the ask's description when a tool was called with the same arguments
// DoomLoopThreshold times in a row; it is also what the model reads if the person rejects.
func DoomLoopText(tool string) string {
	return fmt.Sprintf("%s was called %d times in a row with the same arguments; this looks like a loop. "+
		"Change the approach instead of repeating the call.", tool, DoomLoopThreshold)
}
