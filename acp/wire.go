package acp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// The proxy reads each side's newline-delimited JSON-RPC 2.0 as raw lines and looks only at
// the envelope: what it does not change, it forwards byte for byte, so that methods and
// fields of ACP versions it does not know (v2, unstable extensions, _meta) pass unchanged.

// msg is a JSON-RPC envelope: a request (Method and ID), a notification (Method), or a
// response (ID with Result or Error).
type msg struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
}

func (m *msg) isRequest() bool  { return m.Method != "" && len(m.ID) > 0 && string(m.ID) != "null" }
func (m *msg) isResponse() bool { return m.Method == "" && len(m.ID) > 0 }

// parse reads one line's envelope; an error says what is wrong with it, for the sender.
func parse(line []byte) (*msg, error) {
	var m msg
	if err := json.Unmarshal(line, &m); err != nil {
		return nil, fmt.Errorf("not a JSON object (%v)", err)
	}
	if m.Method == "" && len(m.ID) == 0 {
		return &m, errors.New(`neither a request nor a notification (no "method") nor a response (no "id")`)
	}
	if m.isResponse() && m.Result == nil && m.Error == nil {
		return &m, errors.New(`a response needs "result" or "error"`)
	}
	return &m, nil
}

// maxLine bounds one message; a longer line is refused and skipped.
const maxLine = 64 << 20

// reader reads lines of at most maxLine bytes.
type reader struct{ r *bufio.Reader }

func newReader(r io.Reader) *reader { return &reader{bufio.NewReaderSize(r, 64<<10)} }

// next returns the next non-empty line without its newline; tooLong reports a line that was
// skipped for its size.
func (r *reader) next() (line []byte, tooLong bool, err error) {
	for {
		var buf []byte
		for {
			chunk, isPrefix, err := r.r.ReadLine()
			if err != nil {
				return nil, false, err
			}
			if !tooLong {
				buf = append(buf, chunk...)
				if len(buf) > maxLine {
					tooLong, buf = true, nil
				}
			}
			if !isPrefix {
				break
			}
		}
		if tooLong {
			return nil, true, nil
		}
		if len(bytes.TrimSpace(buf)) > 0 {
			return buf, false, nil
		}
	}
}

// writer writes whole lines to one side, one at a time: a side that reads slowly slows the
// proxy (there is no queue between the sides).
type writer struct {
	mu sync.Mutex
	w  io.Writer
}

func (w *writer) line(b []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := w.w.Write(append(bytes.TrimRight(b, "\r\n"), '\n')); err != nil {
		return err
	}
	return nil
}

func (w *writer) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return w.line(b)
}

// JSON-RPC error codes.
const (
	codeParse          = -32700
	codeInvalidRequest = -32600
	codeInvalidParams  = -32602
	codeInternal       = -32603
)

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

type request struct {
	JSONRPC string `json:"jsonrpc"`
	ID      string `json:"id"`
	Method  string `json:"method"`
	Params  any    `json:"params"`
}

func errorReply(id json.RawMessage, code int, text string) response {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	return response{JSONRPC: "2.0", ID: id, Error: &rpcError{Code: code, Message: text}}
}

func resultReply(id json.RawMessage, v any) response {
	return response{JSONRPC: "2.0", ID: id, Result: v}
}
