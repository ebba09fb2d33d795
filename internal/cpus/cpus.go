// Package cpus runs a daemon's Go code on one processor, and lends it every processor while it
// walks a folder tree in parallel (grep, glob, a checkpoint's look at the workspace).
//
// A request passes through several goroutines (the frame guard's reader, the JSON-RPC
// library's, the handler, the progress sender). With more than one P, each hand-off can wake
// an idle P's thread, which spins looking for work and sleeps again. On 2 cores shared with
// the editor and the agent, a sequential read cost the daemon 440-520 µs of CPU with
// GOMAXPROCS=2 and 290-310 µs with 1 (bench/README.md). Calls side by side used to get every
// processor; since the pipeline became cheap enough for one processor to serve about 15,000
// reads a second, every processor only cost 64 concurrent reads 10-25% more CPU each, for no
// more reads a second (vscode-jsonrpc: 57-72 against 74-79 µs; the Go harness: 78-79 against
// 87-94 µs). So one processor serves the calls, however many run at once, from the start
// (Manage runs after the runtime's and the packages' initialisation, which keep every
// processor; spawn to the initialize result is the same either way). A walk, which with one
// P would lose 40% of its speed (grep of GOROOT/src: 87 against 150 ms), has them all while
// it runs. "Every processor" is GOMAXPROCS's default, which follows the CPU quota.
//
// Nothing is managed when the environment sets GOMAXPROCS, or where there is one processor.
package cpus

import (
	"os"
	"runtime"
	"sync"
)

var (
	mu   sync.Mutex // guards full and lent, and orders the changes of GOMAXPROCS
	full int        // the GOMAXPROCS of busy times; 0: not managed
	lent int        // walks running
)

// Manage makes the process run on one processor but while a walk runs (Lend). It is safe to
// call more than once.
func Manage() {
	if os.Getenv("GOMAXPROCS") != "" {
		return
	}
	mu.Lock()
	defer mu.Unlock()
	if full != 0 {
		return
	}
	n := runtime.GOMAXPROCS(0)
	if n <= 1 {
		return
	}
	full = n
	if lent == 0 {
		runtime.GOMAXPROCS(1)
	}
}

// Lend gives the process every processor until the returned function is called (at most once
// counts), for work spread over several goroutines. It does nothing unless Manage was called.
func Lend() (done func()) {
	mu.Lock()
	defer mu.Unlock()
	if full == 0 {
		return func() {}
	}
	lendLocked()
	return sync.OnceFunc(func() {
		mu.Lock()
		defer mu.Unlock()
		returnLocked()
	})
}

func lendLocked() {
	lent++
	if lent == 1 {
		runtime.GOMAXPROCS(full)
	}
}

func returnLocked() {
	lent--
	if lent == 0 {
		runtime.GOMAXPROCS(1)
	}
}
