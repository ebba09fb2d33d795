package rpc

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/toolsd/toolsd/protocol"
)

// Flow control: the bounds of one connection.
const (
	// maxInFlight is how many requests one connection may have in flight: read, and not yet
	// answered (the answer handed to the output buffer, which holds at most outBound bytes
	// besides the write in progress). initialize, shutdown, permission/reply and
	// permission/list, which are answered on the read loop before the next frame is read,
	// do not count.
	maxInFlight = 64
	// maxHeld and maxHeldBytes bound the requests read ahead and held back while
	// maxInFlight are in flight; past either, reading stops.
	maxHeld      = 1024
	maxHeldBytes = 16 << 20
)

// guard sits between the connection's input and the JSON-RPC library's header framer. A
// reader goroutine reads the input with a frameReader, which answers and skips bad frames;
// the library reads the good frames through guard.Read, which applies the connection's
// flow control:
//
//   - At most maxInFlight requests are in flight. The next request is held back until an
//     answer has been handed to the output buffer (outBuf). The buffer takes answers while
//     less than outBound bytes wait to be written; past that, writing an answer waits, with
//     the library's write lock held, so no answer is handed over and no slot is freed. So a
//     client that sends requests without reading the answers makes the daemon stop reading,
//     and neither the answers (at most outBound bytes and a frame waiting, besides the write
//     in progress) nor the work waiting to be answered grow past the bound.
//   - While requests are held back the guard reads on, and lets through what must not wait
//     behind them: $/cancelRequest (a request it names that is still held back is answered
//     -32800 here and dropped), exit (unless a shutdown is held back: it then keeps its
//     place behind it), permission/reply and permission/list (which free the calls that
//     wait for a person), and other notifications.
//   - It holds back at most maxHeld requests (maxHeldBytes). Past that it stops reading
//     until an answer is handed over.
//   - Once a write to the output has failed, nothing more will be written (the buffer drops
//     what it holds, and every later Write fails): it holds nothing back any more, so the
//     input is read to its end (the library, told of the failure first by onWriteFailed,
//     refuses the requests without running them), which ends the server.
//
// Read is called by the library's read loop, one call at a time. Write is the library's
// stream output, one whole frame per call (under the library's write lock); it appends the
// frame to the output buffer, whose flusher goroutine writes what is pending to the output
// in one write. The frameReader's error frames go through the library's stream too, so they
// never interleave with its own frames. Close, which the library calls once the connection
// is idle and closing, writes what is pending and stops the flusher before it closes the
// streams.
type guard struct {
	out   *outBuf
	close func() error
	limit atomic.Int64 // the message limit in bytes; the settings may change it after initialize
	done  <-chan struct{}
	log   *slog.Logger

	// reply writes one frame body; set before the first Read.
	reply func(body []byte)
	// onEnd is called once when the input ends or fails.
	onEnd   func(err error)
	endOnce sync.Once

	reader    *frameReader
	startOnce sync.Once
	frames    chan *frame   // from the reader goroutine
	inputDone chan struct{} // closed when the reader goroutine has ended; readErr is set
	readErr   error

	slots slots
	// writeFailed is closed when a write to the output has failed (and when a frame was
	// written after Close).
	writeFailed chan struct{}
	failOnce    sync.Once
	// onWriteFailed, if set, is called once on the read loop after a write has failed,
	// before anything is handed out past the bound. A write that fails in the output
	// buffer's flusher is not returned to the library (the frames it wrote were taken
	// earlier); onWriteFailed makes the library see the failure, so that, as when the write
	// of an answer fails, it refuses the requests it is handed from then on.
	onWriteFailed func()

	// Owned by Read.
	pending   []byte   // a frame being handed out
	held      []*frame // requests held back, in wire order
	heldBytes int
	paused    bool // reading stopped: the held requests are at their bound
	told      bool // onWriteFailed was called
}

func newGuard(ctx context.Context, in io.Reader, out io.Writer, closeFn func() error, limit int, log *slog.Logger) *guard {
	g := &guard{close: closeFn, done: ctx.Done(), log: log, frames: make(chan *frame), inputDone: make(chan struct{}), writeFailed: make(chan struct{})}
	g.out = newOutBuf(out, outBound, g.fail)
	g.limit.Store(int64(limit))
	g.slots.max = maxInFlight
	g.slots.freed = make(chan struct{}, 1)
	g.reader = newFrameReader(in, 64<<10, &g.limit, func(b []byte) {
		if g.reply != nil {
			g.reply(b)
		}
	})
	return g
}

// Write takes one whole frame for the output. It returns once the frame is in the output
// buffer; it waits while the buffer is full, and fails once a write has failed.
func (g *guard) Write(p []byte) (int, error) {
	n, err := g.out.Write(p)
	if err != nil {
		g.fail()
	}
	return n, err
}

// fail records that a write to the output has failed.
func (g *guard) fail() { g.failOnce.Do(func() { close(g.writeFailed) }) }

// Close writes what the output buffer holds (waiting for it) and stops its flusher, then
// closes the streams.
func (g *guard) Close() error {
	if err := g.out.close(); err != nil {
		g.log.Debug("writing to the client failed", "err", err)
	}
	return g.close()
}

// writesFailed reports whether a write to the output has failed.
func (g *guard) writesFailed() bool {
	select {
	case <-g.writeFailed:
		return true
	default:
		return false
	}
}

