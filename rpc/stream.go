package rpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"

	"go.lsp.dev/jsonrpc2"

	"github.com/toolsd/toolsd/internal/jsondec"
	"github.com/toolsd/toolsd/protocol"
)

// The bounds of one connection.
const (
	// maxInFlight is how many requests one connection may have in flight: read, and their
	// answer not yet written. initialize, shutdown, permission/reply and permission/list,
	// which are answered on the read loop before the next frame is read, do not count.
	maxInFlight = 64
	// maxHeld and maxHeldBytes bound the requests read ahead and held back while
	// maxInFlight are in flight; past either, reading stops.
	maxHeld      = 1024
	maxHeldBytes = 16 << 20
	// maxHeader bounds a header block; LSP headers are a few dozen bytes.
	maxHeader = 4096
	// idPeek is how much of an oversized body is kept to find the request id to answer.
	idPeek = 64 << 10
	// maxIDBytes bounds a request id as written on the wire, and the ids a request names
	// (sessionID, callID, …).
	maxIDBytes = 1024
	// keepBuffer is the largest read or write buffer kept for the next frame.
	keepBuffer = 1 << 20
)

// headerRoom is the room left before a frame's body for its header.
const headerRoom = len("Content-Length: \r\n\r\n") + 20

// stream is a connection's jsonrpc2.Stream: LSP framing on the daemon's input and output,
// and the connection's admission control.
//
// Framing. A reader goroutine reads the input frame by frame. A malformed header block (no
// Content-Length, two of them, a bad length, a line without a colon, over maxHeader
// bytes) is answered once with id null and ends the input: after it the frame boundary is
// unknown (gopls: "the stream failed, we cannot continue"). A frame whose header is good
// is answered and skipped when its body is bad: over the message limit (discarded by its
// declared length, never allocated), not JSON, not a JSON-RPC message, a batch, an id the
// daemon cannot take. Each good frame is read once, validated, and scanned into a message
// that owns its bytes.
//
// Admission. At most maxInFlight requests are in flight; a request's slot is freed when
// Write has written its answer. Write is a plain write under a lock, so a client that does
// not read its answers blocks the writers, no slot is freed, and the requests after the
// bound are held back; past maxHeld (maxHeldBytes) the stream stops reading. Neither the
// answers waiting to be written nor the work behind them grow past the bound. While
// requests are held back, Read still passes on what must not wait behind them:
// $/cancelRequest (a request it names that is still held back is answered -32800 here and
// dropped), exit (unless a shutdown is held back: it keeps its place behind it),
// permission/reply and permission/list (which free the calls that wait for a person), and
// other notifications. Once a write has failed nothing is held back any more, so the input
// is read to its end (the library refuses what it reads from then on).
//
// Read is called by the library's read loop, one call at a time; Write by any goroutine.
type stream struct {
	in      *bufio.Reader
	out     io.Writer
	closeIO func() error
	limit   atomic.Int64 // the message limit in bytes; the settings may change it after initialize
	done    <-chan struct{}
	log     *slog.Logger

	// onHold is called on the read loop when a request is held back for want of a slot;
	// onDrop when a held request is cancelled. Either may be nil; neither may block.
	onHold, onDrop func(c *jsonrpc2.Call)
	// onEnd is called once, by Read, when the input has ended or failed.
	onEnd   func(err error)
	endOnce sync.Once

	startOnce sync.Once
	frames    chan *message // from the reader goroutine
	inputDone chan struct{} // closed when the reader goroutine has ended; readErr is set
	readErr   error
	body      []byte // the reader goroutine's body buffer

	writeMu  sync.Mutex // guards wbuf and writeErr, and serialises writes to out
	wbuf     []byte
	writeErr error // the first write error: every later write fails with it

	slotMu   sync.Mutex     // guards inFlight, used and broken
	inFlight map[string]int // idKey of the requests holding a slot: how many hold it
	used     int
	broken   bool          // a write has failed: admission is off
	freed    chan struct{} // signalled (capacity 1) when a slot is freed or a write fails

	// Owned by Read.
	held      []*message // requests held back, in wire order
	heldBytes int
	paused    bool // reading stopped: the held requests are at their bound
}

// kind says how admission treats a message.
type kind uint8

const (
	// kindPass: a notification, a response, or a request answered on the read loop that may
	// overtake held requests (permission/reply, permission/list).
	kindPass kind = iota
	// kindCall: a request handled concurrently with the ones after it; it takes a slot.
	kindCall
	// kindOrdered: initialize or shutdown, answered on the read loop in wire order.
	kindOrdered
	// kindCancel: $/cancelRequest; key names the request it cancels.
	kindCancel
	// kindExit: the exit notification.
	kindExit
)

