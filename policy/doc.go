// Package policy shows what the permission rules say without running a call: it assembles
// the config layers into the engine's layers (each rule with the file, line and column it
// is written at), decides a tool call as its tool would ask (`toolsd policy check`), and
// checks the examples declared next to the rules (`toolsd policy test`, and a positioned
// diagnostic when the settings load).
//
// # Promise
//
// Nothing here runs a tool or writes anything: a call is decided from the requests its tool
// would make (builtin.Requests: paths resolved with stat calls, shell lines parsed), against
// the same layers the daemon uses. `toolsd policy check` reads the workspace's remembered
// answers and trust from its store read-only, and only when no daemon holds the store; it
// says so when it could not. Examples are decided against the rules alone — no remembered
// answer, and the workspace's own rules counted as trusted — so that they mean the same in
// an editor and in a team's CI.
//
// # Examples
//
// A settings file (and each agent in it) may declare, next to its rules:
//
//	"examples": {
//	  "allow": ["bash git status", "read src/main.go"],
//	  "ask":   ["bash git push"],
//	  "deny":  ["bash git push --force", {"tool": "edit", "args": {"filePath": ".env"}}]
//	}
//
// A string is a tool and its main argument: the command of bash, the path of read, edit,
// write and list, the pattern of glob and grep, the URL of webfetch; any other tool is
// decided under its own permission key. An object gives the tool's arguments as JSON (and
// an "agent"). The key sits beside "permission" (or "permissions"), not inside it, so that
// the rules stay in OpenCode's syntax, which has no place for examples.
package policy
