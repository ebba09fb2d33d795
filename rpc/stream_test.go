package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"go.lsp.dev/jsonrpc2"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func frameOf(body string) string { return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body) }

// newTestStream is a stream on input whose answers go to the returned buffer.
func newTestStream(input string, limit int) (*stream, *bytes.Buffer) {
	var out bytes.Buffer
	s := newStream(context.Background(), strings.NewReader(input), &out, func() error { return nil }, limit, slog.New(slog.DiscardHandler))
	return s, &out
}

// readAll reads input to its end on the stream's reader side and returns the messages
// passed on, the answers written, and the error the input ended with.
func readAll(t testing.TB, input string, limit int) (msgs []*message, replies []string, err error) {
	s, out := newTestStream(input, limit)
	for {
		m, err := s.readMessage()
		if cap(s.body) > limit {
			t.Fatalf("a body buffer of %d bytes for a limit of %d", cap(s.body), limit)
		}
		if err != nil {
			return msgs, splitFrames(t, out.String()), err
		}
		msgs = append(msgs, m)
	}
}

// splitFrames returns the bodies of the frames the stream wrote, each checked to be one
// frame of valid JSON.
func splitFrames(t testing.TB, out string) []string {
	var bodies []string
	for out != "" {
		var n int
		if _, err := fmt.Sscanf(out, "Content-Length: %d\r\n\r\n", &n); err != nil {
			t.Fatalf("not a frame: %q", out)
		}
		_, rest, _ := strings.Cut(out, "\r\n\r\n")
		if len(rest) < n || !json.Valid([]byte(rest[:n])) {
			t.Fatalf("bad frame: %q", out)
		}
		bodies, out = append(bodies, rest[:n]), rest[n:]
	}
	return bodies
}

// codeAndID sums up answers as "code id" each (a batch answer as one per member).
func codeAndID(t testing.TB, replies []string) string {
	var got []string
	for _, r := range replies {
		var one []json.RawMessage
		if r[0] == '[' {
			_ = json.Unmarshal([]byte(r), &one)
		} else {
			one = []json.RawMessage{json.RawMessage(r)}
		}
		for _, o := range one {
			var e struct {
				ID    json.RawMessage
				Error struct{ Code int }
			}
			if err := json.Unmarshal(o, &e); err != nil {
				t.Fatal(err)
			}
			got = append(got, fmt.Sprintf("%d %s", e.Error.Code, e.ID))
		}
	}
	return strings.Join(got, ", ")
}

// A frame whose header is good but whose body is bad is answered, with its id when it has
// one, and reading goes on with the next frame.
func TestFrameErrors(t *testing.T) {
	good := `{"jsonrpc":"2.0","id":"next","method":"tools/resolve"}`
	cases := []struct {
		name, input string
		want        string // code and id of each answer
	}{
		{"invalid JSON, id found", frameOf(`{"jsonrpc":"2.0","id":2,"method":`), "-32700 2"},
		{"invalid JSON", frameOf(`{x}`), "-32700 null"},
		{"two bad frames", frameOf(`{x}`) + frameOf(`{"id":3,`), "-32700 null, -32700 3"},
		{"not an object", frameOf(`"hello"`), "-32600 null"},
		{"null id", frameOf(`{"jsonrpc":"2.0","id":null,"method":"tools/resolve"}`), "-32600 null"},
		{"huge number id", frameOf(`{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"tools/resolve"}`), "-32600 123456789012345678901234567890"},
		{"fraction id", frameOf(`{"jsonrpc":"2.0","id":1.5,"method":"tools/resolve"}`), "-32600 1.5"},
		{"huge string id", frameOf(`{"jsonrpc":"2.0","id":"` + strings.Repeat("x", 2000) + `","method":"tools/resolve"}`), `-32600 "` + strings.Repeat("x", 2000) + `"`},
		{"object id", frameOf(`{"jsonrpc":"2.0","id":{"a":1},"method":"tools/resolve"}`), "-32600 null"},
		{"array id", frameOf(`{"jsonrpc":"2.0","id":[1],"method":"tools/resolve"}`), "-32600 null"},
		{"bool id", frameOf(`{"jsonrpc":"2.0","id":true,"method":"tools/resolve"}`), "-32600 null"},
		{"wrong version", frameOf(`{"jsonrpc":"1.0","id":4,"method":"tools/resolve"}`), "-32600 4"},
		{"method and result", frameOf(`{"jsonrpc":"2.0","id":4,"method":"m","result":1}`), "-32600 4"},
		{"batch", frameOf(`[{"jsonrpc":"2.0","id":5,"method":"a"},{"jsonrpc":"2.0","method":"b"},{"jsonrpc":"2.0","id":"six","method":"c"}]`), `-32600 5, -32600 "six"`},
		{"empty batch", frameOf(`[]`), "-32600 null"},
		{"oversized", frameOf(`{"jsonrpc":"2.0","id":"big","params":"` + strings.Repeat("x", 300) + `"}`), `-32600 "big"`},
		{"oversized, no id", frameOf(`{"params":"` + strings.Repeat("x", 300) + `"}`), `-32600 null`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			msgs, replies, err := readAll(t, c.input+"\r\n"+frameOf(good), 256)
			if !errors.Is(err, io.EOF) {
				t.Fatalf("input ended with %v, want EOF", err)
			}
			if len(msgs) != 1 || msgs[0].key != `s:next` {
				t.Fatalf("the good frame after the bad one: %v", msgs)
			}
			if got := codeAndID(t, replies); got != c.want {
				t.Fatalf("answers %s, want %s\n%q", got, c.want, replies)
			}
		})
	}
}