// message is one good frame, decoded.
type message struct {
	msg  jsonrpc2.Message // owns its bytes
	size int              // bytes on the wire, header included
	kind kind
	id   json.RawMessage // a request's id as written
	key  string          // idKey of a request's id, or of the id a $/cancelRequest names
}

func newStream(ctx context.Context, in io.Reader, out io.Writer, closeFn func() error, limit int, log *slog.Logger) *stream {
	s := &stream{
		in: bufio.NewReaderSize(in, 64<<10), out: out, closeIO: closeFn, done: ctx.Done(), log: log,
		frames: make(chan *message), inputDone: make(chan struct{}),
		inFlight: map[string]int{}, freed: make(chan struct{}, 1),
	}
	s.limit.Store(int64(limit))
	return s
}

// Read returns the next message to handle (jsonrpc2.Stream).
func (s *stream) Read(context.Context) (jsonrpc2.Message, int64, error) {
	s.startOnce.Do(func() { go s.readLoop() })
	m, err := s.next()
	if err != nil {
		s.endOnce.Do(func() {
			if s.onEnd != nil {
				s.onEnd(err)
			}
		})
		return nil, 0, err
	}
	return m.msg, int64(m.size), nil
}

// next returns the next message admitted.
func (s *stream) next() (*message, error) {
	for {
		if m := s.admit(); m != nil {
			return m, nil
		}
		frames := s.frames
		if len(s.held) >= maxHeld || s.heldBytes >= maxHeldBytes {
			frames = nil
			if !s.paused {
				s.paused = true
				s.log.Info("reading paused: the client has not read enough answers", "heldBack", len(s.held), "maxInFlight", maxInFlight)
			}
		}
		var freed <-chan struct{}
		if len(s.held) > 0 {
			freed = s.freed
		}
		select {
		case m := <-frames:
			if s.paused {
				s.paused = false
				s.log.Debug("reading resumed")
			}
			if s.route(m) {
				return m, nil
			}
		case <-freed:
		case <-s.inputDone:
			// End of input: everything is cancelled; what is held back is dropped.
			return nil, s.readErr
		case <-s.done:
			return nil, io.EOF
		}
	}
}

// admit returns the first held message if it may go now.
func (s *stream) admit() *message {
	if len(s.held) == 0 {
		return nil
	}
	m := s.held[0]
	if m.kind == kindCall && !s.acquire(m.key) {
		return nil
	}
	s.held[0] = nil
	s.held = s.held[1:]
	s.heldBytes -= m.size
	if len(s.held) == 0 {
		s.held = nil
	}
	return m
}

// route decides about a message just read: it reports whether it goes now, or else holds
// it back (or answers it).
func (s *stream) route(m *message) bool {
	switch m.kind {
	case kindCancel:
		for i, h := range s.held {
			if h.id != nil && h.key == m.key {
				s.held = append(s.held[:i], s.held[i+1:]...)
				s.heldBytes -= h.size
				s.reply(errorBody(h.id, protocol.CodeRequestCancelled, "request cancelled"))
				if c, ok := h.msg.(*jsonrpc2.Call); ok && h.kind == kindCall && s.onDrop != nil {
					s.onDrop(c)
				}
				return false
			}
		}
		return true
	case kindExit:
		for _, h := range s.held {
			if h.kind == kindOrdered {
				s.hold(m)
				return false
			}
		}
		return true
	case kindOrdered:
		if len(s.held) == 0 {
			return true
		}
	case kindCall:
		if len(s.held) == 0 && s.acquire(m.key) {
			return true
		}
		if c, ok := m.msg.(*jsonrpc2.Call); ok && s.onHold != nil {
			s.onHold(c)
		}
	default:
		return true
	}
	s.hold(m)
	return false
}

func (s *stream) hold(m *message) {
	s.held = append(s.held, m)
	s.heldBytes += m.size
}

// acquire takes a slot for the request key; once a write has failed it always does.
func (s *stream) acquire(key string) bool {
	s.slotMu.Lock()
	defer s.slotMu.Unlock()
	if s.used >= maxInFlight && !s.broken {
		return false
	}
	s.used++
	s.inFlight[key]++
	return true
}

// release frees the slot of the request key, if it holds one.
func (s *stream) release(key string) {
	s.slotMu.Lock()
	n, ok := s.inFlight[key]
	if ok {
		if n > 1 {
			s.inFlight[key] = n - 1
		} else {
			delete(s.inFlight, key)
		}
		s.used--
	}
	s.slotMu.Unlock()
	if ok {
		s.signal()
	}
}

