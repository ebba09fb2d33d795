//go:build unix

package builtin

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

const readTree = `
-- a.txt --
one
two
three
-- crlf.txt --
alpha` + "\r\n" + `beta` + "\r\n" + `
-- nonl.txt --
first
last-no-newline
-- empty.txt --
-- src/main.go --
package main
-- src/util.go --
package main
-- src/sub/x.go --
package sub
`

func TestRead(t *testing.T) {
	e := newEnv(t, readTree)
	long := strings.Repeat("é", 1500) // 3000 bytes
	if err := os.WriteFile(e.path("long.txt"), []byte("short\n"+long+"\nend\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var many bytes.Buffer
	for i := 1; i <= 3000; i++ {
		fmt.Fprintf(&many, "line %d\n", i)
	}
	if err := os.WriteFile(e.path("many.txt"), many.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.path("bin.dat"), []byte("ELF\x00\x01\x02\x03binary"), 0o644); err != nil {
		t.Fatal(err)
	}
	png := append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 40)...)
	if err := os.WriteFile(e.path("pic.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.path("doc.pdf"), []byte("%PDF-1.4\n%...\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.outputs["out1"] = "o1\no2\no3\no4\no5\n"

	tests := []struct {
		name    string
		args    map[string]any
		want    []string // substrings of the output
		notWant []string
		err     []string // substrings of the error; empty means success
		meta    map[string]any
		attach  string // mime of the expected attachment
	}{
		{name: "numbered", args: map[string]any{"filePath": "a.txt"}, want: []string{"     1\tone\n     2\ttwo\n     3\tthree\n", "(End of file: 3 lines in total.)"}, meta: map[string]any{"totalLines": 3, "truncated": false}},
		{name: "absolute inside", args: map[string]any{"filePath": e.path("a.txt")}, want: []string{"     2\ttwo"}},
		{name: "dotdot inside", args: map[string]any{"filePath": "src/../a.txt"}, want: []string{"     1\tone"}},
		{name: "offset and limit", args: map[string]any{"filePath": "many.txt", "offset": 10, "limit": 3}, want: []string{"    10\tline 10\n    11\tline 11\n    12\tline 12\n", "Showing lines 10-12 of 3000. Use offset=13 to continue."}, notWant: []string{"line 9\n", "line 13"}},
		{name: "default limit", args: map[string]any{"filePath": "many.txt"}, want: []string{"  2000\tline 2000", "Use offset=2001"}, notWant: []string{"line 2001"}},
		{name: "last lines", args: map[string]any{"filePath": "many.txt", "offset": 2999}, want: []string{"  2999\tline 2999\n  3000\tline 3000\n", "End of file: 3000 lines"}},
		{name: "offset past end", args: map[string]any{"filePath": "a.txt", "offset": 10}, err: []string{"offset 10 is past the end of a.txt", "has 3 lines", "from 1 to 3"}},
		{name: "offset zero means start", args: map[string]any{"filePath": "a.txt", "offset": 0}, want: []string{"     1\tone"}},
		{name: "crlf", args: map[string]any{"filePath": "crlf.txt"}, want: []string{"     1\talpha\n     2\tbeta\n"}, notWant: []string{"\r"}},
		{name: "no trailing newline", args: map[string]any{"filePath": "nonl.txt"}, want: []string{"     2\tlast-no-newline\n", "2 lines in total"}},
		{name: "empty", args: map[string]any{"filePath": "empty.txt"}, want: []string{"empty"}},
		{name: "empty with offset", args: map[string]any{"filePath": "empty.txt", "offset": 2}, err: []string{"past the end", "empty"}},
		{name: "long line cut", args: map[string]any{"filePath": "long.txt"}, want: []string{"     2\t" + strings.Repeat("é", 1000) + "... (line truncated to 2000 characters)\n", "     3\tend"}, meta: map[string]any{"longLinesCut": 1}},
		{name: "directory", args: map[string]any{"filePath": "src"}, want: []string{"src/ is a folder with 3 entries:\nmain.go\nsub/\nutil.go\n"}},
		{name: "workspace root", args: map[string]any{"filePath": "."}, want: []string{"a.txt\n", "src/\n"}},
		{name: "missing with suggestions", args: map[string]any{"filePath": "src/mian.go"}, err: []string{"file not found: src/mian.go", "Did you mean", "src/main.go"}},
		{name: "missing other extension", args: map[string]any{"filePath": "src/util.ts"}, err: []string{"src/util.go"}},
		{name: "missing folder", args: map[string]any{"filePath": "nope/deeper/x.txt"}, err: []string{"file not found: nope/deeper/x.txt", "the folder nope/deeper does not exist", "deepest existing folder is ."}},
		{name: "binary", args: map[string]any{"filePath": "bin.dat"}, err: []string{"cannot read binary file bin.dat", "NUL"}},
		{name: "png attachment", args: map[string]any{"filePath": "pic.png"}, want: []string{"Image read successfully"}, attach: "image/png"},
		{name: "pdf attachment", args: map[string]any{"filePath": "doc.pdf"}, want: []string{"PDF read successfully"}, attach: "application/pdf"},
		{name: "nul in path", args: map[string]any{"filePath": "a\x00.txt"}, err: []string{"NUL byte"}},
		{name: "stored output", args: map[string]any{"filePath": "toolsd://output/out1", "offset": 2, "limit": 2}, want: []string{"     2\to2\n     3\to3\n", "Showing lines 2-3 of 5. Use offset=4"}},
		{name: "stored output end", args: map[string]any{"filePath": "toolsd://output/out1", "offset": 4}, want: []string{"     5\to5\n", "End of file: 5 lines"}},
		{name: "stored output past end", args: map[string]any{"filePath": "toolsd://output/out1", "offset": 9}, err: []string{"offset 9 is past the end", "has 5 lines"}},
		{name: "stored output unknown", args: map[string]any{"filePath": "toolsd://output/nope"}, err: []string{"no stored output toolsd://output/nope"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := e.run("read", tc.args)
			if len(tc.err) > 0 {
				if err == nil {
					t.Fatalf("no error; output:\n%s", res.Output)
				}
				mustContain(t, "error", err.Error(), tc.err...)
				return
			}
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			if invalid := strings.ToValidUTF8(res.Output, "?"); invalid != res.Output {
				t.Errorf("output is not valid UTF-8")
			}
			mustContain(t, "output", res.Output, tc.want...)
			for _, nw := range tc.notWant {
				if strings.Contains(res.Output, nw) {
					t.Errorf("output contains %q:\n%s", nw, res.Output)
				}
			}
			for k, v := range tc.meta {
				if fmt.Sprint(res.Metadata[k]) != fmt.Sprint(v) {
					t.Errorf("metadata[%s] = %v, want %v", k, res.Metadata[k], v)
				}
			}
			if !res.NoTruncate {
				t.Errorf("NoTruncate not set")
			}
			if tc.attach != "" {
				if len(res.Attachments) != 1 || res.Attachments[0].Mime != tc.attach || len(res.Attachments[0].Data) == 0 {
					t.Errorf("attachments = %+v, want one %s", res.Attachments, tc.attach)
				}
			}
		})
	}
}

func TestReadAsksReadWithRelativePattern(t *testing.T) {
	e := newEnv(t, readTree)
	if _, err := e.run("read", map[string]any{"filePath": "src/main.go"}); err != nil {
		t.Fatal(err)
	}
	reqs := e.asks.requests()
	if len(reqs) != 1 || reqs[0].Permission != "read" || len(reqs[0].Patterns) != 1 || reqs[0].Patterns[0] != "src/main.go" {
		t.Fatalf("asks = %+v, want one read of src/main.go", reqs)
	}
	e.asks.deny["read"] = true
	_, err := e.run("read", map[string]any{"filePath": "a.txt"})
	if !isPermissionError(err) {
		t.Fatalf("err = %v, want the Ask error unchanged", err)
	}
}

func TestReadByteCap(t *testing.T) {
	e := newEnv(t, "")
	e.setOptions(&Options{ReadMaxBytes: 1024})
	var b bytes.Buffer
	for i := 1; i <= 500; i++ {
		fmt.Fprintf(&b, "%040d\n", i)
	}
	if err := os.WriteFile(e.path("big.txt"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := e.run("read", map[string]any{"filePath": "big.txt"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Output) > 1024+200 {
		t.Errorf("output is %d bytes, over the cap", len(res.Output))
	}
	mustContain(t, "output", res.Output, "Output capped at 1 KiB: showing lines 1-21 of 500. Use offset=22 to continue.")
}

// TestReadOutside checks that paths outside the workspace (absolute, .., or through a
// symlink inside the workspace) ask external_directory first, and that a refusal stops
// the read.
func TestReadOutside(t *testing.T) {
	outside, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		setup func(e *env) string // returns the filePath to read
	}{
		{"absolute", func(e *env) string { return filepath.Join(outside, "secret.txt") }},
		{"dotdot", func(e *env) string {
			rel, _ := filepath.Rel(e.ws, filepath.Join(outside, "secret.txt"))
			return rel
		}},
		{"file symlink", func(e *env) string {
			if err := os.Symlink(filepath.Join(outside, "secret.txt"), e.path("link.txt")); err != nil {
				t.Fatal(err)
			}
			return "link.txt"
		}},
		{"folder symlink", func(e *env) string {
			if err := os.Symlink(outside, e.path("linkdir")); err != nil {
				t.Fatal(err)
			}
			return "linkdir/secret.txt"
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, "")
			p := tc.setup(e)
			e.asks.deny["external_directory"] = true
			res, err := e.run("read", map[string]any{"filePath": p})
			if !isPermissionError(err) {
				t.Fatalf("err = %v (output %v), want the external_directory refusal", err, res)
			}
			reqs := e.asks.requests()
			if len(reqs) != 1 || reqs[0].Permission != "external_directory" || reqs[0].Patterns[0] != filepath.ToSlash(outside)+"/*" {
				t.Fatalf("asks = %+v, want one external_directory for %s/*", reqs, outside)
			}
			// Allowed: it reads the real file, and the read ask names its real path.
			delete(e.asks.deny, "external_directory")
			res, err = e.run("read", map[string]any{"filePath": p})
			if err != nil {
				t.Fatal(err)
			}
			mustContain(t, "output", res.Output, "     1\tsecret")
			reads := e.asks.asked("read")
			if len(reads) != 1 || reads[0].Patterns[0] != filepath.ToSlash(filepath.Join(outside, "secret.txt")) {
				t.Fatalf("read asks = %+v", reads)
			}
		})
	}
}

// TestReadSwappedSymlink checks the open-time guard: a file swapped for a symlink after
// the check is refused.
func TestReadSwappedSymlink(t *testing.T) {
	e := newEnv(t, "-- f.txt --\nhello\n")
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tg, err := resolvePath(e.ws, "", "filePath", "f.txt")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(e.path("f.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret"), e.path("f.txt")); err != nil {
		t.Fatal(err)
	}
	if f, _, err := openChecked(tg); err == nil {
		f.Close()
		t.Fatal("opened a file swapped for a symlink")
	}
	// A parent folder swapped for a symlink.
	if err := os.MkdirAll(e.path("d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.path("d/secret"), []byte("in\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tg, err = resolvePath(e.ws, "", "filePath", "d/secret")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(e.path("d")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, e.path("d")); err != nil {
		t.Fatal(err)
	}
	if f, _, err := openChecked(tg); err == nil {
		f.Close()
		t.Fatal("opened a file through a parent swapped for a symlink")
	}
}

// TestReadHugeLine reads a file that is one 8 MiB line: it is cut, not held.
func TestReadHugeLine(t *testing.T) {
	e := newEnv(t, "")
	f, err := os.Create(e.path("huge.txt"))
	if err != nil {
		t.Fatal(err)
	}
	chunk := bytes.Repeat([]byte("x"), 1<<20)
	for range 8 {
		f.Write(chunk)
	}
	f.WriteString("\nsecond\n")
	f.Close()
	res, err := e.run("read", map[string]any{"filePath": "huge.txt"})
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, "output", res.Output, "... (line truncated to 2000 characters)", "     2\tsecond")
	if len(res.Output) > 3000 {
		t.Errorf("output is %d bytes", len(res.Output))
	}
}

// TestPathText covers what JSON cannot carry to a tool (a JSON decoder already replaces
// invalid UTF-8) but other callers of the resolver can.
func TestPathText(t *testing.T) {
	for _, tc := range []struct{ p, err string }{
		{"", "is empty"},
		{"a\x00b", "NUL byte"},
		{"a\xffb", "not valid UTF-8"},
		{"ok.txt", ""},
	} {
		_, err := resolvePath(t.TempDir(), "", "filePath", tc.p)
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("resolvePath(%q) = %v, want %q", tc.p, err, tc.err)
		}
	}
}

func TestReadSpecialFile(t *testing.T) {
	e := newEnv(t, "")
	if err := syscall.Mkfifo(e.path("fifo"), 0o644); err != nil {
		t.Skip(err)
	}
	_, err := e.run("read", map[string]any{"filePath": "fifo"})
	if err == nil || !strings.Contains(err.Error(), "not a regular file (it is a FIFO (named pipe))") {
		t.Fatalf("err = %v", err)
	}
}

// TestReadLineIndex: paging a large file through its line index gives exactly what a
// full scan gives, and a changed file is not read through a stale index.
func TestReadLineIndex(t *testing.T) {
	e := newEnv(t, "")
	var b bytes.Buffer
	for i := 1; b.Len() < lineIndexMinSize+(1<<20); i++ {
		fmt.Fprintf(&b, "line %d %s\n", i, strings.Repeat("z", i%97))
	}
	b.WriteString("tail without newline")
	p := e.path("big.txt")
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	total := strings.Count(b.String(), "\n") + 1
	read := func(offset, limit int) string {
		t.Helper()
		res, err := e.run("read", map[string]any{"filePath": "big.txt", "offset": offset, "limit": limit})
		if err != nil {
			return "error: " + err.Error()
		}
		return res.Output
	}
	cold := func(offset, limit int) string {
		lineIndexes.mu.Lock()
		delete(lineIndexes.m, p)
		lineIndexes.mu.Unlock()
		return read(offset, limit)
	}
	first := cold(1, 10)
	if lookupLineIndex(nil, p, mustStat(t, p)) == nil {
		t.Fatal("no index after reading a large file")
	}
	if got := read(1, 10); got != first {
		t.Fatalf("warm first page differs")
	}
	for _, off := range []int{2, lineIndexStep - 1, lineIndexStep, lineIndexStep + 1, 2*lineIndexStep + 7, total - 100, total - 1, total, total + 1} {
		want := cold(off, 100)
		cold(1, 1) // rebuild the index
		if got := read(off, 100); got != want {
			t.Errorf("offset %d: indexed read differs:\n%.300s\nwant\n%.300s", off, got, want)
		}
	}
	mustContain(t, "last page", read(total-1, 10), "tail without newline", fmt.Sprintf("End of file: %d lines", total))
	// Append (a growing log): the index is extended over the new bytes, and reads through
	// it agree with a full scan, also across new marks.
	f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(" continued\n")
	var more strings.Builder
	for i := range 2*lineIndexStep + 5 {
		fmt.Fprintf(&more, "appended %d\n", i)
	}
	f.WriteString(more.String())
	f.Close()
	newTotal := total + 2*lineIndexStep + 5
	for i, off := range []int{total, total + 1, total + lineIndexStep, newTotal - 3} {
		if i > 0 {
			// Grow it again before each read, so that every read extends the index.
			f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
			fmt.Fprintf(f, "extra %d\n", i)
			f.Close()
			newTotal++
		}
		// The index of the shorter version is extended, not dropped.
		fh, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		ext := lookupLineIndex(fh, p, mustStat(t, p))
		fh.Close()
		if ext == nil || ext.total != newTotal {
			t.Fatalf("append %d: the index was not extended: %+v", i, ext)
		}
		got := read(off, 50) // through the extended index
		ix := lookupLineIndex(nil, p, mustStat(t, p))
		if ix == nil || ix.total != newTotal {
			t.Fatalf("index after append %d: %+v, want total %d", i, ix, newTotal)
		}
		if want := cold(off, 50); got != want { // cold also rebuilds the index
			t.Errorf("offset %d after append: indexed read differs:\n%.300s\nwant\n%.300s", off, got, want)
		}
	}
	mustContain(t, "after append", read(total, 2), "tail without newline continued", fmt.Sprintf("of %d", newTotal))
	// Rewritten in place with different content (same inode, larger): not an append.
	if err := os.WriteFile(p, bytes.Repeat([]byte("new\n"), lineIndexMinSize/2), 0o644); err != nil {
		t.Fatal(err)
	}
	mustContain(t, "after rewrite", read(1, 2), "     1\tnew", fmt.Sprintf("of %d", lineIndexMinSize/2))
}

func mustStat(t *testing.T, p string) os.FileInfo {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi
}

func TestAppendLineNumber(t *testing.T) {
	for _, n := range []int{0, 1, 9, 42, 99999, 100000, 999999, 1000000, 123456789, -3} {
		if got, want := string(appendLineNumber([]byte("x"), n)), "x"+fmt.Sprintf("%6d\t", n); got != want {
			t.Errorf("appendLineNumber(%d) = %q, want %q", n, got, want)
		}
	}
}

// chunks is a file that returns at most step bytes per read, and counts the reads.
type chunks struct {
	data  []byte
	step  int
	reads int
}

func (c *chunks) Read(p []byte) (int, error) {
	c.reads++
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), c.step)], c.data)
	c.data = c.data[n:]
	return n, nil
}

