package cpus

import (
	"runtime"
	"sync"
	"testing"
)

// manage resets the package and manages the process for one test, restoring GOMAXPROCS. It
// returns every processor's count.
func manage(t *testing.T) int {
	t.Helper()
	before := runtime.GOMAXPROCS(0)
	if before < 2 {
		t.Skip("one processor: nothing to manage")
	}
	t.Setenv("GOMAXPROCS", "") // the environment may not set it for Manage to act
	reset := func() {
		mu.Lock()
		full, lent = 0, 0
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
	want(t, 1, "managed")
	return before
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

// The environment's GOMAXPROCS is left alone.
func TestEnvironmentDecides(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	if before < 2 {
		t.Skip("one processor: nothing to manage")
	}
	t.Setenv("GOMAXPROCS", "2")
	mu.Lock()
	full, lent = 0, 0
	mu.Unlock()
	t.Cleanup(func() { runtime.GOMAXPROCS(before) })
	Manage()
	want(t, before, "GOMAXPROCS set by the environment")
	if done := Lend(); full != 0 {
		t.Fatal("Lend managed the process")
	} else {
		done()
	}
}
