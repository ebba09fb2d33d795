package rpc

import (
	"testing"
	"time"

	"github.com/toolsd/toolsd/protocol"
)

// A client that reads slower than calls change state gets each call's latest state, once,
// in the order the calls first queued; one that keeps up gets every change in order.
func TestProgressQueueKeepsEachCallsLatest(t *testing.T) {
	gate := make(chan struct{})
	sent := make(chan protocol.ProgressParams, 16)
	q := newProgressQueue(func(p protocol.ProgressParams) {
		<-gate
		sent <- p
	})
	defer q.close()
	next := func() protocol.ProgressParams {
		t.Helper()
		select {
		case p := <-sent:
			return p
		case <-time.After(10 * time.Second):
			t.Fatal("no notification")
			return protocol.ProgressParams{}
		}
	}
	// The first notification is taken by the sender, which then waits on the gate.
	q.push(protocol.ProgressParams{CallID: "a", Status: protocol.StatusPending})
	gate <- struct{}{}
	if p := next(); p.CallID != "a" || p.Status != protocol.StatusPending {
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
		p := next()
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