func (s *stream) signal() {
	select {
	case s.freed <- struct{}{}:
	default:
	}
}

// readLoop is the reader goroutine: it hands good frames to Read until the input ends.
func (s *stream) readLoop() {
	defer close(s.inputDone)
	for {
		m, err := s.readMessage()
		if err != nil {
			s.readErr = err
			return
		}
		select {
		case s.frames <- m:
		case <-s.done:
			s.readErr = context.Canceled
			return
		}
	}
}

// headerError is a malformed header block: it ends the input.
type headerError struct{ msg string }

func (e *headerError) Error() string {
	return "malformed header: " + e.msg + ` (a frame is "Content-Length: N\r\n\r\n" and N bytes of JSON); the connection is closed`
}

// readMessage reads frames until one is good, answering the others. Its error is the
// input's (io.EOF at a clean end, io.ErrUnexpectedEOF inside a frame), or a *headerError.
func (s *stream) readMessage() (*message, error) {
	for {
		n, size, err := s.readHeader()
		if err != nil {
			var he *headerError
			if errors.As(err, &he) {
				s.log.Warn("closing the connection", "err", err)
				s.reply(errorBody(nil, jsonrpc2.ParseError, he.Error()))
			}
			return nil, err
		}
		if limit := s.limit.Load(); n > limit {
			peek := make([]byte, min(n, idPeek))
			if _, err := io.ReadFull(s.in, peek); err != nil {
				return nil, unexpected(err)
			}
			if _, err := s.in.Discard(int(n - int64(len(peek)))); err != nil {
				return nil, unexpected(err)
			}
			s.reply(errorBody(findID(peek), jsonrpc2.InvalidRequest, fmt.Sprintf("message of %d bytes exceeds the limit of %d bytes; it was not read (send smaller arguments, or raise limits.maxMessageBytes or --max-message)", n, limit)))
			continue
		}
		if int64(cap(s.body)) < n {
			s.body = make([]byte, n)
		}
		body := s.body[:n]
		if _, err := io.ReadFull(s.in, body); err != nil {
			return nil, unexpected(err)
		}
		m, refusal := decode(body)
		if cap(s.body) > keepBuffer {
			s.body = nil
		}
		if refusal != nil {
			s.reply(refusal)
			continue
		}
		m.size = size + int(n)
		return m, nil
	}
}

func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// readHeader reads a header block, after any blank lines, and returns its Content-Length
// and its size in bytes. Header fields other than Content-Length are ignored.
func (s *stream) readHeader() (length int64, size int, err error) {
	length = -1
	for {
		line, err := s.in.ReadSlice('\n')
		text := bytes.TrimSpace(line)
		if size > 0 || len(text) > 0 {
			size += len(line)
		}
		switch {
		case size > maxHeader || errors.Is(err, bufio.ErrBufferFull):
			return 0, 0, &headerError{fmt.Sprintf("header block longer than %d bytes", maxHeader)}
		case err != nil:
			if errors.Is(err, io.EOF) && size == 0 {
				return 0, 0, io.EOF
			}
			return 0, 0, unexpected(err)
		case len(text) == 0 && size == 0:
			continue // a blank line between frames
		case len(text) == 0:
			if length < 0 {
				return 0, 0, &headerError{"no Content-Length header"}
			}
			return length, size, nil
		}
		name, value, ok := bytes.Cut(text, []byte(":"))
		if !ok {
			return 0, 0, &headerError{fmt.Sprintf("header line %q is not \"Name: value\"", clip(text, 80))}
		}
		if !bytes.EqualFold(bytes.TrimSpace(name), []byte("Content-Length")) {
			continue
		}
		if length >= 0 {
			return 0, 0, &headerError{"two Content-Length headers"}
		}
		v := bytes.TrimSpace(value)
		if length, err = strconv.ParseInt(string(v), 10, 64); err != nil || length <= 0 {
			return 0, 0, &headerError{fmt.Sprintf("invalid Content-Length %q: expected a positive number of bytes", clip(v, 40))}
		}
	}
}

