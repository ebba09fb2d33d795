//go:build unix

package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolsd/toolsd/protocol"
)

// Issue 24, class 5, against the real binary: under rules that allow make and python3 by a
// wildcard, a makefile or a program read from the line's input does not run unasked (no
// one can answer here, so the call fails with the reason, and the file the program would
// make is not made); the same commands reading the workspace's files run.
func TestLineInputAsProgramAsks(t *testing.T) {
	e := newEnv(t, envOpts{noAsk: true, files: map[string]string{"ok.mk": "all:\n\ttouch made-by-file\n"}, options: map[string]any{
		"permission": map[string]any{"bash": map[string]any{"*": "ask", "make *": "allow", "python3 *": "allow", "printf *": "allow"}},
		"sandbox":    map[string]any{"autoAllow": false},
	}})
	for i, line := range []string{
		`printf 'all:\n\ttouch made-by-stdin\n' | make -f /dev/stdin`,
		`printf 'all:\n\ttouch made-by-stdin\n' | make -f -`,
		"python3 - <<'EOF'\nopen('made-by-stdin', 'w')\nEOF",
		"python3 /dev/stdin <<'EOF'\nopen('made-by-stdin', 'w')\nEOF",
		`python3 -m timeit -n1 "open('made-by-stdin', 'w')"`,
	} {
		res, err := e.execute(protocol.ExecuteParams{CallID: "in" + itoa(i), Tool: "bash", Args: args("command", line)})
		// The model reads why: the rule covers the command, not this use of it.
		if err != nil || res.Status != "error" || !strings.Contains(res.Error, "no one was there") ||
			!strings.Contains(res.Error, "but not this one: ") {
			t.Errorf("%q: want an ask no one can answer, saying why, got %+v %v", line, res, err)
		}
		if _, err := os.Stat(filepath.Join(e.ws, "made-by-stdin")); err == nil {
			t.Fatalf("%q ran: it made its file", line)
		}
	}
	res, err := e.execute(protocol.ExecuteParams{CallID: "ok", Tool: "bash", Args: args("command", "make -f ok.mk")})
	if err != nil || res.Status != "completed" {
		t.Fatalf("make -f ok.mk under make *: %+v %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(e.ws, "made-by-file")); err != nil {
		t.Fatalf("make -f ok.mk did not run: %v", err)
	}
}
