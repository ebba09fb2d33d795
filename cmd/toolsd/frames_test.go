//go:build unix

package main_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolsd/toolsd/internal/harness"
	"github.com/toolsd/toolsd/protocol"
)

// rawClient speaks LSP framing by hand, to send what no library would.
type rawClient struct {
	t   *testing.T
	in  io.WriteCloser
	out *bufio.Reader
	cmd *exec.Cmd
}

func startRaw(t *testing.T, extra ...string) *rawClient {
	t.Helper()
	cmd := exec.Command(harness.Binary(t), append([]string{"--store", filepath.Join(t.TempDir(), "s.db")}, extra...)...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = in.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	return &rawClient{t: t, in: in, out: bufio.NewReader(out), cmd: cmd}
}

func (c *rawClient) send(s string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, s); err != nil {
		c.t.Fatal(err)
	}
}

func frame(body string) string { return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body) }

type rawResponse struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Method string `json:"method"`
}

// next reads frames until a response (skipping notifications), with a deadline.
func (c *rawClient) next() rawResponse {
	c.t.Helper()
	type res struct {
		r   rawResponse
		err error
	}
	ch := make(chan res, 1)
	go func() {
		for {
			n := -1
			for {
				line, err := c.out.ReadString('\n')
				if err != nil {
					ch <- res{err: err}
					return
				}
				line = strings.TrimRight(line, "\r\n")
				if line == "" {
					break
				}
				if v, ok := strings.CutPrefix(line, "Content-Length: "); ok {
					n, _ = strconv.Atoi(v)
				}
			}
			body := make([]byte, n)
			if _, err := io.ReadFull(c.out, body); err != nil {
				ch <- res{err: err}
				return
			}
			var r rawResponse
			if err := json.Unmarshal(body, &r); err != nil {
				ch <- res{err: fmt.Errorf("bad frame from daemon %q: %v", body, err)}
				return
			}
			if r.Method == "" {
				ch <- res{r: r}
				return
			}
		}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			c.t.Fatal(r.err)
		}
		return r.r
	case <-time.After(20 * time.Second):
		c.t.Fatal("no response from the daemon")
	}
	return rawResponse{}
}

func TestMalformedFramesKeepServing(t *testing.T) {
	c := startRaw(t, "--max-message", "4096")
	ws := t.TempDir()
	c.send(frame(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"workspaceFolder":` + strconv.Quote(ws) + `,"capabilities":{"ask":true}}}`))
	if r := c.next(); r.Error != nil || string(r.ID) != "1" {
		t.Fatalf("initialize: %+v", r)
	}
	ping := func(id int) {
		t.Helper()
		c.send(frame(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"permission/list"}`, id)))
		r := c.next()
		if r.Error != nil || string(r.ID) != strconv.Itoa(id) {
			t.Fatalf("daemon stopped serving: %+v", r)
		}
	}
	huge := `{"jsonrpc":"2.0","id":"big","method":"tools/execute","params":{"args":"` + strings.Repeat("x", 10000) + `"}}`
	cases := []struct {
		name     string
		send     string
		wantCode int
		wantID   string
	}{
		{"invalid JSON, id still found", frame(`{"jsonrpc":"2.0","id":2,"method":`), -32700, "2"},
		{"invalid JSON", frame(`{"jsonrpc":"2.0",,"id":3}`), -32700, "null"},
		{"not an object", frame(`"hello"`), -32600, "null"},
		{"bad envelope", frame(`{"jsonrpc":"2.0","id":{"x":1},"method":"permission/list"}`), -32600, "null"},
		{"over the message limit", frame(huge), -32600, `"big"`},
		{"Content-Length too small", "Content-Length: 5\r\n\r\n" + `{"jsonrpc":"2.0","id":9,"method":"permission/list"}` + "\r\n", -32700, "null"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c.send(tc.send)
			r := c.next()
			if r.Error == nil || r.Error.Code != tc.wantCode || string(r.ID) != tc.wantID {
				t.Fatalf("got %+v (id %s), want code %d id %s", r.Error, r.ID, tc.wantCode, tc.wantID)
			}
			ping(100 + i)
		})
	}
	// Params of the wrong type and unknown methods are errors too, and serving goes on.
	c.send(frame(`{"jsonrpc":"2.0","id":50,"method":"calls/list","params":{"limit":"ten"}}`))
	if r := c.next(); r.Error == nil || r.Error.Code != -32602 || !strings.Contains(r.Error.Message, "limit") {
		t.Fatalf("wrong param type: %+v", r.Error)
	}
	c.send(frame(`{"jsonrpc":"2.0","id":51,"method":"calls/list","params":[1,2]}`))
	if r := c.next(); r.Error == nil || r.Error.Code != -32602 {
		t.Fatalf("params as an array: %+v", r.Error)
	}
	ping(200)
}

