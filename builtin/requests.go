package builtin

import (
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/toolsd/toolsd/registry"
)

// Requests returns the permission requests a built-in tool would make for a call with
// args in workspace (a real absolute path), in the order it makes them, without running
// anything: it resolves paths (stat calls only) and parses shell lines the way the tools
// themselves do, through the same functions. It is what `toolsd policy check` decides. A
// tool that is not a built-in with permission requests gives ok false; bad arguments are
// an error written for a person.
func Requests(workspace, tool string, args json.RawMessage) (reqs []registry.AskRequest, ok bool, err error) {
	var a struct {
		Command  string  `json:"command"`
		Workdir  string  `json:"workdir"`
		FilePath string  `json:"filePath"`
		Path     *string `json:"path"`
		Pattern  string  `json:"pattern"`
		URL      string  `json:"url"`
		Patch    string  `json:"patchText"`
	}
	if err := decode(args, &a); err != nil {
		return nil, true, fmt.Errorf("the arguments of %s are not a JSON object of its parameters: %v", tool, err)
	}
	path := func(name, p string, dirKind bool, perm string) ([]registry.AskRequest, error) {
		t, err := resolvePath(workspace, "", name, p)
		if err != nil {
			return nil, err
		}
		if dirKind && (t.Info == nil || !t.Info.IsDir()) {
			dirKind = false
		}
		var out []registry.AskRequest
		if r := externalRequest(t, dirKind); r != nil {
			out = append(out, *r)
		}
		if perm != "" {
			out = append(out, registry.AskRequest{Permission: perm, Patterns: []string{t.Pattern()}, Always: exactly(t.Pattern())})
		}
		return out, nil
	}
	switch tool {
	case "bash":
		if strings.TrimSpace(a.Command) == "" {
			return nil, true, fmt.Errorf("bash needs a command")
		}
		dir := workspace
		var wd *target
		if a.Workdir != "" {
			if wd, err = resolvePath(workspace, "", "workdir", a.Workdir); err != nil {
				return nil, true, err
			}
			dir = wd.Abs
		}
		return bashRequests(workspace, a.Command, dir, wd, "", nil), true, nil
	case "read":
		reqs, err = path("filePath", a.FilePath, true, "read")
		return reqs, true, err
	case "write", "edit":
		reqs, err = path("filePath", a.FilePath, false, "")
		if err != nil {
			return nil, true, err
		}
		t, _ := resolvePath(workspace, "", "filePath", a.FilePath)
		return append(reqs, registry.AskRequest{Permission: "edit", Patterns: []string{t.Pattern()}, Always: exactly(t.Pattern())}), true, nil
	case "list":
		p := "."
		if a.Path != nil && *a.Path != "" {
			p = *a.Path
		}
		reqs, err = path("path", p, true, "list")
		return reqs, true, err
	case "glob":
		pattern := strings.TrimPrefix(filepath.ToSlash(a.Pattern), "./")
		dir := ""
		if a.Path != nil {
			dir = *a.Path
		}
		if b, _ := doublestar.SplitPattern(pattern); b != "." && b != "" {
			if filepath.IsAbs(b) || dir == "" {
				dir = b
			} else {
				dir = filepath.Join(dir, b)
			}
		}
		if dir == "" {
			dir = "."
		}
		reqs, err = path("path", dir, true, "")
		return append(reqs, registry.AskRequest{Permission: "glob", Patterns: []string{pattern}, Always: exactly(pattern)}), true, err
	case "grep":
		if a.Path != nil && *a.Path != "" && !strings.HasPrefix(*a.Path, registry.OutputURIPrefix) {
			if reqs, err = path("path", *a.Path, true, ""); err != nil {
				return nil, true, err
			}
		}
		return append(reqs, registry.AskRequest{Permission: "grep", Patterns: []string{a.Pattern}, Always: exactly(a.Pattern)}), true, nil
	case "webfetch":
		u, err := url.Parse(strings.TrimSpace(a.URL))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, true, fmt.Errorf("url %q is not a full http:// or https:// URL", a.URL)
		}
		return []registry.AskRequest{{Permission: "webfetch", Patterns: []string{u.String()}, Always: exactly(u.String())}}, true, nil
	case "apply_patch":
		ops, err := parsePatch(a.Patch)
		if err != nil {
			return nil, true, err
		}
		var external, externalAlways, patterns []string
		for _, op := range ops {
			for _, p := range []string{op.path, op.moveTo} {
				if p == "" {
					continue
				}
				t, err := resolvePath(workspace, "", "path", p)
				if err != nil {
					return nil, true, err
				}
				if r := externalRequest(t, false); r != nil && !contains(external, r.Patterns[0]) {
					external = append(external, r.Patterns[0])
					externalAlways = append(externalAlways, r.Always[0])
				}
				patterns = append(patterns, t.Pattern())
			}
		}
		if len(external) > 0 {
			reqs = append(reqs, registry.AskRequest{Permission: "external_directory", Patterns: external, Always: externalAlways})
		}
		return append(reqs, registry.AskRequest{Permission: "edit", Patterns: patterns, Always: exactly(patterns...)}), true, nil
	case "todoread", "todowrite":
		return []registry.AskRequest{{Permission: tool, Patterns: []string{"*"}}}, true, nil
	}
	return nil, false, nil
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}
