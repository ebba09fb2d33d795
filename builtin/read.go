package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/toolsd/toolsd/internal/shquote"
	"github.com/toolsd/toolsd/registry"
)

const readDescription = `Reads a file from the local file system, or lists a folder.

Usage:
- filePath is a path relative to the workspace root, or an absolute path. Paths outside the workspace need the person's permission.
- By default it returns up to %[1]d lines from the start of the file. Use offset (1-based line number to start at) and limit (how many lines) to page through long files; the footer says how to continue.
- Each line is prefixed with its line number, like cat -n: the number, a tab, then the line exactly as in the file. When you later edit the file, never include the number prefix in oldString.
- Lines longer than %[2]d characters are cut, with a marker saying so. One call returns at most %[3]d KiB of text.
- A folder is answered with the list of its entries (folders end with "/").
- Images (PNG, JPEG, GIF, WebP) and PDFs are returned as attachments. Other binary files are refused.
- When a tool's output was truncated, the note names a path like toolsd://output/<id>: read that path with offset and limit to see the full output.
- Reading several files you will likely need at once is better than reading them one by one.`

func readTool(o *Options) *registry.Tool {
	s := schema{
		props: []prop{
			{"filePath", map[string]any{"type": "string", "minLength": 1, "description": "The path of the file or folder to read: relative to the workspace root, or absolute. Also accepts toolsd://output/<id> to read the full output of an earlier truncated call."}},
			{"offset", map[string]any{"type": "integer", "minimum": 0, "description": "The line number to start reading from (1-based). Only give it for files too long to read at once."}},
			{"limit", map[string]any{"type": "integer", "minimum": 1, "description": fmt.Sprintf("The number of lines to read (defaults to %d).", o.ReadLimit)}},
		},
		required: []string{"filePath"},
	}
	return &registry.Tool{
		ID:          "read",
		Description: fmt.Sprintf(readDescription, o.ReadLimit, o.ReadMaxLineLength, o.ReadMaxBytes/1024),
		Parameters:  s.raw(),
		Permission:  "read",
		ReadOnly:    true,
		Execute: func(ctx context.Context, call *registry.Call, args json.RawMessage) (*registry.Result, error) {
			var a struct {
				FilePath string `json:"filePath"`
				Offset   *int   `json:"offset"`
				Limit    *int   `json:"limit"`
			}
			if err := decode(args, &a); err != nil {
				return nil, err
			}
			r := &reader{o: o, offset: 1, limit: o.ReadLimit}
			if a.Offset != nil && *a.Offset > 1 {
				r.offset = *a.Offset
			}
			if a.Limit != nil && *a.Limit > 0 {
				r.limit = *a.Limit
			}
			if strings.HasPrefix(a.FilePath, registry.OutputURIPrefix) {
				return r.readOutput(ctx, call, a.FilePath)
			}
			return r.read(ctx, call, a.FilePath)
		},
	}
}

// reader is one read call.
type reader struct {
	o             *Options
	offset, limit int
}

