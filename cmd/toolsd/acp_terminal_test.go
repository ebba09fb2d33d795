//go:build linux

package main_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// running reports whether a process runs whose command line holds token (every process of
// the machine, in whatever PID namespace the sandbox made).
func running(token string) bool {
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range dirs {
		if b, err := os.ReadFile(f); err == nil && bytes.Contains(b, []byte(token)) {
			return true
		}
	}
	return false
}

// gone waits until no process holds token in its command line, or fails after 20 s.
func gone(t *testing.T, token, why string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for running(token) {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not stop the process of %s", why, token)
		}
		time.Sleep(20 * time.Millisecond) // polling the process table, which sends no signal
	}
}

// A terminal toolsd serves behaves as an editor's: its output can be read while the command
// runs (cut to outputByteLimit at a character boundary), a command outlives the bash tool's
// default time limit (a dev server) until the agent kills or releases it, and session/cancel
// and the end of toolsd acp stop it with its whole tree.
func TestACPTerminalsLive(t *testing.T) {
	opts := map[string]any{
		"sandbox":    map[string]any{"autoAllow": false},
		"permission": map[string]any{"bash": map[string]any{"*": "allow"}},
	}
	// The built-in tools take their limits from the settings files (a project may lower
	// them).
	e := newEnv(t, envOpts{noAsk: true, options: opts, files: map[string]string{
		".toolsd/config.json": `{"limits": {"bashTimeoutMs": 1000, "bashMaxTimeoutMs": 60000}}`,
	}})
	ed, done := sdkAgent(t, e)
	ed.send(rpcReq(1, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}}))
	ed.next()
	ed.send(rpcReq(2, "session/new", map[string]any{"cwd": e.ws, "mcpServers": []any{}}))
	ed.next()

	stamp := time.Now().UnixNano() % 1_000_000
	token := func(n int) string { return fmt.Sprintf("600.%d%d", stamp, n) }
	// "late" is printed 2 s after the start, past the bash tool's default time limit (1 s).
	steps := []map[string]any{
		{"id": "long", "run": "sh", "args": []string{"-c", "echo start; sleep 2; echo late; exec sleep " + token(1)}, "poll": "late", "kill": true, "embed": true},
		{"id": "cut", "run": "sh", "args": []string{"-c", "printf 'ééééé\\n'; exec sleep " + token(2)}, "limit": 4, "poll": "é", "release": true, "embed": true},
		{"id": "cancelled", "run": "sh", "args": []string{"-c", "echo up; exec sleep " + token(3)}, "poll": "up", "leave": true},
	}
	res, _ := prompt(t, ed, 3, steps, func(string) string { return "reject" })
	type output struct {
		Output     string          `json:"output"`
		Truncated  bool            `json:"truncated"`
		ExitStatus json.RawMessage `json:"exitStatus"`
		Error      string          `json:"error"`
	}
	var r struct {
		Polled output `json:"polled"`
		Exit   struct {
			ExitCode *int    `json:"exitCode"`
			Signal   *string `json:"signal"`
		} `json:"exit"`
		Out   output `json:"out"`
		After output `json:"after"`
	}
	get := func(id string) {
		t.Helper()
		r.Polled, r.Out, r.After = output{}, output{}, output{}
		if err := json.Unmarshal(res[id], &r); err != nil {
			t.Fatalf("%s: the agent told %q", id, res[id])
		}
	}
	get("long")
	if r.Polled.Output != "start\nlate\n" || r.Polled.ExitStatus != nil || r.Polled.Truncated {
		t.Errorf("the running command's output, polled: %s", res["long"])
	}
	if r.Exit.Signal == nil || r.Exit.ExitCode != nil || !strings.Contains(r.Out.Output, "late") {
		t.Errorf("the command killed after the default time limit: %s", res["long"])
	}
	gone(t, token(1), "terminal/kill")

	// The editor is shown the output of a terminal the agent embeds in a tool call (not
	// its id, which names none of the editor's terminals): so far, then all of it.
	shown := func(id, status string) string {
		t.Helper()
		var u struct {
			Content []struct {
				Type    string `json:"type"`
				Content struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"content"`
		}
		if err := json.Unmarshal(res["update "+id+" "+status], &u); err != nil || len(u.Content) != 1 || u.Content[0].Type != "content" {
			t.Fatalf("the editor's %s update of %s: %s", status, id, res["update "+id+" "+status])
		}
		return u.Content[0].Content.Text
	}
	if got := shown("long", "in_progress"); got != "```\nstart\nlate\n```" {
		t.Errorf("the running terminal as the editor saw it: %q", got)
	}
	if got := shown("long", "completed"); got != "```\nstart\nlate\n```" {
		t.Errorf("the killed terminal as the editor saw it: %q", got)
	}

	get("cut")
	if r.Polled.Output != "é\n" || !r.Polled.Truncated || r.Polled.ExitStatus != nil {
		t.Errorf("a running command's output cut to 4 bytes: %s", res["cut"])
	}
	if !strings.Contains(r.After.Error, "no terminal") {
		t.Errorf("the released terminal: %s", res["cut"])
	}
	gone(t, token(2), "terminal/release")
	if got := shown("cut", "completed"); got != "```\né\n```" {
		t.Errorf("the released terminal as the editor saw it: %q", got)
	}

	get("cancelled")
	if r.Polled.Output != "up\n" || r.Polled.ExitStatus != nil || !running(token(3)) {
		t.Fatalf("the terminal left running: %s (running: %v)", res["cancelled"], running(token(3)))
	}
	ed.send(map[string]any{"jsonrpc": "2.0", "method": "session/cancel", "params": map[string]any{"sessionId": "ts-session"}})
	gone(t, token(3), "session/cancel")

	res, _ = prompt(t, ed, 4, []map[string]any{
		{"id": "left", "run": "sh", "args": []string{"-c", "echo up; exec sleep " + token(4)}, "poll": "up", "leave": true},
	}, func(string) string { return "reject" })
	get("left")
	if r.Polled.Output != "up\n" || !running(token(4)) {
		t.Fatalf("the terminal left running: %s", res["left"])
	}
	done()
	gone(t, token(4), "the end of toolsd acp")
}
