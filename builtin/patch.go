package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/toolsd/toolsd/permission"
	"github.com/toolsd/toolsd/registry"
)

const applyPatchDescription = `Edits files with a patch: adds, updates, deletes and moves files in one all-or-nothing step.

The patch format:
*** Begin Patch
*** Add File: path/to/new.txt
+every line of the new file, each starting with +
*** Update File: path/to/existing.py
*** Move to: path/to/renamed.py      (optional: rename the file too)
@@ def greet():                       (optional: a line near the change, to find the place)
 context line (starts with a space)
-line to remove
+line to add
*** Delete File: path/to/obsolete.txt
*** End Patch

Rules:
- Paths are relative to the workspace root (absolute paths work, but outside the workspace need permission).
- In an Update, give about 3 lines of unchanged context before and after each change, exactly as in the file; separate changes with @@ lines. Add "*** End of File" after a change that must match at the end of the file.
- Context and removed lines are matched exactly first, then ignoring trailing and surrounding whitespace.
- If any part fails to apply, nothing is changed and the error names the part: read the file again and fix the patch.
- Line endings and byte order marks of updated files are kept.`

func applyPatchTool(o *Options) *registry.Tool {
	s := schema{
		props: []prop{
			{"patchText", map[string]any{"type": "string", "minLength": 1, "description": "The whole patch, from *** Begin Patch to *** End Patch."}},
		},
		required: []string{"patchText"},
	}
	return &registry.Tool{
		ID:          "apply_patch",
		Description: applyPatchDescription,
		Parameters:  s.raw(),
		Permission:  "edit",
		Changes:     registry.ChangesReported,
		Execute: func(ctx context.Context, call *registry.Call, args json.RawMessage) (*registry.Result, error) {
			var a struct {
				PatchText string `json:"patchText"`
			}
			if err := decode(args, &a); err != nil {
				return nil, err
			}
			return runApplyPatch(ctx, o, call, a.PatchText)
		},
	}
}

// patchOp is one file operation of a patch.
type patchOp struct {
	kind   string // "add", "update", "delete"
	path   string
	moveTo string
	lines  []string // add: the new file's lines
	chunks []*patchChunk
	line   int // line of the patch where the op starts
	n      int // 1-based index among the ops
}

func (op *patchOp) describe() string {
	k := map[string]string{"add": "Add File", "update": "Update File", "delete": "Delete File"}[op.kind]
	return fmt.Sprintf("part %d (*** %s: %s, patch line %d)", op.n, k, op.path, op.line)
}

// patchChunk is one @@ section of an Update.
type patchChunk struct {
	context  string // the text after "@@ ", a line to find first
	old, new []string
	ops      []patchLine // the lines in order, to rebuild new with the file's context lines
	eof      bool
	line     int
}

// patchLine is a line of a chunk: ' ' context, '-' removed, '+' added.
type patchLine struct {
	kind byte
	text string
}

// rebuild returns the lines replacing the n file lines at `at`: context lines are taken
// from the file (a tolerant match must not rewrite them), added lines from the patch.
func (c *patchChunk) rebuild(lines []string, at, n int) []string {
	var out []string
	oi := 0
	for _, op := range c.ops {
		switch op.kind {
		case ' ':
			if oi < n {
				out = append(out, lines[at+oi])
			} else {
				out = append(out, op.text)
			}
			oi++
		case '-':
			oi++
		case '+':
			out = append(out, op.text)
		}
	}
	return out
}

// PatchError reports a patch that cannot be parsed or applied.
type PatchError struct {
	Line int // patch line, 0 when not about one line
	Msg  string
}

func (e *PatchError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("apply_patch: patch line %d: %s", e.Line, e.Msg)
	}
	return "apply_patch: " + e.Msg
}