func (r *reader) read(ctx context.Context, call *registry.Call, p string) (*registry.Result, error) {
	t, err := resolveAndAsk(ctx, call, "filePath", p, "read", true, nil)
	if err != nil {
		return nil, err
	}
	if !t.Exists() {
		return nil, notFoundError(call.Workspace, t)
	}
	if t.Info.IsDir() {
		return r.readDir(t)
	}
	f, fi, err := openChecked(t)
	if err != nil {
		var nr *notRegularError
		if errors.As(err, &nr) {
			return nil, fmt.Errorf("%v: read only reads files and folders", nr)
		}
		return nil, fmt.Errorf("cannot open %s: %w", t.Display(), unwrapPathErr(err))
	}
	defer f.Close()

	hp := getReadBuf()
	defer readBufs.Put(hp)
	head := (*hp)[:headBytes]
	n, whole, err := readHead(f, head, fi.Size())
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", t.Display(), unwrapPathErr(err))
	}
	// A file that ended within the head (most source files) is paged from it, without
	// reading it again.
	head = head[:n]
	if mime := attachmentMime(t.Abs, head); mime != "" {
		return r.attachment(f, t, fi.Size(), mime)
	}
	if why := binaryReason(t.Abs, head); why != "" {
		return nil, fmt.Errorf("cannot read binary file %s (%s, %d bytes): read only returns text. To look inside, use bash with a tool for the format (xxd %s | head, file, unzip -l, ...)", t.Display(), why, fi.Size(), shquote.Word(t.Display()))
	}
	var src io.Reader = f
	if whole {
		src = bytes.NewReader(head)
	} else if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", t.Display(), err)
	}
	meta := map[string]any{"filePath": filepath.ToSlash(t.Abs)}
	// A large file read before (and unchanged since) has a line index: jump to the page.
	if ix := lookupLineIndex(f, t.Abs, fi); ix != nil {
		if r.offset > ix.total {
			return r.result(t.Display(), &page{first: r.offset, total: ix.total}, meta)
		}
		k := min((r.offset-1)/ix.step, len(ix.marks)-1)
		if _, err := f.Seek(ix.marks[k], io.SeekStart); err != nil {
			return nil, fmt.Errorf("cannot read %s: %w", t.Display(), err)
		}
		pg, err := r.pageLines(ctx, f, k*ix.step+1, nil, true)
		if err != nil {
			return nil, fmt.Errorf("cannot read %s: %w", t.Display(), err)
		}
		pg.total = ix.total
		return r.result(t.Display(), pg, meta)
	}
	var ib *indexBuilder
	if fi.Size() >= lineIndexMinSize {
		ib = &indexBuilder{step: lineIndexStep}
	}
	pg, err := r.pageLines(ctx, src, 1, ib, false)
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", t.Display(), err)
	}
	if ib != nil {
		storeLineIndex(f, t.Abs, fi, pg.total, ib)
	}
	return r.result(t.Display(), pg, meta)
}

// page is a window of lines of a text.
type page struct {
	text     strings.Builder
	first    int // first line shown (1-based)
	shown    int // lines shown
	total    int // total lines of the text
	capped   bool
	cutLines int // lines cut at the length limit
}

