package builtin

import (
	"fmt"
	"strings"
	"testing"
)

// bigOutput is a stored output with lines longer than a store page (1 MiB), and matches
// after them.
func bigOutput() (string, []int) {
	long := strings.Repeat("x", 3<<19) // 1.5 MiB
	var b strings.Builder
	var want []int
	line := 0
	add := func(s string) {
		line++
		b.WriteString(s)
		b.WriteByte('\n')
		if strings.Contains(s, "needle") {
			want = append(want, line)
		}
	}
	add("first needle")
	for i := range 3 {
		add("") // a page can end with an empty line, before a line that does not fit
		add(long)
		add("")
		add(fmt.Sprintf("needle %d after a long line", i))
		for range 20 {
			add("filler")
		}
	}
	add(long)
	add("needle at the end")
	return b.String(), want
}

// TestGrepOutputLongLines: grep of a stored output pages by what the store returned, so
// lines longer than a page do not make it skip the lines after them.
func TestGrepOutputLongLines(t *testing.T) {
	e := newEnv(t, "")
	out, want := bigOutput()
	e.outputs["o1"] = out
	res, err := e.run("grep", map[string]any{"pattern": "needle", "path": "toolsd://output/o1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range want {
		mustContain(t, "grep output", res.Output, fmt.Sprintf("Line %d: ", n))
	}
	mustContain(t, "grep output", res.Output, fmt.Sprintf("Found %d matches", len(want)))
}

// TestReadOutputPagesEveryLine follows read's "Use offset=N to continue" notes through a
// stored output with long and empty lines: every line is shown once, in order, and no page
// fails.
func TestReadOutputPagesEveryLine(t *testing.T) {
	e := newEnv(t, "")
	out, _ := bigOutput()
	e.outputs["o1"] = out
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	next := 1
	for pages := 0; ; pages++ {
		if pages > len(lines) {
			t.Fatal("read does not advance")
		}
		res, err := e.run("read", map[string]any{"filePath": "toolsd://output/o1", "offset": next, "limit": 2000})
		if err != nil {
			t.Fatalf("read at offset %d: %v", next, err)
		}
		body, note, _ := strings.Cut(res.Output, "\n\n(")
		for ln := range strings.SplitSeq(body, "\n") {
			num, text, _ := strings.Cut(ln, "\t")
			if got := strings.TrimSpace(num); got != fmt.Sprint(next) {
				t.Fatalf("page at %d: line numbered %q, want %d", next, got, next)
			}
			if want := lines[next-1]; len(want) < 100 && text != want {
				t.Fatalf("line %d is %q, want %q", next, text, want)
			}
			next++
		}
		if strings.HasPrefix(note, "End of file") {
			break
		}
		var cont int
		if i := strings.Index(note, "offset="); i < 0 {
			t.Fatalf("no continuation in %q", note)
		} else if _, err := fmt.Sscanf(note[i:], "offset=%d", &cont); err != nil || cont != next {
			t.Fatalf("note %q: continue at %d, want %d", note, cont, next)
		}
	}
	if next != len(lines)+1 {
		t.Fatalf("read %d lines of %d", next-1, len(lines))
	}
}
