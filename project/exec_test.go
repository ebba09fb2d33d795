//go:build unix

package project_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolsd/toolsd/project"
	"github.com/toolsd/toolsd/registry"
)

const execTree = `
-- .toolsd/tool/echo_args.json --
{"description": "Echo the arguments.", "command": ["cat"],
 "parameters": {"type": "object", "properties": {"msg": {"type": "string"}}}}
-- .toolsd/tool/env.json --
{"description": "Show the environment.", "command": ["./env.sh", "one"], "cwd": "sub", "env": {"GREETING": "hello"}}
-- .toolsd/tool/env.sh --
#!/bin/sh
echo "argv1=$1 pwd=$(pwd) greeting=$GREETING ws=$TOOLSD_WORKSPACE session=$TOOLSD_SESSION_ID call=$TOOLSD_CALL_ID"
-- .toolsd/tool/structured.json --
{"description": "Structured output.", "command": ["./structured.sh"], "output": "json"}
-- .toolsd/tool/structured.sh --
#!/bin/sh
echo '{"title": "Structured", "output": "the output", "metadata": {"n": 3}}'
-- .toolsd/tool/not_json.json --
{"description": "Says json, writes text.", "command": ["./not_json.sh"], "output": "json"}
-- .toolsd/tool/not_json.sh --
#!/bin/sh
echo 'plain text'
-- .toolsd/tool/fails.json --
{"description": "Fails.", "command": ["./fails.sh"]}
-- .toolsd/tool/fails.sh --
#!/bin/sh
echo 'partial output'
i=0
while [ $i -lt 300 ]; do echo "noise line $i" >&2; i=$((i+1)); done
echo 'the real reason' >&2
exit 3
-- .toolsd/tool/missing_program.json --
{"description": "Runs a program that is not there.", "command": ["toolsd-no-such-program-xyz"]}
-- .toolsd/tool/hangs.json --
{"description": "Hangs with a child.", "command": ["./hangs.sh"], "timeout": 300, "env": {"FIFO": "$DIR/fifo"}}
-- .toolsd/tool/hangs.sh --
#!/bin/sh
exec 3>"$FIFO"
sleep 60 &
sleep 60
-- sub/.keep --
`

// fakeCall builds a Call that records asks and output.
type fakeCall struct {
	asks   []registry.AskRequest
	reject error
	out    strings.Builder
}

func (f *fakeCall) call() *registry.Call {
	return &registry.Call{
		SessionID: "s1", CallID: "c1", Tool: "x",
		Output: &f.out,
		Ask: func(ctx context.Context, req registry.AskRequest) error {
			f.asks = append(f.asks, req)
			return f.reject
		},
	}
}

func loadTools(t *testing.T, ws string) map[string]*registry.Tool {
	t.Helper()
	tools, diags := project.NewLoader(project.Options{Workspace: ws, Grace: 100 * time.Millisecond}).Load()
	for _, d := range diags {
		t.Fatalf("diagnostic: %+v", d)
	}
	m := map[string]*registry.Tool{}
	for _, tl := range tools {
		m[tl.ID] = tl
	}
	return m
}