// decode checks a body as one JSON-RPC message and says how admission treats it; a body it
// refuses comes back as the body of the error answer.
func decode(body []byte) (*message, []byte) {
	if !jsondec.Valid(body) {
		return nil, errorBody(findID(body), jsonrpc2.ParseError, "invalid JSON: "+jsonError(body))
	}
	switch firstByte(body) {
	case '[':
		return nil, batchRefusal(body)
	case '{':
	default:
		return nil, errorBody(nil, jsonrpc2.InvalidRequest, "a JSON-RPC message must be a JSON object")
	}
	v, err := jsonrpc2.ScanMessageView(body)
	var msg jsonrpc2.Message
	if err == nil {
		msg, err = v.Owned()
	}
	if err != nil {
		id, problem := envelopeProblem(body)
		return nil, errorBody(id, jsonrpc2.InvalidRequest, "invalid JSON-RPC message: "+problem)
	}
	m := &message{msg: msg, kind: kindPass}
	switch msg := msg.(type) {
	case *jsonrpc2.Call:
		m.id = append(json.RawMessage(nil), v.IDRaw...)
		if len(v.IDRaw) > maxIDBytes {
			return nil, errorBody(m.id, jsonrpc2.InvalidRequest, fmt.Sprintf("invalid request: its id is %d bytes long; an id is at most %d bytes", len(v.IDRaw), maxIDBytes))
		}
		m.key = idKey(msg.ID())
		switch method := msg.Method(); {
		case method == protocol.MethodInitialize || method == protocol.MethodShutdown:
			m.kind = kindOrdered
		case !inline(method):
			m.kind = kindCall
		}
	case *jsonrpc2.Notification:
		if v.IDRaw != nil {
			return nil, errorBody(nil, jsonrpc2.InvalidRequest, `invalid request: its id is null; a request's id is a string or an integer (a notification has no "id" member, and gets no answer)`)
		}
		switch msg.Method() {
		case protocol.MethodCancelRequest:
			var p protocol.CancelRequestParams
			if json.Unmarshal(msg.Params(), &p) == nil {
				m.kind, m.key = kindCancel, rawIDKey(p.ID)
			}
		case protocol.MethodExit:
			m.kind = kindExit
		}
	}
	return m, nil
}

// Write writes one message as one frame (jsonrpc2.Stream), and frees the slot of the
// request it answers once it is written. It waits while another write is in progress, and
// fails at once after a write has failed.
func (s *stream) Write(ctx context.Context, msg jsonrpc2.Message) (int64, error) {
	s.writeMu.Lock()
	if err := ctx.Err(); err != nil {
		s.writeMu.Unlock()
		return 0, err
	}
	frame, body := s.frame(func(b []byte) []byte { return jsonrpc2.AppendMessage(b, msg) })
	key, answer := answerKey(body)
	n, err := s.write(frame)
	s.writeMu.Unlock()
	if answer {
		s.release(key)
	}
	return int64(n), err
}

// reply writes an error answer the stream makes itself.
func (s *stream) reply(body []byte) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	frame, _ := s.frame(func(b []byte) []byte { return append(b, body...) })
	if _, err := s.write(frame); err != nil {
		s.log.Debug("writing an error answer failed", "err", err)
	}
}

// frame builds a frame in s.wbuf from the body add appends, and returns it and its body.
// s.writeMu is held.
func (s *stream) frame(add func([]byte) []byte) (frame, body []byte) {
	if cap(s.wbuf) < headerRoom {
		s.wbuf = make([]byte, headerRoom, 4<<10)
	}
	buf := add(s.wbuf[:headerRoom])
	body = buf[headerRoom:]
	var h [headerRoom]byte
	header := strconv.AppendInt(append(h[:0], "Content-Length: "...), int64(len(body)), 10)
	header = append(header, "\r\n\r\n"...)
	start := headerRoom - len(header)
	copy(buf[start:], header)
	s.wbuf = buf
	return buf[start:], body
}

// write writes a frame; s.writeMu is held.
func (s *stream) write(frame []byte) (int, error) {
	if cap(s.wbuf) > keepBuffer {
		s.wbuf = nil // frame stays valid: a large buffer is not kept for the next one
	}
	if s.writeErr != nil {
		return 0, s.writeErr
	}
	n, err := s.out.Write(frame)
	if err != nil {
		s.writeErr = fmt.Errorf("rpc: writing to the client: %w", err)
		s.slotMu.Lock()
		s.broken = true
		s.slotMu.Unlock()
		s.signal()
		return n, s.writeErr
	}
	return n, nil
}

// Close closes the input and the output (jsonrpc2.Stream); the library calls it once the
// connection is idle and closing.
func (s *stream) Close() error { return s.closeIO() }

