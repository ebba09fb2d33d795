//go:build unix

package main_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/toolsd/toolsd/protocol"
)

func TestExploreEnv(t *testing.T) {
	needSandbox(t)
	e := newEnv(t, envOpts{noAsk: true, options: map[string]any{"permission": map[string]any{"bash": map[string]any{"rm *": "deny", "git *": "allow"}}}, files: map[string]string{
		"victim.txt": "x", "a.txt": "a\n",
	}})
	gitInit(t, e.ws)
	for i, c := range []string{
		"GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0='rm victim.txt' git status",
		"GIT_EXTERNAL_DIFF='touch p1' git diff",
		"BASH_ENV=./x.sh bash -c true",
		"LD_PRELOAD=./x.so ls",
		"GIT_PAGER='touch p2' git -p log",
		"PAGER='touch p3' git log",
		"env GIT_CONFIG_PARAMETERS=\"'core.fsmonitor'='touch p4'\" git status",
		"GIT_CONFIG_PARAMETERS=\"'core.fsmonitor'='touch p5'\" git status",
		"GIT_DIR=/tmp git status",
	} {
		id := "c" + string(rune('a'+i))
		res, err := e.execute(protocol.ExecuteParams{CallID: id, Tool: "bash", Args: args("command", c)})
		rec := e.record(id)
		var by string
		if len(rec.Decisions) > 0 {
			by = rec.Decisions[len(rec.Decisions)-1].By
		}
		t.Logf("%s: err=%v status=%s by=%s out=%.300s %.300s", c, err, res.Status, by, res.Output, res.Error)
	}
	for _, f := range []string{"victim.txt", "p1", "p2", "p3", "p4", "p5"} {
		_, err := os.Stat(filepath.Join(e.ws, f))
		t.Logf("%s exists: %v", f, err == nil)
	}
}
