package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/toolsd/toolsd/agenthook"
	"github.com/toolsd/toolsd/attach"
	"github.com/toolsd/toolsd/internal/cli"
	"github.com/toolsd/toolsd/internal/textdiff"
	"github.com/toolsd/toolsd/protocol"
)

// runHook is "toolsd hook": the command an agent runs as its hook (docs/agents.md), and
// "toolsd hook install|uninstall".
func runHook(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "install" || args[0] == "uninstall") {
		return hookInstall(args[0], args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("toolsd hook", flag.ContinueOnError)
	fs.SetOutput(stderr)
	df := newDaemonFlags(fs)
	agentKey := fs.String("agent", "claude", "the agent that runs the hook: claude, codex or cursor")
	folder := fs.String("workspace", "", "the workspace folder (default: the one the payload names: CLAUDE_PROJECT_DIR, the workspace root, the cwd)")
	timeout := fs.Duration("timeout", agenthook.DefaultTimeout, "how long the hook may take, an ask waiting for a person included (keep it shorter than the agent's own)")
	noEditor := fs.String("no-editor", protocol.AgentAsk, "what an ask becomes when no editor can show it: ask (the agent's own prompt) or deny")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: toolsd hook [flags] EVENT\n\nthe command an agent runs as its hook (EVENT: PreToolUse, PermissionRequest, PostToolUse,\nPostToolUseFailure; Cursor's preToolUse, postToolUse): reads the agent's JSON on stdin and has the\nworkspace's daemon decide and record the call. See docs/agents.md.\n\n       toolsd hook install|uninstall claude|codex|cursor [--project|--user] [--dry-run]\nwrites the hook into the agent's settings (or takes it out), and prints the change.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2 // an agent reads 2 as "blocked": a mistyped hook entry lets nothing through
	}
	a, err := agenthook.Lookup(*agentKey)
	if err != nil || fs.NArg() != 1 || (*noEditor != protocol.AgentAsk && *noEditor != protocol.AgentDeny) {
		// Refuse what cannot be served: a mistyped hook entry must not let calls through.
		if a == nil {
			a = agenthook.Agents["claude"]
		}
		msg := "toolsd hook needs one EVENT argument and --agent claude, codex or cursor, --no-editor ask or deny"
		if err != nil {
			msg = err.Error()
		}
		r := a.Refuse(agenthook.KindPre, "toolsd denied this call: its hook is misconfigured ("+msg+"). Nothing ran; tell the user.")
		return writeReply(r, stdout, stderr)
	}
	df.absolute()
	o := agenthook.RunOptions{Agent: a, Event: fs.Arg(0), Workspace: *folder, Timeout: *timeout, NoEditor: *noEditor, Version: version,
		Connect: func(ctx context.Context, folder string) (io.ReadWriteCloser, error) {
			paths, real, err := attach.Locate(folder, *df.store)
			if err != nil {
				return nil, err
			}
			limit := attach.DefaultDialTimeout
			if d, ok := ctx.Deadline(); ok && time.Until(d) < limit {
				limit = time.Until(d)
			}
			c, err := attach.Dial(attach.DialOptions{Paths: paths, Hello: attach.Hello{Proto: attach.ProtoToolsd, PID: os.Getpid(), Flags: df.shaping()},
				Owner: df.ownerCmd(real), Timeout: limit})
			if err != nil {
				return nil, err
			}
			return c, nil
		}}
	return writeReply(agenthook.Run(o, stdin), stdout, stderr)
}

func writeReply(r agenthook.Reply, stdout, stderr io.Writer) int {
	if len(r.Stdout) > 0 {
		_, _ = stdout.Write(r.Stdout)
	}
	if r.Stderr != "" {
		fmt.Fprintln(stderr, r.Stderr)
	}
	return r.Exit
}

// hookInstall is "toolsd hook install|uninstall AGENT": toolsd's entries merged into the
// agent's settings (or taken out), the change printed as a diff.
func hookInstall(verb string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("toolsd hook "+verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	project := fs.Bool("project", false, "the workspace's settings (Claude Code: .claude/settings.local.json; Codex: .codex/hooks.json; Cursor: .cursor/hooks.json); the default")
	user := fs.Bool("user", false, "your settings for every project (~/.claude/settings.json, ~/.codex/hooks.json, ~/.cursor/hooks.json)")
	dry := fs.Bool("dry-run", false, "print the change, write nothing")
	ws := fs.String("workspace", ".", "the workspace folder (with --project)")
	exe := fs.String("command", "", "the toolsd binary the hook runs (default: this one)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: toolsd hook %s claude|codex|cursor [--project|--user] [--dry-run]\n\nFlags:\n", verb)
		fs.PrintDefaults()
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fs.Usage()
		return 2
	}
	a, err := agenthook.Lookup(args[0])
	if err != nil {
		fmt.Fprintf(stderr, "toolsd hook %s: %v\n", verb, err)
		return 2
	}
	if code, ok := cli.Parse(fs, args[1:], "toolsd hook "+verb, stderr); !ok {
		return code
	}
	if *project && *user {
		fmt.Fprintf(stderr, "toolsd hook %s: say --project or --user, not both\n", verb)
		return 2
	}
	scope := agenthook.ScopeProject
	if *user {
		scope = agenthook.ScopeUser
	}
	home, _ := os.UserHomeDir()
	folder, err := filepath.Abs(*ws)
	if err != nil {
		fmt.Fprintf(stderr, "toolsd hook %s: %v\n", verb, err)
		return 1
	}
	bin := *exe
	if bin == "" {
		if bin, err = os.Executable(); err != nil {
			fmt.Fprintf(stderr, "toolsd hook %s: %v\n", verb, err)
			return 1
		}
	}
	path := a.SettingsPath(scope, folder, home)
	old, err := agenthook.ReadFile(path)
	if err != nil {
		fmt.Fprintf(stderr, "toolsd hook %s: %v\n", verb, err)
		return 1
	}
	updated, err := a.Merge(old, verb == "install", bin)
	if err != nil {
		fmt.Fprintf(stderr, "toolsd hook %s: %s: %v; nothing was changed\n", verb, path, err)
		return 1
	}
	if bytes.Equal(old, updated) || (len(old) == 0 && verb == "uninstall") {
		fmt.Fprintf(stdout, "%s: nothing to change\n", path)
		return 0
	}
	fmt.Fprint(stdout, textdiff.Unified(path, old, updated).Text)
	if *dry {
		fmt.Fprintf(stdout, "(dry run: %s not written)\n", path)
		return 0
	}
	if err := agenthook.WriteFile(path, updated); err != nil {
		fmt.Fprintf(stderr, "toolsd hook %s: %v\n", verb, err)
		return 1
	}
	fmt.Fprintf(stdout, "%s: written\n", path)
	return 0
}
