package rpc

import (
	"sync"

	"github.com/toolsd/toolsd/protocol"
)

// progressQueue sends tools/progress notifications from one goroutine, keeping only the
// newest pending notification per call — a newer state replaces an older one not yet sent
// (pending, running and the final state of a quick call can all be waiting while many calls
// run) — so a chatty tool or a slow editor never blocks a call, the queue never grows past
// one entry per call, and the client always gets each call's latest state. A client that
// reads as fast as calls change state gets every change, in order.
type progressQueue struct {
	send func(protocol.ProgressParams)

	mu      sync.Mutex // guards order, latest and closed
	order   []string
	latest  map[string]protocol.ProgressParams
	closed  bool
	wake    chan struct{}
	stopped chan struct{}
}

func newProgressQueue(send func(protocol.ProgressParams)) *progressQueue {
	q := &progressQueue{send: send, latest: map[string]protocol.ProgressParams{}, wake: make(chan struct{}, 1), stopped: make(chan struct{})}
	go q.run()
	return q
}

func (q *progressQueue) push(p protocol.ProgressParams) {
	// One entry per call, holding its newest notification, in the order calls first queued.
	k := p.SessionID + "\x00" + p.CallID
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	if _, ok := q.latest[k]; !ok {
		q.order = append(q.order, k)
	}
	q.latest[k] = p
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *progressQueue) run() {
	defer close(q.stopped)
	for range q.wake {
		q.drain()
	}
	q.drain()
}

func (q *progressQueue) drain() {
	for {
		q.mu.Lock()
		if len(q.order) == 0 {
			q.mu.Unlock()
			return
		}
		k := q.order[0]
		q.order = q.order[1:]
		p := q.latest[k]
		delete(q.latest, k)
		q.mu.Unlock()
		q.send(p)
	}
}

// close sends what is pending and stops the goroutine.
func (q *progressQueue) close() {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	q.closed = true
	q.mu.Unlock()
	close(q.wake)
	<-q.stopped
}
