package rpc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync/atomic"

	"go.lsp.dev/jsonrpc2"

	"github.com/toolsd/toolsd/internal/jsondec"
	"github.com/toolsd/toolsd/protocol"
)

// maxHeader bounds a header block (every line and the blank line that ends it); LSP headers
// are a few dozen bytes.
const maxHeader = 4096

// idPeek is how much of an oversized body is kept to find the request id to answer.
const idPeek = 64 << 10

// maxIDBytes bounds a request id as written on the wire, and the ids a request names
// (sessionID, callID, …).
const maxIDBytes = 1024

// headerToken is what a resynchronisation looks for, in any ASCII case: the name of the one
// header every frame has.
const headerToken = "content-length"

// frameReader reads one connection's byte stream frame by frame and passes on only frames
// the JSON-RPC library can take without failing the connection: a well-formed header, a body
// within the message limit, valid JSON and a valid JSON-RPC request envelope. Every other
// frame is answered here with a JSON-RPC error and skipped.
//
// Resynchronisation. After a frame is rejected, the reader looks for the next
// "Content-Length" (in any ASCII case, wherever it stands in a line) and reads a frame from
// there. Nothing a rejected frame consumed is lost to that search: its header bytes, and the
// end of its body, are scanned again, so garbage of any bytes — with or without newlines,
// with non-ASCII bytes, naming a Content-Length that covers the next frame — never swallows
// the valid frame after it. Three rules make that hold without reading past that frame:
//   - In a header block "content-length" may appear only as the name of the one
//     Content-Length line; a second one, or one inside another line, rejects the block. So a
//     header that is accepted cannot hide the start of another frame.
//   - A body is checked as it streams in (jsonLex): no frame header can pass that check,
//     since its "Content-Length" is a name outside a JSON string or its line end a control
//     byte inside one. A body that declared more bytes than were sent is rejected as soon as
//     the next frame's header arrives, not when the declared length is reached.
//   - A rejected body is scanned again from maxHeader bytes before the point where it failed,
//     which covers the start of any frame whose header tripped the check.
//
// Header bytes are compared byte by byte in ASCII case only; no offset computed on a
// transformed copy of the input is ever applied to the input.
//
// An oversized body is discarded as it streams in; its size is never allocated. A frame that
// fails while the reader is still resynchronising is answered only when it carries an id, so
// one run of garbage gets one error without an id, and a request that has an id is always
// answered.
//
// A frameReader is used by one goroutine.
type frameReader struct {
	in *bufio.Reader
	// back[off:] is read again before in: what a rejected frame consumed. Room before off
	// takes the next bytes queued again without moving the rest.
	back  []byte
	off   int
	limit *atomic.Int64 // the message limit in bytes
	// reply writes one error frame body.
	reply func(body []byte)

	resyncing bool
	cand      []byte // the header block being read
	body      []byte // reused body buffer
	chunk     []byte // scratch for discarding
	tail      []byte // the last maxHeader bytes of a body being discarded
}

func newFrameReader(in io.Reader, size int, limit *atomic.Int64, reply func([]byte)) *frameReader {
	return &frameReader{in: bufio.NewReaderSize(in, size), limit: limit, reply: reply}
}

// frameKind says how the flow control treats a frame.
type frameKind uint8

const (
	// framePass is a notification, a response, or a request answered on the read loop that
	// may overtake held-back requests (permission/reply, permission/list).
	framePass frameKind = iota
	// frameCall is a request handled concurrently with the ones after it: it takes one of
	// the connection's in-flight slots.
	frameCall
	// frameOrdered is initialize or shutdown: answered on the read loop, in wire order.
	frameOrdered
	// frameCancel is $/cancelRequest; key names the request it cancels.
	frameCancel
	// frameExit is the exit notification.
	frameExit
)

// frame is one frame as handed to the library, with what the flow control needs to know.
type frame struct {
	data []byte // "Content-Length: N\r\n\r\n" and the body
	kind frameKind
	id   json.RawMessage // a request's id as written
	key  string          // idKey of a request's id, or of the id a $/cancelRequest names
}

