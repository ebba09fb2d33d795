// Command toolsd-demo shows the daemon at work on a copy of testdata/workspace.
//
// Package main only parses flags and calls internal/demo.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/toolsd/toolsd/internal/demo"
)

func main() {
	daemon := flag.String("toolsd", "bin/toolsd", "the toolsd binary")
	ws := flag.String("workspace", "testdata/workspace", "the workspace to copy and work on")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	tty := isTerminal(os.Stdin)
	if err := demo.Run(ctx, demo.Options{Daemon: *daemon, Workspace: *ws, In: os.Stdin, Out: os.Stdout, Tty: tty}); err != nil {
		fmt.Fprintln(os.Stderr, "toolsd-demo:", err)
		os.Exit(1)
	}
}
