package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/toolsd/toolsd/acp"
	"github.com/toolsd/toolsd/attach"
	"github.com/toolsd/toolsd/internal/cli"
	"github.com/toolsd/toolsd/internal/proc"
)

// agentGrace is how long the agent has to exit after the editor left, and then after SIGTERM.
const agentGrace = 3 * time.Second

// eofSignal closes eof when its reader ends.
type eofSignal struct {
	r    io.Reader
	eof  chan struct{}
	once sync.Once
}

func (e *eofSignal) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil {
		e.once.Do(func() { close(e.eof) })
	}
	return n, err
}

// runACP is "toolsd acp -- AGENT...": an ACP agent on stdin and stdout for the editor, in
// front of the ACP agent it spawns (docs/acp.md).
func runACP(args []string, stdin io.Reader, stdout io.Writer, stderr io.Writer) int {
	fs := flag.NewFlagSet("toolsd acp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	df := newDaemonFlags(fs)
	folderFlag := fs.String("workspace", "", "workspace folder (default: the current directory)")
	agentID := fs.String("agent", "", "the agent's id in the record and for its rules (config \"agents\"; default: the command's name)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: toolsd acp [flags] -- AGENT [ARGS...]\n\ntoolsd acp speaks ACP (the Agent Client Protocol) on stdin/stdout to the editor and runs AGENT,\nan ACP agent, behind it: the workspace's rules decide the agent's permission requests, its\nsessions get toolsd's tools (toolsd mcp), and its tool calls go in the record. See docs/acp.md.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	command := fs.Args()
	if len(command) == 0 {
		fmt.Fprintln(stderr, "toolsd acp: no agent to run: give its command after --, e.g. toolsd acp -- claude-code-acp")
		return 2
	}
	df.absolute()
	logger, _, closeLog, err := cli.Logger(*df.logFile, *df.logLevel, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "toolsd acp: %v\n", err)
		return 2
	}
	defer closeLog()
	folder := *folderFlag
	if folder == "" {
		folder, _ = os.Getwd()
	}
	if folder, err = filepath.Abs(folder); err != nil {
		fmt.Fprintf(stderr, "toolsd acp: %v\n", err)
		return 1
	}
	name := filepath.Base(command[0])
	if *agentID == "" {
		*agentID = strings.TrimSuffix(name, filepath.Ext(name))
	}
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	mcpArgs := []string{"mcp", "--workspace", folder, "--agent", *agentID}
	if *df.store != "" {
		mcpArgs = append(mcpArgs, "--store", *df.store)
	}

	// The ask route of this proxy: its asks, and those of the toolsd mcp it adds to its
	// agent's sessions, are shown in this editor alone.
	var rb [16]byte
	_, _ = rand.Read(rb[:])
	route := hex.EncodeToString(rb[:])
	var daemon io.ReadWriteCloser
	if !df.isStandalone() {
		paths, real, err := attach.Locate(folder, *df.store)
		if err == nil {
			var c *attach.Conn
			c, err = attach.Dial(attach.DialOptions{Paths: paths, Hello: attach.Hello{Proto: attach.ProtoToolsd, PID: os.Getpid(), Flags: df.shaping(), Route: route},
				Owner: df.ownerCmd(real), Timeout: attach.DefaultDialTimeout})
			if err == nil {
				daemon = c
			}
		}
		if err != nil {
			logger.Warn("cannot attach to the workspace's daemon: the editor decides the agent's permission requests", "err", err)
		}
	}

	// The agent's whole process group is stopped (proc.Command): SIGTERM when stopAgent is
	// called, SIGKILL agentGrace later, and what is left of it once the agent was waited for.
	agentCtx, stopAgent := context.WithCancel(context.Background())
	defer stopAgent()
	cmd := proc.Command(agentCtx, agentGrace, command[0], command[1:]...)
	cmd.Stderr = stderr
	agentIn, err := cmd.StdinPipe()
	if err != nil {
		fmt.Fprintf(stderr, "toolsd acp: %v\n", err)
		return 1
	}
	agentOut, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintf(stderr, "toolsd acp: %v\n", err)
		return 1
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "toolsd acp: starting the agent %s failed: %v\n", command[0], err)
		return 1
	}
	defer proc.KillGroup(cmd)
	// When the editor leaves, the agent's stdin ends; an agent that does not exit of itself
	// then, or whose children hold its stdout (a background process it started), is stopped
	// with its process group, as the editor would stop it. A process that left the group and
	// still holds the agent's stdout is not waited for.
	editorGone, agentDone := make(chan struct{}), make(chan struct{})
	defer close(agentDone)
	go func() {
		select {
		case <-editorGone:
		case <-agentDone:
			return
		}
		grace := func() bool {
			select {
			case <-time.After(agentGrace):
				return true
			case <-agentDone:
				return false
			}
		}
		if !grace() {
			return
		}
		stopAgent() // SIGTERM to the group, and SIGKILL agentGrace later
		if grace() && grace() {
			_ = agentOut.Close()
		}
	}()
	err = acp.Run(context.Background(), acp.Options{
		Editor: &eofSignal{r: stdin, eof: editorGone}, EditorOut: stdout, Agent: agentOut, AgentIn: agentIn, Daemon: daemon,
		Folder: folder, AgentID: *agentID, AgentName: name, Version: version, Logger: logger, Route: route,
		MCP: &acp.MCPServer{Name: "toolsd", Command: exe, Args: mcpArgs},
	})
	if err != nil {
		logger.Warn("reading the agent failed", "err", err)
	}
	_ = agentIn.Close()
	if err := cmd.Wait(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		return 1
	}
	return 0
}
