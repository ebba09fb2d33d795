package sandbox

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolsd/toolsd/internal/harness"
	"github.com/toolsd/toolsd/internal/sandbox"
	"github.com/toolsd/toolsd/protocol"
)

// nodeSpawn is a Node process that, for each line it reads ({"file", "args", "argv0",
// "cwd"}), spawns that program and writes back how long it took to exit, in milliseconds
// ("-1" when it failed): the floor of a tool call's spawn, `bash -c true` as an editor's
// extension host would spawn it, and Codex's sandbox helper as Codex spawns it.
const nodeSpawn = `
const {spawn} = require('child_process');
require('readline').createInterface({input: process.stdin}).on('line', (line) => {
  const c = JSON.parse(line);
  const t = process.hrtime.bigint();
  spawn(c.file, c.args, {stdio: 'ignore', argv0: c.argv0 || c.file, cwd: c.cwd || undefined}).on('exit', (code) => {
    process.stdout.write((code === 0 ? String(Number(process.hrtime.bigint() - t) / 1e6) : '-1') + '\n');
  });
});`

// spawnLine is one request to nodeSpawn.
type spawnLine struct {
	File  string   `json:"file"`
	Args  []string `json:"args"`
	Argv0 string   `json:"argv0,omitempty"`
	Cwd   string   `json:"cwd,omitempty"`
}

// codexHelper returns Codex's executable from testdata/agents (after `npm ci` there), or "".
func codexHelper() string {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	m, _ := filepath.Glob(filepath.Join(root, "testdata", "agents", "node_modules", "@openai", "codex-linux-*", "vendor", "*", "bin", "codex"))
	if len(m) == 0 {
		return ""
	}
	return m[0]
}

// codexProfile is the permission profile Codex hands its sandbox helper for a workspace in
// its workspace-write mode (read everything; write the workspace and the temp folders; the
// workspace's .git, .agents and .codex read-only), as `codex sandbox -c
// sandbox_mode="workspace-write"` passes it in Codex 0.171.
func codexProfile(ws string) string {
	type path struct {
		Type  string         `json:"type"`
		Path  string         `json:"path,omitempty"`
		Value map[string]any `json:"value,omitempty"`
	}
	type entry struct {
		Path    path   `json:"path"`
		Access  string `json:"access"`
		Missing string `json:"missing_path_behavior,omitempty"`
	}
	special := func(kind string) path { return path{Type: "special", Value: map[string]any{"kind": kind}} }
	entries := []entry{
		{Path: special("root"), Access: "read"},
		{Path: path{Type: "path", Path: ws}, Access: "write"},
		{Path: special("slash_tmp"), Access: "write"},
		{Path: special("tmpdir"), Access: "write"},
	}
	for _, d := range []string{".git", ".agents", ".codex"} {
		entries = append(entries, entry{Path: path{Type: "path", Path: filepath.Join(ws, d)}, Access: "read", Missing: "skip"})
	}
	b, _ := json.Marshal(map[string]any{"type": "managed", "file_system": map[string]any{"type": "restricted", "entries": entries}, "network": "restricted"})
	return string(b)
}

