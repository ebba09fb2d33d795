package session

import (
	"fmt"
	"unicode/utf8"

	"github.com/toolsd/toolsd/protocol"
)

// CallOutput is the output so far of a call in flight (calls/output): the end of what its
// tool printed, as the call's truncator holds it (everything while the output is within the
// limits, then the last Limits.Bytes/2 bytes), cut to maxBytes (0: all it holds) forward to
// a character boundary. A call that is not in flight is ErrNotFound: its record has its
// result.
func (s *Service) CallOutput(p protocol.CallsOutputParams) (*protocol.CallsOutputResult, error) {
	if p.MaxBytes < 0 {
		return nil, &ParamsError{"calls/output: maxBytes must not be negative"}
	}
	s.mu.Lock()
	c := s.calls[callKey{p.SessionID, p.CallID}]
	s.mu.Unlock()
	if c == nil {
		return nil, fmt.Errorf("%w: no call %q in flight in session %q (calls/get has the record of a call that ended)", ErrNotFound, p.CallID, p.SessionID)
	}
	res := &protocol.CallsOutputResult{}
	w := c.out.Load()
	if w == nil {
		return res, nil // not running yet (its permission is being decided), or an agent's own call
	}
	w.mu.Lock()
	held, total := w.w.held()
	w.mu.Unlock()
	i := 0
	if p.MaxBytes > 0 && len(held) > p.MaxBytes {
		i = len(held) - p.MaxBytes
	}
	if i > 0 || int64(len(held)) < total {
		for i < len(held) && !utf8.RuneStart(held[i]) {
			i++
		}
	}
	held = held[i:]
	res.Output, res.Bytes, res.Truncated = string(held), total, int64(len(held)) < total
	return res, nil
}

// held is a copy of the end of the output the truncator holds (all of it before it spilled,
// its tail ring after), and how many bytes were written.
func (t *truncator) held() ([]byte, int64) {
	if t.out == nil && t.spillErr == nil {
		return append([]byte(nil), t.all...), t.total
	}
	return t.tail.bytes(), t.total
}
