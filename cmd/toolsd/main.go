// Command toolsd is the tool runtime sidecar: spawned by an editor, it serves the toolsd
// protocol (JSON-RPC 2.0, LSP framing) on stdin and stdout.
//
// Package main only parses flags and calls into the packages; see docs/architecture.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"
	"syscall"

	"github.com/toolsd/toolsd/internal/cli"
	"github.com/toolsd/toolsd/internal/proc"
	"github.com/toolsd/toolsd/internal/sandbox"
	"github.com/toolsd/toolsd/mcpserver"
	"github.com/toolsd/toolsd/policy"
	"github.com/toolsd/toolsd/protocol"
	"github.com/toolsd/toolsd/rpc"
	"github.com/toolsd/toolsd/session"
	"github.com/toolsd/toolsd/store"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

func main() {
	if len(os.Args) > 1 && os.Args[1] == proc.GuardArg {
		os.Exit(proc.RunGuard(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == sandbox.StageArg {
		os.Exit(sandbox.RunStage(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "sandbox" {
		os.Exit(sandboxCmd(os.Args[2:], os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "mcp" {
		os.Exit(mcpserver.Main(os.Args[2:], version, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "policy" {
		os.Exit(policy.Main(os.Args[2:], os.Stdout, os.Stderr))
	}
	os.Exit(run(os.Args[1:], pollable(0, "/dev/stdin", os.Stdin), pollable(1, "/dev/stdout", os.Stdout), os.Stderr))
}

// sandboxCmd is `toolsd sandbox check [--workspace DIR]`: what the kernel offers the sandbox
// and the policy a command would run with.
func sandboxCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "check" {
		fmt.Fprintln(stderr, "usage: toolsd sandbox check [--workspace DIR]")
		return 2
	}
	fs := flag.NewFlagSet("toolsd sandbox check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ws := fs.String("workspace", ".", "the workspace folder")
	if code, ok := cli.Parse(fs, args[1:], "toolsd sandbox check", stderr); !ok {
		return code
	}
	if exe, err := os.Executable(); err == nil {
		proc.SetGuardPath(exe)
	}
	abs, err := filepath.Abs(*ws)
	if err == nil {
		var out string
		if out, err = session.SandboxCheck(abs); err == nil {
			fmt.Fprint(stdout, out)
			return 0
		}
	}
	fmt.Fprintf(stderr, "toolsd sandbox check: %v\n", err)
	return 1
}

// flagSet reports whether the command line set the flag.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// pollable returns the standard stream fd as a file in non-blocking mode when it is a pipe or
// a socket (as when an editor spawns the daemon), so that Go's poller serves it and closing
// it at shutdown interrupts a pending read instead of waiting for the editor. A terminal or
// a regular file is left as it is (its mode is shared with the shell that started us).
func pollable(fd int, name string, f *os.File) *os.File {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return f
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFIFO && st.Mode&syscall.S_IFMT != syscall.S_IFSOCK {
		return f
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		return f
	}
	return os.NewFile(uintptr(fd), name)
}

func run(args []string, stdin io.ReadCloser, stdout io.WriteCloser, stderr io.Writer) int {
	fs := flag.NewFlagSet("toolsd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		storePath  = fs.String("store", "", "store file (default: one per workspace under $XDG_STATE_HOME/toolsd)")
		logFile    = fs.String("log-file", "", "write logs to this file instead of stderr")
		logLevel   = fs.String("log-level", "info", "log level: debug, info, warn, error")
		maxMessage = fs.Int("max-message", 0, "largest JSON-RPC message accepted, in bytes (default: the setting limits.maxMessageBytes, 8 MiB)")
		retention  = fs.Duration("retention", 0, "how long full outputs are kept (default: the setting retentionDays, 7 days)")
		syncStore  = fs.Bool("sync", false, "fsync every store commit (survive power loss, not only crashes)")
		showVer    = fs.Bool("version", false, "print the version and exit")
	)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: toolsd [flags]\n\ntoolsd serves the toolsd protocol (JSON-RPC 2.0 with LSP framing) on stdin/stdout.\nAn editor spawns it once per workspace; see docs/protocol.md.\n\n       toolsd mcp [--workspace DIR] [--store PATH]\nserves the workspace's tools as an MCP server on stdin/stdout; see docs/mcp.md.\n\n       toolsd policy check|test [--workspace DIR] [--json] ...\nprints what the permission rules decide for a call, and why, or tests the examples next to them; see docs/permissions.md.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if code, ok := cli.Parse(fs, args, "toolsd", stderr); !ok {
		return code
	}
	if *showVer {
		fmt.Fprintf(stdout, "toolsd %s\n", version)
		return 0
	}
	logger, level, closeLog, err := cli.Logger(*logFile, *logLevel, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "toolsd: %v\n", err)
		return 2
	}
	defer closeLog()
	if exe, err := os.Executable(); err == nil {
		proc.SetGuardPath(exe)
	}

	// Without --log-level, the settings' logLevel applies (and follows config reloads).
	var levelSetting *slog.LevelVar
	if !flagSet(fs, "log-level") {
		levelSetting = level
	}
	open := func(ctx context.Context, p protocol.InitializeParams, n rpc.Notifier) (rpc.Backend, error) {
		canAsk := p.Capabilities != nil && p.Capabilities.Ask
		client := ""
		if p.ClientInfo != nil {
			client = p.ClientInfo.Name
		}
		return session.OpenWorkspace(ctx, session.WorkspaceOptions{
			Folder: p.WorkspaceFolder, StorePath: *storePath, CanAsk: canAsk, Client: client, Version: version, Notifier: n, Changed: n.Changed,
			InitOptions: p.InitializationOptions, Logger: logger, LogLevel: levelSetting,
			Store: &store.Options{Retention: *retention, Sync: *syncStore, Logger: logger},
		})
	}
	if path := os.Getenv("TOOLSD_CPUPROFILE"); path != "" {
		// For performance work: a CPU profile of the whole run, written at exit to PATH.<pid>.
		if f, err := os.Create(fmt.Sprintf("%s.%d", path, os.Getpid())); err == nil && pprof.StartCPUProfile(f) == nil {
			defer func() { pprof.StopCPUProfile(); _ = f.Close() }()
		}
	}
	logger.Info("toolsd starting", "version", version, "pid", os.Getpid())
	code := rpc.Serve(context.Background(), stdin, stdout, func() error {
		_ = stdin.Close()
		return stdout.Close()
	}, rpc.Options{Version: version, MaxMessage: *maxMessage, Open: open, Logger: logger})
	logger.Info("toolsd exiting", "code", code)
	return code
}
