//go:build unix

package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolsd/toolsd/internal/harness"
	"github.com/toolsd/toolsd/internal/sandbox"
	"github.com/toolsd/toolsd/protocol"
)

// guardOf runs a confined bash call in a daemon of bin and returns the command line of the
// bash's parent: the guard that supervises it.
func guardOf(t *testing.T, bin string) string {
	t.Helper()
	e := newEnv(t, envOpts{bin: bin, options: map[string]any{}})
	mark := e.d.Mark()
	_, wait := e.start(protocol.ExecuteParams{CallID: "g", Tool: "bash", Args: args("command", `tr '\0' ' ' </proc/$PPID/cmdline`)})
	if err := e.reply(e.waitAsk(mark, "g").ID, "once", ""); err != nil {
		t.Fatal(err)
	}
	res, err := wait()
	if err != nil || res.Status != "completed" {
		t.Fatalf("bash: %+v %v", res, err)
	}
	if !strings.Contains(res.Output, " -sandbox=") {
		t.Fatalf("bash ran unconfined: its guard is %q", res.Output)
	}
	return res.Output
}

// TestToolsRunThroughTheLeanGuard: next to a toolsd-guard of the same build, the daemon runs
// each tool's guard and stage with it; toolsd installed alone runs them with itself.
func TestToolsRunThroughTheLeanGuard(t *testing.T) {
	if !sandbox.Probe("").Available() {
		t.Skip("the kernel offers no Landlock")
	}
	bin := harness.Binary(t)
	if out := guardOf(t, bin); !strings.Contains(out, filepath.Join(filepath.Dir(bin), "toolsd-guard")+" __guard ") {
		t.Errorf("with toolsd-guard beside toolsd, the guard is %q", out)
	}
	alone := filepath.Join(t.TempDir(), "toolsd")
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alone, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if out := guardOf(t, alone); !strings.HasPrefix(out, alone+" __guard ") {
		t.Errorf("with toolsd alone, the guard is %q", out)
	}
}
