//go:build unix

package main_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/toolsd/toolsd/internal/harness"
	"github.com/toolsd/toolsd/protocol"
)

func p50(lat []time.Duration) time.Duration {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat[len(lat)/2]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// hookBench is an editor attached to a workspace's daemon, for the hook benchmarks.
type hookBench struct {
	d      *harness.Daemon
	ws, st string
}

func startHookBench(b *testing.B) *hookBench {
	ws, st := b.TempDir(), filepath.Join(b.TempDir(), "store.db")
	d := harness.Start(b, harness.Binary(b), harness.Options{Args: []string{"--store", st}, Env: []string{"XDG_CONFIG_HOME=" + b.TempDir()}})
	if _, err := d.Initialize(harness.Deadline(b, time.Minute), ws, true, agentRules); err != nil {
		b.Fatal(err)
	}
	return &hookBench{d: d, ws: ws, st: st}
}

// hook is `toolsd hook` on the benchmark's daemon for a Claude Code event.
func (h *hookBench) hook(b *testing.B, event, callID, command string) *exec.Cmd {
	in, _ := json.Marshal(claudePayload(h.ws, event, callID, "Bash", map[string]any{"command": command}, "tool_response", map[string]any{"stdout": "x\n"}))
	cmd := exec.Command(harness.Binary(b), "hook", "--store", h.st, "--grace=200ms", event)
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+harness.RuntimeDir(b), "CLAUDE_PROJECT_DIR=")
	cmd.Stdin = bytes.NewReader(in)
	return cmd
}

// BenchmarkHookOverhead measures what `toolsd hook` adds to an agent's call that the rules
// allow: Claude Code's PreToolUse of a Bash call, run through the real binary against the
// workspace's daemon (attach, initialize, agents/before, the answer), against an empty hook
// script (`/bin/sh` reading its payload and answering allow), interleaved; then the
// PostToolUse that closes the call (not timed). Bar: the p50s differ by at most 15 ms. Each
// iteration also runs a call a deny rule covers and counts the answers that were not a deny
// (bar: 0).
//
//	go test ./cmd/toolsd -run '^$' -bench HookOverhead -benchtime 50x
func BenchmarkHookOverhead(b *testing.B) {
	h := startHookBench(b)
	script := filepath.Join(b.TempDir(), "empty-hook.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ncat >/dev/null\necho '{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"allow\"}}'\n"), 0o755); err != nil {
		b.Fatal(err)
	}
	var hookLat, emptyLat []time.Duration
	notDenied, i := 0, 0
	for b.Loop() {
		i++
		id := fmt.Sprintf("toolu_bench_%d", i)
		cmd := h.hook(b, "PreToolUse", id, "echo bench")
		start := time.Now()
		out, err := cmd.Output()
		hookLat = append(hookLat, time.Since(start))
		if err != nil || !strings.Contains(string(out), `"allow"`) {
			b.Fatalf("allowed call: %v %s", err, out)
		}
		empty := exec.Command(script)
		empty.Stdin = bytes.NewReader(out)
		start = time.Now()
		if err := empty.Run(); err != nil {
			b.Fatal(err)
		}
		emptyLat = append(emptyLat, time.Since(start))

		b.StopTimer()
		if err := h.hook(b, "PostToolUse", id, "echo bench").Run(); err != nil {
			b.Fatal(err)
		}
		out, _ = h.hook(b, "PreToolUse", id+"_deny", "rm -rf build").Output()
		if !strings.Contains(string(out), `"permissionDecision":"deny"`) {
			notDenied++
		}
		b.StartTimer()
	}
	b.ReportMetric(ms(p50(hookLat)), "hook-p50-ms")
	b.ReportMetric(ms(p50(emptyLat)), "empty-p50-ms")
	b.ReportMetric(ms(p50(hookLat))-ms(p50(emptyLat)), "added-p50-ms")
	b.ReportMetric(float64(notDenied), "denies-not-denied")
}

// BenchmarkHookAsk measures how soon an ask reaches the attached editor: from the start of
// the `toolsd hook` process (Claude Code's PreToolUse of a Bash call the rules ask for) to
// the editor's permission/asked naming it. Then the editor answers and the hook exits (not
// timed). Bar: p50 at most 50 ms.
//
//	go test ./cmd/toolsd -run '^$' -bench HookAsk -benchtime 50x
func BenchmarkHookAsk(b *testing.B) {
	h := startHookBench(b)
	ctx := harness.Deadline(b, 10*time.Minute)
	var lat []time.Duration
	i := 0
	for b.Loop() {
		i++
		id := fmt.Sprintf("toolu_ask_%d", i)
		mark := h.d.Mark()
		cmd := h.hook(b, "PreToolUse", id, "curl -s example.org")
		var out bytes.Buffer
		cmd.Stdout = &out
		start := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		raw, _, err := h.d.WaitFor(ctx, mark, "permission/asked", func(r json.RawMessage) bool {
			var a protocol.AskedParams
			return json.Unmarshal(r, &a) == nil && a.CallID == id
		})
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
		b.StopTimer()
		var a protocol.AskedParams
		_ = json.Unmarshal(raw, &a)
		if err := h.d.Call(ctx, "permission/reply", protocol.ReplyParams{ID: a.ID, Reply: "reject", Message: "bench"}, nil); err != nil {
			b.Fatal(err)
		}
		if err := cmd.Wait(); err != nil || !strings.Contains(out.String(), `"deny"`) {
			b.Fatalf("the hook after the editor rejected: %v %s", err, out.String())
		}
		b.StartTimer()
	}
	b.ReportMetric(ms(p50(lat)), "ask-p50-ms")
}
