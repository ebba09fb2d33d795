package cpus

import (
	"runtime"
	"sync"
	"testing"
	"time"
)

// manage resets the package and manages the process for one test, restoring GOMAXPROCS, and
// waits for it to go down to one processor after a first call.
func manage(t *testing.T) int {
	t.Helper()
	before := runtime.GOMAXPROCS(0)
	if before < 2 {
		t.Skip("one processor: nothing to manage")
	}
	t.Setenv("GOMAXPROCS", "") // the environment may not set it for Manage to act
	reset := func() {
		mu.Lock()
		if release != nil {
			release.Stop()
		}
		full, lent, release, armed = 0, 0, nil, false
		calls.Store(0)
		busy.Store(false)
		managed.Store(false)
		overlap.Store(0)
		mu.Unlock()
		runtime.GOMAXPROCS(before)
	}
	reset()
	t.Cleanup(reset)
	if done := Lend(); runtime.GOMAXPROCS(0) != before {
		t.Fatal("Lend changed GOMAXPROCS before Manage")
	} else {
		done()
	}
	Manage()
	Manage()
	want(t, before, "managed, before any call")
	Begin()
	End()
	waitIdle(t)
	want(t, 1, "a call ran alone")
	return before
}

func want(t *testing.T, n int, what string) {
	t.Helper()
	if got := runtime.GOMAXPROCS(0); got != n {
		t.Fatalf("%s: GOMAXPROCS %d, want %d", what, got, n)
	}
}

// waitIdle waits for the side-by-side calls' processors to be given back.
func waitIdle(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); busy.Load(); time.Sleep(idleAfter / 5) {
		if time.Now().After(deadline) {
			t.Fatal("the calls' processors were never given back")
		}
	}
}

// Managed, the process runs on one P, every P while any walk is lent them, and one again
// when the last walk ends; a walk's done counts once.
func TestLendWhileWalking(t *testing.T) {
	all := manage(t)
	var wg sync.WaitGroup
	dones := make([]func(), 8)
	for i := range dones {
		wg.Go(func() { dones[i] = Lend() })
	}
	wg.Wait()
	want(t, all, "walks running")
	for _, done := range dones[1:] {
		done()
		done() // counts once
	}
	want(t, all, "one walk still running")
	dones[0]()
	want(t, 1, "no walk running")
}

// One call at a time runs on one P; a second call at once gets every P, which stay until
// calls have not overlapped for idleAfter (not at once: bursts do not flip GOMAXPROCS), also
// while single calls keep coming.
func TestSideBySideCallsGetEveryProcessor(t *testing.T) {
	all := manage(t)
	Begin()
	want(t, 1, "one call")
	Begin()
	want(t, all, "two calls")
	End()
	want(t, all, "right after the second call ended")
	// While the first call runs, short calls beside it keep overlapping it.
	for start := time.Now(); time.Since(start) < 3*idleAfter; time.Sleep(time.Millisecond) {
		Begin()
		End()
	}
	want(t, all, "calls beside a long one")
	End()
	want(t, all, "right after both calls ended")
	done := Lend() // a walk meanwhile keeps them past the calls' release
	start := time.Now()
	for busy.Load() { // single calls, one after another, do not keep the processors
		Begin()
		End()
		if time.Since(start) > 10*time.Second {
			t.Fatal("a stream of single calls kept every processor")
		}
		time.Sleep(time.Millisecond)
	}
	want(t, all, "a walk still running")
	done()
	want(t, 1, "idle again")
}
