package rpc

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
)

// errNoMoreInput ends the input of a test without ending the stream: a frame reader that
// asks for more than was sent before passing on a frame it already has would wait forever
// on a real connection.
var errNoMoreInput = errors.New("no more input (the client waits for an answer)")

type stalled struct{ r io.Reader }

func (s stalled) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if errors.Is(err, io.EOF) {
		err = errNoMoreInput
	}
	return n, err
}

// probeBody is the valid request that must survive any garbage before it.
const probeBody = `{"jsonrpc":"2.0","id":"probe","method":"tools/resolve","params":{"sessionID":"s"}}`

// probeFramings are ways a valid frame may be written.
var probeFramings = []string{
	"Content-Length: %d\r\n\r\n",
	"content-length: %d\n\n",
	"Content-Length: %d\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n",
	"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nCONTENT-LENGTH:%d\r\n\r\n",
}

// readFrames reads input until it runs out and returns the frames passed on and the
// error replies sent.
func readFrames(t testing.TB, input string, limit int64) (frames []string, replies []string, err error) {
	var l atomic.Int64
	l.Store(limit)
	r := newFrameReader(stalled{strings.NewReader(input)}, 16, &l, func(b []byte) {
		if !json.Valid(b) {
			t.Fatalf("error reply is not JSON: %q", b)
		}
		replies = append(replies, string(b))
	})
	for {
		f, err := r.next()
		if err != nil {
			return frames, replies, err
		}
		frames = append(frames, string(f.data))
	}
}

// checkProbe asserts that garbage followed by a valid frame yields that frame, last, and
// without reading past it.
func checkProbe(t testing.TB, garbage []byte, framing string, limit int64) {
	t.Helper()
	want := canonical([]byte(probeBody))
	input := string(garbage) + fmt.Sprintf(framing, len(probeBody)) + probeBody
	frames, replies, err := readFrames(t, input, limit)
	if !errors.Is(err, errNoMoreInput) {
		t.Fatalf("garbage %q: input ended with %v, want %v", garbage, err, errNoMoreInput)
	}
	if len(frames) == 0 || frames[len(frames)-1] != string(want) {
		t.Fatalf("garbage %q swallowed the valid frame after it: frames %q, replies %q", clip(garbage, 200), frames, replies)
	}
	for _, f := range frames {
		_, body, ok := strings.Cut(f, "\r\n\r\n")
		if !ok || !json.Valid([]byte(body)) || f != string(canonical([]byte(body))) {
			t.Fatalf("garbage %q: passed on a frame that is not canonical and valid: %q", garbage, f)
		}
	}
}

var long = strings.Repeat("x", 5000)

// garbageClasses holds garbage of every class found so far. The fuzz seeds in
// testdata/fuzz/FuzzGuardResync start from these.
var garbageClasses = map[string]string{
	"nothing":                               "",
	"blank lines":                           "\r\n\n\r\n",
	"garbage without a newline":             "garbage",
	"garbage line":                          "garbage\r\n",
	"garbage line and blank line":           "garbage\r\n\r\n",
	"long line without a newline":           long,
	"long line":                             long + "\r\n",
	"non-ASCII that grows when lower-cased": strings.Repeat("Ⱥ", 40) + "content-length: 5\r\n\r\n",
	"invalid UTF-8":                         strings.Repeat("\xff", 40) + "content-length:",
	"İ before Content-Length":               "İİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİİ Content-Length: 3\r\n",
	"Kelvin sign lookalike":                 "Content-Length\u212a: 3\r\n\r\n",
	"odd case, no value":                    "cOnTeNt-LeNgTh",
	"partial token":                         "content-lengt",
	"token in a value":                      "X-Note: see Content-Length: 3\r\n",
	"token in a name":                       "X-Content-Length: 3\r\n",
	"dangling Content-Length line":          "Content-Length: 5\r\n",
	"dangling line then garbage":            "Content-Length: 5\r\nX",
	"Content-Length covering the frame":     "Content-Length: 40\r\n\r\n",
	"Content-Length inside a string":        "Content-Length: 60\r\n\r\n{\"a\":\"",
	"Content-Length ending in the frame":    "Content-Length: 3\r\n\r\n\"a",
	"oversized length":                      "Content-Length: 99999\r\n\r\n",
	"oversized length inside a string":      "Content-Length: 99999\r\n\r\n\"",
	"huge length":                           "Content-Length: 99999999999999999999999999\r\n\r\n",
	"zero length":                           "Content-Length: 0\r\n\r\n",
	"negative length":                       "Content-Length: -5\r\n\r\n",
	"header that never ends":                "Content-Length: 5\r\n" + strings.Repeat("X-A: b\r\n", 1000),
	"bare CR line ends":                     "Content-Length: 5\r\r",
	"CR in a value":                         "Content-Type: a\rb\r\n",
	"NUL bytes":                             "\x00\x00Content-Length: 5\x00\r\n\r\n",
	"a frame cut short":                     "Content-Length: 50\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":1,",
	"invalid JSON body":                     "Content-Length: 3\r\n\r\n{x}",
	"valid JSON, bad envelope":              "Content-Length: 2\r\n\r\n{}",
	"batch":                                 "Content-Length: 2\r\n\r\n[]",
	"a good frame, then garbage":            "Content-Length: 40\r\n\r\n{\"jsonrpc\":\"2.0\",\"method\":\"initialized\"}xx",
	"the same frame cut short":              "Content-Length: 84\r\n\r\n" + probeBody[:40],
	"an escape at the end":                  "Content-Length: 30\r\n\r\n\"\\",
}

