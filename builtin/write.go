package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/toolsd/toolsd/internal/textdiff"
	"github.com/toolsd/toolsd/registry"
)

const writeDescription = `Writes a file, replacing it whole if it exists, creating it (and its missing folders) if not.

Usage:
- filePath is relative to the workspace root, or absolute. Paths outside the workspace need the person's permission.
- content is the complete new content of the file. To change part of an existing file, use edit: it is safer and shows a smaller diff.
- Read an existing file before overwriting it, so nothing in it is lost by accident.
- The write is atomic (a temporary file renamed over the old one) and keeps the file's permissions.
- Do not create documentation or README files unless asked to.`

func writeTool(o *Options) *registry.Tool {
	s := schema{
		props: []prop{
			{"filePath", map[string]any{"type": "string", "minLength": 1, "description": "The path of the file to write: relative to the workspace root, or absolute."}},
			{"content", map[string]any{"type": "string", "description": "The complete content to write to the file."}},
		},
		required: []string{"filePath", "content"},
	}
	return &registry.Tool{
		ID:          "write",
		Description: writeDescription,
		Parameters:  s.raw(),
		Permission:  "edit",
		Changes:     registry.ChangesReported,
		Execute: func(ctx context.Context, call *registry.Call, args json.RawMessage) (*registry.Result, error) {
			var a struct {
				FilePath string `json:"filePath"`
				Content  string `json:"content"`
			}
			if err := decode(args, &a); err != nil {
				return nil, err
			}
			t, old, info, err := openForChange(ctx, o, call, "filePath", a.FilePath, false)
			if err != nil {
				return nil, err
			}
			ch := &change{t: t, old: old, info: info, new: []byte(a.Content), existed: t.Exists()}
			if err := ch.ask(ctx, call); err != nil {
				return nil, err
			}
			if err := ch.report(ctx, call); err != nil {
				return nil, err
			}
			if err := ch.apply(); err != nil {
				return nil, err
			}
			verb := "Created"
			if ch.existed {
				verb = "Overwrote"
			}
			out := fmt.Sprintf("%s %s (%d bytes, %d lines).", verb, t.Display(), len(a.Content), countLines(a.Content))
			return &registry.Result{Title: t.Display(), Output: out, Metadata: ch.metadata()}, nil
		},
	}
}

// openForChange resolves the path argument key of a tool that changes a file, asks for it if
// it lies outside the workspace, and reads what is there now: see readForChange.
func openForChange(ctx context.Context, o *Options, call *registry.Call, key, path string, mustExist bool) (*target, []byte, fs.FileInfo, error) {
	t, err := resolvePath(call.Workspace, "", key, path)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := askExternal(ctx, call, t, false); err != nil {
		return nil, nil, nil, err
	}
	data, info, err := readForChange(o, call, t, mustExist)
	return t, data, info, err
}

// readForChange reads the file at t before it is changed: its content and info (to see a
// change on disk since), nothing for a file that does not exist yet (an error if mustExist),
// an error for a folder or a file over the limit for editing.
func readForChange(o *Options, call *registry.Call, t *target, mustExist bool) ([]byte, fs.FileInfo, error) {
	switch {
	case !t.Exists() && mustExist:
		return nil, nil, notFoundError(call.Workspace, t)
	case !t.Exists():
		return nil, nil, nil
	case t.Info.IsDir():
		return nil, nil, fmt.Errorf("%s is a folder: give the path of a file", t.Display())
	}
	data, info, err := readChecked(t, o.MaxEditBytes)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot read %s: %w", t.Display(), unwrapPathErr(err))
	}
	return data, info, nil
}

// change is a planned change of one file: what was read, what will be written.
type change struct {
	t       *target
	old     []byte
	info    fs.FileInfo // of old, to see a change on disk since it was read
	existed bool
	new     []byte
	delete  bool
	moveTo  *target // apply_patch's Move to
	diff    textdiff.Diff
}

// name is how the change names its file in a diff and in permission patterns.
func (c *change) name() string { return c.t.Pattern() }

// computeDiff fills c.diff.
func (c *change) computeDiff() {
	name := c.name()
	if c.moveTo != nil {
		name = c.moveTo.Pattern()
	}
	nw := c.new
	if c.delete {
		nw = nil
	}
	c.diff = textdiff.File(name, c.old, nw)
	if c.moveTo != nil {
		c.diff.Text = fmt.Sprintf("rename from %s\nrename to %s\n", c.name(), c.moveTo.Pattern()) + c.diff.Text
	}
}

