package attach

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// Frames carry a stream in pieces of at most maxFrame bytes and end with one end frame,
// whose payload the reader keeps; nothing is written after it.
func TestFramesRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	fw := &frameWriter{w: &buf}
	data := bytes.Repeat([]byte("0123456789"), maxFrame/4) // 2.5 frames
	if n, err := fw.Write(data); n != len(data) || err != nil {
		t.Fatalf("write: %d, %v", n, err)
	}
	if err := fw.end([]byte(`{"exit":3}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := fw.Write([]byte("late")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("a write after the end frame: %v", err)
	}
	if err := fw.end(nil); err == nil {
		t.Fatal("a second end frame was written")
	}
	if want := len(data) + 3*5 + 5 + len(`{"exit":3}`); buf.Len() != want {
		t.Fatalf("%d bytes on the wire, want %d (three data frames and the end)", buf.Len(), want)
	}
	fr := &frameReader{r: bufio.NewReader(&buf)}
	got, err := io.ReadAll(fr)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes (want %d), %v", len(got), len(data), err)
	}
	if string(fr.end) != `{"exit":3}` {
		t.Fatalf("end payload %q", fr.end)
	}
}

// A stream that breaks off or breaks the format is an error, never a clean end.
func TestFrameReaderErrors(t *testing.T) {
	frame := func(kind byte, p string) string {
		var b bytes.Buffer
		_ = writeFrame(&b, kind, []byte(p))
		return b.String()
	}
	for _, tc := range []struct {
		name, wire string
		want       error
	}{
		{"no end frame", frame(frameData, "abc"), io.ErrUnexpectedEOF},
		{"cut inside a frame", frame(frameData, "abcdef")[:7], io.ErrUnexpectedEOF},
		{"cut inside a header", frame(frameData, "abc") + "d\x00", io.ErrUnexpectedEOF},
		{"cut end payload", frame(frameEnd, "{}")[:6], io.ErrUnexpectedEOF},
		{"unknown kind", frame(frameData, "abc") + frame('x', ""), errFrame},
		{"oversized", "d\xff\xff\xff\xff", errFrame},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := io.ReadAll(&frameReader{r: bufio.NewReader(strings.NewReader(tc.wire))})
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

// ownerEnd is the owner's side of a relayed connection in the tests below.
type ownerEnd struct {
	c  net.Conn
	fr *frameReader
	fw *frameWriter
}

func relayPair(t *testing.T) (client net.Conn, o ownerEnd) {
	t.Helper()
	client, server := net.Pipe()
	t.Cleanup(func() { _ = client.Close(); _ = server.Close() })
	return client, ownerEnd{c: server, fr: &frameReader{r: bufio.NewReader(server)}, fw: &frameWriter{w: server}}
}

// The relay copies both ways: the client's input reaches the owner, with its end; the
// owner's output reaches the client's out; the owner's end frame gives the exit code.
func TestRelay(t *testing.T) {
	client, o := relayPair(t)
	inR, inW := io.Pipe()
	var out bytes.Buffer
	type result struct {
		code int
		ok   bool
	}
	done := make(chan result, 1)
	go func() {
		code, ok := relay(client, bufio.NewReader(client), inR, &out)
		done <- result{code, ok}
	}()
	go func() {
		_, _ = inW.Write([]byte("request"))
		_ = inW.Close()
	}()
	got, err := io.ReadAll(o.fr)
	if err != nil || string(got) != "request" {
		t.Fatalf("the owner read %q, %v", got, err)
	}
	if _, err := o.fw.Write([]byte("response")); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(End{Exit: 3})
	if err := o.fw.end(b); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.code != 3 || !r.ok || out.String() != "response" {
			t.Fatalf("relay: code %d ok %v, out %q", r.code, r.ok, out.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the relay did not end at the owner's end frame")
	}
}

// The owner goes away without an end frame: the relay ends, not ok (the owner crashed).
// The copy of the input stops at its next read, the connection being gone.
func TestRelayOwnerGone(t *testing.T) {
	client, o := relayPair(t)
	inR, inW := io.Pipe()
	defer inW.Close()
	done := make(chan bool, 1)
	go func() {
		_, ok := relay(client, bufio.NewReader(client), inR, io.Discard)
		done <- ok
	}()
	_, _ = o.fw.Write([]byte("partial"))
	_ = o.c.Close()
	select {
	case ok := <-done:
		if ok {
			t.Fatal("an owner gone without its end frame counted as a session's end")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the relay did not end when the owner went away")
	}
	_ = client.Close()
	// The input copier's next read finds a connection that is gone, and stops.
	_, _ = inW.Write([]byte("more"))
}

// Whoever reads the client's output went away: the relay closes the connection, so the
// owner ends the session (its reads fail), and ends with 1 — not a lost owner.
func TestRelayOutputGone(t *testing.T) {
	client, o := relayPair(t)
	inR, inW := io.Pipe()
	defer inW.Close()
	done := make(chan [2]any, 1)
	go func() {
		code, ok := relay(client, bufio.NewReader(client), inR, failWriter{})
		done <- [2]any{code, ok}
	}()
	go func() { _, _ = o.fw.Write([]byte("response")) }()
	select {
	case r := <-done:
		if r[0] != 1 || r[1] != true {
			t.Fatalf("relay with its output gone: %v", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the relay did not end when its output failed")
	}
	_ = o.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadAll(o.fr); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the owner's reads went on after the client's output failed: %v", err)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }
