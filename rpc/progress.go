package rpc

import (
	"sync"
	"time"

	"github.com/toolsd/toolsd/protocol"
)

// progressHold is how long a call's first non-final notification waits before it is sent. A
// state that lasts less is never seen by a person (the Running view would flash), so a quick
// call's client gets only its final state: one notification instead of three per call, which
// is much of what a busy client and the daemon spend on a quick call.
const progressHold = 20 * time.Millisecond

// progressQueue sends tools/progress notifications from one goroutine, keeping only the
// newest pending notification per call — a newer state replaces an older one not yet sent —
// so a chatty tool or a slow editor never blocks a call, the queue never grows past one entry
// per call, and the client always gets each call's latest state. A call's final state is sent
// at once; its other states wait progressHold from when the call's entry was queued, and are
// not sent at all if a newer state replaces them first (a call that ends within the hold sends
// only its final state). A client that keeps up gets, per call, its states in order.
type progressQueue struct {
	send func(protocol.ProgressParams)
	hold time.Duration

	mu      sync.Mutex // guards order, latest and closed
	order   []string
	latest  map[string]*progressEntry
	closed  bool
	wake    chan struct{}
	stopped chan struct{}
}

type progressEntry struct {
	p      protocol.ProgressParams
	queued time.Time
}

func newProgressQueue(send func(protocol.ProgressParams), hold time.Duration) *progressQueue {
	q := &progressQueue{send: send, hold: hold, latest: map[string]*progressEntry{}, wake: make(chan struct{}, 1), stopped: make(chan struct{})}
	go q.run()
	return q
}

func final(p protocol.ProgressParams) bool {
	switch p.Status {
	case protocol.StatusQueued, protocol.StatusPending, protocol.StatusRunning:
		return false
	}
	return true
}

func (q *progressQueue) push(p protocol.ProgressParams) {
	// One entry per call, holding its newest notification, in the order calls first queued.
	k := p.SessionID + "\x00" + p.CallID
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	first := len(q.order) == 0
	e, ok := q.latest[k]
	if !ok {
		e = &progressEntry{queued: time.Now()}
		q.latest[k] = e
		q.order = append(q.order, k)
	}
	e.p = p
	q.mu.Unlock()
	// A final entry is sent now. A new held entry needs the sender to arm its timer, unless
	// others wait already: the sender then has its timer armed for the first of them, due
	// before this one, or is about to look at them all.
	if first || final(p) {
		select {
		case q.wake <- struct{}{}:
		default:
		}
	}
}

func (q *progressQueue) run() {
	defer close(q.stopped)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		next, closed := q.drain(false)
		if closed {
			q.drain(true)
			return
		}
		if next > 0 {
			timer.Reset(next)
		}
		select {
		case _, open := <-q.wake:
			if !open {
				q.drain(true)
				return
			}
		case <-timer.C:
		}
		timer.Stop()
	}
}

// drain sends every entry that is final or has waited its hold (all of them with flush), in
// queue order, and returns how long until the first held one is due (0: none is held).
func (q *progressQueue) drain(flush bool) (next time.Duration, closed bool) {
	for {
		q.mu.Lock()
		now := time.Now()
		i := 0
		var k string
		next = 0
		for ; i < len(q.order); i++ {
			k = q.order[i]
			e := q.latest[k]
			wait := q.hold - now.Sub(e.queued)
			if flush || final(e.p) || wait <= 0 {
				break
			}
			if next == 0 || wait < next {
				next = wait
			}
		}
		closed = q.closed
		if i == len(q.order) {
			q.mu.Unlock()
			return next, closed
		}
		e := q.latest[k]
		q.order = append(q.order[:i], q.order[i+1:]...)
		delete(q.latest, k)
		q.mu.Unlock()
		q.send(e.p)
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
