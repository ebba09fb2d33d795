package agenthook

import (
	"fmt"
	"strings"
)

// PatchPart is one file's part of a patch in the apply_patch format (Codex's): a patch of
// its own, with its path made absolute.
type PatchPart struct {
	// Path is the file (absolute when the patch was given a folder); MoveTo where an update
	// moves it.
	Path, MoveTo string
	// Text is the part as a whole patch ("*** Begin Patch" … "*** End Patch").
	Text string
}

const (
	patchBegin = "*** Begin Patch"
	patchEnd   = "*** End Patch"
)

var fileHeaders = []string{"*** Add File: ", "*** Update File: ", "*** Delete File: "}

// SplitPatch splits a patch in the apply_patch format into one patch per file, the paths of
// its headers made absolute from cwd. A text that is not such a patch is an error.
func SplitPatch(text, cwd string) ([]PatchPart, error) {
	lines := strings.Split(strings.ReplaceAll(strings.TrimSpace(text), "\r\n", "\n"), "\n")
	if len(lines) < 2 || strings.TrimSpace(lines[0]) != patchBegin || strings.TrimSpace(lines[len(lines)-1]) != patchEnd {
		return nil, fmt.Errorf("the patch must start with %q and end with %q", patchBegin, patchEnd)
	}
	var parts []PatchPart
	var cur *PatchPart
	var body []string
	flush := func() {
		if cur != nil {
			cur.Text = patchBegin + "\n" + strings.Join(body, "\n") + "\n" + patchEnd + "\n"
			parts = append(parts, *cur)
		}
		cur, body = nil, nil
	}
	for _, line := range lines[1 : len(lines)-1] {
		header := ""
		for _, h := range fileHeaders {
			if strings.HasPrefix(line, h) {
				header = h
			}
		}
		switch {
		case header != "":
			flush()
			p := abs(strings.TrimSpace(strings.TrimPrefix(line, header)), cwd)
			cur = &PatchPart{Path: p}
			body = append(body, header+p)
		case cur == nil:
			if strings.TrimSpace(line) != "" {
				return nil, fmt.Errorf("the patch has %q before its first file header (*** Add File:, *** Update File: or *** Delete File:)", line)
			}
		case strings.HasPrefix(line, "*** Move to: "):
			cur.MoveTo = abs(strings.TrimSpace(strings.TrimPrefix(line, "*** Move to: ")), cwd)
			body = append(body, "*** Move to: "+cur.MoveTo)
		default:
			body = append(body, line)
		}
	}
	flush()
	if len(parts) == 0 {
		return nil, fmt.Errorf("the patch names no file")
	}
	return parts, nil
}
