package config

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/toolsd/toolsd/internal/fsopen"
	"github.com/toolsd/toolsd/internal/jsonpos"
	"github.com/toolsd/toolsd/protocol"
)

// ManagedDir is the folder of the administrator's policy: a "toolsd" folder in the
// system's configuration folder (/etc/toolsd on Linux, /Library/Application
// Support/toolsd on macOS, %ProgramData%\toolsd on Windows). Its config.json holds permission rules (and examples) that sit
// above every other layer. There is deliberately no flag or environment variable that
// moves it: anything that could would let whatever the policy binds remove it.
func ManagedDir() string {
	switch runtime.GOOS {
	case "darwin":
		return "/Library/Application Support/toolsd"
	case "windows":
		pd := os.Getenv("ProgramData")
		if !filepath.IsAbs(pd) {
			pd = `C:\ProgramData`
		}
		return filepath.Join(pd, "toolsd")
	}
	return "/etc/toolsd"
}

// ManagedPath is the managed policy file in dir ("" for ManagedDir()).
func ManagedPath(dir string) string {
	if dir == "" {
		dir = ManagedDir()
	}
	return filepath.Join(dir, "config.json")
}

// managedKeys are the settings the managed policy may hold; the others are ignored with a
// warning.
var managedKeys = map[string]bool{"permission": true, "permissions": true, "examples": true, "$schema": true}

// loadManaged reads the managed policy at path. It counts only when the file and its
// folder are owned by root and no one else may write to them; otherwise it is ignored
// with a diagnostic (an administrator's rules that a user could edit bind no one). An
// unreadable or broken file keeps the previous good policy.
func loadManaged(path string, prev *Layer) (*Layer, []protocol.Diagnostic) {
	if path == "" {
		return nil, nil
	}
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	refuse := func(name string, fi os.FileInfo) []protocol.Diagnostic {
		if why := unsafeOwner(fi); why != "" {
			return []protocol.Diagnostic{{Path: path, Severity: "error", Message: fmt.Sprintf(
				"the managed policy is ignored: %s %s; an administrator's rules count only in a folder and file that only root can change (chown root:root, chmod go-w)", name, why)}}
		}
		return nil
	}
	if err != nil {
		return keep(prev, []protocol.Diagnostic{{Path: path, Severity: "error", Message: fmt.Sprintf("cannot read the managed policy folder: %v", err)}})
	}
	if ds := refuse(dir, fi); ds != nil {
		return nil, ds
	}
	f, err := fsopen.OpenFile(path, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return keep(prev, []protocol.Diagnostic{{Path: path, Severity: "error", Message: fmt.Sprintf("cannot read the managed policy: %v; it must be a regular JSON file of at most %d bytes", err, MaxFileBytes)}})
	}
	defer f.Close()
	ffi, err := f.Stat()
	if err != nil {
		return keep(prev, []protocol.Diagnostic{{Path: path, Severity: "error", Message: fmt.Sprintf("cannot read the managed policy: %v", err)}})
	}
	if ds := refuse(path, ffi); ds != nil {
		return nil, ds
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err == nil && len(data) > MaxFileBytes {
		err = fmt.Errorf("larger than %d bytes", MaxFileBytes)
	}
	if err != nil {
		return keep(prev, []protocol.Diagnostic{{Path: path, Severity: "error", Message: fmt.Sprintf("cannot read the managed policy: %v", err)}})
	}
	l, ds := Parse(SourceManaged, path, data)
	if l == nil {
		return keep(prev, ds)
	}
	if root, err := jsonpos.Parse(data); err == nil {
		for _, f := range root.Fields {
			if !managedKeys[f.Name] {
				line, col := jsonpos.Position(data, f.KeyOffset)
				ds = append(ds, protocol.Diagnostic{Path: path, Line: line, Column: col, Severity: "warning",
					Message: fmt.Sprintf("%q is ignored in the managed policy: it holds only \"permission\" or \"permissions\" rules and their \"examples\"", f.Name)})
			}
		}
	}
	// Only the rules count: nothing else of the file reaches the settings.
	l.Settings = Settings{Permission: l.Settings.Permission, Permissions: l.Settings.Permissions, Examples: l.Settings.Examples}
	return l, ds
}

// unsafeOwner says why a managed folder or file could be changed by someone other than
// root ("" when it cannot).
func unsafeOwner(fi os.FileInfo) string {
	uid, gid, ok := fileOwner(fi)
	if !ok {
		return "has no owner toolsd can check here"
	}
	var why []string
	if uid != 0 {
		why = append(why, fmt.Sprintf("is owned by uid %d, not root", uid))
	}
	if fi.Mode().Perm()&0o002 != 0 {
		why = append(why, "may be written by anyone")
	}
	if fi.Mode().Perm()&0o020 != 0 && gid != 0 {
		why = append(why, fmt.Sprintf("may be written by group %d", gid))
	}
	return strings.Join(why, " and ")
}
