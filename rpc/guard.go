package rpc

import (
	"context"
	"io"
	"sync"
	"sync/atomic"
)

// guard sits between stdin and the JSON-RPC library's header framer: the library reads the
// good frames of a frameReader through it, which answers and skips the bad ones.
//
// Read is called only by the library's read goroutine. Writes of error frames go through
// the library's stream so they never interleave with its own frames.
type guard struct {
	out   io.Writer
	close func() error
	limit atomic.Int64 // bytes; the settings may change it after initialize

	// reply writes one error frame; set once the stream exists.
	reply func(body []byte)
	// onEnd is called once when stdin ends or fails.
	onEnd func(err error)

	reader  *frameReader
	pending []byte // a frame being handed out
	endOnce sync.Once
}

func newGuard(in io.Reader, out io.Writer, closeFn func() error, limit int) *guard {
	g := &guard{out: out, close: closeFn}
	g.limit.Store(int64(limit))
	g.reader = newFrameReader(in, 64<<10, &g.limit, func(b []byte) {
		if g.reply != nil {
			g.reply(b)
		}
	})
	return g
}

func (g *guard) Write(p []byte) (int, error) { return g.out.Write(p) }
func (g *guard) Close() error                { return g.close() }

func (g *guard) Read(p []byte) (int, error) {
	for len(g.pending) == 0 {
		f, err := g.reader.next()
		if err != nil {
			g.endOnce.Do(func() {
				if g.onEnd != nil {
					g.onEnd(err)
				}
			})
			return 0, err
		}
		g.pending = f.data
	}
	n := copy(p, g.pending)
	g.pending = g.pending[n:]
	return n, nil
}

// frameWriter is the library stream's exported raw-frame write.
type frameWriter interface {
	WriteFrame(ctx context.Context, data []byte) (int64, error)
}
