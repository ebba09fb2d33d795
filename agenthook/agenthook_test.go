package agenthook

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolsd/toolsd/protocol"
)

func TestMapTable(t *testing.T) {
	for _, c := range []struct {
		tool, input string
		want        []string // tool and args of each call, as JSON
	}{
		{"Bash", `{"command":"git status","description":"x","timeout":1000}`, []string{`bash {"command":"git status","workdir":"/w"}`}},
		{"Shell", `{"command":"ls","cwd":"sub"}`, []string{`bash {"command":"ls","workdir":"/w/sub"}`}},
		{"Edit", `{"file_path":"/w/a.go","old_string":"a","new_string":"b","replace_all":true}`, []string{`edit {"filePath":"/w/a.go","newString":"b","oldString":"a","replaceAll":true}`}},
		{"StrReplace", `{"path":"a.go","old_string":"a","new_string":"b"}`, []string{`edit {"filePath":"/w/a.go","newString":"b","oldString":"a"}`}},
		{"MultiEdit", `{"file_path":"/w/a.go","edits":[{"old_string":"a","new_string":"b"}]}`, []string{`edit {"edits":[{"newString":"b","oldString":"a","replaceAll":false}],"filePath":"/w/a.go"}`}},
		{"Write", `{"file_path":"/w/n.txt","content":"hi"}`, []string{`write {"content":"hi","filePath":"/w/n.txt"}`}},
		{"NotebookEdit", `{"notebook_path":"/w/n.ipynb","new_source":"x"}`, []string{`edit {"filePath":"/w/n.ipynb"}`}},
		{"Delete", `{"path":"old.txt"}`, []string{`edit {"filePath":"/w/old.txt"}`}},
		{"Read", `{"file_path":"/etc/passwd"}`, []string{`read {"filePath":"/etc/passwd"}`}},
		{"Grep", `{"pattern":"TODO","path":"src"}`, []string{`grep {"path":"/w/src","pattern":"TODO"}`}},
		{"Glob", `{"pattern":"**/*.go"}`, []string{`glob {"path":"/w","pattern":"**/*.go"}`}},
		{"LS", `{"path":"/tmp"}`, []string{`list {"path":"/tmp"}`}},
		{"WebFetch", `{"url":"https://example.org","prompt":"x"}`, []string{`webfetch {"url":"https://example.org"}`}},
		{"TodoWrite", `{"todos":[]}`, []string{`todowrite {}`}},
		{"mcp__github__create_issue", `{"title":"x"}`, []string{`mcp github/create_issue {"title":"x"}`}},
		{"MCP:db:query", `{"q":"x"}`, []string{`mcp db/query {"q":"x"}`}},
		{"WebSearch", `{"query":"x"}`, nil},
		{"apply_patch", `{"command":"*** Begin Patch\n*** Add File: a.txt\n+a\n*** Delete File: /abs/b.txt\n*** End Patch"}`, []string{
			`apply_patch {"patchText":"*** Begin Patch\n*** Add File: /w/a.txt\n+a\n*** End Patch\n"}`,
			`apply_patch {"patchText":"*** Begin Patch\n*** Delete File: /abs/b.txt\n*** End Patch\n"}`}},
	} {
		calls, err := Map(c.tool, json.RawMessage(c.input), "/w")
		if err != nil {
			t.Errorf("%s: %v", c.tool, err)
			continue
		}
		var got []string
		for _, ac := range calls {
			var args any
			_ = json.Unmarshal(ac.Args, &args)
			b, _ := json.Marshal(args)
			s := ac.Tool
			if ac.MCPServer != "" {
				s += " " + ac.MCPServer + "/" + ac.MCPTool
			}
			got = append(got, s+" "+strings.ReplaceAll(string(b), `\u003e`, ">"))
		}
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%s %s:\n got %q\nwant %q", c.tool, c.input, got, c.want)
		}
	}
	for _, c := range []struct{ tool, input string }{{"Bash", `{}`}, {"Edit", `{"old_string":"a"}`}, {"Read", `[1]`}, {"apply_patch", `{"command":"rm -rf /"}`}} {
		if _, err := Map(c.tool, json.RawMessage(c.input), "/w"); err == nil {
			t.Errorf("%s %s: no error", c.tool, c.input)
		}
	}
}

