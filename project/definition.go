// Package project loads tool definitions from a workspace's .toolsd/tool folder and the
// user's config folder, and keeps them in the registry as the files change.
//
// A definition is a JSON file <name>.json: a description, a JSON Schema for the arguments
// and a command to run (an argv, never through a shell), which gets the validated arguments
// as JSON on stdin. Loading a definition runs no code. docs/project-tools.md describes the
// format.
package project

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/toolsd/toolsd/internal/jsonpos"
	"github.com/toolsd/toolsd/protocol"
	"github.com/toolsd/toolsd/registry"
)

// Output modes.
const (
	OutputText = "text" // stdout is the output, streamed
	OutputJSON = "json" // stdout is {"title", "output", "metadata"}
)

// Limits of a definition.
const (
	DefaultTimeout = 2 * time.Minute
	MaxTimeout     = time.Hour
	// maxFileSize is the largest definition file read (internal/fsopen refuses a larger one
	// before reading it), maxFolderEntries the most entries a tool folder may have to be
	// read at all.
	maxFileSize      = 1 << 20
	maxFolderEntries = 1000
)

// Definition is one parsed tool definition file. It is immutable once parsed.
type Definition struct {
	Name        string
	Path        string // the definition file
	Description string
	Parameters  json.RawMessage
	// Command is the argv as written; Argv0 is its first element resolved: a relative path
	// with a slash is made absolute against the definition's folder, a bare name is looked
	// up in PATH when the tool runs.
	Command []string
	Argv0   string
	Cwd     string // as written, relative to the workspace; "" means the workspace
	Env     map[string]string
	Timeout time.Duration
	Output  string
	// Annotations are the hints the definition gives clients (MCP's tool annotations).
	Annotations *protocol.ToolAnnotations
	// Fingerprint is a hash of the file's content.
	Fingerprint string
}

// fields lists the known fields, for messages.
var fields = []string{"description", "parameters", "command", "cwd", "env", "timeout", "output", "annotations"}

// defaultParameters is the schema of a tool that takes no arguments.
var defaultParameters = json.RawMessage(`{"type":"object","properties":{}}`)

// schemaPointer finds the JSON pointer in a schema compile error ("schema at /x: ...").
var schemaPointer = regexp.MustCompile(`at (/[^:\s]*|\(root\)):`)

