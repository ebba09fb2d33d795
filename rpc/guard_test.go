package rpc

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

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

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// The guard passes good frames through unchanged in meaning and answers bad ones.
func TestGuardFrames(t *testing.T) {
	good := `{"jsonrpc":"2.0","id":1,"method":"m"}`
	in := "Content-Length: 3\r\n\r\n{x}" + // invalid JSON
		"Content-Length: " + itoa(int64(len(good))) + "\r\nContent-Type: application/json\r\n\r\n" + good
	var replies []string
	g := newGuard(context.Background(), strings.NewReader(in), io.Discard, func() error { return nil }, 1024, slog.New(slog.DiscardHandler))
	g.reply = func(b []byte) { replies = append(replies, string(b)) }
	out, err := io.ReadAll(g)
	if err != nil {
		t.Fatal(err)
	}
	want := "Content-Length: " + itoa(int64(len(good))) + "\r\n\r\n" + good
	if !bytes.Equal(out, []byte(want)) {
		t.Fatalf("passed on %q, want %q", out, want)
	}
	if len(replies) != 1 || !strings.Contains(replies[0], "-32700") {
		t.Fatalf("replies %q", replies)
	}
}