// parsePatch parses the *** Begin Patch format.
func parsePatch(text string) ([]*patchOp, error) {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	lines := strings.Split(strings.TrimSpace(text), "\n")
	// Tolerate a heredoc wrapper (apply_patch <<'EOF' ... EOF).
	if len(lines) >= 2 && strings.Contains(lines[0], "<<") && !strings.HasPrefix(lines[0], "***") {
		lines = lines[1:]
		if l := strings.TrimSpace(lines[len(lines)-1]); l == "EOF" || l == "'EOF'" {
			lines = lines[:len(lines)-1]
		}
	}
	if len(lines) == 0 || strings.TrimSpace(lines[0]) != "*** Begin Patch" {
		return nil, &PatchError{1, "the patch must start with the line \"*** Begin Patch\""}
	}
	if strings.TrimSpace(lines[len(lines)-1]) != "*** End Patch" {
		return nil, &PatchError{len(lines), "the patch must end with the line \"*** End Patch\""}
	}
	var ops []*patchOp
	i := 1
	end := len(lines) - 1
	for i < end {
		l := lines[i]
		t := strings.TrimSpace(l)
		ln := i + 1
		switch {
		case t == "":
			i++
		case strings.HasPrefix(t, "*** Add File: "):
			op := &patchOp{kind: "add", path: strings.TrimSpace(strings.TrimPrefix(t, "*** Add File: ")), line: ln}
			i++
			for i < end && !strings.HasPrefix(lines[i], "*** ") {
				if !strings.HasPrefix(lines[i], "+") {
					return nil, &PatchError{i + 1, fmt.Sprintf("in *** Add File: %s every line must start with \"+\" (got %q)", op.path, lines[i])}
				}
				op.lines = append(op.lines, lines[i][1:])
				i++
			}
			ops = append(ops, op)
		case strings.HasPrefix(t, "*** Delete File: "):
			ops = append(ops, &patchOp{kind: "delete", path: strings.TrimSpace(strings.TrimPrefix(t, "*** Delete File: ")), line: ln})
			i++
		case strings.HasPrefix(t, "*** Update File: "):
			op := &patchOp{kind: "update", path: strings.TrimSpace(strings.TrimPrefix(t, "*** Update File: ")), line: ln}
			i++
			if i < end && strings.HasPrefix(strings.TrimSpace(lines[i]), "*** Move to: ") {
				op.moveTo = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(lines[i]), "*** Move to: "))
				i++
			}
			var cur *patchChunk
			for i < end {
				l := lines[i]
				if strings.HasPrefix(l, "*** ") && strings.TrimSpace(l) != "*** End of File" {
					break
				}
				switch {
				case strings.TrimSpace(l) == "*** End of File":
					if cur == nil {
						return nil, &PatchError{i + 1, "\"*** End of File\" must follow the lines of a change"}
					}
					cur.eof = true
				case strings.HasPrefix(l, "@@"):
					cur = &patchChunk{context: strings.TrimSpace(strings.TrimPrefix(l, "@@")), line: i + 1}
					op.chunks = append(op.chunks, cur)
				default:
					if cur == nil {
						cur = &patchChunk{line: i + 1}
						op.chunks = append(op.chunks, cur)
					}
					switch {
					case l == "":
						cur.old = append(cur.old, "")
						cur.new = append(cur.new, "")
						cur.ops = append(cur.ops, patchLine{' ', ""})
					case l[0] == ' ':
						cur.old = append(cur.old, l[1:])
						cur.new = append(cur.new, l[1:])
						cur.ops = append(cur.ops, patchLine{' ', l[1:]})
					case l[0] == '-':
						cur.old = append(cur.old, l[1:])
						cur.ops = append(cur.ops, patchLine{'-', l[1:]})
					case l[0] == '+':
						cur.new = append(cur.new, l[1:])
						cur.ops = append(cur.ops, patchLine{'+', l[1:]})
					default:
						return nil, &PatchError{i + 1, fmt.Sprintf("in *** Update File: %s a line must start with \" \" (context), \"-\" (remove) or \"+\" (add), or be an @@ line; got %q", op.path, l)}
					}
				}
				i++
			}
			if len(op.chunks) == 0 && op.moveTo == "" {
				return nil, &PatchError{op.line, fmt.Sprintf("*** Update File: %s has no changes", op.path)}
			}
			ops = append(ops, op)
		default:
			return nil, &PatchError{ln, fmt.Sprintf("expected \"*** Add File: \", \"*** Update File: \", \"*** Delete File: \" or \"*** End Patch\", got %q", l)}
		}
	}
	if len(ops) == 0 {
		return nil, &PatchError{0, "the patch changes no file"}
	}
	for k, op := range ops {
		op.n = k + 1
		if op.path == "" {
			return nil, &PatchError{op.line, "a file operation names no path"}
		}
	}
	return ops, nil
}

