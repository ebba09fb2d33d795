package project

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/toolsd/toolsd/internal/proc"
	"github.com/toolsd/toolsd/internal/sandbox"
	"github.com/toolsd/toolsd/registry"
)

const (
	stderrTail    = 2 << 10  // how much of stderr an error shows
	maxJSONStdout = 16 << 20 // how much stdout an "output": "json" tool may write
)

// runner runs the calls of one definition; it is immutable.
type runner struct {
	def  *Definition
	opts Options
}

func (r *runner) execute(ctx context.Context, call *registry.Call, args json.RawMessage) (*registry.Result, error) {
	d := r.def
	if len(bytes.TrimSpace(args)) == 0 || bytes.Equal(bytes.TrimSpace(args), []byte("null")) {
		args = json.RawMessage("{}")
	}
	var conf *sandbox.Confinement
	if r.opts.Sandbox != nil {
		conf = r.opts.Sandbox(d.Name)
		defer conf.Close()
	}
	if call.Ask != nil {
		err := call.Ask(ctx, registry.AskRequest{
			Permission: d.Name,
			Patterns:   []string{"*"},
			Metadata:   map[string]any{"command": d.Command, "args": args, "definition": d.Path, "sandbox": conf.Summary()},
		})
		if err != nil {
			return nil, err
		}
	}
	ws := r.opts.Workspace
	if ws == "" {
		ws = call.Workspace
	}
	dir := ws
	if d.Cwd != "" {
		dir = d.Cwd
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(ws, dir)
		}
	}
	env := r.opts.Env
	if env == nil {
		env = os.Environ()
	}
	env = append([]string{}, env...)
	keys := make([]string, 0, len(d.Env))
	for k := range d.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+d.Env[k])
	}
	env = append(env, "TOOLSD_WORKSPACE="+ws, "TOOLSD_SESSION_ID="+call.SessionID, "TOOLSD_CALL_ID="+call.CallID, "TOOLSD_TOOL="+d.Name)

	tctx, cancel := context.WithTimeout(ctx, d.Timeout)
	defer cancel()
	cmd := proc.Command(tctx, r.opts.Grace, d.Argv0, d.Command[1:]...)
	cmd.Stdin = bytes.NewReader(args) // after proc.Command, which sets it to nil
	cmd.Dir = dir
	cmd.Env = env
	stderr := &proc.Tail{Max: stderrTail}
	cmd.Stderr = stderr
	var stdout bytes.Buffer
	var out io.Writer
	switch {
	case d.Output == OutputJSON:
		out = &limitWriter{w: &stdout, n: maxJSONStdout}
	case call.Output != nil:
		out = call.Output
	default:
		out = &stdout
	}
	cmd.Stdout = out
	if conf.Confined() {
		if err := proc.Confine(cmd, conf.Policy); err != nil {
			return nil, fmt.Errorf("tool %q could not be confined: %v", d.Name, err)
		}
	}

	if err := call.BeginChanges(ctx); err != nil {
		return nil, err
	}
	cut, err := proc.Run(cmd)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if tctx.Err() != nil {
		return nil, fmt.Errorf("tool %q timed out after %v and was stopped (its timeout is set in %s)%s", d.Name, d.Timeout, d.Path, section(stderr))
	}
	if lw, ok := out.(*limitWriter); ok && lw.over {
		return nil, fmt.Errorf("tool %q wrote more than %d bytes to stdout in json output mode; it must write one {\"title\", \"output\", \"metadata\"} object", d.Name, maxJSONStdout)
	}
	if err != nil {
		code := proc.ExitCode(err)
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("tool %q could not start: the program %q was not found (%v); the tool's definition %s needs fixing or the program installing, so do not retry this call", d.Name, d.Command[0], err, d.Path)
			}
			return nil, fmt.Errorf("tool %q could not start: %v", d.Name, err)
		}
		msg := fmt.Sprintf("tool %q failed with exit code %d%s", d.Name, code, section(stderr))
		if conf.Confined() {
			if blocked := sandbox.Explain(conf.Policy, conf.Mode, dir, stderr.String(), conf.Blocked()); len(blocked) > 0 {
				msg += "\n[the sandbox blocked: " + strings.Join(blocked, "; ") + ". The tool's settings (sandbox.tools." + d.Name + " in the person's settings) decide what it may do]"
			}
		}
		return nil, errors.New(msg)
	}
	var res *registry.Result
	if d.Output == OutputJSON {
		if res, err = parseJSONOutput(d, stdout.Bytes()); err != nil {
			if cut {
				err = fmt.Errorf("%w (%s)", err, outputCutWhy)
			}
			return nil, err
		}
	} else {
		res = &registry.Result{Title: d.Name, Output: stdout.String(), Metadata: map[string]any{"exitCode": 0}}
	}
	if conf != nil {
		if res.Metadata == nil {
			res.Metadata = map[string]any{}
		}
		res.Metadata["sandbox"] = conf.Summary()
	}
	if cut {
		if res.Output != "" && !strings.HasSuffix(res.Output, "\n") {
			res.Output += "\n"
		}
		res.Output += "[output cut here: " + outputCutWhy + "]"
		if res.Metadata == nil {
			res.Metadata = map[string]any{}
		}
		res.Metadata["outputCut"] = true
	}
	return res, nil
}