func TestSplitPatch(t *testing.T) {
	parts, err := SplitPatch("*** Begin Patch\n*** Update File: src/a.go\n*** Move to: src/b.go\n@@ func a\n-x\n+y\n*** Add File: c.txt\n+c\n*** End Patch\n", "/w")
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 2 || parts[0].Path != "/w/src/a.go" || parts[0].MoveTo != "/w/src/b.go" || parts[1].Path != "/w/c.txt" {
		t.Fatalf("parts: %+v", parts)
	}
	if want := "*** Begin Patch\n*** Update File: /w/src/a.go\n*** Move to: /w/src/b.go\n@@ func a\n-x\n+y\n*** End Patch\n"; parts[0].Text != want {
		t.Fatalf("the first part:\n%s\nwant\n%s", parts[0].Text, want)
	}
	for _, bad := range []string{"", "*** Begin Patch\n*** End Patch", "*** Begin Patch\n+x\n*** Add File: a\n*** End Patch", "diff --git a b"} {
		if _, err := SplitPatch(bad, "/w"); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestParse(t *testing.T) {
	claude := Agents["claude"]
	ev, err := claude.Parse("PostToolUse", []byte(`{"session_id":"s","cwd":"/w","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"toolu_1","tool_response":{"stdout":"a\n","stderr":"warn","interrupted":false}}`))
	if err != nil || ev.Kind != KindPost || ev.CallID != "toolu_1" || ev.Output != "a\nwarn" || ev.SessionID != "s" {
		t.Fatalf("%+v %v", ev, err)
	}
	ev, err = claude.Parse("PostToolUseFailure", []byte(`{"session_id":"s","tool_name":"Edit","tool_input":{},"tool_use_id":"t","error":"not found","is_interrupt":true}`))
	if err != nil || ev.Kind != KindFailure || ev.Error != "not found" || !ev.Interrupted {
		t.Fatalf("%+v %v", ev, err)
	}
	if _, err := claude.Parse("PreToolUse", []byte(`{"hook_event_name":"PostToolUse","tool_name":"Bash"}`)); err == nil {
		t.Fatal("a payload of another event was taken")
	}
	// Cursor: a byte order mark, conversation_id, workspace_roots, an MCP input as a string,
	// no tool use id (the call is named by what it is, the same before and after).
	cursor := Agents["cursor"]
	in := "\xef\xbb\xbf" + `{"conversation_id":"c","workspace_roots":["/w"],"hook_event_name":"preToolUse","tool_name":"MCP:db:query","tool_input":"{\"q\":1}"}`
	ev, err = cursor.Parse("preToolUse", []byte(in))
	if err != nil || ev.SessionID != "c" || string(ev.Input) != `{"q":1}` || !strings.HasPrefix(ev.CallID, "hook_") || Folder(cursor, ev) != "/w" {
		t.Fatalf("%+v %v", ev, err)
	}
	ev2, _ := cursor.Parse("postToolUse", []byte(strings.Replace(in, "preToolUse", "postToolUse", 1)))
	if ev2.CallID != ev.CallID {
		t.Fatalf("the before and after of a call without an id are named differently: %s %s", ev.CallID, ev2.CallID)
	}
}

func TestAnswers(t *testing.T) {
	out := func(r Reply) string { return strings.TrimSpace(string(r.Stdout)) }
	claude, codex, cursor := Agents["claude"], Agents["codex"], Agents["cursor"]
	for _, c := range []struct {
		a              *Agent
		kind, decision string
		want           string
	}{
		{claude, KindPre, "allow", `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}`},
		{claude, KindPre, "deny", `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"why"}}`},
		{claude, KindPre, "ask", `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"why"}}`},
		{claude, KindPermission, "allow", `{"hookSpecificOutput":{"decision":{"behavior":"allow"},"hookEventName":"PermissionRequest"}}`},
		{claude, KindPermission, "deny", `{"hookSpecificOutput":{"decision":{"behavior":"deny","message":"why"},"hookEventName":"PermissionRequest"}}`},
		{claude, KindPermission, "ask", ``},
		{codex, KindPre, "allow", ``},
		{codex, KindPre, "ask", ``},
		{codex, KindPre, "deny", `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"why"}}`},
		{cursor, KindPre, "deny", `{"agent_message":"why","permission":"deny","user_message":"why"}`},
	} {
		reason := "why"
		if c.decision == protocol.AgentAllow {
			reason = ""
		}
		if got := out(c.a.Answer(c.kind, c.decision, reason)); got != c.want {
			t.Errorf("%s %s %s: %s, want %s", c.a.Key, c.kind, c.decision, got, c.want)
		}
	}
	if r := claude.Refuse(KindPre, "no daemon"); r.Exit != 2 || r.Stderr != "no daemon" || !strings.Contains(out(r), `"deny"`) {
		t.Errorf("refuse: %+v", r)
	}
}