// frameError rejects one frame.
type frameError struct {
	code jsonrpc2.Code
	msg  string
}

func (e *frameError) Error() string { return e.msg }

func malformed(format string, args ...any) *frameError {
	return &frameError{jsonrpc2.ParseError, fmt.Sprintf(format, args...) + ` (a frame is "Content-Length: N\r\n\r\n" and N bytes of JSON)`}
}

// next returns the next good frame. Its error is the input's: io.EOF at a clean end,
// io.ErrUnexpectedEOF inside a frame.
func (r *frameReader) next() (*frame, error) {
	for {
		r.cand = r.cand[:0]
		if r.resyncing {
			if err := r.seekHeader(); err != nil {
				return nil, err
			}
		} else if err := r.skipBlankLines(); err != nil {
			return nil, err
		}
		n, err := r.header()
		if err != nil {
			var fe *frameError
			if errors.As(err, &fe) {
				r.reject(fe, nil, r.cand[min(1, len(r.cand)):])
				continue
			}
			return nil, err
		}
		if limit := r.limit.Load(); n > limit {
			peek, failed, rest, err := r.discard(n)
			if err != nil {
				return nil, err
			}
			if failed {
				r.reject(malformed("the body of a frame of %d bytes is not JSON", n), findID(peek), rest)
				continue
			}
			r.resyncing = false
			r.fail(findID(peek), jsonrpc2.InvalidRequest, fmt.Sprintf("message of %d bytes exceeds the limit of %d bytes; it was not read (send smaller arguments, or raise limits.maxMessageBytes or --max-message)", n, limit))
			continue
		}
		body, at, err := r.readBody(int(n))
		if err != nil {
			return nil, err
		}
		if at >= 0 {
			r.reject(&frameError{jsonrpc2.ParseError, "invalid JSON: " + jsonError(body[:at+1]) + " (the body is shorter than its Content-Length, or not JSON)"},
				findID(body[:at]), body[max(0, at-maxHeader):])
			continue
		}
		if !jsondec.Valid(body) {
			r.reject(&frameError{jsonrpc2.ParseError, "invalid JSON: " + jsonError(body)}, findID(body), body[max(0, len(body)-maxHeader):])
			continue
		}
		r.resyncing = false
		f, refusal := classify(body)
		if refusal != nil {
			r.send(refusal)
			continue
		}
		if cap(r.body) > 1<<20 {
			r.body = nil // do not keep a large buffer for small messages to come
		}
		return f, nil
	}
}

// reject answers a bad frame (unless it is part of garbage already answered), and queues
// again the bytes it consumed, to be searched for the next header.
func (r *frameReader) reject(fe *frameError, id json.RawMessage, rescan []byte) {
	if !r.resyncing || id != nil {
		r.fail(id, fe.code, fe.msg)
	}
	r.resyncing = true
	r.unread(rescan)
}

func (r *frameReader) fail(id json.RawMessage, code jsonrpc2.Code, msg string) {
	r.send(errorBody(id, code, msg))
}