// Garbage of every class, before each way of writing a valid frame: none may swallow the
// frame after it.
func TestResyncNeverSwallowsTheNextFrame(t *testing.T) {
	for name, garbage := range garbageClasses {
		for i, framing := range probeFramings {
			t.Run(fmt.Sprintf("%s/framing%d", name, i), func(t *testing.T) {
				checkProbe(t, []byte(garbage), framing, 256)
			})
		}
	}
}

// FuzzGuardResync feeds arbitrary bytes followed by a valid frame: the frame must come out,
// last, without the reader asking for input past it, and nothing may panic. The message
// limit is small so that garbage reaches the oversized-body path too.
func FuzzGuardResync(f *testing.F) {
	f.Fuzz(func(t *testing.T, garbage []byte, framing uint8) {
		checkProbe(t, garbage, probeFramings[int(framing)%len(probeFramings)], 256)
	})
}

// Errors: each bad frame is answered once, with its id when it has one; a run of garbage is
// answered once.
func TestFrameErrors(t *testing.T) {
	frame := func(body string) string { return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body) }
	cases := []struct {
		name, input string
		want        []string // code and id of each reply, "code id"
	}{
		{"invalid JSON, id found", frame(`{"jsonrpc":"2.0","id":2,"method":`), []string{"-32700 2"}},
		{"cut short by the next frame, id found", "Content-Length: 80\r\n\r\n" + `{"jsonrpc":"2.0","id":"a","method":` + frame(`{x}`), []string{"-32700 \"a\""}},
		{"two bad frames", frame(`{x}`) + frame(`{"id":3,`), []string{"-32700 null", "-32700 3"}},
		{"garbage", "garbage\r\nmore garbage Content-Length: x\r\nContent-Length\r\n", []string{"-32700 null"}},
		{"not an object", frame(`"hello"`), []string{"-32600 null"}},
		{"null id", frame(`{"jsonrpc":"2.0","id":null,"method":"tools/resolve"}`), []string{"-32600 null"}},
		{"huge number id", frame(`{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"tools/resolve"}`), []string{"-32600 123456789012345678901234567890"}},
		{"fraction id", frame(`{"jsonrpc":"2.0","id":1.5,"method":"tools/resolve"}`), []string{"-32600 1.5"}},
		{"huge string id", frame(`{"jsonrpc":"2.0","id":"` + strings.Repeat("x", 2000) + `","method":"tools/resolve"}`), []string{"-32600 \"" + strings.Repeat("x", 2000) + "\""}},
		{"object id", frame(`{"jsonrpc":"2.0","id":{"a":1},"method":"tools/resolve"}`), []string{"-32600 null"}},
		{"array id", frame(`{"jsonrpc":"2.0","id":[1],"method":"tools/resolve"}`), []string{"-32600 null"}},
		{"bool id", frame(`{"jsonrpc":"2.0","id":true,"method":"tools/resolve"}`), []string{"-32600 null"}},
		{"wrong version", frame(`{"jsonrpc":"1.0","id":4,"method":"tools/resolve"}`), []string{"-32600 4"}},
		{"batch", frame(`[{"jsonrpc":"2.0","id":5,"method":"a"},{"jsonrpc":"2.0","method":"b"},{"jsonrpc":"2.0","id":"six","method":"c"}]`), []string{"-32600 5", "-32600 \"six\""}},
		{"empty batch", frame(`[]`), []string{"-32600 null"}},
		{"oversized", frame(`{"jsonrpc":"2.0","id":"big","params":"` + strings.Repeat("x", 300) + `"}`), []string{"-32600 \"big\""}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			frames, replies, err := readFrames(t, c.input, 256)
			if !errors.Is(err, errNoMoreInput) || len(frames) != 0 {
				t.Fatalf("frames %q, err %v", frames, err)
			}
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
			if strings.Join(got, ", ") != strings.Join(c.want, ", ") {
				t.Fatalf("replies %s, want %s\n%q", got, c.want, replies)
			}
		})
	}
}

// The lexical check passes every valid JSON text and fails on every frame header.
func TestJSONLex(t *testing.T) {
	for _, s := range []string{`{"a":[1,-2.5e+3,true,false,null,"x\"y\\\u00e9"]}`, " \t\r\n[]", `"Content-Length: 3"`} {
		var l jsonLex
		if i := l.scan([]byte(s)); i >= 0 {
			t.Errorf("%q failed at %d", s, i)
		}
	}
	for _, s := range []string{"Content-Length: 3\r\n", "content-length: 3\n", "\"abc\nContent-Length: 3\r\n", "\"\\\n"} {
		var l jsonLex
		if i := l.scan([]byte(s)); i < 0 {
			t.Errorf("%q passed", s)
		}
	}
}