// BenchmarkBashTrue runs `bash true` through tools/execute with the sandbox on, against the
// floor of Node spawning `bash -c true`, interleaved in one run, and reports each p50 and
// p99 and the p50's distance from the floor's (issue 26's bar: at most 5 ms), and its ratio
// to Codex's sandbox helper's (the bar: at most 0.3). The peers: toolsd as installed with
// toolsd-guard beside it (TOOLSD_BIN, else built), the same daemon with the sandbox off,
// the same binary alone (it then runs guards and stages with itself), TOOLSD_BIN_BEFORE when
// set (another build to compare), and Codex's sandbox helper (codex-linux-sandbox, from
// testdata/agents after `npm ci` there) running `bash -c true` in a workspace it may write,
// spawned by the same Node process as the floor.
func BenchmarkBashTrue(b *testing.B) {
	if !sandbox.Probe("").Available() {
		b.Skip("the kernel offers no Landlock")
	}
	if _, err := exec.LookPath("node"); err != nil {
		b.Skip("no node for the floor")
	}
	bin := os.Getenv("TOOLSD_BIN")
	if bin == "" {
		bin = harness.Binary(b)
	}
	alone := filepath.Join(b.TempDir(), "toolsd")
	data, err := os.ReadFile(bin)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(alone, data, 0o755); err != nil {
		b.Fatal(err)
	}
	type peer struct {
		name  string
		call  func(n int) time.Duration
		times []time.Duration
	}
	var peers []*peer

	node := exec.Command("node", "-e", nodeSpawn)
	in, _ := node.StdinPipe()
	outPipe, _ := node.StdoutPipe()
	if err := node.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = in.Close(); _ = node.Wait() }()
	out := bufio.NewReader(outPipe)
	spawn := func(what string, l spawnLine) time.Duration {
		req, _ := json.Marshal(l)
		if _, err := fmt.Fprintf(in, "%s\n", req); err != nil {
			b.Fatal(err)
		}
		line, err := out.ReadString('\n')
		if err != nil {
			b.Fatal(err)
		}
		ms, err := strconv.ParseFloat(strings.TrimSpace(line), 64)
		if err != nil || ms < 0 {
			b.Fatalf("%s: failed (%q, %v)", what, line, err)
		}
		return time.Duration(ms * float64(time.Millisecond))
	}
	floor := &peer{name: "floor", call: func(int) time.Duration {
		return spawn("bash -c true", spawnLine{File: "bash", Args: []string{"-c", "true"}})
	}}
	peers = append(peers, floor)
	var codex *peer
	if exe := codexHelper(); exe != "" {
		ws := b.TempDir()
		if err := os.MkdirAll(filepath.Join(ws, ".git"), 0o755); err != nil {
			b.Fatal(err)
		}
		args := []string{"--sandbox-policy-cwd", ws, "--command-cwd", ws, "--permission-profile", codexProfile(ws), "--", "bash", "-c", "true"}
		codex = &peer{name: "codex", call: func(int) time.Duration {
			return spawn("codex-linux-sandbox", spawnLine{File: exe, Args: args, Argv0: "codex-linux-sandbox", Cwd: ws})
		}}
		peers = append(peers, codex)
	}

	ctx := harness.Deadline(b, 10*time.Minute)
	// WORKSPACE: the daemons' workspace (a large tree: Go's src as a git repository, bigtree.sh's),
	// else an empty folder each.
	workspace := os.Getenv("WORKSPACE")
	daemon := func(name, path string, sandboxOn bool) *peer {
		d := harness.Start(b, path, harness.Options{
			Args: []string{"--store", filepath.Join(b.TempDir(), "store.db")},
			Env:  []string{"TOOLSD_STANDALONE=1", "XDG_CONFIG_HOME=" + b.TempDir()},
		})
		// No ask capability: a call that would ask fails instead of waiting. The same call
		// again and again is what the doom-loop check asks about. Without the sandbox, bash
		// asks unless a rule allows it.
		perm := map[string]any{"doom_loop": map[string]any{"bash": "allow"}}
		opts := map[string]any{"permission": perm}
		if !sandboxOn {
			perm["bash"] = "allow"
			opts["sandbox"] = map[string]any{"enabled": false}
		}
		ws := workspace
		if ws == "" {
			ws = b.TempDir()
		}
		if _, err := d.Initialize(ctx, ws, false, opts); err != nil {
			b.Fatal(err)
		}
		return &peer{name: name, call: func(n int) time.Duration {
			start := time.Now()
			var res protocol.ExecuteResult
			err := d.Call(ctx, "tools/execute", protocol.ExecuteParams{SessionID: "bench", MessageID: "m", CallID: fmt.Sprintf("c%d", n),
				Tool: "bash", Args: []byte(`{"command":"true"}`)}, &res)
			took := time.Since(start)
			if err != nil || res.Status != "completed" {
				b.Fatalf("%s: bash true: %+v %v", name, res, err)
			}
			return took
		}}
	}
	toolsd := daemon("toolsd", bin, true)
	peers = append(peers, toolsd, daemon("toolsd-off", bin, false), daemon("toolsd-alone", alone, true))
	if before := os.Getenv("TOOLSD_BIN_BEFORE"); before != "" {
		peers = append(peers, daemon("before", before, true))
	}

	for i := range 3 { // warm up: the namespace probe, the first look at the workspace
		for _, p := range peers {
			p.call(-1 - i)
		}
	}
	n := 0
	for b.Loop() {
		for k := range peers { // each goes first in turn
			p := peers[(n+k)%len(peers)]
			p.times = append(p.times, p.call(n))
		}
		n++
	}
	pct := func(ts []time.Duration, q float64) float64 {
		ts = slices.Clone(ts)
		slices.Sort(ts)
		i := int(math.Ceil(q*float64(len(ts)))) - 1
		return float64(ts[max(i, 0)].Microseconds()) / 1000
	}
	f := pct(floor.times, 0.5)
	for _, p := range peers {
		b.ReportMetric(pct(p.times, 0.5), p.name+"-p50-ms")
		b.ReportMetric(pct(p.times, 0.99), p.name+"-p99-ms")
		if p != floor {
			b.ReportMetric(pct(p.times, 0.5)-f, p.name+"-over-floor-ms")
		}
	}
	if codex != nil {
		b.ReportMetric(pct(toolsd.times, 0.5)/pct(codex.times, 0.5), "toolsd/codex-p50")
	}
}
