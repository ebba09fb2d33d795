package cpus

import (
	"runtime"
	"sync"
	"testing"
)

// Managed, the process runs on one P, every P while any walk is lent them, and one again
// when the last walk ends; a walk's done counts once.
func TestLendWhileWalking(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	if before < 2 {
		t.Skip("one processor: nothing to manage")
	}
	t.Setenv("GOMAXPROCS", "") // the environment may not set it for Manage to act
	defer func() {
		mu.Lock()
		full, lent = 0, 0
		mu.Unlock()
		runtime.GOMAXPROCS(before)
	}()
	if done := Lend(); runtime.GOMAXPROCS(0) != before {
		t.Fatal("Lend changed GOMAXPROCS before Manage")
	} else {
		done()
	}
	Manage()
	Manage()
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Fatalf("managed: GOMAXPROCS %d, want 1", n)
	}
	var wg sync.WaitGroup
	dones := make([]func(), 8)
	for i := range dones {
		wg.Go(func() { dones[i] = Lend() })
	}
	wg.Wait()
	if n := runtime.GOMAXPROCS(0); n != before {
		t.Fatalf("walks running: GOMAXPROCS %d, want %d", n, before)
	}
	for _, done := range dones[1:] {
		done()
		done() // counts once
	}
	if n := runtime.GOMAXPROCS(0); n != before {
		t.Fatalf("one walk still running: GOMAXPROCS %d, want %d", n, before)
	}
	dones[0]()
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Fatalf("no walk running: GOMAXPROCS %d, want 1", n)
	}
}
