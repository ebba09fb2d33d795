//go:build unix

package builtin

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// A process outside the command's tree that still holds the output when the command ends
// does not keep the call waiting, and the model reads that the output was cut there. (These
// tests run without the guard, so a process that leaves the process group escapes: here one
// started with setsid.)
func TestBashOutputCut(t *testing.T) {
	e := newEnv(t, "")
	res, err := e.run("bash", map[string]any{"command": `setsid sh -c 'echo $$ >escaped.pid; exec sleep 120' & while [ ! -s escaped.pid ]; do :; done; echo done`})
	if b, err := os.ReadFile(e.path("escaped.pid")); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, "streamed output", e.out.String(), "done\n")
	mustContain(t, "result output", res.Output, "[output cut here: the command ended, but a process outside its process tree still held its output open")
	if res.Metadata["outputCut"] != true || res.Metadata["exit"] != 0 {
		t.Fatalf("metadata %+v", res.Metadata)
	}
}