// outputCutWhy says why the output of a tool may be incomplete when proc.Run stopped reading
// it before its end.
const outputCutWhy = "the tool ended, but a process outside its process tree still held its stdout open, so reading stopped and whatever came later was not read"

// parseJSONOutput reads the {title, output, metadata} of an "output": "json" tool.
func parseJSONOutput(d *Definition, b []byte) (*registry.Result, error) {
	var v struct {
		Title    *string         `json:"title"`
		Output   *string         `json:"output"`
		Metadata json.RawMessage `json:"metadata"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	bad := func(why string) error {
		head := string(b)
		if len(head) > 200 {
			head = head[:200] + "..."
		}
		return fmt.Errorf("tool %q declares \"output\": \"json\" but %s; stdout must be one JSON object {\"title\": string, \"output\": string, \"metadata\": object}. Its stdout began: %q", d.Name, why, head)
	}
	if err := dec.Decode(&v); err != nil {
		return nil, bad(fmt.Sprintf("its stdout is not such an object (%v)", err))
	}
	if dec.More() {
		return nil, bad("its stdout holds more than one JSON value")
	}
	if v.Output == nil {
		return nil, bad(`the object has no string "output"`)
	}
	res := &registry.Result{Title: d.Name, Output: *v.Output}
	if v.Title != nil && *v.Title != "" {
		res.Title = *v.Title
	}
	if len(v.Metadata) > 0 && !bytes.Equal(v.Metadata, []byte("null")) {
		if err := json.Unmarshal(v.Metadata, &res.Metadata); err != nil {
			return nil, bad(`its "metadata" is not an object`)
		}
	}
	return res, nil
}

// section renders a process's stderr for an error text.
func section(t *proc.Tail) string {
	s := strings.TrimRight(t.String(), "\n")
	if strings.TrimSpace(s) == "" {
		return "; it wrote nothing to stderr"
	}
	if cut, kept, total := t.Cut(); cut {
		return fmt.Sprintf(". The last %d bytes of its stderr (of %d):\n%s", kept, total, s)
	}
	return ". Its stderr:\n" + s
}

// limitWriter passes on at most n bytes and then records that more came.
type limitWriter struct {
	w    io.Writer
	n    int
	over bool
}

func (l *limitWriter) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) > l.n {
		l.over = true
		p = p[:l.n]
	}
	l.n -= len(p)
	_, err := l.w.Write(p)
	return n, err // keep draining the pipe past the limit
}