func TestExecute(t *testing.T) {
	ws := t.TempDir()
	writeTree(t, ws, execTree)
	tools := loadTools(t, ws)
	cases := []struct {
		tool      string
		args      string
		wantOut   string // streamed output + result output
		wantTitle string
		wantErr   string
		check     func(t *testing.T, res *registry.Result)
	}{
		{tool: "echo_args", args: `{"msg":"hi"}`, wantOut: `{"msg":"hi"}`, wantTitle: "echo_args"},
		{tool: "echo_args", args: ``, wantOut: `{}`},
		{tool: "env", args: `{}`, wantOut: "argv1=one pwd=" + filepath.Join(ws, "sub") + " greeting=hello ws=" + ws + " session=s1 call=c1\n"},
		{tool: "structured", args: `{}`, wantOut: "the output", wantTitle: "Structured", check: func(t *testing.T, res *registry.Result) {
			if res.Metadata["n"] != float64(3) {
				t.Errorf("metadata = %v", res.Metadata)
			}
		}},
		{tool: "not_json", args: `{}`, wantErr: `declares "output": "json" but its stdout is not such an object`},
		{tool: "fails", args: `{}`, wantOut: "partial output\n", wantErr: "failed with exit code 3. The last 2048 bytes of its stderr"},
		{tool: "fails", args: `{}`, wantErr: "the real reason"},
		{tool: "missing_program", args: `{}`, wantErr: `the program "toolsd-no-such-program-xyz" was not found`},
	}
	for _, tc := range cases {
		t.Run(tc.tool, func(t *testing.T) {
			tl := tools[tc.tool]
			if tl.Source != registry.SourceProject || tl.Permission != tc.tool || tl.Fingerprint == "" || !strings.HasSuffix(tl.Path, tc.tool+".json") {
				t.Errorf("bad tool %+v", tl)
			}
			var fc fakeCall
			res, err := tl.Execute(context.Background(), fc.call(), json.RawMessage(tc.args))
			if len(fc.asks) != 1 || fc.asks[0].Permission != tc.tool || fc.asks[0].Patterns[0] != "*" || fc.asks[0].Metadata["command"] == nil {
				t.Errorf("asks = %+v", fc.asks)
			}
			got := fc.out.String()
			if res != nil {
				got += res.Output
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if tc.wantOut != "" && got != tc.wantOut {
				t.Errorf("output %q, want %q", got, tc.wantOut)
			}
			if tc.wantTitle != "" && res.Title != tc.wantTitle {
				t.Errorf("title %q, want %q", res.Title, tc.wantTitle)
			}
			if tc.check != nil {
				tc.check(t, res)
			}
		})
	}
}

func TestExecuteRejected(t *testing.T) {
	ws := t.TempDir()
	writeTree(t, ws, execTree)
	tools := loadTools(t, ws)
	fc := fakeCall{reject: &registry.PermissionError{Kind: "reject", Message: "no"}}
	_, err := tools["env"].Execute(context.Background(), fc.call(), json.RawMessage(`{}`))
	var pe *registry.PermissionError
	if !errors.As(err, &pe) || fc.out.Len() != 0 {
		t.Fatalf("err = %v, output %q", err, fc.out.String())
	}
}

// TestStopKillsTree checks that a timeout and a cancellation each kill the tool's whole
// process tree: the FIFO's write end, held by the script and both of its sleeps, closes
// only when all of them are gone.
func TestStopKillsTree(t *testing.T) {
	for _, mode := range []string{"timeout", "cancel"} {
		t.Run(mode, func(t *testing.T) {
			ws := t.TempDir()
			writeTree(t, ws, execTree)
			fifo := filepath.Join(ws, "fifo")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			tools := loadTools(t, ws)
			eof := make(chan error, 1)
			opened := make(chan struct{})
			go func() {
				f, err := os.Open(fifo) // blocks until the script opens the write end
				if err != nil {
					eof <- err
					return
				}
				close(opened)
				_, err = io.Copy(io.Discard, f)
				f.Close()
				eof <- err
			}()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if mode == "cancel" {
				go func() { <-opened; cancel() }()
			}
			var fc fakeCall
			_, err := tools["hangs"].Execute(ctx, fc.call(), json.RawMessage(`{}`))
			switch mode {
			case "timeout":
				if err == nil || !strings.Contains(err.Error(), "timed out after 300ms") {
					t.Fatalf("err = %v", err)
				}
			case "cancel":
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("err = %v", err)
				}
			}
			select {
			case err := <-eof:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the tool's process tree is still alive")
			}
		})
	}
}

// A process outside the tool's tree that still holds its stdout when the tool ends does not
// keep the call waiting, and the result says the output was cut there. (Without the guard,
// as here, a process started with setsid escapes.)
func TestExecuteOutputCut(t *testing.T) {
	ws := t.TempDir()
	writeTree(t, ws, `
-- .toolsd/tool/leaves.json --
{"description": "Leaves a process holding its stdout.", "command": ["./leaves.sh"]}
-- .toolsd/tool/leaves.sh --
#!/bin/sh
setsid sh -c 'echo $$ >escaped.pid; exec sleep 120' &
while [ ! -s escaped.pid ]; do :; done
echo done
`)
	tools := loadTools(t, ws)
	var fc fakeCall
	res, err := tools["leaves"].Execute(context.Background(), fc.call(), json.RawMessage(`{}`))
	if b, err := os.ReadFile(filepath.Join(ws, "escaped.pid")); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	got := fc.out.String() + res.Output
	if !strings.HasPrefix(got, "done\n[output cut here: the tool ended, but a process outside its process tree") || res.Metadata["outputCut"] != true {
		t.Fatalf("output %q, metadata %v", got, res.Metadata)
	}
}
