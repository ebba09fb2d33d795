// Package gctune sets the garbage collector's heap goal and soft memory limit of a process
// that serves a workspace: a goal of at least a floor, so that a daemon with a small live
// heap does not collect every few megabytes it allocates, and a limit that returns memory
// to the system when a burst of allocation outgrows the goal.
//
// With the default GOGC=100 the heap goal is twice the live heap, and at least 4 MiB. The
// daemon's live heap is about 2 MiB and a tools/execute read allocates 50-120 KB, so it
// collected every 12 to 40 calls: under 64 concurrent callers the collector (marking and
// sweeping) took 15-25% of the daemon's CPU. Start raises the goal to GoalFloor while the
// live heap is small, and leaves GOGC=100's rule alone above that. A goal alone costs
// memory (a fixed GOGC=400 took the 1 GiB output benchmark's peak RSS from 70 to 106 MiB,
// the floor alone to 75 MiB): the soft memory limit, LimitFloor or twice the live heap
// and 4 MiB, makes the runtime collect and give pages back early when paging a large output
// allocates megabytes at a time, which kept that peak under the goal of 64 MiB.
//
// Both are set again after every collection, from a cleanup that the runtime runs once the
// collection has found its sentinel unreachable. Nothing is tuned when the environment sets
// GOGC or GOMEMLIMIT: the person who set them decides.
package gctune

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// The smallest heap goal and soft memory limit Start keeps.
const (
	GoalFloor  = 16 << 20
	LimitFloor = 24 << 20
)

var once sync.Once

// Start keeps the heap goal at least GoalFloor, and the memory limit at least LimitFloor,
// for the rest of the process. It is safe to call
// more than once; only the first call does anything.
func Start() {
	once.Do(func() {
		if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
			return
		}
		// Before the first collection the live heap is not known (the metric reads 0):
		// the first reading is the first collection's. Not reading it here also spares the
		// process's start the runtime's building of its metrics table.
		tune(0)
	})
}

var live = []metrics.Sample{{Name: "/gc/heap/live:bytes"}}

// retune sets GOGC and the memory limit for the live heap of the last collection and arms
// the next retune. It runs on the runtime's cleanup goroutine, one at a time.
func retune() {
	metrics.Read(live)
	var n uint64
	if live[0].Value.Kind() == metrics.KindUint64 {
		n = live[0].Value.Uint64()
	}
	tune(n)
}

// tune sets GOGC and the memory limit for a live heap of n bytes, and arms a retune after
// the next collection.
func tune(n uint64) {
	debug.SetGCPercent(Percent(n))
	debug.SetMemoryLimit(Limit(n))
	sentinel := new([16]byte) // not a tiny allocation: those are freed in batches
	runtime.AddCleanup(sentinel, func(struct{}) { retune() }, struct{}{})
}

// Percent is the GOGC that puts the heap goal of a live heap of live bytes at GoalFloor,
// or twice the live heap (GOGC=100) when that is more.
func Percent(live uint64) int {
	if live == 0 || 2*live >= GoalFloor {
		return 100
	}
	return int((GoalFloor - live) * 100 / live)
}

// Limit is the soft memory limit for a live heap of live bytes: LimitFloor, or when that is
// more, GOGC=100's goal (twice the live heap) and limitHeadroom for what is not heap
// (stacks, the runtime's own), so that above the floor it binds only on bursts.
func Limit(live uint64) int64 {
	return int64(max(LimitFloor, 2*live+limitHeadroom))
}

// limitHeadroom is what Limit allows above twice the live heap.
const limitHeadroom = 4 << 20
