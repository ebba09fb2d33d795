//go:build unix

package main_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolsd/toolsd/internal/fsopen/fsopentest"
	"github.com/toolsd/toolsd/internal/harness"
	"github.com/toolsd/toolsd/protocol"
)

// startOn starts a daemon on ws and initializes it within a deadline: a daemon that blocks
// on a file of the workspace never answers.
func startOn(t *testing.T, ws string, noAsk bool) (*harness.Daemon, context.Context, protocol.InitializeResult) {
	t.Helper()
	st := filepath.Join(t.TempDir(), "store.db")
	d := harness.Start(t, harness.Binary(t), harness.Options{Args: []string{"--store", st}, Env: []string{"XDG_CONFIG_HOME=" + t.TempDir()}})
	ctx := harness.Deadline(t, 30*time.Second)
	initCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	raw, err := d.Initialize(initCtx, ws, !noAsk, nil)
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	var init protocol.InitializeResult
	if err := json.Unmarshal(raw, &init); err != nil {
		t.Fatal(err)
	}
	return d, ctx, init
}

func resolveDiags(t *testing.T, ctx context.Context, d *harness.Daemon) protocol.ResolveResult {
	t.Helper()
	var rr protocol.ResolveResult
	if err := d.Call(ctx, "tools/resolve", protocol.ResolveParams{SessionID: "s1"}, &rr); err != nil {
		t.Fatalf("tools/resolve: %v", err)
	}
	return rr
}

func hasDiag(ds []protocol.Diagnostic, path, says string) bool {
	for _, d := range ds {
		if d.Path == path && strings.Contains(d.Message, says) {
			return true
		}
	}
	return false
}

// TestHostileConfigAtInitialize: a workspace whose .toolsd/config.json is a FIFO, a link to
// /dev/zero, a folder, a socket, too large, a link to a FIFO, or a link to the daemon's own
// stdin still gets its initialize answered, and tools/resolve reports the file.
func TestHostileConfigAtInitialize(t *testing.T) {
	kinds := append(fsopentest.Kinds(1<<20), fsopentest.Kind{
		// The daemon's stdin: a pipe when it serves its editor itself, /dev/null for the
		// folder's owner, which its forwarders hand their streams to.
		Name: "link-to-stdin", Says: "a character device",
		Make: func(tb testing.TB, p string) {
			if err := os.Symlink("/proc/self/fd/0", p); err != nil {
				tb.Fatal(err)
			}
		},
	})
	for _, k := range kinds {
		t.Run(k.Name, func(t *testing.T) {
			ws := t.TempDir()
			cfg := filepath.Join(ws, ".toolsd", "config.json")
			if err := os.MkdirAll(filepath.Dir(cfg), 0o755); err != nil {
				t.Fatal(err)
			}
			k.Make(t, cfg)
			d, ctx, _ := startOn(t, ws, false)
			rr := resolveDiags(t, ctx, d)
			if !hasDiag(rr.Diagnostics, cfg, k.Says) {
				t.Fatalf("no diagnostic on %s saying %q: %+v", cfg, k.Says, rr.Diagnostics)
			}
			if len(rr.Tools) == 0 {
				t.Fatal("no tools")
			}
		})
	}
}

// TestHostileConfigAppearsLater: a FIFO or a link to /dev/zero that replaces the workspace's
// config while the daemon runs gives a diagnostic (with tools/changed), and tools/resolve and
// tools/execute keep answering.
func TestHostileConfigAppearsLater(t *testing.T) {
	for _, k := range fsopentest.Kinds(1 << 20) {
		if k.Name != "fifo" && k.Name != "zero" {
			continue
		}
		t.Run(k.Name, func(t *testing.T) {
			ws := t.TempDir()
			cfg := filepath.Join(ws, ".toolsd", "config.json")
			if err := os.MkdirAll(filepath.Dir(cfg), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(cfg, []byte(`{"permission": {"read": "deny"}}`), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("hello\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			d, ctx, _ := startOn(t, ws, false)
			mark := d.Mark()
			tmp := filepath.Join(filepath.Dir(cfg), "new")
			k.Make(t, tmp)
			if err := os.Rename(tmp, cfg); err != nil {
				t.Fatal(err)
			}
			if _, _, err := d.WaitFor(ctx, mark, "tools/changed", func(r json.RawMessage) bool {
				var c protocol.ChangedParams
				return json.Unmarshal(r, &c) == nil && hasDiag(c.Diagnostics, cfg, k.Says)
			}); err != nil {
				t.Fatal(err)
			}
			call, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			var rr protocol.ResolveResult
			if err := d.Call(call, "tools/resolve", protocol.ResolveParams{SessionID: "s1"}, &rr); err != nil {
				t.Fatalf("tools/resolve: %v", err)
			}
			// The last good settings stay in force: read is still denied.
			var res protocol.ExecuteResult
			if err := d.Call(call, "tools/execute", protocol.ExecuteParams{SessionID: "s1", MessageID: "m1", CallID: "c1", Tool: "read", Args: args("filePath", "a.txt")}, &res); err != nil {
				t.Fatalf("tools/execute: %v", err)
			}
			if res.Status != "error" || strings.Contains(res.Output, "hello") {
				t.Fatalf("the last good settings are not in force: %+v", res)
			}
		})
	}
}

// TestUntrustedProjectCannotLockOutEditor: limits.maxMessageBytes 100 in an untrusted
// workspace's config leaves the message limit alone; the daemon takes messages of a normal
// size and says why the setting was ignored.
func TestUntrustedProjectCannotLockOutEditor(t *testing.T) {
	ws := t.TempDir()
	cfg := filepath.Join(ws, ".toolsd", "config.json")
	if err := os.MkdirAll(filepath.Dir(cfg), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte(`{"limits": {"maxMessageBytes": 100, "bashMaxTimeoutMs": 999999999999}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	d, ctx, init := startOn(t, ws, true)
	if init.Capabilities.MaxMessage != 8<<20 {
		t.Errorf("capabilities.maxMessageBytes = %d, want the default 8 MiB", init.Capabilities.MaxMessage)
	}
	rr := resolveDiags(t, ctx, d)
	if !hasDiag(rr.Diagnostics, cfg, "limits.maxMessageBytes is ignored") {
		t.Errorf("no diagnostic says the limit was ignored: %+v", rr.Diagnostics)
	}
	for _, tl := range rr.Tools {
		if tl.ID == "bash" && !strings.Contains(tl.Description, "at most 600000") {
			t.Errorf("the workspace raised the shell's time limit: %s", tl.Description)
		}
	}
	// A message of 256 KiB (a file the model writes) is taken and answered with a result.
	var res protocol.ExecuteResult
	err := d.Call(ctx, "tools/execute", protocol.ExecuteParams{SessionID: "s1", MessageID: "m1", CallID: "w", Tool: "write", Args: args("filePath", "x.txt", "content", strings.Repeat("x", 256<<10))}, &res)
	if err != nil || res.Status == "" {
		t.Fatalf("a 256 KiB message: %+v %v", res, err)
	}
}
