package rpc

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolsd/toolsd/protocol"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestWireShapes pins the JSON of every result and notification type as the codec writes
// it: field names, arrays that are [] and never null, fields left out when empty.
func TestWireShapes(t *testing.T) {
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	end := at.Add(1500 * time.Millisecond)
	cases := map[string]any{
		"initialize_result": protocol.InitializeResult{
			ServerInfo:   protocol.ServerInfo{Name: "toolsd", Version: "0.1.0"},
			Capabilities: protocol.ServerCapabilities{Cancel: true, Progress: true, Ask: true, HotReload: true, MaxMessage: 8 << 20, Permissions: []string{"bash", "read"}},
			StorePath:    "/home/u/.local/state/toolsd/ws-0123456789ab.db",
		},
		"resolve_result": protocol.ResolveResult{
			Tools:       []protocol.ToolInfo{{ID: "read", Description: "Read a file.", InputSchema: json.RawMessage(`{"type":"object","properties":{"filePath":{"type":"string"}},"required":["filePath"]}`), Source: "builtin"}},
			Diagnostics: []protocol.Diagnostic{{Path: "/ws/.toolsd/tool/bad.json", Line: 3, Column: 5, Message: "unknown field \"comand\"", Severity: "error"}},
		},
		"resolve_result_empty": protocol.ResolveResult{Tools: []protocol.ToolInfo{}, Diagnostics: []protocol.Diagnostic{}},
		"execute_result_completed": protocol.ExecuteResult{
			CallID: "c1", Status: "completed", Title: "README.md", Output: "     1\t# Hello", Metadata: json.RawMessage(`{"lines":1}`),
			Attachments: []protocol.Attachment{}, Truncated: false,
		},
		"execute_result_truncated": protocol.ExecuteResult{
			CallID: "c2", Status: "completed", Title: "seq 1 100000", Output: "1\n...", Metadata: json.RawMessage(`{"exit":0}`),
			Attachments: []protocol.Attachment{{ID: "att_c2_1", SessionID: "s1", MessageID: "m1", Mime: "image/png", Filename: "a.png", Data: "iVBORw0KGgo="}},
			Truncated:   true, OutputID: "out_1",
		},
		"execute_result_error": protocol.ExecuteResult{
			CallID: "c3", Status: "error", Metadata: json.RawMessage(`{}`), Attachments: []protocol.Attachment{}, Error: "Unknown tool \"raed\": ...",
		},
		"progress": protocol.ProgressParams{SessionID: "s1", MessageID: "m1", CallID: "c1", Tool: "bash", Status: "running", Title: "make", Metadata: json.RawMessage(`{"output":"ok\n"}`)},
		"changed":  protocol.ChangedParams{Added: []string{"say"}, Removed: []string{}, Changed: []string{}, Diagnostics: []protocol.Diagnostic{}},
		"asked": protocol.AskedParams{
			ID: "ask_1_c1", SessionID: "s1", MessageID: "m1", CallID: "c1", Tool: "bash", Permission: "bash",
			Patterns: []string{"git status --short"}, Always: []string{"git status --short", "git status *"},
			Metadata: json.RawMessage(`{"command":"git status --short","workdir":"/ws"}`),
			Rule:     &protocol.RuleInfo{Permission: "bash", Pattern: "*", Action: "ask", Source: "default"},
			Provenance: &protocol.Provenance{Kind: "rule", Text: `rule bash "*": ask (user config /home/u/.config/toolsd/config.json:3:7)`,
				Rule: `bash "*": ask`, Layer: "user", File: "/home/u/.config/toolsd/config.json", Line: 3, Column: 7, Pattern: "git status --short"},
		},
		"asked_opaque": protocol.AskedParams{
			ID: "ask_2_c2", SessionID: "s1", MessageID: "m1", CallID: "c2", Tool: "bash", Permission: "bash",
			Patterns: []string{"eval $X", `eval "$X"`}, Always: []string{}, Metadata: json.RawMessage(`{"command":"eval \"$X\"","opaque":true}`),
			Provenance: &protocol.Provenance{Kind: "opaque", Text: "the shell line is not fully understood, so it always asks: eval runs text as code",
				Pattern: "eval $X", Reasons: []string{"eval runs text as code"}},
		},
		"reply_result":      protocol.ReplyResult{Released: []string{}},
		"list_asks_result":  protocol.ListAsksResult{Asks: []protocol.AskedParams{}},
		"trust_result":      protocol.TrustResult{Trusted: true},
		"cancel_result":     protocol.CancelResult{Cancelled: true},
		"calls_list_result": protocol.CallsListResult{Calls: []protocol.CallSummary{{CallID: "c1", SessionID: "s1", MessageID: "m1", Tool: "read", Status: "completed", Title: "README.md", StartedAt: at, EndedAt: &end}}, NextCursor: "Y3Vyc29y"},
		"call_record": protocol.CallRecord{
			CallID: "c1", SessionID: "s1", MessageID: "m1", Tool: "bash", Model: &protocol.Model{ProviderID: "anthropic", ModelID: "claude"},
			Status: "completed", Title: "echo hi", Args: json.RawMessage(`{"command":"echo hi"}`), Metadata: json.RawMessage(`{"exit":0}`),
			Output: "hi\n", Attachments: []protocol.Attachment{},
			Decisions: []protocol.Decision{
				{Permission: "bash", Patterns: []string{"echo hi"}, Action: "allow", By: "person", Reply: "once", At: end,
					Provenance: &protocol.Provenance{Kind: "default", Text: `built-in default bash "*": ask`, Rule: `bash "*": ask`, Layer: "default", Pattern: "echo hi"},
					AskedAt:    &at, WaitedMs: 1500, AnsweredBy: "Visual Studio Code"},
				{Permission: "edit", Patterns: []string{"notes.txt"}, Action: "allow", By: "rule", At: end,
					Provenance: &protocol.Provenance{Kind: "remembered", Text: `remembered answer edit "notes.txt": allow (an answer remembered for this workspace on 2026-11-30 12:00:00 UTC by Visual Studio Code)`,
						Rule: `edit "notes.txt": allow`, Layer: "workspace", Pattern: "notes.txt", RememberedAt: &at, RememberedBy: "Visual Studio Code"}},
			},
			StartedAt: at, EndedAt: &end, Changes: 2,
		},
		"calls_output_result": protocol.CallsOutputResult{Output: "PASS src/parser.test.ts\n", Bytes: 61440, Truncated: true},
		"outputs_read_result": protocol.OutputsReadResult{Content: "50000\n50001", Offset: 49999, Lines: 2, TotalLines: 100000, TotalBytes: 588895},
		"changes_result": protocol.CallsChangesResult{
			Files: []protocol.FileChangeInfo{
				{Path: "src/a.go", Status: "modified", Kind: "file", OldKind: "file", Mode: 0o644, OldMode: 0o644, Diff: "--- a/src/a.go\n+++ b/src/a.go\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n", Additions: 1, Deletions: 1,
					Attribution: "during", AlsoTouchedBy: []protocol.CallRef{{SessionID: "s1", CallID: "call_8", Tool: "write"}}, Calls: []protocol.CallRef{{SessionID: "s1", CallID: "call_7", Tool: "bash"}}, Before: ptr("a\nb\nc\n"), After: ptr("a\nB\nc\n")},
				{Path: "big.bin", Status: "added", Kind: "file", Mode: 0o644, Binary: true, Diff: "big.bin changed; its content was not kept (larger than 4 MiB)\n", NotKept: "larger than 4 MiB",
					Attribution: "during", AlsoTouchedBy: []protocol.CallRef{}, Calls: []protocol.CallRef{{SessionID: "s1", CallID: "call_7", Tool: "bash"}}},
			},
			Calls: []protocol.CallRef{{SessionID: "s1", CallID: "call_7", Tool: "bash"}}, Concurrent: []protocol.CallRef{{SessionID: "s1", CallID: "call_8", Tool: "write"}}, Notes: []string{},
		},
		"revert_result": protocol.CallsRevertResult{
			Status: "reverted", RevertCallID: "revert_0a1b2c3d4e5f", Calls: []protocol.CallRef{{SessionID: "s1", CallID: "call_7", Tool: "bash"}},
			Files: []protocol.RevertFile{
				{Path: "src/a.go", Action: "restore", ChangedBy: []protocol.CallRef{}, AlsoTouchedBy: []protocol.CallRef{}},
				{Path: "notes.md", Action: "restore", Conflict: "changed since call call_7 by call call_9 (edit)", ChangedBy: []protocol.CallRef{{SessionID: "s1", CallID: "call_9", Tool: "edit"}}, AlsoTouchedBy: []protocol.CallRef{}, Skipped: "changed since: changed since call call_7 by call call_9 (edit)"},
			},
			Concurrent: []protocol.CallRef{}, Message: "Reverted 1 path(s) changed by 1 call(s).",
		},
		// Attach: several clients of one workspace.
		"progress_of_an_agent": protocol.ProgressParams{SessionID: "mcp-3fa2c1-3", MessageID: "m1", CallID: "c1", Tool: "bash", Status: "running",
			Client: &protocol.ClientRef{ID: "3fa2c1-3", Name: "GitHub Copilot Chat", Version: "0.40.0", Kind: "mcp"}},
		"asked_by_an_agent": protocol.AskedParams{
			ID: "ask_2_c2", SessionID: "mcp-3fa2c1-3", CallID: "c2", Tool: "bash", Permission: "bash",
			Patterns: []string{"make test"}, Always: []string{"make test", "make *"}, Metadata: json.RawMessage(`{"command":"make test"}`),
			Client: &protocol.ClientRef{ID: "3fa2c1-3", Name: "GitHub Copilot Chat", Version: "0.40.0", Kind: "mcp"},
		},
		"answered":           protocol.AnsweredParams{ID: "ask_2_c2", Reply: "once", By: "person", Client: &protocol.ClientRef{ID: "3fa2c1-1", Name: "Visual Studio Code", Kind: "editor"}},
		"answered_withdrawn": protocol.AnsweredParams{ID: "ask_3_c3", By: "cancel"},
		"clients": protocol.ClientsParams{Clients: []protocol.ClientRef{
			{ID: "3fa2c1-1", Name: "Visual Studio Code", Version: "1.139.1", Kind: "editor"},
			{ID: "3fa2c1-3", Name: "GitHub Copilot Chat", Version: "0.40.0", Kind: "mcp"},
		}},
		"resolve_result_annotated": protocol.ResolveResult{
			Tools: []protocol.ToolInfo{{ID: "read", Description: "Read a file.", InputSchema: json.RawMessage(`{"type":"object"}`), Source: "builtin",
				Annotations: &protocol.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(bool)}}},
			Diagnostics: []protocol.Diagnostic{},
		},
		// Hooks: what an editor that subscribes gets (hooks/run) and answers, and the runs
		// in a call's record.
		"client_capabilities_hooks": protocol.ClientCapabilities{Ask: true, Progress: true, Hooks: []protocol.HookSubscription{
			{Name: "acme.secrets", Point: "before", Match: "bash|edit|write", OnFailure: "fail-closed"},
			{Name: "acme.format", Point: "after", Match: "edit|write|apply_patch", TimeoutMs: 5000},
		}},
		"hooks_run_before": protocol.HookParams{Name: "acme.secrets", Point: "before", SessionID: "s1", MessageID: "m1", CallID: "c4", Tool: "bash", Source: "builtin",
			Args: json.RawMessage(`{"command":"cat .env"}`), Client: &protocol.ClientRef{ID: "3fa2c1-3", Name: "GitHub Copilot Chat", Version: "0.40.0", Kind: "mcp"}},
		"hooks_run_after": protocol.HookParams{Name: "acme.format", Point: "after", SessionID: "s1", MessageID: "m1", CallID: "c5", Tool: "edit", Source: "builtin",
			Args:   json.RawMessage(`{"filePath":"src/a.go","oldString":"x","newString":"y"}`),
			Result: &protocol.HookCallResult{Status: "completed", Title: "src/a.go", Output: "Edit applied.", Metadata: json.RawMessage(`{"diff":"..."}`)}},
		"hooks_run_permission": protocol.HookParams{Name: "acme.audit", Point: "permission", SessionID: "s1", MessageID: "m1", CallID: "c6", Tool: "bash", Source: "builtin",
			Args: json.RawMessage(`{"command":"git push"}`), Decision: &protocol.Decision{Permission: "bash", Patterns: []string{"git push"}, Action: "ask", By: "rule", At: at,
				Provenance: &protocol.Provenance{Kind: "default", Text: `built-in default bash "*": ask`, Rule: `bash "*": ask`, Layer: "default", Pattern: "git push"}}},
		"hooks_run_definition": protocol.HookParams{Name: "acme.tools", Point: "definition", Tool: "bash", Source: "builtin", Agent: "build", Model: &protocol.Model{ProviderID: "anthropic", ModelID: "claude"},
			Definition: &protocol.HookDefinition{Description: "Run a shell command.", InputSchema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}`)}},
		"hooks_run_result_block": protocol.HookResult{Decision: "deny", Reason: ".env holds secrets; read .env.example instead"},
		"hooks_run_result_after": protocol.HookResult{Title: ptr("src/a.go (formatted)"), Metadata: json.RawMessage(`{"formatted":true}`), Context: "gofmt reformatted 2 lines"},
		"call_record_with_hooks": protocol.CallRecord{
			CallID: "c7", SessionID: "s1", MessageID: "m1", Tool: "bash", Status: "completed", Title: "echo start one two",
			Args: json.RawMessage(`{"command":"echo start one two"}`), ModelArgs: json.RawMessage(`{"command":"echo start"}`), Metadata: json.RawMessage(`{"exit":0}`),
			Output: "start one two\n", Attachments: []protocol.Attachment{},
			Decisions: []protocol.Decision{{Permission: "bash", Patterns: []string{"echo start one two"}, Action: "allow", By: "hook", At: end,
				Provenance: &protocol.Provenance{Kind: "hook", Text: `hook "two" (user config /home/u/.config/toolsd/config.json:6:7) allowed it; without it: built-in default bash "*": ask`,
					Hook: "two", Layer: "user", File: "/home/u/.config/toolsd/config.json", Line: 6, Column: 7}}},
			Hooks: []protocol.HookRun{
				{Hook: "one", Point: "before", Layer: "user", File: "/home/u/.config/toolsd/config.json", Line: 5, Column: 7, StartedAt: at, DurationMs: 31, Outcome: "ok", Decision: "allow", Changed: []string{"args"}, ExitCode: ptr(0),
					Note: "its allow was withdrawn: a later hook changed the arguments it allowed"},
				{Hook: "two", Point: "before", Layer: "user", File: "/home/u/.config/toolsd/config.json", Line: 6, Column: 7, StartedAt: at, DurationMs: 29, Outcome: "ok", Decision: "allow", Changed: []string{"args"}, ExitCode: ptr(0)},
				{Hook: "guard.py", Point: "after", Layer: "project", File: "/ws/.toolsd/config.json", Line: 3, Column: 9, StartedAt: end, DurationMs: 1000, Outcome: "failed",
					Error: "it did not answer within 1s and was stopped", OnFailure: "fail-open"},
			},
			StartedAt: at, EndedAt: &end,
		},
		"calls_list_result_by_client": protocol.CallsListResult{Calls: []protocol.CallSummary{{CallID: "c2", SessionID: "mcp-3fa2c1-3", MessageID: "c2", Tool: "bash", Status: "completed", Title: "make test", StartedAt: at, EndedAt: &end,
			Client: &protocol.ClientRef{ID: "3fa2c1-3", Name: "GitHub Copilot Chat", Version: "0.40.0", Kind: "mcp"}}}},
	}
	for name, v := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := codec{}.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			var pretty bytes.Buffer
			if err := json.Indent(&pretty, got, "", "  "); err != nil {
				t.Fatal(err)
			}
			pretty.WriteByte('\n')
			path := filepath.Join("testdata", "golden", name+".json")
			if *update {
				if err := os.WriteFile(path, pretty.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./rpc -run TestWireShapes -update)", err)
			}
			if !bytes.Equal(pretty.Bytes(), want) {
				t.Errorf("wire shape of %s changed:\n--- got\n%s\n--- want\n%s", name, pretty.Bytes(), want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
