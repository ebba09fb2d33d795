// Package cpus runs a daemon's Go code on one processor while it answers requests, and lends
// it every processor while it walks a folder tree in parallel (grep, glob, a checkpoint's
// look at the workspace).
//
// A request passes through several goroutines (the frame guard's reader, the JSON-RPC
// library's, the handler, the progress sender). With more than one P, each hand-off wakes an
// idle P's thread, which spins looking for work and sleeps again: on 2 cores shared with the
// editor and the agent, a sequential read cost the daemon 460-520 µs of CPU with GOMAXPROCS=2
// and 300-310 µs with GOMAXPROCS=1, and its round trip went from 520 to 390 µs; under 64
// concurrent callers the calls/s stayed the same and the CPU per call fell by a sixth
// (bench/README.md). The daemon's only parallel work is a walk, which with one P would lose
// 40% of its speed (grep of GOROOT/src: 87 against 150 ms): Lend gives the walks the
// processors the runtime chose (GOMAXPROCS's default, which follows the CPU quota).
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
	full int        // the GOMAXPROCS a walk gets; 0: not managed
	lent int        // walks running
)

// Manage makes the process run on one P from now on, but while walks run (Lend). It is safe
// to call more than once.
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
	lent++
	if lent == 1 {
		runtime.GOMAXPROCS(full)
	}
	return sync.OnceFunc(func() {
		mu.Lock()
		defer mu.Unlock()
		lent--
		if lent == 0 {
			runtime.GOMAXPROCS(1)
		}
	})
}