// acquire takes an in-flight slot; once writes have failed it always succeeds (and may
// exceed the bound), which keeps the count balanced for requests still handled.
func (g *guard) acquire() bool {
	if g.slots.tryAcquire() {
		return true
	}
	if !g.writesFailed() {
		return false
	}
	g.tellFailed()
	return g.slots.force()
}

// tellFailed calls onWriteFailed, once; writes have failed.
func (g *guard) tellFailed() {
	if !g.told {
		g.told = true
		if g.onWriteFailed != nil {
			g.onWriteFailed()
		}
	}
}

// readLoop is the reader goroutine: it hands good frames to Read until the input ends.
func (g *guard) readLoop() {
	defer close(g.inputDone)
	for {
		f, err := g.reader.next()
		if err != nil {
			g.readErr = err
			return
		}
		select {
		case g.frames <- f:
		case <-g.done:
			g.readErr = context.Canceled
			return
		}
	}
}

// start starts the reader goroutine; it ends when the input ends or fails, or when the
// connection's context is done and it has a frame to hand over.
func (g *guard) start() { g.startOnce.Do(func() { go g.readLoop() }) }

func (g *guard) Read(p []byte) (int, error) {
	g.start()
	for len(g.pending) == 0 {
		frame, err := g.next()
		if err != nil {
			g.endOnce.Do(func() {
				if g.onEnd != nil {
					g.onEnd(err)
				}
			})
			return 0, err
		}
		g.pending = frame
	}
	n := copy(p, g.pending)
	g.pending = g.pending[n:]
	return n, nil
}

// next returns the next frame to hand to the library.
func (g *guard) next() ([]byte, error) {
	for {
		if out := g.admit(); out != nil {
			return out, nil
		}
		frames := g.frames
		if len(g.held) >= maxHeld || g.heldBytes >= maxHeldBytes {
			frames = nil
			if !g.paused {
				g.paused = true
				g.log.Info("reading paused: the client has not read enough answers", "inFlight", g.slots.inUse(), "heldBack", len(g.held), "maxInFlight", maxInFlight)
			}
		}
		var freed, failed <-chan struct{}
		if len(g.held) > 0 {
			freed, failed = g.slots.freed, g.writeFailed
		}
		if !g.told {
			failed = g.writeFailed
		}
		select {
		case f := <-frames:
			if g.paused {
				g.paused = false
				g.log.Debug("reading resumed")
			}
			if out := g.route(f); out != nil {
				return out, nil
			}
		case <-freed:
		case <-failed:
			g.tellFailed()
		case <-g.inputDone:
			// End of input: everything is cancelled; what is held back is dropped.
			return nil, g.readErr
		case <-g.done:
			return nil, io.EOF
		}
	}
}

// admit hands out the first held request if it may go now.
func (g *guard) admit() []byte {
	if len(g.held) == 0 {
		return nil
	}
	f := g.held[0]
	if f.kind == frameCall && !g.acquire() {
		return nil
	}
	g.held[0] = nil
	g.held = g.held[1:]
	g.heldBytes -= len(f.data)
	if len(g.held) == 0 {
		g.held = nil
	}
	return f.data
}

// route decides about a frame just read: it returns it to be handed out now, or holds it
// back (or answers it) and returns nil.
func (g *guard) route(f *frame) []byte {
	switch f.kind {
	case frameCancel:
		for i, h := range g.held {
			if h.id != nil && h.key == f.key {
				g.held = append(g.held[:i], g.held[i+1:]...)
				g.heldBytes -= len(h.data)
				g.send(errorBody(h.id, protocol.CodeRequestCancelled, "request cancelled"))
				return nil
			}
		}
		return f.data
	case frameExit:
		for _, h := range g.held {
			if h.kind == frameOrdered {
				g.hold(f)
				return nil
			}
		}
		return f.data
	case frameOrdered:
		if len(g.held) == 0 {
			return f.data
		}
	case frameCall:
		if len(g.held) == 0 && g.acquire() {
			return f.data
		}
	default:
		return f.data
	}
	g.hold(f)
	return nil
}

func (g *guard) hold(f *frame) {
	g.held = append(g.held, f)
	g.heldBytes += len(f.data)
}

func (g *guard) send(body []byte) {
	if g.reply != nil {
		g.reply(body)
	}
}

// release ends one request's hold on an in-flight slot; the server calls it once the answer
// is handed to the output buffer.
func (g *guard) release() { g.slots.release() }

// slots counts a connection's requests in flight. Safe for concurrent use.
type slots struct {
	mu    sync.Mutex // guards n
	n     int
	max   int
	freed chan struct{} // signalled (capacity 1) when a slot is released
}

func (s *slots) tryAcquire() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n >= s.max {
		return false
	}
	s.n++
	return true
}

// force takes a slot beyond the bound.
func (s *slots) force() bool {
	s.mu.Lock()
	s.n++
	s.mu.Unlock()
	return true
}

func (s *slots) release() {
	s.mu.Lock()
	s.n--
	s.mu.Unlock()
	select {
	case s.freed <- struct{}{}:
	default:
	}
}

func (s *slots) inUse() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// frameWriter is the library stream's exported raw-frame write.
type frameWriter interface {
	WriteFrame(ctx context.Context, data []byte) (int64, error)
}
