// Package textdiff makes unified diffs of file contents: cheap for a small change of a large
// file, cut at a size cap, and a one-line note for binary contents.
package textdiff

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/pmezard/go-difflib/difflib"
)

const (
	diffContext = 3
	// diffMaxMatch bounds the changed region given to the line matcher; a larger one is
	// shown as one replaced block (the matcher is quadratic in the worst case).
	diffMaxMatch = 4000
	// MaxBytes caps the text of a diff.
	MaxBytes = 256 << 10
)

// Diff is a unified diff of one file's change.
type Diff struct {
	Text      string
	Additions int
	Deletions int
}

// Unified returns the unified diff from old to new of the file named name (a
// workspace-relative or absolute slash path). Only the region between the common prefix
// and suffix is split into lines and matched, so a small edit of a large file is cheap.
func Unified(name string, old, new []byte) Diff {
	// Common prefix and suffix at byte level, cut back to whole lines and widened by the
	// context lines.
	p := 0
	for n := min(len(old), len(new)); p < n && old[p] == new[p]; p++ {
	}
	start := bytes.LastIndexByte(old[:p], '\n') + 1
	for k := 0; k < diffContext && start > 0; k++ {
		start = bytes.LastIndexByte(old[:start-1], '\n') + 1
	}
	s := 0
	for n := min(len(old), len(new)) - start; s < n && old[len(old)-1-s] == new[len(new)-1-s]; s++ {
	}
	endA, endB := len(old), len(new)
	if s > 0 {
		// The suffix must start at a line start: after the first newline in it.
		if i := bytes.IndexByte(old[len(old)-s:], '\n'); i >= 0 && len(old)-s+i+1 < len(old) {
			endA = len(old) - s + i + 1
			endB = len(new) - s + i + 1
			for k := 0; k < diffContext && endA < len(old); k++ {
				j := bytes.IndexByte(old[endA:], '\n')
				if j < 0 {
					endA, endB = len(old), len(new)
					break
				}
				endA += j + 1
				endB += j + 1
			}
		}
	}
	offset := bytes.Count(old[:start], []byte{'\n'})
	return diffLines(name, old[start:endA], new[start:endB], offset)
}

// diffLines is Unified of a region that starts at line offset+1 of both files.
func diffLines(name string, old, new []byte, offset int) Diff {
	a, b := splitLinesKeep(old), splitLinesKeep(new)
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	if p == len(a) && p == len(b) {
		return Diff{}
	}
	lo := max(0, p-diffContext)
	hiA := min(len(a), len(a)-s+diffContext)
	hiB := min(len(b), len(b)-s+diffContext)

	var groups [][]difflib.OpCode
	if (len(a)-s-p) > diffMaxMatch || (len(b)-s-p) > diffMaxMatch {
		g := []difflib.OpCode{}
		if p > lo {
			g = append(g, difflib.OpCode{Tag: 'e', I1: lo, I2: p, J1: lo, J2: p})
		}
		g = append(g, difflib.OpCode{Tag: 'r', I1: p, I2: len(a) - s, J1: p, J2: len(b) - s})
		if len(a)-s < hiA {
			g = append(g, difflib.OpCode{Tag: 'e', I1: len(a) - s, I2: hiA, J1: len(b) - s, J2: hiB})
		}
		groups = [][]difflib.OpCode{g}
	} else {
		m := difflib.NewMatcherWithJunk(a[lo:hiA], b[lo:hiB], false, nil)
		for _, g := range m.GetGroupedOpCodes(diffContext) {
			for i := range g {
				g[i].I1 += lo
				g[i].I2 += lo
				g[i].J1 += lo
				g[i].J2 += lo
			}
			groups = append(groups, g)
		}
	}

	var out strings.Builder
	fd := Diff{}
	fmt.Fprintf(&out, "--- a/%s\n+++ b/%s\n", strings.TrimPrefix(name, "/"), strings.TrimPrefix(name, "/"))
	cut := false
	line := func(prefix byte, l string) {
		if out.Len() > MaxBytes {
			cut = true
			return
		}
		out.WriteByte(prefix)
		out.WriteString(l)
		if !strings.HasSuffix(l, "\n") {
			out.WriteString("\n\\ No newline at end of file\n")
		}
	}
	for _, g := range groups {
		first, last := g[0], g[len(g)-1]
		if out.Len() <= MaxBytes {
			fmt.Fprintf(&out, "@@ -%s +%s @@\n", unifiedRange(offset+first.I1, offset+last.I2), unifiedRange(offset+first.J1, offset+last.J2))
		}
		for _, c := range g {
			if c.Tag == 'e' {
				for _, l := range a[c.I1:c.I2] {
					line(' ', l)
				}
				continue
			}
			if c.Tag == 'r' || c.Tag == 'd' {
				fd.Deletions += c.I2 - c.I1
				for _, l := range a[c.I1:c.I2] {
					line('-', l)
				}
			}
			if c.Tag == 'r' || c.Tag == 'i' {
				fd.Additions += c.J2 - c.J1
				for _, l := range b[c.J1:c.J2] {
					line('+', l)
				}
			}
		}
	}
	if cut {
		fmt.Fprintf(&out, "... (diff cut at %d KiB: +%d -%d lines in all)\n", MaxBytes>>10, fd.Additions, fd.Deletions)
	}
	fd.Text = out.String()
	return fd
}

func unifiedRange(start, stop int) string {
	beginning := start + 1
	length := stop - start
	if length == 1 {
		return fmt.Sprint(beginning)
	}
	if length == 0 {
		beginning--
	}
	return fmt.Sprintf("%d,%d", beginning, length)
}

// splitLinesKeep splits b into lines that keep their "\n"; the last may lack it.
func splitLinesKeep(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	n := bytes.Count(b, []byte{'\n'})
	out := make([]string, 0, n+1)
	s := string(b)
	for len(s) > 0 {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// File is the diff a person reads of a file's change: a one-line note when either side is not
// UTF-8 text, and a diff with plain newlines when either side has CRLF line endings (a reader,
// and an editor that applies it to the text it shows, sees lines, not carriage returns).
func File(name string, old, new []byte) Diff {
	if !utf8.Valid(old) || !utf8.Valid(new) {
		return Diff{Text: fmt.Sprintf("Binary file %s changed (%d -> %d bytes)\n", name, len(old), len(new))}
	}
	if bytes.Contains(old, []byte("\r\n")) || bytes.Contains(new, []byte("\r\n")) {
		old = bytes.ReplaceAll(old, []byte("\r\n"), []byte("\n"))
		new = bytes.ReplaceAll(new, []byte("\r\n"), []byte("\n"))
	}
	return Unified(name, old, new)
}