// applyChunks applies an Update's chunks to text (LF line endings).
func applyChunks(op *patchOp, text string) (string, error) {
	lines := strings.Split(text, "\n")
	trailingNL := strings.HasSuffix(text, "\n")
	if trailingNL {
		lines = lines[:len(lines)-1]
	}
	if text == "" {
		lines = nil
	}
	type repl struct {
		at, n int
		new   []string
	}
	var repls []repl
	at := 0
	for ci, c := range op.chunks {
		where := func() string {
			s := fmt.Sprintf("change %d (patch line %d", ci+1, c.line)
			if c.context != "" {
				s += fmt.Sprintf(", @@ %s", c.context)
			}
			return s + ") of " + op.describe()
		}
		if c.context != "" {
			i := seekLines(lines, []string{c.context}, at, false)
			if i < 0 {
				return "", &PatchError{c.line, fmt.Sprintf("%s did not apply: the @@ line %q was not found in %s%s", where(), c.context, op.path, closestHint(lines, []string{c.context}, 0))}
			}
			at = i + 1
		}
		if len(c.old) == 0 {
			// Pure addition: at the end of the file.
			repls = append(repls, repl{len(lines), 0, c.new})
			continue
		}
		old := c.old
		i := seekLines(lines, old, at, c.eof)
		if i < 0 && len(old) > 0 && old[len(old)-1] == "" {
			old = old[:len(old)-1]
			i = seekLines(lines, old, at, c.eof)
		}
		if i < 0 {
			return "", &PatchError{c.line, fmt.Sprintf("%s did not apply: these lines were not found in %s after line %d:\n%s%s", where(), op.path, at, strings.Join(old, "\n"), closestHint(lines, old, at))}
		}
		nw := c.rebuild(lines, i, len(old))
		if len(old) < len(c.old) && len(nw) > 0 && nw[len(nw)-1] == "" {
			nw = nw[:len(nw)-1] // the dropped trailing empty context line
		}
		repls = append(repls, repl{i, len(old), nw})
		at = i + len(old)
	}
	for k := len(repls) - 1; k >= 0; k-- {
		r := repls[k]
		lines = append(lines[:r.at], append(append([]string{}, r.new...), lines[r.at+r.n:]...)...)
	}
	out := strings.Join(lines, "\n")
	if len(lines) > 0 {
		out += "\n"
	}
	return out, nil
}

// closestHint shows the file's lines nearest to want, for an error: after line from
// first, where the change was looked for, then anywhere.
func closestHint(lines, want []string, from int) string {
	from = min(from, len(lines))
	c := closestBlock(strings.Join(lines[from:], "\n"), strings.Join(want, "\n"), from)
	if c == "" && from > 0 {
		c = closestBlock(strings.Join(lines, "\n"), strings.Join(want, "\n"), 0)
	}
	if c != "" {
		return "\nThe closest lines in the file:\n" + c
	}
	return ""
}

// seekLines finds pattern in lines at or after start: exactly, then ignoring trailing
// whitespace, then ignoring surrounding whitespace, then with typographic punctuation
// made plain. With eof it tries the end of the file first. -1 when not found.
func seekLines(lines, pattern []string, start int, eof bool) int {
	if len(pattern) == 0 {
		return start
	}
	if len(pattern) > len(lines) {
		return -1
	}
	for _, norm := range []func(string) string{
		func(s string) string { return s },
		func(s string) string { return strings.TrimRight(s, " \t\r") },
		strings.TrimSpace,
		func(s string) string { return plainPunct.Replace(strings.TrimSpace(s)) },
	} {
		match := func(i int) bool {
			for k, p := range pattern {
				if norm(lines[i+k]) != norm(p) {
					return false
				}
			}
			return true
		}
		if eof {
			if i := len(lines) - len(pattern); i >= start && match(i) {
				return i
			}
		}
		for i := start; i+len(pattern) <= len(lines); i++ {
			if match(i) {
				return i
			}
		}
	}
	return -1
}

var plainPunct = strings.NewReplacer(
	"\u2010", "-", "\u2011", "-", "\u2012", "-", "\u2013", "-", "\u2014", "-", "\u2015", "-", "\u2212", "-",
	"\u2018", "'", "\u2019", "'", "\u201A", "'", "\u201B", "'",
	"\u201C", "\"", "\u201D", "\"", "\u201E", "\"", "\u201F", "\"",
	"\u00A0", " ", "\u2002", " ", "\u2003", " ", "\u2009", " ", "\u202F", " ",
)

