package rpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"go.lsp.dev/jsonrpc2"
)

// maxHeaderLine bounds one header line; LSP headers are a few dozen bytes.
const maxHeaderLine = 4096

// idPeek is how much of an oversized body is read to find the request id to answer.
const idPeek = 64 << 10

// guard sits between stdin and the JSON-RPC library's header framer. It reads the raw byte
// stream frame by frame and passes on only frames the library can take without failing the
// connection: a well-formed header, a body within the message limit, valid JSON and a valid
// JSON-RPC envelope. Every other frame is answered here with a JSON-RPC error (carrying the
// request id when one can be found) and skipped, so the daemon keeps serving. The body of an
// oversized frame is discarded as it streams in; its size is never allocated.
//
// Read is called only by the library's read goroutine. Writes of error frames go through
// the library's stream so they never interleave with its own frames.
type guard struct {
	in    *bufio.Reader
	out   io.Writer
	close func() error
	limit atomic.Int64 // bytes; the settings may change it after initialize

	// reply writes one error frame; set once the stream exists.
	reply func(body []byte)
	// onEnd is called once when stdin ends or fails.
	onEnd func(err error)

	pending []byte // a canonical frame being handed out
	body    []byte // reused body buffer
	resync  bool   // skipping input after a malformed header
	endOnce sync.Once
}

func newGuard(in io.Reader, out io.Writer, closeFn func() error, limit int) *guard {
	g := &guard{in: bufio.NewReaderSize(in, 64<<10), out: out, close: closeFn}
	g.limit.Store(int64(limit))
	return g
}

func (g *guard) Write(p []byte) (int, error) { return g.out.Write(p) }
func (g *guard) Close() error                { return g.close() }

func (g *guard) Read(p []byte) (int, error) {
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

// next returns the next good frame, header included.
func (g *guard) next() ([]byte, error) {
	for {
		n, err := g.header()
		if err != nil {
			var he *headerError
			if errors.As(err, &he) {
				g.fail(nil, jsonrpc2.ParseError, he.msg)
				g.resync = true
				continue
			}
			return nil, err
		}
		if limit := g.limit.Load(); int64(n) > limit {
			peek, err := g.discard(n)
			if err != nil {
				return nil, err
			}
			g.fail(findID(peek), jsonrpc2.InvalidRequest, fmt.Sprintf("message of %d bytes exceeds the limit of %d bytes; it was not read (send smaller arguments, or raise limits.maxMessageBytes or --max-message)", n, limit))
			continue
		}
		if cap(g.body) < n {
			g.body = make([]byte, n)
		}
		body := g.body[:n]
		if _, err := io.ReadFull(g.in, body); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		if code, msg := check(body); msg != "" {
			g.fail(findID(body), code, msg)
			continue
		}
		frame := make([]byte, 0, n+32)
		frame = append(frame, "Content-Length: "...)
		frame = strconv.AppendInt(frame, int64(n), 10)
		frame = append(frame, "\r\n\r\n"...)
		frame = append(frame, body...)
		if cap(g.body) > 1<<20 {
			g.body = nil // do not keep a large buffer for small messages to come
		}
		return frame, nil
	}
}

type headerError struct{ msg string }

func (e *headerError) Error() string { return e.msg }

// header reads a header block and returns its Content-Length. After a malformed header it
// first skips input up to the next line that starts a header.
func (g *guard) header() (int, error) {
	length := -1
	first := true
	for {
		line, err := g.line()
		if err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				if g.resync {
					continue
				}
				return 0, &headerError{"header line too long: expected \"Content-Length: N\\r\\n\\r\\n\" framing"}
			}
			if errors.Is(err, io.EOF) && !first {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
		trimmed := strings.TrimRight(string(line), "\r\n")
		if g.resync {
			// Skip to the next header: the garbage may run into it on the same line.
			i := strings.Index(strings.ToLower(trimmed), "content-length:")
			if i < 0 {
				continue
			}
			trimmed = trimmed[i:]
			g.resync = false
		}
		if trimmed == "" {
			if first {
				continue // stray blank line between frames
			}
			if length < 0 {
				return 0, &headerError{"header without Content-Length"}
			}
			return length, nil
		}
		first = false
		name, value, ok := strings.Cut(trimmed, ":")
		if !ok {
			return 0, &headerError{fmt.Sprintf("malformed header line %q: expected \"Name: value\"", clip(trimmed, 80))}
		}
		if strings.EqualFold(strings.TrimSpace(name), "Content-Length") {
			v, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
			if err != nil || v <= 0 {
				return 0, &headerError{fmt.Sprintf("invalid Content-Length %q: expected a positive number of bytes", clip(strings.TrimSpace(value), 40))}
			}
			if v > 1<<40 {
				v = 1 << 40
			}
			length = int(v)
		}
	}
}

// line reads one line of at most maxHeaderLine bytes. A longer one is consumed (up to the
// reader's buffer) and reported as bufio.ErrBufferFull.
func (g *guard) line() ([]byte, error) {
	b, err := g.in.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) || (err == nil && len(b) > maxHeaderLine) {
		return nil, bufio.ErrBufferFull
	}
	return b, err
}

