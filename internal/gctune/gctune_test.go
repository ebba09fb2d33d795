package gctune

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
)

func TestPercent(t *testing.T) {
	for _, tc := range []struct {
		live uint64
		want int
	}{
		{0, 100},                   // no collection yet: the default
		{GoalFloor / 2, 100},       // twice the live heap is the floor
		{GoalFloor, 100},           // above it: GOGC=100's rule
		{64 << 20, 100},            // far above it
		{2 << 20, 700},             // 2 MiB live: goal 16 MiB
		{4 << 20, 300},             // 4 MiB live: goal 16 MiB
		{GoalFloor/2 - 1<<20, 128}, // just under half the floor
	} {
		if got := Percent(tc.live); got != tc.want {
			t.Errorf("Percent(%d) = %d, want %d", tc.live, got, tc.want)
		}
	}
}

func TestLimit(t *testing.T) {
	for _, tc := range []struct {
		live uint64
		want int64
	}{
		{0, LimitFloor},
		{2 << 20, LimitFloor},
		{10 << 20, LimitFloor},
		{12 << 20, 28 << 20}, // above the floor: GOGC=100's goal and the headroom
		{100 << 20, 204 << 20},
	} {
		if got := Limit(tc.live); got != tc.want {
			t.Errorf("Limit(%d) = %d, want %d", tc.live, got, tc.want)
		}
	}
}

func gogc() int64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// TestRetunedAfterCollections checks that the goal is set again after a collection: GOGC
// put back to 100 by hand is raised again once the heap, small in a test, is collected.
func TestRetunedAfterCollections(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	defer debug.SetGCPercent(100)
	defer debug.SetMemoryLimit(math.MaxInt64)
	Start()
	debug.SetGCPercent(100)
	// The cleanup runs on the runtime's cleanup goroutine after the collection that found
	// its sentinel unreachable: collect until it has run, within a bound.
	for i := 0; i < 1000; i++ {
		runtime.GC()
		runtime.Gosched()
		if gogc() > 100 {
			return
		}
	}
	t.Fatalf("GOGC is %d after 1000 collections with a small live heap, want it raised", gogc())
}
