// Package acp_test measures what `toolsd acp` adds to each ACP message it forwards (issue
// 28's bar: at most 2 ms at p50), side by side in one run: an editor's request round trip to
// an echo agent spawned directly, and to the same agent behind `toolsd acp` attached to the
// workspace's daemon, interleaved call by call. Each round trip is two forwarded messages
// (the request, the response) plus the agent's session/update before its response: an
// agent_message_chunk, or a tool call's tool_call and completed tool_call_update, which
// toolsd acp also puts in the daemon's record. See bench/README.md.
//
//	go test ./bench/acp -run '^$' -bench . -benchtime 2000x
package acp_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/toolsd/toolsd/internal/harness"
)

// agentEnv makes the test binary the echo agent.
const agentEnv = "TOOLSD_ACPBENCH_AGENT"

func TestMain(m *testing.M) {
	if os.Getenv(agentEnv) == "1" {
		echoAgent(os.Stdin, os.Stdout)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// echoAgent answers every request at once: initialize with ACP v1, session/new with a
// session, and any other request with a session/update first (a tool call's two updates
// for "_bench/tool", a message chunk otherwise) and then its result.
func echoAgent(r io.Reader, w io.Writer) {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	out := bufio.NewWriter(w)
	n := 0
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil || len(m.ID) == 0 || m.Method == "" {
			continue
		}
		id := string(m.ID)
		switch m.Method {
		case "initialize":
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":1,"agentCapabilities":{}}}`+"\n", id)
		case "session/new":
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"sessionId":"bench"}}`+"\n", id)
		case "_bench/tool":
			n++
			fmt.Fprintf(out, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"bench","update":{"sessionUpdate":"tool_call","toolCallId":"t%d","title":"Read a.txt","kind":"read","status":"in_progress","rawInput":{"file_path":"a.txt"}}}}`+"\n", n)
			fmt.Fprintf(out, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"bench","update":{"sessionUpdate":"tool_call_update","toolCallId":"t%d","status":"completed","rawOutput":"hello"}}}`+"\n", n)
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{}}`+"\n", id)
		default:
			fmt.Fprintf(out, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"bench","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"the agent's answer, a line of text as long as a model's chunk"}}}}`+"\n")
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"stopReason":"end_turn"}}`+"\n", id)
		}
		_ = out.Flush()
	}
}

// conn is the editor's side of one agent process (direct, or toolsd acp).
type conn struct {
	name  string
	cmd   *exec.Cmd
	in    io.WriteCloser
	resp  chan struct{} // one per response
	next  int
	times map[string][]time.Duration // by method
}

func start(b *testing.B, name string, env []string, args ...string) *conn {
	b.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), env...)
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	c := &conn{name: name, cmd: cmd, in: in, resp: make(chan struct{}, 1), times: map[string][]time.Duration{}}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(sc.Bytes(), &m) == nil && len(m.ID) > 0 && m.Method == "" {
				c.resp <- struct{}{}
			}
		}
		close(c.resp)
	}()
	b.Cleanup(func() {
		_ = in.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	return c
}

// call sends a request and waits for its response; the time is kept when keep is set.
func (c *conn) call(b *testing.B, method, params string, keep bool) {
	c.next++
	line := `{"jsonrpc":"2.0","id":` + strconv.Itoa(c.next) + `,"method":"` + method + `","params":` + params + "}\n"
	t0 := time.Now()
	if _, err := io.WriteString(c.in, line); err != nil {
		b.Fatalf("%s: %v", c.name, err)
	}
	select {
	case _, ok := <-c.resp:
		if !ok {
			b.Fatalf("%s: the agent's side ended", c.name)
		}
	case <-time.After(30 * time.Second):
		b.Fatalf("%s: no answer to %s within 30 s", c.name, method)
	}
	if keep {
		c.times[method] = append(c.times[method], time.Since(t0))
	}
}

func pct(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

// BenchmarkForward: each iteration makes one round trip of each kind on each side, the sides
// taking turns first.
func BenchmarkForward(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	bin := harness.Binary(b)
	ws := b.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("hello\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	env := []string{agentEnv + "=1", "XDG_RUNTIME_DIR=" + harness.RuntimeDir(b), "XDG_CONFIG_HOME=" + b.TempDir()}
	direct := start(b, "direct", env, exe)
	proxy := start(b, "toolsd acp", env, bin, "acp", "--workspace", ws, "--store", filepath.Join(b.TempDir(), "store.db"), "--grace=200ms", "--", exe)
	sides := []*conn{direct, proxy}
	for _, c := range sides {
		c.call(b, "initialize", `{"protocolVersion":1,"clientCapabilities":{}}`, false)
		c.call(b, "session/new", `{"cwd":"`+ws+`","mcpServers":[]}`, false)
	}
	prompt := `{"sessionId":"bench","prompt":[{"type":"text","text":"hi"}]}`
	kinds := [][2]string{{"session/prompt", prompt}, {"_bench/tool", `{"sessionId":"bench"}`}}
	for range 200 { // warm up
		for _, c := range sides {
			for _, k := range kinds {
				c.call(b, k[0], k[1], false)
			}
		}
	}
	i := 0
	for b.Loop() {
		order := sides
		if i%2 == 1 {
			order = []*conn{proxy, direct}
		}
		i++
		for _, c := range order {
			for _, k := range kinds {
				c.call(b, k[0], k[1], true)
			}
		}
	}
	b.StopTimer()
	for _, k := range kinds {
		d, p := direct.times[k[0]], proxy.times[k[0]]
		added := (pct(p, 0.5) - pct(d, 0.5)) / 2
		verdict := "MET"
		if added > 2*time.Millisecond {
			verdict = "MISSED"
		}
		b.Logf("%-15s round trip p50/p99: direct %v / %v, toolsd acp %v / %v; added per forwarded message at p50: %v (bar 2 ms: %s)",
			k[0], pct(d, 0.5), pct(d, 0.99), pct(p, 0.5), pct(p, 0.99), added, verdict)
		name := "prompt"
		if k[0] == "_bench/tool" {
			name = "toolcall"
		}
		b.ReportMetric(float64(pct(d, 0.5).Microseconds()), name+"-direct-p50-µs")
		b.ReportMetric(float64(pct(d, 0.99).Microseconds()), name+"-direct-p99-µs")
		b.ReportMetric(float64(pct(p, 0.5).Microseconds()), name+"-proxy-p50-µs")
		b.ReportMetric(float64(pct(p, 0.99).Microseconds()), name+"-proxy-p99-µs")
		b.ReportMetric(float64(added.Microseconds()), name+"-added-p50-µs/msg")
	}
}
