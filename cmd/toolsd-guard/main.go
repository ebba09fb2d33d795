// Command toolsd-guard is the lean start of the processes toolsd runs each tool through: the
// guard (internal/proc) and the sandbox's stage (internal/sandbox), linked without the
// daemon's packages, so that neither pays the daemon binary's start. toolsd uses it when it
// lies next to toolsd's own executable and was built from the same sources, and otherwise
// starts its own binary in these modes; see docs/architecture.md ("The processes toolsd
// starts").
//
// Package main only parses the guard's and the stage's flags and calls internal/proc and
// internal/sandbox.
package main

import (
	"fmt"
	"os"

	"github.com/toolsd/toolsd/internal/proc"
)

func main() {
	proc.MaybeRunHelper()
	fmt.Fprintln(os.Stderr, "toolsd-guard: toolsd starts this program to run its tools; it is not for running by hand")
	os.Exit(2)
}
