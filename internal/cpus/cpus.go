// Package cpus runs a daemon's Go code on one processor while it serves one call at a time,
// and lends it every processor while it serves several at once or walks a folder tree in
// parallel (grep, glob, a checkpoint's look at the workspace).
//
// A request passes through several goroutines (the frame guard's reader, the JSON-RPC
// library's, the handler, the progress sender). With more than one P and nothing else to
// run, each hand-off wakes an idle P's thread, which spins looking for work and sleeps again:
// on 2 cores shared with the editor and the agent, a sequential read cost the daemon
// 440-520 µs of CPU with GOMAXPROCS=2 and 290-310 µs with 1, and its round trip fell from
// 480 to 370 µs (bench/README.md). When calls run side by side the Ps have work and do not
// spin, and one P would serialise them (with one P throughout, one run in three of the
// 64-caller benchmark went a third slower), so a daemon starts with every processor, goes
// down to one once its calls have not overlapped for idleAfter, and gets them all back as
// soon as two calls overlap. A walk, which with one P would lose 40% of its speed (grep of
// GOROOT/src: 87 against 150 ms), has them while it runs. "Every processor" is GOMAXPROCS's
// default, which follows the CPU quota.
//
// Nothing is managed when the environment sets GOMAXPROCS, or where there is one processor.
package cpus

import (
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// idleAfter is how long calls must not have overlapped before the process goes back to one
// processor: changing GOMAXPROCS stops the world (about 40 µs here), so a burst of calls
// does not flip it back and forth.
var idleAfter = 100 * time.Millisecond // a variable for the tests

var (
	mu      sync.Mutex // guards full, lent and release, and orders the changes of GOMAXPROCS
	full    int        // the GOMAXPROCS of busy times; 0: not managed
	lent    int        // walks running, plus one while calls run side by side
	release *time.Timer
	armed   bool // release is due

	// Begin and End, at every call, only count unless they cross one (many calls run side
	// by side: the mutex would be their common point).
	managed atomic.Bool
	calls   atomic.Int64 // calls running
	busy    atomic.Bool  // the lend of side-by-side calls is held (changed under mu)
	overlap atomic.Int64 // when calls last overlapped (Unix nanoseconds)
)

// Manage makes the process run on one processor once its calls stop overlapping (Begin,
// End), but while a walk runs (Lend). It is safe to call more than once.
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
	// Busy until the first call has run alone for idleAfter: a daemon's first moments
	// (opening the workspace, the first round's calls) are not one call at a time.
	busy.Store(true)
	lent++
	managed.Store(true)
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

// Begin says a call starts; End, that it ended.
func Begin() {
	if calls.Add(1) <= 1 || !managed.Load() {
		return
	}
	overlap.Store(time.Now().UnixNano())
	if !busy.Load() {
		mu.Lock()
		if !busy.Load() {
			busy.Store(true)
			lendLocked()
		}
		mu.Unlock()
	}
}

// End says a call ended (see Begin).
func End() {
	if calls.Add(-1) > 1 || !busy.Load() {
		return
	}
	mu.Lock()
	defer mu.Unlock()
	if armed {
		return
	}
	armed = true
	if release == nil {
		release = time.AfterFunc(idleAfter, idle)
	} else {
		release.Reset(idleAfter)
	}
}

// idle gives the side-by-side calls' processors back once calls have not overlapped for
// idleAfter, or looks again when that will be.
func idle() {
	mu.Lock()
	defer mu.Unlock()
	armed = false
	if !busy.Load() {
		return
	}
	if wait := idleAfter - time.Since(time.Unix(0, overlap.Load())); wait > 0 || calls.Load() > 1 {
		armed = true
		release.Reset(max(wait, idleAfter/10))
		return
	}
	busy.Store(false)
	returnLocked()
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