func (r *frameReader) send(body []byte) {
	if r.reply != nil {
		r.reply(body)
	}
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

// The byte source: first what was queued again, then the input.

func (r *frameReader) readByte() (byte, error) {
	if r.off < len(r.back) {
		c := r.back[r.off]
		r.off++
		return c, nil
	}
	return r.in.ReadByte()
}

func (r *frameReader) peekByte() (byte, error) {
	if r.off < len(r.back) {
		return r.back[r.off], nil
	}
	b, err := r.in.Peek(1)
	if err != nil {
		return 0, err
	}
	return b[0], nil
}

func (r *frameReader) read(p []byte) (int, error) {
	if r.off < len(r.back) {
		n := copy(p, r.back[r.off:])
		r.off += n
		return n, nil
	}
	return r.in.Read(p)
}

// unread queues p to be read again before anything else.
func (r *frameReader) unread(p []byte) {
	if len(p) <= r.off {
		r.off -= len(p)
		copy(r.back[r.off:], p)
		return
	}
	rest := r.back[r.off:]
	room := len(p) + len(rest) + maxHeader
	back := make([]byte, room+len(p)+len(rest))
	copy(back[room:], p)
	copy(back[room+len(p):], rest)
	r.back, r.off = back, room
}

// skipBlankLines skips line ends between frames.
func (r *frameReader) skipBlankLines() error {
	for {
		c, err := r.peekByte()
		if err != nil {
			return err
		}
		if c != '\r' && c != '\n' {
			return nil
		}
		_, _ = r.readByte()
	}
}

// seekHeader skips input up to and including the next "content-length" in any ASCII case,
// which it leaves in r.cand as the start of a header block.
func (r *frameReader) seekHeader() error {
	// The token has no proper prefix that is also its suffix, so a mismatch restarts the
	// match at the mismatching byte.
	m := 0
	for {
		c, err := r.readByte()
		if err != nil {
			return err
		}
		switch {
		case asciiLower(c) == headerToken[m]:
			r.cand = append(r.cand[:m], c)
			m++
			if m == len(headerToken) {
				return nil
			}
		case asciiLower(c) == headerToken[0]:
			r.cand = append(r.cand[:0], c)
			m = 1
		default:
			m = 0
		}
	}
}

// header reads a header block (after what r.cand already holds) and returns its
// Content-Length. A line is rejected as soon as it cannot be valid, and checked whole when
// it ends.
func (r *frameReader) header() (int64, error) {
	length := int64(-1)
	start := 0
	var check lineCheck
	for _, c := range r.cand {
		check.add(c) // what a resynchronisation found: "content-length"
	}
	for {
		if len(r.cand) >= maxHeader {
			return 0, malformed("header block longer than %d bytes", maxHeader)
		}
		c, err := r.readByte()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
		r.cand = append(r.cand, c)
		if err := check.add(c); err != nil {
			return 0, err
		}
		if c != '\n' {
			continue
		}
		check = lineCheck{}
		line := r.cand[start : len(r.cand)-1]
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
		start = len(r.cand)
		if len(line) == 0 {
			if length < 0 {
				return 0, malformed("header without Content-Length")
			}
			return length, nil
		}
		n, isLength, err := headerLine(line)
		if err != nil {
			return 0, err
		}
		if isLength {
			if length >= 0 {
				return 0, malformed("two Content-Length headers")
			}
			length = n
		}
	}
}

// lineCheck rejects a header line as soon as a byte makes it invalid: a control byte, a
// CR not before LF, or "content-length" anywhere but as the line's first word and once.
// (headerLine checks the whole line when it ends; this keeps resynchronising through
// garbage dense with "content-length" linear.)
type lineCheck struct {
	n, lead   int // bytes seen; leading spaces and tabs
	m         int // bytes of headerToken matched
	cr, token bool
}

func (l *lineCheck) add(c byte) *frameError {
	if l.cr && c != '\n' {
		return malformed("CR not followed by LF in a header line")
	}
	l.cr = c == '\r'
	if c < 0x20 && c != '\t' && c != '\r' && c != '\n' || c == 0x7f {
		return malformed("control character in a header line")
	}
	if l.n == l.lead && (c == ' ' || c == '\t') {
		l.lead++
	}
	l.n++
	switch {
	case asciiLower(c) == headerToken[l.m]:
		l.m++
	case asciiLower(c) == headerToken[0]:
		l.m = 1
	default:
		l.m = 0
	}
	if l.m == len(headerToken) {
		l.m = 0
		if l.token || l.n-len(headerToken) != l.lead {
			return malformed("a header line names Content-Length but is not the Content-Length header")
		}
		l.token = true
	}
	return nil
}

// headerLine checks one header line and returns the value of a Content-Length line.
func headerLine(line []byte) (int64, bool, error) {
	colon := bytes.IndexByte(line, ':')
	if colon < 0 {
		return 0, false, malformed("malformed header line %q: expected \"Name: value\"", clip(line, 80))
	}
	name, value := trimSpace(line[:colon]), trimSpace(line[colon+1:])
	if !isToken(name) {
		return 0, false, malformed("malformed header line %q: the name is not a header name", clip(line, 80))
	}
	if asciiEqualFold(name, headerToken) {
		n, ok := contentLength(value)
		if !ok {
			return 0, false, malformed("invalid Content-Length %q: expected a positive number of bytes", clip(value, 40))
		}
		return n, true, nil
	}
	if asciiIndexFold(line, headerToken) >= 0 {
		return 0, false, malformed("malformed header line %q: it names Content-Length but is not the Content-Length header", clip(line, 80))
	}
	return 0, false, nil
}

// contentLength parses a run of ASCII digits, saturating far above any message limit.
func contentLength(v []byte) (int64, bool) {
	if len(v) == 0 {
		return 0, false
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = min(n*10+int64(c-'0'), 1<<40)
	}
	return n, n > 0
}

// readBody reads an n-byte body, checking it as it arrives. at is the offset of the first
// byte that cannot be JSON, or -1; body then holds what was read.
func (r *frameReader) readBody(n int) (body []byte, at int, err error) {
	if cap(r.body) < n {
		r.body = make([]byte, n)
	}
	body = r.body[:n]
	var lex jsonLex
	got := 0
	for got < n {
		k, err := r.read(body[got:])
		if k > 0 {
			if i := lex.scan(body[got : got+k]); i >= 0 {
				return body[:got+k], got + i, nil
			}
			got += k
		}
		if err != nil && got < n {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, -1, err
		}
	}
	return body, -1, nil
}

// discard skips an n-byte body over the limit, checking it as it streams. It returns the
// body's first bytes (for the id), and whether the check failed; rescan is then what must
// be read again: the maxHeader bytes before the failure and what was read after it.
func (r *frameReader) discard(n int64) (peek []byte, failed bool, rescan []byte, err error) {
	if r.chunk == nil {
		r.chunk = make([]byte, 32<<10)
	}
	peek = make([]byte, 0, min(n, idPeek))
	tail := r.tail[:0]
	var lex jsonLex
	for left := n; left > 0; {
		c := r.chunk[:min(left, int64(len(r.chunk)))]
		k, err := r.read(c)
		if k > 0 {
			c = c[:k]
			if i := lex.scan(c); i >= 0 {
				before := lastBytes(append(tail, c[:i]...), maxHeader)
				rescan = append(append([]byte(nil), before...), c[i:]...)
				peek = append(peek, c[:min(i, cap(peek)-len(peek))]...)
				r.tail = tail[:0]
				return peek, true, rescan, nil
			}
			peek = append(peek, c[:min(k, cap(peek)-len(peek))]...)
			tail = lastBytes(append(tail, c...), maxHeader)
			left -= int64(k)
		}
		if err != nil && left > 0 {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, false, nil, err
		}
	}
	r.tail = tail[:0]
	return peek, false, nil, nil
}

// lastBytes keeps the last n bytes of b, in b's own storage.
func lastBytes(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	copy(b, b[len(b)-n:])
	return b[:n]
}

// jsonLex checks, byte by byte, that a stream could be JSON: inside strings no control
// bytes, outside them only JSON's punctuation, whitespace, and the characters of numbers
// and of true, false and null. It is weaker than a parser (json.Valid runs on a whole body
// afterwards); what it guarantees is that no frame header passes it, since "Content-Length"
// outside a string starts with a letter JSON does not have, and its line ends inside one.
type jsonLex struct{ inString, escaped bool }

// scan returns the offset of the first byte that cannot be JSON, or -1.
func (l *jsonLex) scan(p []byte) int {
	for i, c := range p {
		if l.inString {
			switch {
			case c < 0x20:
				return i
			case l.escaped:
				l.escaped = false
			case c == '\\':
				l.escaped = true
			case c == '"':
				l.inString = false
			}
			continue
		}
		switch c {
		case '"':
			l.inString = true
		case ' ', '\t', '\r', '\n', '{', '}', '[', ']', ',', ':',
			'0', '1', '2', '3', '4', '5', '6', '7', '8', '9', '-', '+', '.', 'e', 'E',
			't', 'r', 'u', 'f', 'a', 'l', 's', 'n':
		default:
			return i
		}
	}
	return -1
}

// classify checks a body that is valid JSON as a JSON-RPC message and says how the flow
// control treats it; a message it refuses comes back as the body of the error reply.
func classify(body []byte) (*frame, []byte) {
	switch firstByte(body) {
	case '[':
		return nil, batchRefusal(body)
	case '{':
	default:
		return nil, errorBody(nil, jsonrpc2.InvalidRequest, "a JSON-RPC message must be a JSON object")
	}
	v, err := jsonrpc2.ScanMessageView(body)
	if err != nil {
		id, msg := envelopeProblem(body)
		return nil, errorBody(id, jsonrpc2.InvalidRequest, "invalid JSON-RPC message: "+msg)
	}
	f := &frame{data: canonical(body), kind: framePass}
	switch v.Kind {
	case jsonrpc2.MessageViewCall:
		f.id = append(json.RawMessage(nil), v.IDRaw...)
		if len(v.IDRaw) > maxIDBytes {
			return nil, errorBody(f.id, jsonrpc2.InvalidRequest, fmt.Sprintf("invalid request: its id is %d bytes long; an id is at most %d bytes", len(v.IDRaw), maxIDBytes))
		}
		id, _ := v.ID.ID()
		f.key = idKey(id)
		method, _ := v.MethodString()
		switch {
		case method == protocol.MethodInitialize || method == protocol.MethodShutdown:
			f.kind = frameOrdered
		case inline(method):
			f.kind = framePass
		default:
			f.kind = frameCall
		}
	case jsonrpc2.MessageViewNotification:
		if v.IDRaw != nil {
			return nil, errorBody(nil, jsonrpc2.InvalidRequest, `invalid request: its id is null; a request's id is a string or an integer (a notification has no "id" member, and gets no answer)`)
		}
		switch method, _ := v.MethodString(); method {
		case protocol.MethodCancelRequest:
			var p protocol.CancelRequestParams
			if json.Unmarshal(v.Params, &p) == nil {
				f.kind, f.key = frameCancel, rawIDKey(p.ID)
			}
		case protocol.MethodExit:
			f.kind = frameExit
		}
	}
	return f, nil
}

// canonical frames a body with the one header the library needs.
func canonical(body []byte) []byte {
	f := make([]byte, 0, len(body)+32)
	f = append(f, "Content-Length: "...)
	f = strconv.AppendInt(f, int64(len(body)), 10)
	f = append(f, "\r\n\r\n"...)
	return append(f, body...)
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
	err := json.Unmarshal(body, &v)
	if err == nil {
		return "malformed"
	}
	return err.Error()
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

// ASCII-only byte helpers: header bytes are never case-mapped as text, whose length can
// change under Unicode case mapping.

func asciiLower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// asciiEqualFold reports whether b equals the lower-case ASCII want, in any ASCII case.
func asciiEqualFold(b []byte, want string) bool {
	if len(b) != len(want) {
		return false
	}
	for i := range b {
		if asciiLower(b[i]) != want[i] {
			return false
		}
	}
	return true
}

// asciiIndexFold returns the offset in b of the lower-case ASCII want, in any ASCII case.
func asciiIndexFold(b []byte, want string) int {
	for i := 0; i+len(want) <= len(b); i++ {
		if asciiEqualFold(b[i:i+len(want)], want) {
			return i
		}
	}
	return -1
}

func trimSpace(b []byte) []byte {
	return bytes.Trim(b, " \t")
}

// isToken reports whether b is an HTTP header name (RFC 9110 token).
func isToken(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case bytes.IndexByte([]byte("!#$%&'*+-.^_`|~"), c) >= 0:
		default:
			return false
		}
	}
	return true
}

func clip(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "..."
}