// ParseDefinition parses the definition of tool name from data read from path. It returns
// the definition, or nil and diagnostics saying what to fix; warnings may come with a
// definition. It runs no code and touches no file but to check that a relative command
// exists.
func ParseDefinition(name, path string, data []byte) (*Definition, []protocol.Diagnostic) {
	var diags []protocol.Diagnostic
	failed := false
	report := func(severity string, off int, format string, args ...any) {
		d := protocol.Diagnostic{Path: path, Message: fmt.Sprintf(format, args...), Severity: severity}
		if off >= 0 {
			d.Line, d.Column = jsonpos.Position(data, off)
		}
		diags = append(diags, d)
		if severity == "error" {
			failed = true
		}
	}
	errorf := func(off int, format string, args ...any) { report("error", off, format, args...) }

	root, err := jsonpos.Parse(data)
	if err != nil {
		se, _ := err.(*jsonpos.SyntaxError)
		off := -1
		if se != nil {
			off = se.Offset
		}
		errorf(off, "bad JSON: %v; fix the syntax of the file", err)
		return nil, diags
	}
	if root.Kind != jsonpos.Object {
		errorf(root.Offset, "a tool definition must be a JSON object with %q, %q and %q, not %v", "description", "parameters", "command", root.Kind)
		return nil, diags
	}
	d := &Definition{Name: name, Path: path, Output: OutputText, Timeout: DefaultTimeout, Parameters: defaultParameters}
	sum := sha256.Sum256(data)
	d.Fingerprint = hex.EncodeToString(sum[:16])

	seen := map[string]bool{}
	for _, f := range root.Fields {
		v := f.Value
		if seen[f.Name] {
			errorf(f.KeyOffset, "field %q appears more than once; keep one", f.Name)
			continue
		}
		seen[f.Name] = true
		wrongType := func(want string) {
			errorf(v.Offset, "%q must be %s, not %v", f.Name, want, v.Kind)
		}
		switch f.Name {
		case "$schema":
			// Lets editors offer completion; ignored.
		case "description":
			if v.Kind != jsonpos.String {
				wrongType("a string")
				continue
			}
			d.Description = strings.TrimSpace(v.Value.(string))
			if d.Description == "" {
				errorf(v.Offset, "%q is empty; say what the tool does and when a model should use it", f.Name)
			}
		case "parameters":
			if v.Kind != jsonpos.Object {
				wrongType(`a JSON Schema object such as {"type": "object", "properties": {...}}`)
				continue
			}
			d.Parameters = json.RawMessage(v.Raw)
			if _, err := registry.CompileSchema(name, d.Parameters); err != nil {
				off := v.Offset
				if m := schemaPointer.FindStringSubmatch(err.Error()); m != nil && m[1] != "(root)" {
					if n, _ := v.Lookup(m[1]); n != nil {
						off = n.Offset
					}
				}
				errorf(off, "%v; fix the schema under %q", err, "parameters")
			}
		case "command":
			if v.Kind != jsonpos.Array {
				if v.Kind == jsonpos.String {
					errorf(v.Offset, "%q must be an array of strings (an argv, run without a shell), e.g. [\"go\", \"test\"], not a string", f.Name)
				} else {
					wrongType("an array of strings")
				}
				continue
			}
			if len(v.Elems) == 0 {
				errorf(v.Offset, "%q is empty; give the program and its arguments, e.g. [\"go\", \"test\"]", f.Name)
				continue
			}
			ok := true
			for i, e := range v.Elems {
				if e.Kind != jsonpos.String {
					errorf(e.Offset, "%q[%d] must be a string, not %v", f.Name, i, e.Kind)
					ok = false
					continue
				}
				d.Command = append(d.Command, e.Value.(string))
			}
			if ok && d.Command[0] == "" {
				errorf(v.Elems[0].Offset, "%q[0], the program, is empty", f.Name)
			}
		case "annotations":
			if v.Kind != jsonpos.Object {
				wrongType(`an object of MCP tool hints, e.g. {"readOnlyHint": true}`)
				continue
			}
			dec := json.NewDecoder(strings.NewReader(string(v.Raw)))
			dec.DisallowUnknownFields()
			var a protocol.ToolAnnotations
			if err := dec.Decode(&a); err != nil {
				errorf(v.Offset, "%q: %v; it takes title (a string) and readOnlyHint, destructiveHint, idempotentHint, openWorldHint (booleans)", f.Name, err)
				continue
			}
			d.Annotations = &a
		case "cwd":
			if v.Kind != jsonpos.String {
				wrongType("a string (a folder relative to the workspace)")
				continue
			}
			d.Cwd = v.Value.(string)
		case "env":
			if v.Kind != jsonpos.Object {
				wrongType(`an object of strings, e.g. {"GOFLAGS": "-count=1"}`)
				continue
			}
			d.Env = map[string]string{}
			for _, ef := range v.Fields {
				if ef.Value.Kind != jsonpos.String {
					errorf(ef.Value.Offset, "%q.%s must be a string, not %v", f.Name, ef.Name, ef.Value.Kind)
					continue
				}
				if ef.Name == "" || strings.ContainsAny(ef.Name, "=\x00") {
					errorf(ef.KeyOffset, "%q has a bad variable name %q", f.Name, ef.Name)
					continue
				}
				d.Env[ef.Name] = ef.Value.Value.(string)
			}
		case "timeout":
			if v.Kind != jsonpos.Number {
				if v.Kind == jsonpos.String {
					hint := ""
					if dur, err := time.ParseDuration(v.Value.(string)); err == nil {
						hint = fmt.Sprintf(": write %d instead of %q", dur.Milliseconds(), v.Value)
					}
					errorf(v.Offset, "%q is a number of milliseconds, not a string%s", f.Name, hint)
				} else {
					wrongType("a number of milliseconds")
				}
				continue
			}
			ms, err := strconv.ParseInt(string(v.Value.(json.Number)), 10, 64)
			if err != nil || ms <= 0 || time.Duration(ms)*time.Millisecond > MaxTimeout {
				errorf(v.Offset, "%q must be a whole number of milliseconds between 1 and %d", f.Name, MaxTimeout.Milliseconds())
				continue
			}
			d.Timeout = time.Duration(ms) * time.Millisecond
		case "output":
			if v.Kind != jsonpos.String || (v.Value != OutputText && v.Value != OutputJSON) {
				errorf(v.Offset, "%q must be %q (stdout is the output) or %q (stdout is {\"title\", \"output\", \"metadata\"})", f.Name, OutputText, OutputJSON)
				continue
			}
			d.Output = v.Value.(string)
		default:
			msg := fmt.Sprintf("unknown field %q; the fields are %s", f.Name, strings.Join(fields, ", "))
			if s := closest(f.Name, fields); s != "" {
				msg = fmt.Sprintf("unknown field %q; did you mean %q? The fields are %s", f.Name, s, strings.Join(fields, ", "))
			}
			errorf(f.KeyOffset, "%s", msg)
		}
	}
	for _, req := range []string{"description", "command"} {
		if !seen[req] {
			hint := "say what the tool does and when to use it"
			if req == "command" {
				hint = `the program and its arguments, e.g. ["go", "test"]`
			}
			errorf(root.Offset, "missing field %q: %s", req, hint)
		}
	}
	if failed {
		return nil, diags
	}
	d.Argv0 = d.Command[0]
	if strings.Contains(d.Argv0, "/") && !filepath.IsAbs(d.Argv0) {
		d.Argv0 = filepath.Join(filepath.Dir(path), d.Argv0)
	}
	if strings.Contains(d.Argv0, "/") {
		if fi, err := os.Stat(d.Argv0); err != nil {
			cmd, _ := root.Get("command")
			report("warning", cmd.Elems[0].Offset, "the program %s does not exist (yet); calls will fail until it does", d.Argv0)
		} else if fi.Mode()&0o111 == 0 {
			cmd, _ := root.Get("command")
			report("warning", cmd.Elems[0].Offset, "the program %s is not executable; run chmod +x on it", d.Argv0)
		}
	}
	return d, diags
}

// closest returns the candidate within edit distance 2 of s, if any.
func closest(s string, cands []string) string {
	best, bestD := "", 3
	for _, c := range cands {
		if d := registry.EditDistance(strings.ToLower(s), c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// sortDiagnostics orders diagnostics by path, line and column.
func sortDiagnostics(ds []protocol.Diagnostic) {
	sort.SliceStable(ds, func(i, j int) bool {
		a, b := ds[i], ds[j]
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
}
