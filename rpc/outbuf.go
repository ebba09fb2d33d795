package rpc

import (
	"fmt"
	"io"
	"os"
	"sync"
)

// outBound is how many bytes of frames may wait in a connection's output buffer: past it, a
// Write waits for the flusher (so a client that stops reading stops the daemon, as a full
// pipe would). A frame is always taken whole, so up to outBound-1 plus one frame may wait,
// besides the bytes of the write in progress.
const outBound = 1 << 20

// outKeep is the largest buffer kept for reuse after a write; a larger one (after a burst or
// a large frame) is dropped so that an idle connection does not hold on to it.
const outKeep = 256 << 10

// errOutClosed is returned by a Write after the output was closed.
var errOutClosed = fmt.Errorf("rpc: writing to the client: %w", os.ErrClosed)

// outBuf coalesces the frames a connection sends: Write appends a frame to the pending
// buffer and returns, and one flusher goroutine writes all that is pending with one Write on
// the output, so frames that pile up while a write is in flight go out together — one
// write(2) for several answers under load. Frames go out in the order of the Writes, each
// whole and contiguous.
//
// The flusher is started by the first Write and ends on close; it is woken only when data is
// appended while it is parked, and after a write it takes what is pending before parking.
// Two buffers are swapped between the writers and the flusher, so a write in steady state
// allocates nothing.
//
// Once a write fails, what is pending is dropped, failed is called, and every later Write
// returns that error at once.
type outBuf struct {
	w      io.Writer
	bound  int
	failed func() // called when the flusher's write fails
	waits  func() // if set, called (b.mu held) each time a Write waits for room; for tests

	mu       sync.Mutex
	space    sync.Cond // broadcast when pending was taken, or on failure or close
	pending  []byte    // frames waiting for the flusher
	spare    []byte    // the other buffer, empty; nil while it is being written
	flushing bool      // the flusher is running, or has been woken: no need to wake it
	started  bool      // the flusher goroutine was started
	closed   bool
	err      error // the first write error

	wake    chan struct{} // capacity 1: wakes the parked flusher
	stopped chan struct{} // closed when the flusher has ended
}

// newOutBuf returns a buffer in front of w; bound (outBound in the daemon) must be positive.
func newOutBuf(w io.Writer, bound int, failed func()) *outBuf {
	b := &outBuf{w: w, bound: bound, failed: failed, wake: make(chan struct{}, 1), stopped: make(chan struct{})}
	b.space.L = &b.mu
	return b
}

// Write appends p, one whole frame, to the pending output. It waits while outBound bytes or
// more are pending; it fails at once after a write failed or the output was closed, and then
// p is dropped.
func (b *outBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	for len(b.pending) >= b.bound && b.err == nil && !b.closed {
		if b.waits != nil {
			b.waits()
		}
		b.space.Wait()
	}
	if err := b.failure(); err != nil {
		b.mu.Unlock()
		return 0, err
	}
	b.pending = append(b.pending, p...)
	switch {
	case !b.started:
		b.started, b.flushing = true, true
		go b.run()
	case !b.flushing:
		b.flushing = true
		b.wake <- struct{}{} // never blocks: one token per parking
	}
	b.mu.Unlock()
	return len(p), nil
}

// failure is the error a Write returns now, if any. b.mu is held.
func (b *outBuf) failure() error {
	if b.err != nil {
		return b.err
	}
	if b.closed {
		return errOutClosed
	}
	return nil
}

// run is the flusher.
func (b *outBuf) run() {
	defer close(b.stopped)
	b.mu.Lock()
	for {
		for len(b.pending) > 0 && b.err == nil {
			buf := b.pending
			b.pending, b.spare = b.spare[:0], nil
			b.space.Broadcast()
			b.mu.Unlock()
			_, err := b.w.Write(buf)
			b.mu.Lock()
			if cap(buf) <= outKeep {
				b.spare = buf[:0]
			}
			if err != nil {
				b.err = err
				b.pending = b.pending[:0]
				b.space.Broadcast()
				b.mu.Unlock()
				b.failed()
				b.mu.Lock()
			}
		}
		if b.closed {
			b.mu.Unlock()
			return
		}
		b.flushing = false
		b.mu.Unlock()
		<-b.wake
		b.mu.Lock()
	}
}

// close writes what is pending, stops the flusher and waits for it; a later Write fails.
// It returns the write error, if a write failed.
func (b *outBuf) close() error {
	b.mu.Lock()
	if !b.closed {
		b.closed = true
		b.space.Broadcast()
		if b.started && !b.flushing {
			b.flushing = true
			b.wake <- struct{}{}
		}
	}
	started := b.started
	b.mu.Unlock()
	if started {
		<-b.stopped
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}
