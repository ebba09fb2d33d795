package attach

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
)

// A relayed client (Hello.Relay) copies its standard streams over the connection itself,
// where the system cannot hand them to the owner (Windows: no SCM_RIGHTS). Both directions
// then carry frames: a kind byte, a big-endian uint32 length, that many bytes. A data frame
// is bytes of the stream; an end frame ends the direction — from the client, its input
// ended; from the owner, the session ended, and its payload is the End line — so that a
// stream's end and the session's exit code pass on the one connection that has no half-close.
const (
	frameData = 'd'
	frameEnd  = 'e'
)

// maxFrame bounds a frame's payload: writers split larger writes, readers refuse larger frames.
const maxFrame = 64 << 10

// errFrame is a frame that breaks the format: the connection is not a toolsd relay.
var errFrame = errors.New("attach: a malformed relay frame")

// frameWriter writes a stream as data frames, then one end frame. It is safe for
// concurrent use; frames are never interleaved.
type frameWriter struct {
	mu    sync.Mutex // guards w and ended
	w     io.Writer
	ended bool
}

// Write writes p as data frames of at most maxFrame bytes.
func (f *frameWriter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for len(p) > 0 {
		if f.ended {
			return n, net.ErrClosed
		}
		chunk := p[:min(len(p), maxFrame)]
		if err := writeFrame(f.w, frameData, chunk); err != nil {
			return n, err
		}
		n += len(chunk)
		p = p[len(chunk):]
	}
	return n, nil
}

// end writes the end frame with payload; every later Write fails, so it is the last frame.
func (f *frameWriter) end(payload []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ended {
		return net.ErrClosed
	}
	f.ended = true
	return writeFrame(f.w, frameEnd, payload)
}

func writeFrame(w io.Writer, kind byte, p []byte) error {
	b := make([]byte, 5+len(p))
	b[0] = kind
	binary.BigEndian.PutUint32(b[1:5], uint32(len(p)))
	copy(b[5:], p)
	_, err := w.Write(b)
	return err
}

// frameReader reads the data frames of one direction as a stream: io.EOF at its end frame,
// whose payload it keeps (End). Not safe for concurrent use.
type frameReader struct {
	r    *bufio.Reader
	left int    // bytes of the current data frame not yet read
	end  []byte // the end frame's payload, once read
	err  error  // sticky
}

func (f *frameReader) Read(p []byte) (int, error) {
	for f.left == 0 && f.err == nil {
		var h [5]byte
		if _, err := io.ReadFull(f.r, h[:]); err != nil {
			f.err = err
			if errors.Is(err, io.EOF) {
				f.err = io.ErrUnexpectedEOF // the connection ended without an end frame
			}
			break
		}
		n := binary.BigEndian.Uint32(h[1:])
		switch {
		case n > maxFrame:
			f.err = fmt.Errorf("%w: %d bytes (at most %d)", errFrame, n, maxFrame)
		case h[0] == frameData:
			f.left = int(n)
		case h[0] == frameEnd:
			f.end = make([]byte, n)
			if _, err := io.ReadFull(f.r, f.end); err != nil {
				f.err = io.ErrUnexpectedEOF
			} else {
				f.err = io.EOF
			}
		default:
			f.err = fmt.Errorf("%w: kind %q", errFrame, h[0])
		}
	}
	if f.left == 0 {
		return 0, f.err
	}
	n, err := f.r.Read(p[:min(len(p), f.left)])
	f.left -= n
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		f.err = err
		if n > 0 {
			err = nil
		}
	}
	return n, err
}

// relay is a relayed client's part (Conn.Wait): it copies in to the owner and the owner's
// output to out until the owner ends the session, and returns the exit code the End names.
// ok is false when the connection ended without one (the owner crashed or was killed).
// When out fails (whoever reads it went away) the connection is closed, so the owner ends
// the session, and relay returns 1. The copy of in runs on until its next read returns (at
// in's end it tells the owner, with an end frame); a forwarder exits meanwhile.
func relay(c net.Conn, r *bufio.Reader, in io.Reader, out io.Writer) (code int, ok bool) {
	go func() {
		fw := &frameWriter{w: c}
		_, _ = io.Copy(fw, in)
		_ = fw.end(nil) // our input ended (or failed): the owner reads its end
	}()
	fr := &frameReader{r: r}
	if _, err := io.Copy(out, fr); err != nil {
		if fr.err == nil {
			_ = c.Close() // out failed, not the connection: end the session
			return 1, true
		}
		return 1, false
	}
	var e End
	if json.Unmarshal(fr.end, &e) != nil {
		return 1, false
	}
	return e.Exit, true
}