func TestReadHead(t *testing.T) {
	text := bytes.Repeat([]byte("0123456789abcdef"), 64) // 1 KiB
	for _, tc := range []struct {
		name      string
		data      []byte
		step      int
		size      int64 // the size the stat said
		head      int
		wantN     int
		wantWhole bool
		wantReads int
	}{
		{"the size met by one read", text, 1 << 20, 1024, 8192, 1024, true, 1},
		{"the size met in pieces", text, 300, 1024, 8192, 1024, true, 4},
		{"no size (/proc): read to the end", text, 300, 0, 8192, 1024, true, 5},
		{"shorter than the size said", text[:1000], 1 << 20, 1024, 8192, 1000, true, 2},
		{"longer than the size said", text, 1 << 20, 512, 8192, 1024, true, 2},
		{"exactly the head", text, 1 << 20, 1024, 1024, 1024, false, 1},
		{"more than the head", text, 1 << 20, 1024, 100, 100, false, 1},
		{"empty", nil, 1 << 20, 0, 8192, 0, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &chunks{data: tc.data, step: tc.step}
			n, whole, err := readHead(f, make([]byte, tc.head), tc.size)
			if err != nil || n != tc.wantN || whole != tc.wantWhole || f.reads != tc.wantReads {
				t.Fatalf("readHead = %d, whole %v, %v after %d reads; want %d, whole %v after %d reads", n, whole, err, f.reads, tc.wantN, tc.wantWhole, tc.wantReads)
			}
		})
	}
}

