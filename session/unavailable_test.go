//go:build linux

package session

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/toolsd/toolsd/internal/proc"
	"github.com/toolsd/toolsd/internal/sandbox"
	"github.com/toolsd/toolsd/protocol"
)

// TestSandboxUnavailableAsksAsWhenOff: where the system offers no sandbox (Windows today;
// forced here by the probe's answer), nothing is allowed because of a sandbox. The same shell
// lines, under the same rules, with the sandbox's auto-allow turned on, ask exactly the calls
// they ask with the sandbox turned off in the settings, and none of them runs confined. The
// control: with the kernel's real support, the sandbox settles some of those asks (so the
// lines are ones the auto-allow would settle, and the test could fail).
func TestSandboxUnavailableAsksAsWhenOff(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("GORACE", "atexit_sleep_ms=0")
	proc.SetGuardPath(exe)
	defer proc.SetGuardPath("")
	lines := []string{"ls", "cat main.go", "echo note > notes.txt", "mkdir -p build && touch build/out", "rm notes.txt", "cp main.go build/main.go.bak", "wc -l main.go"}

	// run executes the lines in a fresh workspace and returns the indexes of the lines that
	// asked, and whether any ran confined.
	run := func(t *testing.T, support sandbox.Support, enabled bool) (asked []int, confined bool) {
		saved := kernelSupport
		kernelSupport = func() sandbox.Support { return support }
		defer func() { kernelSupport = saved }()
		ws := t.TempDir()
		if err := os.WriteFile(filepath.Join(ws, "main.go"), []byte("package main\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		a := &answerer{}
		opts, _ := json.Marshal(map[string]any{"sandbox": map[string]any{"enabled": enabled, "autoAllow": true}, "permission": typicalRules})
		w, err := Open(context.Background(), WorkspaceOptions{Folder: ws, StorePath: filepath.Join(t.TempDir(), "s.db"), InitOptions: opts},
			ClientOptions{Name: "test", Kind: protocol.ClientEditor, CanAsk: true, Sink: a})
		if err != nil {
			t.Fatal(err)
		}
		a.w = w
		defer func() {
			a.wg.Wait()
			_ = w.Close()
		}()
		for i, line := range lines {
			args, _ := json.Marshal(map[string]any{"command": line})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			res, err := w.Execute(ctx, protocol.ExecuteParams{SessionID: "s", MessageID: "m", CallID: fmt.Sprint("c", i), Tool: "bash", Args: args})
			cancel()
			if err != nil || res.Status != protocol.StatusCompleted {
				t.Errorf("%s: %+v %v", line, res, err)
			}
			var meta struct{ Sandbox sandbox.Summary }
			if json.Unmarshal(res.Metadata, &meta) == nil && meta.Sandbox.Confined {
				confined = true
			}
		}
		a.wg.Wait()
		a.mu.Lock()
		defer a.mu.Unlock()
		for _, p := range a.asks {
			var i int
			if _, err := fmt.Sscanf(p.CallID, "c%d", &i); err == nil && !slices.Contains(asked, i) {
				asked = append(asked, i)
			}
		}
		slices.Sort(asked)
		return asked, confined
	}

	off, _ := run(t, sandbox.Probe(""), false)
	unavailable, confined := run(t, sandbox.Support{}, true)
	if confined {
		t.Errorf("a command ran confined with the sandbox unavailable")
	}
	if !slices.Equal(unavailable, off) {
		t.Errorf("lines asked with the sandbox unavailable: %v; with it off: %v (want the same)", unavailable, off)
	}
	if len(off) == 0 {
		t.Fatalf("no line asked with the sandbox off: the test shows nothing")
	}
	if real := sandbox.Probe(""); real.Available() {
		on, _ := run(t, real, true)
		if len(on) >= len(off) {
			t.Errorf("control: with the kernel's sandbox on, %v asked; with it off %v: the auto-allow settled nothing, so these lines cannot tell", on, off)
		}
	}
}
