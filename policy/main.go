package policy

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/toolsd/toolsd/config"
	"github.com/toolsd/toolsd/permission"
	"github.com/toolsd/toolsd/protocol"
	"github.com/toolsd/toolsd/store"
)

const usage = `Usage: toolsd policy check [flags] TOOL ARG...   (or a JSON call '{"tool": ..., "args": {...}}')
       toolsd policy test [flags]

check prints what the permission rules decide for a tool call, and why (the rule, its
layer, file, line and column; or the remembered answer; or why nothing could allow it),
without running anything: bash "git push -f", edit src/a.go, read .env, webfetch URL.

test decides every example declared next to the rules ("examples": {"allow": [...],
"ask": [...], "deny": [...]}) and exits 1 listing each one whose decision differs, or when
the rules themselves cannot be read.

Both read the same settings as the daemon: the managed policy, the user's config and the
workspace's .toolsd/config.json (not the editor's settings). check reads the workspace's
remembered answers and trust from its store when no daemon holds it. See
docs/permissions.md.

Flags:
`

// Main runs `toolsd policy` with args (after "policy") and returns the exit code: 0, 1 when
// examples fail or the settings cannot be read, 2 for a bad command line.
func Main(args []string, stdout, stderr io.Writer) int {
	return run(args, stdout, stderr, "")
}

// run is Main with the managed policy's folder ("" for the system's): tests pass theirs.
func run(args []string, stdout, stderr io.Writer, managedDir string) int {
	if len(args) == 0 || (args[0] != "check" && args[0] != "test") {
		if len(args) > 0 && args[0] != "-h" && args[0] != "-help" && args[0] != "--help" {
			fmt.Fprintf(stderr, "toolsd policy: unknown command %q\n", args[0])
		}
		fmt.Fprint(stderr, usage)
		if len(args) > 0 && strings.Contains(args[0], "help") {
			return 0
		}
		return 2
	}
	cmd := args[0]
	fs := flag.NewFlagSet("toolsd policy "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	folder := fs.String("workspace", "", "workspace folder (default: the current directory)")
	asJSON := fs.Bool("json", false, "print JSON instead of text")
	var storePath, agent *string
	if cmd == "check" {
		storePath = fs.String("store", "", "the workspace's store, for remembered answers and trust (default: the daemon's)")
		agent = fs.String("agent", "", "the agent the call is for (its rules apply)")
	}
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	if err := fs.Parse(args[1:]); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	ws, err := workspace(*folder)
	if err != nil {
		fmt.Fprintf(stderr, "toolsd policy: %v\n", err)
		return 2
	}
	layers, diags := config.LoadFrom(ws, managedDir)
	rules, ds := Assemble(layers, nil)
	diags = append(diags, ds...)

	if cmd == "test" {
		if fs.NArg() > 0 {
			fmt.Fprintf(stderr, "toolsd policy test: unexpected argument %q\n", fs.Arg(0))
			return 2
		}
		examples, ds := Examples(layers)
		diags = append(diags, ds...)
		return report(stdout, *asJSON, len(examples), Test(rules, ws, examples), diags)
	}

	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "toolsd policy check: give a call: TOOL ARG... (bash \"git push -f\", edit src/a.go) or a JSON call")
		return 2
	}
	c, err := ParseCall(strings.Join(fs.Args(), " "))
	if err != nil {
		fmt.Fprintf(stderr, "toolsd policy check: %v\n", err)
		return 2
	}
	if *agent != "" {
		c.Agent = *agent
	}
	sp := *storePath
	if sp == "" {
		sp = store.DefaultPath(ws)
	}
	var notes []string
	rem, err := store.ReadRemembered(sp)
	if err != nil {
		rem = &store.Remembered{}
		why := err.Error()
		if errors.Is(err, store.ErrLocked) {
			why = "a running toolsd holds the store " + sp
		}
		notes = append(notes, "remembered answers and trust could not be read ("+why+"): the decision is without them, with the workspace's own rules untrusted")
	}
	e, err := permission.NewEngine(readOnlyStore{rem})
	if err != nil {
		fmt.Fprintf(stderr, "toolsd policy check: %v\n", err)
		return 1
	}
	Apply(e, rules, nil)
	res := Decide(e, ws, "", c)
	if !e.Trusted() && len(rules.Layers[permission.LayerProject]) > 0 {
		notes = append(notes, "the workspace is not trusted: its own rules only tighten (trust it in the editor to let them allow)")
	}
	for _, d := range diags {
		notes = append(notes, diagText(d))
	}
	res.Notes = notes
	if *asJSON {
		b, _ := json.MarshalIndent(res, "", "  ")
		fmt.Fprintf(stdout, "%s\n", b)
	} else {
		fmt.Fprint(stdout, res.Text())
	}
	return 0
}