// TestReadLineIndexRewrittenSameSizeAndTime: a large file rewritten in place to bytes of the
// same size with its lines elsewhere, its modification time set back (touch -d), is not read
// through the index of the old bytes.
func TestReadLineIndexRewrittenSameSizeAndTime(t *testing.T) {
	e := newEnv(t, "")
	lines := func(short, long int) []byte {
		var b bytes.Buffer
		for i := 1; b.Len() < lineIndexMinSize+(1<<20); i++ {
			fmt.Fprintf(&b, "line %d %s\n", i, strings.Repeat("z", short+i%long))
		}
		return b.Bytes()
	}
	p := e.path("big.txt")
	before, after := lines(1, 7), lines(5, 3)
	after = after[:min(len(before), len(after))]
	before = before[:len(after)]
	if err := os.WriteFile(p, before, 0o644); err != nil {
		t.Fatal(err)
	}
	fi := mustStat(t, p)
	read := func(offset int) string {
		t.Helper()
		res, err := e.run("read", map[string]any{"filePath": "big.txt", "offset": offset, "limit": 3})
		if err != nil {
			t.Fatal(err)
		}
		return res.Output
	}
	read(3 * lineIndexStep) // builds the index
	if lookupLineIndex(nil, p, fi) == nil {
		t.Fatal("no index after reading a large file")
	}
	if err := os.WriteFile(p, after, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%6d\tline %d ", 3*lineIndexStep, 3*lineIndexStep)
	if got := read(3 * lineIndexStep); !strings.Contains(got, want) {
		t.Errorf("read through the old bytes' index: %.200q, want a line starting %q", got, want)
	}
}
