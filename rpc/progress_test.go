package rpc

import (
	"testing"
	"time"

	"github.com/toolsd/toolsd/protocol"
)

func nextProgress(t *testing.T, sent chan protocol.ProgressParams) protocol.ProgressParams {
	t.Helper()
	select {
	case p := <-sent:
		return p
	case <-time.After(10 * time.Second):
		t.Fatal("no notification")
		return protocol.ProgressParams{}
	}
}

// A client that reads slower than calls change state gets each call's latest state, once,
// in the order the calls first queued; one that keeps up gets every change in order.
func TestProgressQueueKeepsEachCallsLatest(t *testing.T) {
	gate := make(chan struct{})
	sent := make(chan protocol.ProgressParams, 16)
	q := newProgressQueue(func(p protocol.ProgressParams) {
		<-gate
		sent <- p
	}, 0)
	defer q.close()
	// The first notification is taken by the sender, which then waits on the gate.
	q.push(protocol.ProgressParams{CallID: "a", Status: protocol.StatusPending})
	gate <- struct{}{}
	if p := nextProgress(t, sent); p.CallID != "a" || p.Status != protocol.StatusPending {
		t.Fatalf("first: %+v", p)
	}
	// While the sender is stuck on its next send, changes pile up.
	q.push(protocol.ProgressParams{CallID: "a", Status: protocol.StatusRunning})
	// The sender may already hold a's running; what it has not taken coalesces.
	q.push(protocol.ProgressParams{CallID: "b", Status: protocol.StatusPending})
	q.push(protocol.ProgressParams{CallID: "b", Status: protocol.StatusRunning})
	q.push(protocol.ProgressParams{CallID: "b", Status: protocol.StatusCompleted, Title: "b done"})
	q.push(protocol.ProgressParams{CallID: "a", Status: protocol.StatusCompleted, Title: "a done"})
	var got []string
	done := map[string]bool{}
	for !done["a"] || !done["b"] {
		gate <- struct{}{}
		p := nextProgress(t, sent)
		got = append(got, p.CallID+":"+p.Status)
		if p.CallID == "b" && p.Status != protocol.StatusCompleted {
			t.Fatalf("b's %s was sent though a newer state was waiting: %v", p.Status, got)
		}
		if done[p.CallID] {
			t.Fatalf("%s's final state sent twice: %v", p.CallID, got)
		}
		if p.Status == protocol.StatusCompleted {
			done[p.CallID] = true
		}
		if len(got) > 3 {
			t.Fatalf("too many notifications: %v", got)
		}
	}
	close(gate) // nothing else is waiting; q.close drains nothing
}

// With a hold, a call that ends within it sends only its final state; one that runs longer
// sends its running state once the hold is over, then its final state; a call's later
// updates are held again, and closing sends what is still held.
func TestProgressQueueHoldsShortLivedStates(t *testing.T) {
	const hold = 200 * time.Millisecond
	sent := make(chan protocol.ProgressParams, 16)
	q := newProgressQueue(func(p protocol.ProgressParams) { sent <- p }, hold)

	// quick: pending, running, completed at once — only completed goes out, straight away.
	start := time.Now()
	q.push(protocol.ProgressParams{CallID: "quick", Status: protocol.StatusPending})
	q.push(protocol.ProgressParams{CallID: "quick", Status: protocol.StatusRunning})
	q.push(protocol.ProgressParams{CallID: "quick", Status: protocol.StatusCompleted})
	if p := nextProgress(t, sent); p.CallID != "quick" || p.Status != protocol.StatusCompleted {
		t.Fatalf("quick call: got %s %s first, want only its completed", p.CallID, p.Status)
	}
	if el := time.Since(start); el >= hold {
		t.Fatalf("a final state waited %v (the hold is %v): it must go at once", el, hold)
	}

	// slow: its running state is sent after the hold, not before.
	start = time.Now()
	q.push(protocol.ProgressParams{CallID: "slow", Status: protocol.StatusPending})
	q.push(protocol.ProgressParams{CallID: "slow", Status: protocol.StatusRunning, Title: "working"})
	p := nextProgress(t, sent)
	if p.CallID != "slow" || p.Status != protocol.StatusRunning {
		t.Fatalf("slow call: got %s %s, want its running state", p.CallID, p.Status)
	}
	if el := time.Since(start); el < hold {
		t.Fatalf("slow call's running state went after %v, before the hold of %v", el, hold)
	}
	// A later update is held again; closing sends it rather than dropping it.
	q.push(protocol.ProgressParams{CallID: "slow", Status: protocol.StatusRunning, Title: "still working"})
	select {
	case p := <-sent:
		t.Fatalf("an update went out before its hold: %+v", p)
	case <-time.After(hold / 2):
	}
	q.close()
	if p := nextProgress(t, sent); p.Title != "still working" {
		t.Fatalf("close sent %+v, want the held update", p)
	}
	select {
	case p := <-sent:
		t.Fatalf("more after close: %+v", p)
	default:
	}
}

// A call's held state goes out after its own hold, when another call's was held first (and
// the sender was not woken for it): in queue order, each once its hold is over.
func TestProgressQueueHoldsEachCall(t *testing.T) {
	const hold = 100 * time.Millisecond
	sent := make(chan protocol.ProgressParams, 16)
	q := newProgressQueue(func(p protocol.ProgressParams) { sent <- p }, hold)
	defer q.close()
	startA := time.Now()
	q.push(protocol.ProgressParams{CallID: "a", Status: protocol.StatusRunning})
	time.Sleep(hold / 2) // b is queued half a hold after a
	startB := time.Now()
	q.push(protocol.ProgressParams{CallID: "b", Status: protocol.StatusRunning})
	for _, c := range []struct {
		id    string
		start time.Time
	}{{"a", startA}, {"b", startB}} {
		p := nextProgress(t, sent)
		if p.CallID != c.id {
			t.Fatalf("got %s's state, want %s's", p.CallID, c.id)
		}
		if el := time.Since(c.start); el < hold {
			t.Fatalf("%s's running state went after %v, before its hold of %v", c.id, el, hold)
		}
	}
}
