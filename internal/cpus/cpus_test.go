package cpus

import (
	"runtime"
	"sync"
	"testing"
	"time"
)

// manage resets the package and manages the process for one test, restoring GOMAXPROCS.
// idleAfter is an hour, so the release timer never fires: quiet runs the release instead.
// It returns every processor's count, after a first call has brought the process down to one.
func manage(t *testing.T) int {
	t.Helper()
	before := runtime.GOMAXPROCS(0)
	if before < 2 {
		t.Skip("one processor: nothing to manage")
	}
	t.Setenv("GOMAXPROCS", "") // the environment may not set it for Manage to act
	was := idleAfter
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
	idleAfter = time.Hour
	t.Cleanup(func() { reset(); idleAfter = was })
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
	quiet()
	want(t, 1, "a call ran alone")
	return before
}

// quiet makes the calls' last overlap older than idleAfter and runs what the release timer
// would run then.
func quiet() {
	overlap.Store(time.Now().Add(-2 * idleAfter).UnixNano())
	idle()
}

func want(t *testing.T, n int, what string) {
	t.Helper()
	if got := runtime.GOMAXPROCS(0); got != n {
		t.Fatalf("%s: GOMAXPROCS %d, want %d", what, got, n)
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

// One call at a time runs on one P; a second call at once gets every P, which stay while
// calls overlap (a short call beside a long one counts) and go once they have not for
// idleAfter; single calls one after another do not count as overlapping.
func TestSideBySideCallsGetEveryProcessor(t *testing.T) {
	all := manage(t)
	Begin()
	want(t, 1, "one call")
	Begin()
	want(t, all, "two calls")
	End()
	want(t, all, "right after the second call ended")
	Begin() // beside the first call, still running
	End()
	idle() // the release timer, due now: the overlap is recent
	want(t, all, "a call just overlapped another")
	End()
	done := Lend() // a walk meanwhile keeps them past the calls' release
	last := overlap.Load()
	Begin()
	End()
	if overlap.Load() != last {
		t.Fatal("a call that ran alone counted as an overlap")
	}
	quiet()
	if busy.Load() {
		t.Fatal("the calls' processors were kept though calls no longer overlap")
	}
	want(t, all, "a walk still running")
	done()
	want(t, 1, "idle again")
}