// discard skips an n-byte body, returning its first bytes.
func (g *guard) discard(n int) ([]byte, error) {
	peek := make([]byte, min(n, idPeek))
	if _, err := io.ReadFull(g.in, peek); err != nil {
		return nil, io.ErrUnexpectedEOF
	}
	if _, err := io.CopyN(io.Discard, g.in, int64(n-len(peek))); err != nil {
		return nil, io.ErrUnexpectedEOF
	}
	return peek, nil
}

func (g *guard) fail(id *jsonrpc2.ID, code jsonrpc2.Code, msg string) {
	if g.reply == nil {
		return
	}
	var rid jsonrpc2.ID
	if id != nil {
		rid = *id
	}
	g.reply(jsonrpc2.AppendResponse(nil, rid, nil, jsonrpc2.NewError(code, msg)))
}

// check validates a body the way the library's read loop will see it.
func check(body []byte) (jsonrpc2.Code, string) {
	if !json.Valid(body) {
		return jsonrpc2.ParseError, "invalid JSON: " + jsonError(body)
	}
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	switch {
	case len(trimmed) > 0 && trimmed[0] == '[':
		if _, err := jsonrpc2.ParseRequests(body); err != nil {
			return jsonrpc2.InvalidRequest, "invalid batch: " + err.Error()
		}
	case len(trimmed) > 0 && trimmed[0] == '{':
		if _, err := jsonrpc2.DecodeMessage(body); err != nil {
			return jsonrpc2.InvalidRequest, "invalid JSON-RPC message: " + err.Error()
		}
	default:
		return jsonrpc2.InvalidRequest, "a JSON-RPC message must be a JSON object (or a batch array)"
	}
	return 0, ""
}

func jsonError(body []byte) string {
	var v any
	err := json.Unmarshal(body, &v)
	if err == nil {
		return "malformed"
	}
	return err.Error()
}

// findID extracts the top-level "id" of a possibly truncated or invalid JSON object, reading
// members in order and stopping at the first it cannot skip.
func findID(body []byte) *jsonrpc2.ID {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil
		}
		key, _ := kt.(string)
		if key != "id" {
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return nil
			}
			continue
		}
		vt, err := dec.Token()
		if err != nil {
			return nil
		}
		switch v := vt.(type) {
		case json.Number:
			if n, err := v.Int64(); err == nil {
				id := jsonrpc2.NewNumberID(n)
				return &id
			}
		case string:
			id := jsonrpc2.NewStringID(v)
			return &id
		}
		return nil
	}
	return nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// frameWriter is the library stream's exported raw-frame write.
type frameWriter interface {
	WriteFrame(ctx context.Context, data []byte) (int64, error)
}
