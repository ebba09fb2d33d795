// Package hook runs the hooks people configure at the points of a tool call: definition
// (before a round sees a tool), before (a call's arguments, before it runs), after (its
// result, before the model reads it) and permission (each permission decision).
//
// # What a hook is
//
// A command hook is a program from the settings (the user's file, the editor's settings,
// the workspace's .toolsd/config.json once the person trusts the workspace), run without a
// shell, with the event as JSON on stdin and its answer on stdout. The contract is Claude
// Code's command-hook contract, so that a hook written for Claude Code's PreToolUse or
// PostToolUse runs unchanged: stdin has session_id, transcript_path (empty: toolsd keeps no
// transcript), cwd, permission_mode, hook_event_name, tool_name (Claude Code's names: Bash
// for bash, Edit for edit, …, MultiEdit for apply_patch, mcp__<server>__<tool> for an MCP
// server's), tool_input (with Claude Code's argument names: file_path, old_string, …),
// tool_use_id and tool_response; toolsd's own view of the event is under "toolsd". Exit
// code 0 with JSON on stdout answers (permissionDecision, updatedInput, additionalContext,
// decision/reason, continue/stopReason, and toolsd's own fields under "toolsd"); exit code
// 2 blocks, with stderr as the reason the model reads; any other exit code, a time-out, a
// crash or an answer that is not JSON is a failure. An editor hook is the same event sent
// as hooks/run to an editor that subscribed to the point (protocol.HookSubscription).
//
// # The promise
//
//   - Confined. A command hook starts through internal/proc like every tool process (its
//     whole process tree dies when it ends, times out or the daemon dies) and runs in the
//     OS sandbox as Options.Confine says (the workspace's sandbox, a hook's own settings).
//   - Bounded. Each run has a time-out (60 s by default, an editor's 10 s); a hook that
//     hangs is stopped (SIGTERM, SIGKILL a second later) and counts as failed. Its stdout
//     is read up to 4 MiB, a reason or context up to 8 KiB.
//   - Never fatal. A hook that fails, answers nonsense or trips a bug in the code around it
//     fails that run only. What follows is the hook's policy: fail-open (the default) passes
//     over it; fail-closed blocks what it guards (the call, the request, the result, the
//     tool). Either way the run is in the call record with its error, the log has a
//     warning, and the workspace's diagnostics say the hook is failing until it runs well
//     again (Options.OnDiagnostics, on each change only).
//   - Ordered. The hooks of a point run one after another: the workspace's, then the
//     editor's settings', then the attached editors' (the oldest first; a subscription two
//     editors share runs once), then the user's, each layer's in the order written — from
//     the least trusted to the most, so that the person's own hooks see, and have the last
//     word on, what the others did. Each sees the event as the hooks before it left it:
//     changes compose (two updatedInputs make one call with both changes, which the caller
//     validates again), none is lost.
//   - Tightens, never loosens a deny. Before hooks' decisions combine: a block stops the
//     chain and the call; an ask outweighs an allow; an allow speaks only for the
//     arguments its hook saw (a later change withdraws it); defer is no decision (as in
//     Claude Code outside print mode). The session combines the verdict with the rules: a
//     hook's allow never beats a deny, nor an ask a rule someone wrote makes, nor one of a
//     shell line toolsd cannot follow (docs/hooks.md says why).
//   - Zero cost when unmatched. A point without hooks costs one atomic load; a hook whose
//     matcher does not take the call costs a few string comparisons (bench/hooks).
//
// A Runner is owned by the workspace and safe for concurrent use. It starts no goroutine of
// its own: each run happens on the goroutine of the call (or tools/resolve) that needs it.
// Definition hooks' answers are remembered per tool, agent and model until the hooks or the
// tool change.
package hook