func runApplyPatch(ctx context.Context, o *Options, call *registry.Call, text string) (*registry.Result, error) {
	ops, err := parsePatch(text)
	if err != nil {
		return nil, err
	}
	// Resolve every path, and ask for the folders outside the workspace in one request.
	seen := map[string]string{}
	var external, externalAlways []string
	extSeen := map[string]bool{}
	resolve := func(op *patchOp, p string) (*target, error) {
		t, err := resolvePath(call.Workspace, "", "path", p)
		if err != nil {
			return nil, &PatchError{op.line, fmt.Sprintf("%s: %v", op.describe(), err)}
		}
		if prev, dup := seen[t.Abs]; dup {
			return nil, &PatchError{op.line, fmt.Sprintf("%s: %s is also changed by %s; change each file in one part", op.describe(), t.Display(), prev)}
		}
		seen[t.Abs] = op.describe()
		if !t.Inside {
			dir := filepath.ToSlash(filepath.Dir(t.Abs))
			if d := dir + "/*"; !extSeen[d] {
				extSeen[d] = true
				external = append(external, d)
				externalAlways = append(externalAlways, permission.Escape(dir)+"/*")
			}
		}
		return t, nil
	}
	changes := make([]*change, 0, len(ops))
	for _, op := range ops {
		t, err := resolve(op, op.path)
		if err != nil {
			return nil, err
		}
		ch := &change{t: t, existed: t.Exists()}
		if ch.old, ch.info, err = readForChange(o, call, t, op.kind != "add"); err != nil {
			return nil, &PatchError{op.line, fmt.Sprintf("%s: %v", op.describe(), err)}
		}
		switch op.kind {
		case "add":
			content := strings.Join(op.lines, "\n")
			if len(op.lines) > 0 {
				content += "\n"
			}
			ch.new = []byte(content)
		case "delete":
			ch.delete = true
		case "update":
			norm, restore := normalizeText(ch.old)
			updated := norm
			if len(op.chunks) > 0 {
				if updated, err = applyChunks(op, norm); err != nil {
					return nil, err
				}
			}
			ch.new = restore(updated)
			if op.moveTo != "" {
				mt, err := resolve(op, op.moveTo)
				if err != nil {
					return nil, err
				}
				if mt.Exists() {
					return nil, &PatchError{op.line, fmt.Sprintf("%s: cannot move to %s: it already exists", op.describe(), mt.Display())}
				}
				ch.moveTo = mt
			}
		}
		changes = append(changes, ch)
	}
	if len(external) > 0 {
		if err := call.Ask(ctx, registry.AskRequest{Permission: "external_directory", Patterns: external, Always: externalAlways, Metadata: map[string]any{"folders": external}}); err != nil {
			return nil, err
		}
	}
	var patterns []string
	var files []any
	var diff strings.Builder
	adds, dels := 0, 0
	for _, ch := range changes {
		ch.computeDiff()
		patterns = append(patterns, ch.name())
		if ch.moveTo != nil {
			patterns = append(patterns, ch.moveTo.Pattern())
		}
		files = append(files, ch.metadata())
		diff.WriteString(ch.diff.Text)
		adds += ch.diff.Additions
		dels += ch.diff.Deletions
	}
	// diff is every file's diff, for the person to read; files has each file's own
	// (filePath, diff, movePath) for an editor that opens them one by one. filePath is the
	// first file's.
	meta := map[string]any{"diff": diff.String(), "filePath": filepath.ToSlash(changes[0].t.Abs), "files": files, "additions": adds, "deletions": dels}
	deletes := false
	for _, ch := range changes {
		deletes = deletes || ch.delete
	}
	if err := call.Ask(ctx, registry.AskRequest{Permission: "edit", Patterns: patterns, Always: exactly(patterns...), Metadata: meta, Destructive: deletes}); err != nil {
		return nil, err
	}
	// Check every file is as read before writing any, then write; undo on a failure.
	for _, ch := range changes {
		if err := ch.unchanged(); err != nil {
			return nil, err
		}
	}
	for _, ch := range changes {
		if err := ch.report(ctx, call); err != nil {
			return nil, err
		}
	}
	for k, ch := range changes {
		if err := ch.apply(); err != nil {
			if rerr := rollback(changes[:k]); rerr != nil {
				return nil, fmt.Errorf("%v; undoing the files already changed failed too: %v", err, rerr)
			}
			return nil, fmt.Errorf("%v (nothing was changed: the files already written were restored)", err)
		}
	}
	var out strings.Builder
	out.WriteString("Success. Updated the following files:\n")
	for _, ch := range changes {
		switch {
		case ch.delete:
			fmt.Fprintf(&out, "D %s\n", ch.t.Display())
		case ch.moveTo != nil:
			fmt.Fprintf(&out, "R %s -> %s\n", ch.t.Display(), ch.moveTo.Display())
		case !ch.existed:
			fmt.Fprintf(&out, "A %s\n", ch.t.Display())
		default:
			fmt.Fprintf(&out, "M %s\n", ch.t.Display())
		}
	}
	return &registry.Result{Title: fmt.Sprintf("%d file(s)", len(changes)), Output: strings.TrimSuffix(out.String(), "\n"), Metadata: meta}, nil
}

// rollback undoes applied changes, newest first.
func rollback(applied []*change) error {
	var errs []error
	for k := len(applied) - 1; k >= 0; k-- {
		ch := applied[k]
		if ch.moveTo != nil {
			if err := removeFile(ch.moveTo.Abs); err != nil {
				errs = append(errs, err)
			}
		}
		if ch.existed {
			if err := writeAtomic(ch.t.Abs, ch.old); err != nil {
				errs = append(errs, err)
			}
		} else if err := removeFile(ch.t.Abs); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
