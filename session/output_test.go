package session

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/toolsd/toolsd/protocol"
	"github.com/toolsd/toolsd/registry"
)

// calls/output gives a running call's output so far: all of it while it fits the limits,
// its tail once it outgrew them, cut to maxBytes at a character boundary; a call that ended
// is not in flight.
func TestCallOutput(t *testing.T) {
	wrote := make(chan struct{})
	next := make(chan string)
	f := newFixture(t, true, tool("prints", func(ctx context.Context, c *registry.Call, _ json.RawMessage) (*registry.Result, error) {
		for {
			select {
			case s, ok := <-next:
				if !ok {
					return &registry.Result{}, nil
				}
				_, _ = c.Output.Write([]byte(s))
				wrote <- struct{}{}
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}))
	done := make(chan error, 1)
	go func() {
		_, err := f.run(t, "p1", "prints", `{}`)
		done <- err
	}()
	print := func(s string) {
		t.Helper()
		next <- s
		<-wrote
	}
	get := func(maxBytes int) protocol.CallsOutputResult {
		t.Helper()
		r, err := f.svc.CallOutput(protocol.CallsOutputParams{SessionID: "s", CallID: "p1", MaxBytes: maxBytes})
		if err != nil {
			t.Fatal(err)
		}
		return *r
	}
	print("one\n")
	print("twé\n")
	if r := get(0); r.Output != "one\ntwé\n" || r.Bytes != 9 || r.Truncated {
		t.Fatalf("so far: %+v", r)
	}
	if r := get(3); r.Output != "é\n" || r.Bytes != 9 || !r.Truncated {
		t.Fatalf("cut to 3 bytes: %+v", r)
	}
	// Two bytes from the end fall inside "é": the cut moves forward to the next character.
	if r := get(2); r.Output != "\n" || !r.Truncated {
		t.Fatalf("cut to 2 bytes: %+v", r)
	}
	// Past the limits (1000 bytes here), the last half of them are held.
	print(strings.Repeat("x", 2000) + "\nlast\n")
	if r := get(0); !strings.HasSuffix(r.Output, "x\nlast\n") || len(r.Output) != 500 || r.Bytes != 2015 || !r.Truncated {
		t.Fatalf("after the spill: %d bytes held of %d, truncated %v, ending %q", len(r.Output), r.Bytes, r.Truncated, r.Output[max(0, len(r.Output)-10):])
	}
	close(next)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.CallOutput(protocol.CallsOutputParams{SessionID: "s", CallID: "p1"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("an ended call: %v", err)
	}
	if _, err := f.svc.CallOutput(protocol.CallsOutputParams{SessionID: "s", CallID: "p1", MaxBytes: -1}); err == nil {
		t.Fatal("a negative maxBytes was accepted")
	}
}