// A malformed header block is answered once, with id null, and ends the input: nothing
// after it is read.
func TestMalformedHeaderEndsInput(t *testing.T) {
	next := frameOf(`{"jsonrpc":"2.0","id":1,"method":"permission/list"}`)
	for name, header := range map[string]string{
		"no colon":                      "garbage\r\n\r\n",
		"no Content-Length":             "Content-Type: x\r\n\r\n",
		"not a number":                  "Content-Length: abc\r\n\r\n",
		"zero":                          "Content-Length: 0\r\n\r\n",
		"negative":                      "Content-Length: -5\r\n\r\n",
		"beyond 64 bits":                "Content-Length: 99999999999999999999999999\r\n\r\n",
		"two Content-Length":            "Content-Length: 2\r\ncontent-length: 2\r\n\r\n{}",
		"a block longer than 4 KiB":     "Content-Length: 5\r\n" + strings.Repeat("X-A: b\r\n", 1000) + "\r\n",
		"a line longer than the buffer": strings.Repeat("x", 100<<10),
	} {
		t.Run(name, func(t *testing.T) {
			msgs, replies, err := readAll(t, header+next, 1<<20)
			var he *headerError
			if !errors.As(err, &he) || len(msgs) != 0 {
				t.Fatalf("input ended with %v after %d messages, want a malformed header and none", err, len(msgs))
			}
			if got := codeAndID(t, replies); got != "-32700 null" {
				t.Fatalf("answers %s, want one -32700 with id null: %q", got, replies)
			}
		})
	}
}

// The header forms clients write are read: any case, LF line ends, other fields, blank
// lines between frames; the end of input is clean only between frames.
func TestHeaderForms(t *testing.T) {
	body := `{"jsonrpc":"2.0","method":"initialized"}`
	for _, header := range []string{
		"Content-Length: %d\r\n\r\n",
		"content-length: %d\n\n",
		"Content-Length: %d\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n",
		"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nCONTENT-LENGTH:%d\r\n\r\n",
		"\r\n\r\nContent-Length:  %d \r\n\r\n",
	} {
		in := fmt.Sprintf(header, len(body)) + body
		msgs, replies, err := readAll(t, in, 1<<20)
		if !errors.Is(err, io.EOF) || len(msgs) != 1 || len(replies) != 0 {
			t.Errorf("%q: %d messages, answers %q, end %v", header, len(msgs), replies, err)
			continue
		}
		if want := len(strings.TrimLeft(in, "\r\n")); msgs[0].size != want {
			t.Errorf("%q: size %d, want %d", header, msgs[0].size, want)
		}
	}
	for _, cut := range []string{"Content-Length: 40\r\n", "Content-Length: 40\r\n\r\n{\"jsonrpc\"", "Content-Len"} {
		if _, _, err := readAll(t, cut, 1<<20); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("%q: input ended with %v, want an unexpected EOF", cut, err)
		}
	}
}