// pageLines streams src and keeps lines [r.offset, r.offset+r.limit), never holding more
// than one chunk and the page: earlier lines are skipped with a byte count, later ones only
// counted. line is the number of the line src starts at. ix, if set, records where lines
// start as the text goes by. With stopAfter it returns as soon as the page is complete
// (the total is then unknown: 0).
func (r *reader) pageLines(ctx context.Context, src io.Reader, line int, ix *indexBuilder, stopAfter bool) (*page, error) {
	pg := &page{first: r.offset}
	if src, ok := src.(interface{ Len() int }); ok {
		// A text held whole (a file that ended within its head): room for it, its line
		// numbers and the note after it, so that the page grows at most once.
		pg.text.Grow(min(src.Len()+src.Len()/4+128, r.o.ReadMaxBytes+256))
	}
	bp := getReadBuf()
	defer readBufs.Put(bp)
	buf := *bp
	var base int64   // offset of the current chunk in src
	var cur []byte   // the current line's kept bytes (at most max+4)
	curLong := false // the current line went past the limit
	endLine := r.offset + r.limit
	var lastByte byte
	sawData := false
	maxLine := r.o.ReadMaxLineLength
	var scratch []byte
	emit := func() {
		if pg.capped {
			return
		}
		s := cur
		if curLong {
			s = cutUTF8(s, maxLine)
		} else if len(s) > 0 && s[len(s)-1] == '\r' {
			s = s[:len(s)-1]
		}
		scratch = appendLineNumber(scratch[:0], line)
		scratch = append(scratch, s...)
		if curLong {
			scratch = fmt.Appendf(scratch, "... (line truncated to %d characters)", maxLine)
		}
		scratch = append(scratch, '\n')
		if pg.text.Len()+len(scratch) > r.o.ReadMaxBytes && pg.shown > 0 {
			pg.capped = true
			return
		}
		if utf8.Valid(scratch) {
			pg.text.Write(scratch)
		} else {
			pg.text.Write(bytes.ToValidUTF8(scratch, []byte("\uFFFD")))
		}
		if curLong {
			pg.cutLines++
		}
		pg.shown++
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n, err := src.Read(buf)
		chunk := buf[:n]
		if n > 0 {
			sawData = true
			lastByte = chunk[n-1]
		}
		lineAtStart := line
		for len(chunk) > 0 {
			switch {
			case line < r.offset:
				// Skipping: count whole newlines fast.
				need := r.offset - line
				c := bytes.Count(chunk, []byte{'\n'})
				if c < need {
					line += c
					chunk = nil
					continue
				}
				for range need {
					i := bytes.IndexByte(chunk, '\n')
					chunk = chunk[i+1:]
				}
				line += need
			case line < endLine && !pg.capped:
				i := bytes.IndexByte(chunk, '\n')
				part := chunk
				if i >= 0 {
					part = chunk[:i]
				}
				if room := maxLine + 4 - len(cur); room > 0 {
					cur = append(cur, part[:min(room, len(part))]...)
				}
				if len(cur) > maxLine {
					curLong = true
				}
				if i < 0 {
					chunk = nil
					continue
				}
				emit()
				cur, curLong = cur[:0], false
				line++
				chunk = chunk[i+1:]
			default:
				if stopAfter {
					return pg, nil
				}
				line += bytes.Count(chunk, []byte{'\n'})
				chunk = nil
			}
		}
		if ix != nil {
			ix.feed(buf[:n], base, lineAtStart, line)
		}
		base += int64(n)
		if stopAfter && (line >= endLine || pg.capped) {
			return pg, nil
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	// The last line has no newline: it still counts.
	if sawData && lastByte != '\n' {
		if line >= r.offset && line < endLine && !pg.capped {
			emit()
		}
		pg.total = line
	} else {
		pg.total = line - 1
	}
	return pg, nil
}

func (r *reader) result(name string, pg *page, meta map[string]any) (*registry.Result, error) {
	if pg.total == 0 {
		if r.offset > 1 {
			return nil, fmt.Errorf("offset %d is past the end of %s: it is empty", r.offset, name)
		}
		meta["totalLines"] = 0
		return &registry.Result{Title: name, Output: "(The file is empty.)", Metadata: meta, NoTruncate: true}, nil
	}
	if pg.shown == 0 {
		return nil, fmt.Errorf("offset %d is past the end of %s: it has %d lines. Use an offset from 1 to %d", r.offset, name, pg.total, pg.total)
	}
	last := pg.first + pg.shown - 1
	switch {
	case pg.capped:
		fmt.Fprintf(&pg.text, "\n(Output capped at %d KiB: showing lines %d-%d of %d. Use offset=%d to continue.)", r.o.ReadMaxBytes/1024, pg.first, last, pg.total, last+1)
	case last < pg.total:
		fmt.Fprintf(&pg.text, "\n(Showing lines %d-%d of %d. Use offset=%d to continue.)", pg.first, last, pg.total, last+1)
	default:
		fmt.Fprintf(&pg.text, "\n(End of file: %d lines in total.)", pg.total)
	}
	out := pg.text.String()
	meta["offset"] = pg.first
	meta["lines"] = pg.shown
	meta["totalLines"] = pg.total
	meta["truncated"] = last < pg.total
	if pg.cutLines > 0 {
		meta["longLinesCut"] = pg.cutLines
	}
	return &registry.Result{Title: name, Output: out, Metadata: meta, NoTruncate: true}, nil
}

// readOutput reads a stored full output (toolsd://output/<id>).
func (r *reader) readOutput(ctx context.Context, call *registry.Call, uri string) (*registry.Result, error) {
	id := strings.TrimPrefix(uri, registry.OutputURIPrefix)
	if id == "" || strings.ContainsAny(id, "/\x00") {
		return nil, fmt.Errorf("%q is not an output path: use the exact path the truncation note gave, toolsd://output/<id>", uri)
	}
	if call.Outputs == nil {
		return nil, errors.New("stored outputs cannot be read in this session")
	}
	if err := call.Ask(ctx, registry.AskRequest{Permission: "read", Patterns: []string{uri}, Always: exactly(uri)}); err != nil {
		return nil, err
	}
	content, total, totalBytes, err := call.Outputs.ReadLines(ctx, id, r.offset-1, r.limit)
	if err != nil {
		if errors.Is(err, registry.ErrOutputNotFound) {
			return nil, fmt.Errorf("no stored output %s: it may have been pruned, or the id is mistyped. Use the path exactly as the truncation note gave it", uri)
		}
		return nil, fmt.Errorf("cannot read %s: %w", uri, err)
	}
	meta := map[string]any{"outputID": id, "totalBytes": totalBytes}
	if total == 0 {
		return r.result(uri, &page{first: r.offset}, meta)
	}
	if r.offset > total {
		return r.result(uri, &page{first: r.offset, total: total}, meta)
	}
	// Page the returned lines like a file (cut long lines, cap bytes), each ended by a
	// newline so that an empty last line of the page counts: the note's next offset is
	// then the first line the store did not return.
	rr := *r
	rr.offset, rr.limit = 1, outputPageLines(content)
	pg, err := rr.pageLines(ctx, strings.NewReader(content+"\n"), 1, nil, false)
	if err != nil {
		return nil, err
	}
	// Renumber: the window starts at r.offset.
	pg2 := &page{first: r.offset, shown: pg.shown, total: total, capped: pg.capped, cutLines: pg.cutLines}
	pg2.text.WriteString(renumber(pg.text.String(), r.offset-1))
	return r.result(uri, pg2, meta)
}

// outputPageLines is the number of lines in a page a registry.OutputReader returned from an
// offset before the end: it joins them with "\n", and returns at least one (a line longer
// than its page comes back cut, with a note). Whoever pages through an output advances by
// this, never by the limit asked for.
func outputPageLines(content string) int { return strings.Count(content, "\n") + 1 }

// renumber adds delta to the cat -n numbers of text.
func renumber(text string, delta int) string {
	if delta == 0 {
		return text
	}
	var b strings.Builder
	for ln := range strings.SplitSeq(strings.TrimSuffix(text, "\n"), "\n") {
		num, rest, ok := strings.Cut(ln, "\t")
		if n, err := strconv.Atoi(strings.TrimSpace(num)); ok && err == nil {
			fmt.Fprintf(&b, "%6d\t%s\n", n+delta, rest)
			continue
		}
		b.WriteString(ln)
		b.WriteByte('\n')
	}
	return b.String()
}

// cutUTF8 cuts s to at most n bytes without splitting a rune.
func cutUTF8(s []byte, n int) []byte {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	j := len(s) - 1
	for j >= 0 && j > len(s)-utf8.UTFMax && !utf8.RuneStart(s[j]) {
		j--
	}
	if j >= 0 && !utf8.FullRune(s[j:]) {
		s = s[:j]
	}
	return s
}

// appendLineNumber appends n as fmt's "%6d\t" does (right-aligned in six columns, then a
// tab), without fmt's cost on every line of a page.
func appendLineNumber(dst []byte, n int) []byte {
	var digits [20]byte
	d := strconv.AppendInt(digits[:0], int64(n), 10)
	for i := len(d); i < 6; i++ {
		dst = append(dst, ' ')
	}
	dst = append(dst, d...)
	return append(dst, '\t')
}

// readHead reads f, a regular file whose size was size when it was opened, into head until
// the file ends (whole) or head is full. A read that returns less than asked and brings the
// count to size is taken as the end, which saves the read that would return nothing: a
// regular file's read is short only at its end. A size of 0 (as /proc's files have) or one
// the count does not meet (the file changed) is read on until a read returns nothing.
func readHead(f io.Reader, head []byte, size int64) (n int, whole bool, err error) {
	for n < len(head) {
		m, err := f.Read(head[n:])
		n += m
		switch {
		case err == io.EOF:
			return n, true, nil
		case err != nil:
			return n, false, err
		case n < len(head) && size > 0 && int64(n) == size:
			return n, true, nil
		}
	}
	return n, false, nil
}

// headBytes is how much of a file read looks at to tell text from images and binaries.
const headBytes = 8192

// readBufSize is the size of the buffers files are read through: large enough that a 1 GiB
// file is scanned in a few thousand reads, small enough to cost little per call.
const readBufSize = 64 << 10

// readBufs recycles those buffers: a fresh one per call was most of what a read of a small
// file allocated.
var readBufs = sync.Pool{New: func() any { b := make([]byte, readBufSize); return &b }}

func getReadBuf() *[]byte { return readBufs.Get().(*[]byte) }