func workspace(folder string) (string, error) {
	if folder == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		folder = wd
	}
	abs, err := filepath.Abs(folder)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("workspace: %v", err)
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("workspace %s is not a folder", folder)
	}
	return real, nil
}

func diagText(d protocol.Diagnostic) string {
	s := d.Path
	if d.Line > 0 {
		s += fmt.Sprintf(":%d:%d", d.Line, d.Column)
	}
	return fmt.Sprintf("%s: %s: %s", s, d.Severity, d.Message)
}

// report prints the outcome of policy test and returns its exit code.
func report(w io.Writer, asJSON bool, n int, fails []Failure, diags []protocol.Diagnostic) int {
	code := 0
	if len(fails) > 0 {
		code = 1
	}
	for _, d := range diags {
		if d.Severity == "error" {
			code = 1
		}
	}
	if asJSON {
		type failure struct {
			Example  string            `json:"example"`
			Want     permission.Action `json:"want"`
			Got      Result            `json:"got"`
			Location string            `json:"location"`
			Message  string            `json:"message"`
		}
		out := struct {
			Examples    int                   `json:"examples"`
			Failures    []failure             `json:"failures"`
			Diagnostics []protocol.Diagnostic `json:"diagnostics"`
		}{Examples: n, Failures: []failure{}, Diagnostics: append([]protocol.Diagnostic{}, diags...)}
		for _, f := range fails {
			out.Failures = append(out.Failures, failure{f.Example.Text, f.Example.Want, f.Got, fmt.Sprintf("%s:%d:%d", f.Example.File, f.Example.Line, f.Example.Column), f.Message()})
		}
		b, _ := json.MarshalIndent(out, "", "  ")
		fmt.Fprintf(w, "%s\n", b)
		return code
	}
	for _, d := range diags {
		fmt.Fprintln(w, diagText(d))
	}
	for _, f := range fails {
		fmt.Fprintf(w, "%s:%d:%d: %s\n", f.Example.File, f.Example.Line, f.Example.Column, f.Message())
	}
	switch {
	case n == 0:
		fmt.Fprintln(w, "no examples are declared (\"examples\": {\"allow\": [...], \"ask\": [...], \"deny\": [...]} next to the rules)")
	case len(fails) == 0:
		fmt.Fprintf(w, "%d examples, all as declared\n", n)
	default:
		fmt.Fprintf(w, "%d examples, %d not as declared\n", n, len(fails))
	}
	return code
}

// readOnlyStore gives the engine what a store file remembers, and refuses to change it.
type readOnlyStore struct{ r *store.Remembered }

func (s readOnlyStore) Approvals() ([]permission.Rule, error) {
	var out []permission.Rule
	for _, a := range s.r.Approvals {
		out = append(out, permission.Rule{Permission: a.Permission, Pattern: a.Pattern, Action: permission.Allow, At: a.At, By: a.By})
	}
	return out, nil
}
func (s readOnlyStore) AddApprovals([]permission.Rule) error { return errReadOnly }
func (s readOnlyStore) Trusted() (bool, error)               { return s.r.Trusted, nil }
func (s readOnlyStore) SetTrusted(bool) error                { return errReadOnly }

var errReadOnly = errors.New("policy: the store is read only here")