// The message limit comes from the settings when no flag names one.
func TestMessageLimitFromSettings(t *testing.T) {
	e := newEnv(t, envOpts{options: map[string]any{"limits": map[string]any{"maxMessageBytes": 1 << 20}}})
	if e.init.Capabilities.MaxMessage != 1<<20 {
		t.Fatalf("capabilities.maxMessageBytes = %d, want 1 MiB", e.init.Capabilities.MaxMessage)
	}
	_, err := e.execute(protocol.ExecuteParams{CallID: "big", Tool: "write", Args: args("filePath", "x.txt", "content", strings.Repeat("x", 1<<20))})
	if code := harness.RPCError(err); code != -32600 || !strings.Contains(err.Error(), "exceeds the limit of 1048576") {
		t.Fatalf("oversized execute: %v", err)
	}
	if _, err := e.execute(protocol.ExecuteParams{CallID: "small", Tool: "read", Args: args("filePath", ".")}); err != nil {
		t.Fatalf("after an oversized message: %v", err)
	}
}

// A malformed header is answered once, with id null, and ends the connection: the request
// after it is never read, and the daemon exits with code 1 (and stays up until then: a
// garbage header once crashed it).
func TestMalformedHeaderEndsTheConnection(t *testing.T) {
	for name, header := range map[string]string{
		"a line without a colon":   "garbage\r\n\r\n",
		"not a number":             "Content-Length: abc\r\n\r\n{}",
		"a header that never ends": "Content-Length: 5\r\n" + strings.Repeat("X-A: b\r\n", 1000),
		"two Content-Length":       "Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}",
		"non-ASCII":                strings.Repeat("Ⱥ", 40) + "content-length: 5\r\n\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			c := startRaw(t)
			c.send(frame(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"workspaceFolder":` + strconv.Quote(t.TempDir()) + `}}`))
			if r := c.next(); r.Error != nil {
				t.Fatalf("initialize: %+v", r)
			}
			c.send(header + frame(`{"jsonrpc":"2.0","id":1,"method":"permission/list"}`))
			if r := c.next(); r.Error == nil || r.Error.Code != -32700 || string(r.ID) != "null" || !strings.Contains(r.Error.Message, "connection is closed") {
				t.Fatalf("got %+v (id %s), want -32700 with id null", r.Error, r.ID)
			}
			if rest, err := io.ReadAll(c.out); err != nil || len(rest) != 0 {
				t.Fatalf("after the malformed header the daemon wrote %q (%v), want nothing more", rest, err)
			}
			var exit *exec.ExitError
			if err := c.cmd.Wait(); !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Fatalf("the daemon ended with %v, want exit code 1", err)
			}
		})
	}
}

// Request ids the daemon cannot take are answered with -32600 (with the id when it is a
// string or a number, else null), and ids a request names that are too long for the store
// with -32602.
func TestBadIDs(t *testing.T) {
	c := startRaw(t)
	ws := t.TempDir()
	c.send(frame(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"workspaceFolder":` + strconv.Quote(ws) + `}}`))
	if r := c.next(); r.Error != nil {
		t.Fatalf("initialize: %+v", r)
	}
	long := strings.Repeat("x", 40000)
	cases := []struct {
		name, id, params string
		code             int
		echo             bool
	}{
		{"null", `null`, `{}`, -32600, false},
		{"huge number", `123456789012345678901234567890`, `{}`, -32600, true},
		{"fraction", `1.5`, `{}`, -32600, true},
		{"huge string", strconv.Quote(long), `{}`, -32600, true},
		{"object", `{"a":1}`, `{}`, -32600, false},
		{"array", `[1]`, `{}`, -32600, false},
		{"bool", `true`, `{}`, -32600, false},
		{"huge callID", `"c"`, `{"sessionID":"s","messageID":"m","callID":"` + long + `","tool":"read","args":{"filePath":"."}}`, -32602, true},
		{"huge sessionID", `"s"`, `{"sessionID":"` + long + `","messageID":"m","callID":"c","tool":"read","args":{"filePath":"."}}`, -32602, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			defer func(parent *testing.T) { c.t = parent }(c.t)
			c.t = t
			c.send(frame(`{"jsonrpc":"2.0","id":` + tc.id + `,"method":"tools/execute","params":` + tc.params + `}`))
			r := c.next()
			wantID := "null"
			if tc.echo {
				wantID = tc.id
			}
			if r.Error == nil || r.Error.Code != tc.code || string(r.ID) != wantID {
				t.Fatalf("got %+v id %.40s, want code %d id %.40s", r.Error, r.ID, tc.code, wantID)
			}
		})
	}
}