// answerKey reports whether a message body is an answer, and the idKey of the request it
// answers. The library writes what a message is first: an answer starts with its id, a
// request or a notification with its method, and that prefix decides at once; a message
// written in another order is read member by member.
func answerKey(body []byte) (key string, answer bool) {
	const answerPrefix, requestPrefix = `{"jsonrpc":"2.0","id":`, `{"jsonrpc":"2.0","method":`
	if bytes.HasPrefix(body, []byte(requestPrefix)) {
		return "", false
	}
	if rest, ok := bytes.CutPrefix(body, []byte(answerPrefix)); ok && len(rest) > 0 {
		end := bytes.IndexByte(rest, ',') // after a number
		if rest[0] == '"' {
			end = -1
			for i := 1; i < len(rest); i++ {
				if rest[i] == '\\' {
					i++
				} else if rest[i] == '"' {
					end = i + 1
					break
				}
			}
		}
		if end > 0 {
			return rawIDKey(rest[:end]), true
		}
	}
	return answerKeyOf(body)
}

// answerKeyOf is answerKey for members in any order.
func answerKeyOf(body []byte) (key string, answer bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", false
	}
	var id json.RawMessage
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return "", false
		}
		switch k {
		case "method":
			return "", false
		case "result", "error":
			answer = true
			if id != nil {
				return rawIDKey(id), true
			}
		case "id":
			if dec.Decode(&id) != nil {
				return "", false
			}
			if answer {
				return rawIDKey(id), true
			}
			continue
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return "", false
		}
	}
	return rawIDKey(id), answer
}

// errorBody is a JSON-RPC error response; a nil id is written as null.
func errorBody(id json.RawMessage, code jsonrpc2.Code, msg string) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   wireError       `json:"error"`
	}{"2.0", id, wireError{int64(code), msg}})
	return b
}

type wireError struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
}

// envelopeProblem says why a JSON object is not a JSON-RPC message, and returns the id to
// answer with: the message's own when it is a string or a number, else nil (null).
func envelopeProblem(body []byte) (json.RawMessage, string) {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return nil, "not a JSON object"
	}
	id, hasID := m["id"]
	echo := requestID(id)
	_, hasMethod := m["method"]
	_, hasResult := m["result"]
	_, hasError := m["error"]
	if string(m["jsonrpc"]) != `"2.0"` {
		return echo, `"jsonrpc" must be "2.0"`
	}
	if hasMethod && (hasResult || hasError) {
		return echo, "a message has a method (a request) or a result or error (a response), not both"
	}
	if hasMethod && firstByte(m["method"]) != '"' {
		return echo, "method must be a string"
	}
	if hasID && echo == nil && string(id) != "null" {
		return nil, "id must be a string or an integer, not " + jsonKind(id)
	}
	if hasID && echo != nil && firstByte(id) != '"' {
		if _, err := strconv.ParseInt(string(id), 10, 64); err != nil {
			return echo, fmt.Sprintf("id %s is not an integer within 64 bits; a request's id is a string or such an integer", clip(id, 40))
		}
	}
	if !hasMethod {
		return echo, `a message needs a "method" (a request), or a "result" or an "error" (a response)`
	}
	return echo, "malformed envelope"
}

// batchRefusal refuses a batch, with an error for each request in it that has an id.
func batchRefusal(body []byte) []byte {
	const msg = "batches are not supported: send each request in its own frame"
	var members []json.RawMessage
	_ = json.Unmarshal(body, &members)
	var out []json.RawMessage
	for _, m := range members {
		var obj map[string]json.RawMessage
		if json.Unmarshal(m, &obj) != nil {
			continue
		}
		if id := requestID(obj["id"]); id != nil {
			out = append(out, errorBody(id, jsonrpc2.InvalidRequest, msg))
		}
	}
	if len(out) == 0 {
		return errorBody(nil, jsonrpc2.InvalidRequest, msg)
	}
	b, _ := json.Marshal(out)
	return b
}

// requestID returns an id value that is a string or a number, the ids an answer can carry.
func requestID(id json.RawMessage) json.RawMessage {
	switch firstByte(id) {
	case '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return id
	}
	return nil
}

func jsonKind(v []byte) string {
	switch firstByte(v) {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	}
	return "this"
}

func firstByte(b []byte) byte {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return c
		}
	}
	return 0
}

func jsonError(body []byte) string {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return err.Error()
	}
	return "malformed"
}

// findID extracts the top-level "id" of a possibly truncated or invalid JSON object, reading
// members in order and stopping at the first it cannot skip. Only a string or a number is
// an id to answer with.
func findID(body []byte) json.RawMessage {
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
		if key, _ := kt.(string); key != "id" {
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
			return json.RawMessage(v.String())
		case string:
			b, _ := json.Marshal(v)
			return b
		}
		return nil
	}
	return nil
}

func clip(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "..."
}