func (c *change) metadata() map[string]any {
	m := map[string]any{
		"diff":      c.diff.Text,
		"filePath":  filepath.ToSlash(c.t.Abs),
		"additions": c.diff.Additions,
		"deletions": c.diff.Deletions,
	}
	if c.moveTo != nil {
		m["movePath"] = filepath.ToSlash(c.moveTo.Abs)
	}
	return m
}

// ask computes the diff and asks edit for the file, showing it.
func (c *change) ask(ctx context.Context, call *registry.Call) error {
	c.computeDiff()
	patterns := []string{c.name()}
	if c.moveTo != nil {
		patterns = append(patterns, c.moveTo.Pattern())
	}
	return call.Ask(ctx, registry.AskRequest{Permission: "edit", Patterns: patterns, Always: exactly(patterns...), Metadata: c.metadata()})
}

// unchanged checks the file on disk is still what was read.
func (c *change) unchanged() error {
	fi, err := os.Lstat(c.t.Abs)
	switch {
	case !c.existed && err == nil:
		return fmt.Errorf("%s was created by something else while the change waited for permission: read it, then redo the change", c.t.Display())
	case c.existed && err != nil:
		return fmt.Errorf("%s was removed while the change waited for permission: read the folder, then redo the change", c.t.Display())
	case c.existed && c.info != nil && (fi.Size() != c.info.Size() || !c.sameOnDisk()):
		return fmt.Errorf("%s changed on disk while the change waited for permission: read it again, then redo the change", c.t.Display())
	}
	return nil
}

// sameOnDisk reports whether the file still holds the bytes that were read, with the same
// mode. The bytes, not the modification time: a command can set that back (touch -d), and a
// write in the clock tick of the read leaves it equal; either would let the change overwrite
// what was written meanwhile, and the checkpoint keep the bytes read as the file's before.
func (c *change) sameOnDisk() bool {
	data, fi, err := readChecked(c.t, int64(len(c.old)))
	return err == nil && fi.Mode() == c.info.Mode() && bytes.Equal(data, c.old)
}

// report records, for the call's checkpoint, the state before the change of every file it
// writes (the file read, and the target of a move, which does not exist yet).
func (c *change) report(ctx context.Context, call *registry.Call) error {
	if err := call.ReportBefore(ctx, c.t.Abs, c.old, unixMode(c.info), c.existed); err != nil {
		return err
	}
	if c.moveTo != nil && c.moveTo.Abs != c.t.Abs {
		return call.ReportBefore(ctx, c.moveTo.Abs, nil, 0, false)
	}
	return nil
}

// unixMode is the permission bits (setuid, setgid and sticky too) of a file's mode.
func unixMode(fi fs.FileInfo) uint32 {
	if fi == nil {
		return 0
	}
	m := fi.Mode()
	u := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		u |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		u |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		u |= 0o1000
	}
	return u
}

// apply writes the change.
func (c *change) apply() error {
	if err := c.unchanged(); err != nil {
		return err
	}
	switch {
	case c.delete:
		if err := removeFile(c.t.Abs); err != nil {
			return fmt.Errorf("cannot delete %s: %w", c.t.Display(), unwrapPathErr(err))
		}
	case c.moveTo != nil:
		if err := writeAtomic(c.moveTo.Abs, c.new); err != nil {
			return fmt.Errorf("cannot write %s: %w", c.moveTo.Display(), unwrapPathErr(err))
		}
		if c.moveTo.Abs != c.t.Abs {
			if err := removeFile(c.t.Abs); err != nil {
				return fmt.Errorf("cannot remove %s after moving it: %w", c.t.Display(), unwrapPathErr(err))
			}
		}
	default:
		if err := writeAtomic(c.t.Abs, c.new); err != nil {
			return fmt.Errorf("cannot write %s: %w", c.t.Display(), unwrapPathErr(err))
		}
	}
	return nil
}

func countLines(s string) int {
	if s == "" {
		return 0
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			n++
		}
	}
	if s[len(s)-1] != '\n' {
		n++
	}
	return n
}
