// Command toolsd is the tool runtime sidecar: spawned by an editor, it serves the toolsd
// protocol (JSON-RPC 2.0, LSP framing) on stdin and stdout; "toolsd mcp" serves MCP the
// same way for agents. By default both attach to the one daemon that owns the workspace
// folder ("toolsd __owner", started on demand; see the attach package and
// docs/architecture.md), and hand it their standard streams (on Windows, relay them).
//
// Package main only parses flags and calls into the packages; see docs/architecture.md.
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsd/toolsd/attach"
	"github.com/toolsd/toolsd/internal/cli"
	"github.com/toolsd/toolsd/internal/proc"
	"github.com/toolsd/toolsd/mcpserver"
	"github.com/toolsd/toolsd/policy"
	"github.com/toolsd/toolsd/protocol"
	"github.com/toolsd/toolsd/rpc"
	"github.com/toolsd/toolsd/session"
	"github.com/toolsd/toolsd/store"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// ownerArg is the hidden mode of the workspace's owner.
const ownerArg = "__owner"

// standaloneEnv, set to 1, makes every mode serve by itself instead of attaching.
const standaloneEnv = "TOOLSD_STANDALONE"

func main() {
	proc.MaybeRunHelper()
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "sandbox":
			os.Exit(sandboxCmd(os.Args[2:], os.Stdout, os.Stderr))
		case "policy":
			os.Exit(policy.Main(os.Args[2:], os.Stdout, os.Stderr))
		case "checkpoints":
			os.Exit(checkpointsCmd(os.Args[2:], os.Stdout, os.Stderr))
		case "mcp":
			os.Exit(runMCP(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
		case "hook":
			os.Exit(runHook(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
		case "acp":
			os.Exit(runACP(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
		case ownerArg:
			os.Exit(runOwner(os.Args[2:], os.Stderr))
		}
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
		proc.SetGuardPath(guardFor(exe))
	}
	abs, err := filepath.Abs(*ws)
	if err == nil {
		var out string
		if out, err = session.SandboxCheck(abs); err == nil {
			fmt.Fprint(stdout, out)
			fmt.Fprintf(stdout, "  guard and stage: %s\n", proc.GuardPath())
			return 0
		}
	}
	fmt.Fprintf(stderr, "toolsd sandbox check: %v\n", err)
	return 1
}

// checkpointsCmd is `toolsd checkpoints check [--workspace DIR]`: whether the change journal
// fits in the kernel's inotify limits for the workspace, and the fix when it does not.
func checkpointsCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "check" {
		fmt.Fprintln(stderr, "usage: toolsd checkpoints check [--workspace DIR]")
		return 2
	}
	fs := flag.NewFlagSet("toolsd checkpoints check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ws := fs.String("workspace", ".", "the workspace folder")
	if code, ok := cli.Parse(fs, args[1:], "toolsd checkpoints check", stderr); !ok {
		return code
	}
	abs, err := filepath.Abs(*ws)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err == nil {
		var out string
		if out, err = session.CheckpointsCheck(abs); err == nil {
			fmt.Fprint(stdout, out)
			return 0
		}
	}
	fmt.Fprintf(stderr, "toolsd checkpoints check: %v\n", err)
	return 1
}

// flagSet reports whether the command line set the flag.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// daemonFlags are the flags every mode shares: those that shape the owner are passed to an
// owner this process starts, and compared by an owner this process attaches to.
type daemonFlags struct {
	fs         *flag.FlagSet
	store      *string
	logFile    *string
	logLevel   *string
	maxMessage *int
	retention  *time.Duration
	sync       *bool
	grace      *time.Duration
	standalone *bool
}

func newDaemonFlags(fs *flag.FlagSet) *daemonFlags {
	return &daemonFlags{
		fs:         fs,
		store:      fs.String("store", "", "store file (default: one per workspace under $XDG_STATE_HOME/toolsd)"),
		logFile:    fs.String("log-file", "", "write logs to this file instead of stderr (the daemon that owns the workspace: instead of its log in the runtime folder)"),
		logLevel:   fs.String("log-level", "info", "log level: debug, info, warn, error"),
		maxMessage: fs.Int("max-message", 0, "largest JSON-RPC message accepted, in bytes (default: the setting limits.maxMessageBytes, 8 MiB)"),
		retention:  fs.Duration("retention", 0, "how long full outputs are kept (default: the setting retentionDays, 7 days)"),
		sync:       fs.Bool("sync", false, "fsync every store commit (survive power loss, not only crashes)"),
		grace:      fs.Duration("grace", attach.DefaultGrace, "how long the daemon that owns the workspace outlives its last client"),
		standalone: fs.Bool("standalone", false, "serve this client alone instead of attaching to the workspace's daemon (also TOOLSD_STANDALONE=1)"),
	}
}

// absolute makes the path flags absolute (an owner runs in /).
func (d *daemonFlags) absolute() {
	for _, p := range []*string{d.store, d.logFile} {
		if *p != "" {
			if a, err := filepath.Abs(*p); err == nil {
				*p = a
			}
		}
	}
}

func (d *daemonFlags) isStandalone() bool {
	return *d.standalone || os.Getenv(standaloneEnv) == "1"
}

// shaping are the flags an owner is started with, as Hello.Flags compares them.
func (d *daemonFlags) shaping() map[string]string {
	return map[string]string{
		"store": *d.store, "log-file": *d.logFile, "max-message": strconv.Itoa(*d.maxMessage),
		"retention": d.retention.String(), "sync": strconv.FormatBool(*d.sync), "grace": d.grace.String(),
	}
}

// ownerCmd returns the command that starts the owner of folder with these flags.
func (d *daemonFlags) ownerCmd(folder string) func() *exec.Cmd {
	return func() *exec.Cmd {
		exe, err := os.Executable()
		if err != nil {
			exe = os.Args[0]
		}
		args := []string{ownerArg, "--workspace", folder,
			"--max-message", strconv.Itoa(*d.maxMessage), "--retention", d.retention.String(),
			"--sync=" + strconv.FormatBool(*d.sync), "--grace", d.grace.String()}
		if *d.store != "" {
			args = append(args, "--store", *d.store)
		}
		if *d.logFile != "" {
			args = append(args, "--log-file", *d.logFile)
		}
		if flagSet(d.fs, "log-level") {
			args = append(args, "--log-level", *d.logLevel)
		}
		return exec.Command(exe, args...)
	}
}

// forward hands this process's standard streams (and prefix, input already read from
// stdin) to the owner of folder, starting it if needed, and waits until it has served
// them. It returns the exit code, or an error when no owner could take them (then nothing
// was consumed but prefix).
func (d *daemonFlags) forward(folder string, h attach.Hello, stdin, stdout any, prefix []byte, logger *slog.Logger, stderr io.Writer, name, hint string) (int, error) {
	in, ok1 := stdin.(*os.File)
	out, ok2 := stdout.(*os.File)
	if !ok1 || !ok2 {
		return 0, fmt.Errorf("standard streams are not files")
	}
	paths, real, err := attach.Locate(folder, *d.store)
	if err != nil {
		return 0, err
	}
	h.PID, h.Flags = os.Getpid(), d.shaping()
	c, err := attach.Dial(attach.DialOptions{Paths: paths, Hello: h, Owner: d.ownerCmd(real), Streams: [2]*os.File{in, out}, Prefix: prefix})
	if err != nil {
		return 0, err
	}
	defer c.Close()
	logger.Debug("attached to the workspace's daemon", "pid", c.Welcome.PID, "log", c.Welcome.Log)
	if c.Welcome.Version != version {
		logger.Warn("the workspace's daemon is another version of toolsd; it serves this client until it exits", "daemon", c.Welcome.Version, "this", version, "pid", c.Welcome.PID)
	}
	// The owner reads and writes our streams itself (on Windows, Wait relays them); we wait
	// for its word.
	code, ok := c.Wait()
	if !ok {
		fmt.Fprintf(stderr, "%s: the daemon that owns the workspace (pid %d) went away (crashed or was killed); %s\n", name, c.Welcome.PID, hint)
	}
	return code, nil
}

func run(args []string, stdin io.ReadCloser, stdout io.WriteCloser, stderr io.Writer) int {
	fs := flag.NewFlagSet("toolsd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	df := newDaemonFlags(fs)
	showVer := fs.Bool("version", false, "print the version and exit")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: toolsd [flags]\n\ntoolsd serves the toolsd protocol (JSON-RPC 2.0 with LSP framing) on stdin/stdout.\nAn editor spawns it once per window; every window and agent of a workspace shares the\none daemon that owns it (see docs/protocol.md).\n\n       toolsd mcp [--workspace DIR] [--store PATH]\nserves the workspace's tools as an MCP server on stdin/stdout; see docs/mcp.md.\n\n       toolsd policy check|test [--workspace DIR] [--json] ...\nprints what the permission rules decide for a call, and why, or tests the examples next to them; see docs/permissions.md.\n\n       toolsd sandbox check [--workspace DIR]\nprints what this kernel offers the sandbox and the policy a command would run with; see docs/sandbox.md.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if code, ok := cli.Parse(fs, args, "toolsd", stderr); !ok {
		return code
	}
	if *showVer {
		fmt.Fprintf(stdout, "toolsd %s\n", version)
		return 0
	}
	df.absolute()
	logger, level, closeLog, err := cli.Logger(*df.logFile, *df.logLevel, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "toolsd: %v\n", err)
		return 2
	}
	defer closeLog()

	// The folder is known once initialize arrives: read that frame, attach, pass it on.
	var in io.Reader = stdin
	if !df.isStandalone() {
		limit := *df.maxMessage
		if limit <= 0 {
			limit = rpc.DefaultMaxMessage
		}
		br := bufio.NewReaderSize(in, 64<<10)
		raw, folder := attach.FirstFrame(br, limit)
		in = io.MultiReader(bytes.NewReader(raw), br)
		if folder != "" {
			// Hand over what was read, including input buffered past the first frame.
			buffered, _ := br.Peek(br.Buffered())
			code, err := df.forward(folder, attach.Hello{Proto: attach.ProtoToolsd}, stdin, stdout, append(raw, buffered...), logger, stderr,
				"toolsd", "the editor restarts toolsd")
			if err == nil {
				return code
			}
			logger.Warn("cannot attach to the workspace's daemon; serving this editor alone", "err", err)
		}
	}
	defer serving()()
	// Without --log-level, the settings' logLevel applies (and follows config reloads).
	var levelSetting *slog.LevelVar
	if !flagSet(fs, "log-level") {
		levelSetting = level
	}
	open := func(ctx context.Context, p protocol.InitializeParams, n rpc.Notifier) (rpc.Backend, error) {
		return session.Open(ctx, session.WorkspaceOptions{
			Folder: p.WorkspaceFolder, StorePath: *df.store, InitOptions: p.InitializationOptions, Logger: logger, LogLevel: levelSetting, Version: version,
			Store: &store.Options{Retention: *df.retention, Sync: *df.sync, Logger: logger},
		}, attach.EditorClient(p, n))
	}
	logger.Info("toolsd starting", "version", version, "pid", os.Getpid(), "standalone", true)
	code := rpc.Serve(context.Background(), in, stdout, func() error {
		_ = stdin.Close()
		return stdout.Close()
	}, rpc.Options{Version: version, MaxMessage: *df.maxMessage, Open: open, Logger: logger})
	logger.Info("toolsd exiting", "code", code)
	return code
}

// runMCP is "toolsd mcp": MCP on stdin and stdout for the workspace's agents.
func runMCP(args []string, stdin io.Reader, stdout io.Writer, stderr io.Writer) int {
	fs := flag.NewFlagSet("toolsd mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	df := newDaemonFlags(fs)
	folderFlag := fs.String("workspace", "", "workspace folder (default: the current directory)")
	agent := fs.String("agent", "", "agent whose tool switches and permission rules apply (config \"agents\")")
	route := fs.String("route", "", "set by toolsd acp when it adds this server to its agent's session: its asks go to that ACP editor alone")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: toolsd mcp [flags]\n\ntoolsd mcp serves the workspace's tools as an MCP server on stdin/stdout\n(for VS Code's agent mode and other MCP clients), through the daemon that owns\nthe workspace; see docs/mcp.md.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if code, ok := cli.Parse(fs, args, "toolsd mcp", stderr); !ok {
		return code
	}
	df.absolute()
	logger, _, closeLog, err := cli.Logger(*df.logFile, *df.logLevel, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "toolsd mcp: %v\n", err)
		return 2
	}
	defer closeLog()
	folder, err := mcpserver.Folder(*folderFlag)
	if err != nil {
		fmt.Fprintf(stderr, "toolsd mcp: %v\n", err)
		return 1
	}
	if !df.isStandalone() {
		code, err := df.forward(folder, attach.Hello{Proto: attach.ProtoMCP, Agent: *agent, Route: *route}, stdin, stdout, nil, logger, stderr,
			"toolsd mcp", "this MCP session is lost: restart the MCP server (your agent's reconnect starts a new daemon)")
		if err == nil {
			return code
		}
		logger.Warn("cannot attach to the workspace's daemon; serving this agent alone", "err", err)
	}
	defer serving()()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	err = mcpserver.Serve(ctx, &sdk.StdioTransport{}, mcpserver.Options{
		Folder: folder, StorePath: *df.store, Store: &store.Options{Retention: *df.retention, Sync: *df.sync, Logger: logger},
		Agent: *agent, Route: *route, Version: version, Logger: logger,
	})
	if err != nil {
		fmt.Fprintf(stderr, "toolsd mcp: %v\n", err)
		return 1
	}
	return 0
}

// runOwner is "toolsd __owner": the daemon that owns one workspace folder, started detached
// by the first client (see the attach package).
func runOwner(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("toolsd "+ownerArg, flag.ContinueOnError)
	fs.SetOutput(stderr)
	df := newDaemonFlags(fs)
	folder := fs.String("workspace", "", "the workspace folder to own")
	if code, ok := cli.Parse(fs, args, "toolsd "+ownerArg, stderr); !ok {
		return code
	}
	df.absolute()
	var ready io.WriteCloser
	if fd, err := strconv.Atoi(os.Getenv(attach.ReadyFDEnv)); err == nil && fd > 2 {
		ready = os.NewFile(uintptr(fd), "ready")
		_ = os.Unsetenv(attach.ReadyFDEnv) // not for tool processes
	}
	logPath := *df.logFile
	if logPath == "" {
		if paths, _, err := attach.Locate(*folder, *df.store); err == nil {
			logPath = paths.Log
		}
	}
	logger, level, closeLog, err := cli.Logger(logPath, *df.logLevel, stderr)
	if err != nil {
		if ready != nil {
			fmt.Fprintf(ready, "error: %v\n", err)
		}
		return 2
	}
	defer closeLog()
	defer serving()()
	var levelSetting *slog.LevelVar
	if !flagSet(fs, "log-level") {
		levelSetting = level
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	logger.Info("toolsd owner starting", "version", version, "pid", os.Getpid(), "folder", *folder)
	return attach.RunOwner(ctx, attach.OwnerOptions{
		Folder: *folder, StorePath: *df.store, MaxMessage: *df.maxMessage, Grace: *df.grace,
		Store: store.Options{Retention: *df.retention, Sync: *df.sync, Logger: logger},
		Flags: df.shaping(), Version: version, Logger: logger, LogLevel: levelSetting, LogPath: logPath, Ready: ready,
	})
}

// serving readies the runtime of a process that serves a workspace: its tools start through
// the guard (toolsd-guard next to this binary, else this binary), and the collector runs
// when the heap has grown by half the live heap (GOGC=50) rather than doubled, unless GOGC
// says otherwise: the pages of a large output pass through the heap a megabyte at a time,
// and with the default the daemon's memory doubles while it pages. A goal, unlike a memory
// limit, scales with the live heap, so a large workspace's index never makes the collector
// run without end. With TOOLSD_CPUPROFILE=PATH, for performance work, it profiles the
// process's CPU until the returned function runs, into PATH.<pid>.
func serving() (stop func()) {
	if exe, err := os.Executable(); err == nil {
		proc.SetGuardPath(guardFor(exe))
	}
	proc.SetWarm(true)
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(50)
	}
	if path := os.Getenv("TOOLSD_CPUPROFILE"); path != "" {
		if f, err := os.Create(fmt.Sprintf("%s.%d", path, os.Getpid())); err == nil && pprof.StartCPUProfile(f) == nil {
			return func() { pprof.StopCPUProfile(); _ = f.Close() }
		}
	}
	return func() {}
}