// FuzzStream feeds arbitrary bytes: the stream never panics, never allocates a body over
// the message limit, writes only whole frames of valid JSON, and answers at most one
// malformed header (after which it reads nothing more).
func FuzzStream(f *testing.F) {
	for _, seed := range []string{
		"",
		frameOf(`{"jsonrpc":"2.0","id":1,"method":"m"}`),
		"Content-Length: 99999\r\n\r\n\"",
		"Content-Length: 5\r\n\r\n{\"a\":",
		"garbage\r\n\r\n",
		frameOf(`[{"jsonrpc":"2.0","id":5,"method":"a"}]`) + "Content-Length: 3\r\n\r\n{x}",
		"content-length: 2\n\n{}",
		strings.Repeat("Ⱥ", 40) + "content-length: 5\r\n\r\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, input []byte) {
		_, replies, err := readAll(t, string(input), 256)
		var he *headerError
		if errors.As(err, &he) && !strings.Contains(replies[len(replies)-1], "malformed header") {
			t.Fatalf("a malformed header not answered last: %q", replies)
		}
	})
}

// answerKey finds the request an answer answers, in any order of its members, and knows a
// request or a notification is not an answer.
func TestAnswerKey(t *testing.T) {
	enc := func(m jsonrpc2.Message) string { return string(jsonrpc2.AppendMessage(nil, m)) }
	cases := []struct {
		body, key string
		answer    bool
	}{
		{enc(jsonrpc2.NewResponse(jsonrpc2.NewNumberID(7), jsonrpc2.RawMessage(`{"a":"method"}`), nil)), "n:7", true},
		{enc(jsonrpc2.NewResponse(jsonrpc2.NewStringID(`a"b`), nil, jsonrpc2.NewError(1, "x"))), `s:a"b`, true},
		{enc(jsonrpc2.NewResponse(jsonrpc2.NewStringID(`x\`), jsonrpc2.RawMessage(`"\\"`), nil)), `s:x\`, true},
		{enc(jsonrpc2.NewResponse(jsonrpc2.NewNumberID(-3), jsonrpc2.RawMessage(`1`), nil)), "n:-3", true},
		{enc(jsonrpc2.NewCall(jsonrpc2.NewNumberID(7), "hooks/run", jsonrpc2.RawMessage(`{}`))), "", false},
		{enc(jsonrpc2.NewNotification("tools/progress", jsonrpc2.RawMessage(`{"id":1,"result":2}`))), "", false},
		{`{"result":{"id":2},"jsonrpc":"2.0","id":3}`, "n:3", true},
		{`{"jsonrpc":"2.0","error":{"code":1,"message":"x"},"id":"s"}`, "s:s", true},
	}
	for _, c := range cases {
		if key, answer := answerKey([]byte(c.body)); key != c.key || answer != c.answer {
			t.Errorf("%s: %q %v, want %q %v", c.body, key, answer, c.key, c.answer)
		}
	}
}

func TestFindID(t *testing.T) {
	cases := []struct{ body, want string }{
		{`{"jsonrpc":"2.0","id":7,"method":"x"}`, "7"},
		{`{"id":"abc","params":{`, `"abc"`},
		{`{"id":123456789012345678901234567890,"params":{`, `123456789012345678901234567890`},
		{`{"jsonrpc":"2.0","params":{"a":"` + strings.Repeat("x", 100), "none"},
		{`{"method":"x","id":null}`, "none"},
		{`{"method":"x","id":{"a":1}}`, "none"},
		{`[1,2]`, "none"},
		{`garbage`, "none"},
	}
	for _, c := range cases {
		id := findID([]byte(c.body))
		got := "none"
		if id != nil {
			got = string(id)
		}
		if got != c.want {
			t.Errorf("findID(%.40q) = %s, want %s", c.body, got, c.want)
		}
	}
}

// The codec writes encoding/json's bytes without HTML escapes, and raw messages as they are.
func TestCodec(t *testing.T) {
	got, err := codec{}.Marshal(struct {
		S string          `json:"s"`
		R json.RawMessage `json:"r"`
	}{"<&>", json.RawMessage(` {"a" : "<"} `)})
	if err != nil || string(got) != `{"s":"<&>","r":{"a":"<"}}` {
		t.Fatalf("%s %v", got, err)
	}
	if got, _ := (codec{}).Marshal(json.RawMessage(nil)); string(got) != "null" {
		t.Fatalf("nil raw message: %s", got)
	}
}
