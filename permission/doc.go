// Package permission decides whether a tool call may run: allow, ask or deny.
//
// # Rules
//
// A Rule is {permission, pattern, action}. Permissions are keys (see Keys): read, edit (which
// write and apply_patch use too), glob, grep, list, bash, task, webfetch, external_directory,
// doom_loop, todoread, todowrite, and one key per project tool and per MCP tool (its id).
// Patterns are what a call touches: a workspace-relative path for edit and read (absolute
// outside the workspace), one shell command for bash, a folder + "/*" for
// external_directory, a URL for webfetch, the tool's name for doom_loop. Match is byte-exact
// with * (any run) and ? (one character) wildcards, \* \? \\ escapes (Escape), and a
// trailing " *" that also matches the bare command ("git status *" matches "git status").
// Config uses OpenCode's syntax (ParseConfig).
//
// # Precedence
//
// Layers, lowest first; within and across layers the last matching rule wins; no match asks:
//
//  1. built-in defaults (Defaults): everything asks; read, glob, grep, list, todoread and
//     todowrite are allowed, except reading *.env and *.env.* files (.env.example is fine);
//     Query.ReadOnly allows a trusted read-only tool at this level;
//  2. "user": the user's config file ($XDG_CONFIG_HOME/toolsd/config.json);
//  3. "editor": the editor's initializationOptions;
//  4. "project": the workspace's .toolsd/config.json — while the workspace is untrusted it
//     only tightens: a project rule counts only where it is at least as strict as the
//     other layers say (deny > ask > allow) and, when only as strict, where only a
//     built-in default says so too (Decision.Tightening: the rule decides, as a
//     tightening), so its allows are ignored; Decision.Untrusted and
//     Engine.UntrustedAllows report them so the UI can say what trusting would change;
//  5. "agent:<name>": the rules of the agent the call is for (Query.Agent), from the user
//     and editor config;
//  6. "project-agent:<name>": that agent's rules from the project config — like layer 4,
//     they only tighten while the workspace is untrusted;
//  7. remembered "always" answers, for the workspace (persisted through ApprovalStore) and
//     for the session. They turn an ask into an allow; they never undo a deny.
//
// # Protected paths and relaxing an ask
//
// A write ("edit") to a workspace path of the protected set (package internal/protect,
// through Protected) asks whatever an allow rule or a remembered answer says, and is never
// remembered (Decision.Protected says why); a deny still denies. MayRelax is the one answer
// to "may something other than a rule (the sandbox's auto-allow, a hook's allow) settle
// this ask?": only the built-in defaults' ask of a request that is fully understood, writes
// no protected path, and that no rule of any layer asks or denies. docs/security.md is the
// model.
//
// A query with several patterns (one per command of a shell line) denies if any pattern
// denies, else asks if any asks. Query.Opaque (shell text nothing could see through) asks
// even where a rule or answer would allow; a deny still denies.
//
// Trust is the person's act (the permission/trust request), kept in the store
// (Engine.SetTrusted).
//
// A tool is hidden from tools/resolve (Engine.Hidden) when the last config rule for its
// permission is a deny of "*".
//
// doom_loop: Engine.Observe reports the third identical call (same tool, same canonical
// JSON arguments) in a row in a session; the pipeline then asks under doom_loop.
//
// # Shell commands
//
// The bash tool parses its command with shell.Analyze and asks what ShellRequests lists:
// external_directory for paths, write targets and working folders outside the workspace
// (resolved as the kernel does, from the folders the line is in after its cd's), and for
// words only known at run time; edit for write targets (redirections, tee, output
// options); bash with one pattern per command (each offering its Always patterns: the exact
// text, and an arity prefix such as "git status *" for a command whose arguments fit its
// safe grammar). A line the analysis does not fully understand (control flow, eval, code
// hidden in values bash evaluates, assignments to variables not known to be harmless, ...)
// is one Opaque bash request, which always asks. Commands whose arguments do not fit their
// grammar are Query.ExactOnly: a rule or remembered answer with a wildcard does not allow
// them (Decision.Reason says why). DecideShell evaluates a line the same way. See package
// shell for the subset and the grammars, and docs/permissions.md.
//
// # Texts
//
// DeniedText, RejectedText and NoUIText are what the model reads when a call does not run;
// each names what was refused and says what to do next.
package permission
