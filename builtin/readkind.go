package builtin

// What read makes of what is not a text file: a folder is listed, an image or a PDF comes
// back as an attachment, and a binary file is refused with what it looks like.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/toolsd/toolsd/internal/posix"

	"github.com/toolsd/toolsd/registry"
)

// readDir lists the folder t, a page of its entries (folders with a trailing /).
func (r *reader) readDir(t *target) (*registry.Result, error) {
	d, err := openDirChecked(t.Abs)
	if err != nil {
		return nil, fmt.Errorf("cannot list %s: %w", t.Display(), unwrapPathErr(err))
	}
	defer d.Close()
	ents, err := d.ReadDir(-1)
	if err != nil {
		return nil, fmt.Errorf("cannot list %s: %w", t.Display(), unwrapPathErr(err))
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() {
			n += "/"
		} else if e.Type()&os.ModeSymlink != 0 {
			// A link to a folder is shown as one (only the kind of its target is looked at).
			var st posix.Stat_t
			if posix.Fstatat(int(d.Fd()), n, &st, 0) == nil && st.Mode&posix.S_IFMT == posix.S_IFDIR {
				n += "/"
			}
		}
		names = append(names, n)
	}
	sort.Strings(names)
	meta := map[string]any{"filePath": filepath.ToSlash(t.Abs), "directory": true}
	if len(names) == 0 {
		if r.offset > 1 {
			return nil, fmt.Errorf("offset %d is past the end of folder %s: it is empty", r.offset, t.Display())
		}
		meta["totalLines"] = 0
		return &registry.Result{Title: t.Display(), Output: fmt.Sprintf("%s/ is an empty folder.", strings.TrimSuffix(t.Display(), "/")), Metadata: meta, NoTruncate: true}, nil
	}
	if r.offset > len(names) {
		return nil, fmt.Errorf("offset %d is past the end of folder %s: it has %d entries. Use an offset from 1 to %d", r.offset, t.Display(), len(names), len(names))
	}
	end := min(len(names), r.offset-1+r.limit)
	var b strings.Builder
	fmt.Fprintf(&b, "%s/ is a folder with %d entries:\n", strings.TrimSuffix(t.Display(), "/"), len(names))
	for _, n := range names[r.offset-1 : end] {
		b.WriteString(n)
		b.WriteByte('\n')
	}
	if end < len(names) {
		fmt.Fprintf(&b, "\n(Showing entries %d-%d of %d. Use offset=%d to continue.)", r.offset, end, len(names), end+1)
	}
	meta["totalLines"] = len(names)
	return &registry.Result{Title: t.Display(), Output: b.String(), Metadata: meta, NoTruncate: true}, nil
}

// attachment returns the image or PDF f (of size bytes) whole, as an attachment.
func (r *reader) attachment(f io.ReadSeeker, t *target, size int64, mime string) (*registry.Result, error) {
	if size > r.o.MaxAttachmentBytes {
		return nil, fmt.Errorf("%s is a %s of %d bytes, over the %d-byte limit for attachments: it cannot be read whole", t.Display(), mime, size, r.o.MaxAttachmentBytes)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, r.o.MaxAttachmentBytes+1))
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", t.Display(), err)
	}
	kind := "Image"
	if mime == "application/pdf" {
		kind = "PDF"
	}
	return &registry.Result{
		Title:       t.Display(),
		Output:      fmt.Sprintf("%s read successfully (%s, %d bytes); it is attached.", kind, mime, len(data)),
		Metadata:    map[string]any{"filePath": filepath.ToSlash(t.Abs), "mime": mime, "bytes": len(data)},
		Attachments: []registry.Attachment{{Mime: mime, Filename: filepath.Base(t.Abs), Data: data}},
		NoTruncate:  true,
	}, nil
}

// attachmentMime returns the mime type of an image or PDF read returns as an attachment.
// Each is the signature net/http's DetectContentType knows it by, checked here directly
// rather than by running every sniffer of DetectContentType on each read's head.
func attachmentMime(path string, head []byte) string {
	has := func(off int, sig string) bool {
		return len(head) >= off+len(sig) && string(head[off:off+len(sig)]) == sig
	}
	switch {
	case has(0, "\x89PNG\r\n\x1a\n"):
		return "image/png"
	case has(0, "\xff\xd8\xff"):
		return "image/jpeg"
	case has(0, "GIF87a"), has(0, "GIF89a"):
		return "image/gif"
	case has(0, "RIFF") && has(8, "WEBPVP"):
		return "image/webp"
	case has(0, "%PDF-"):
		return "application/pdf"
	case isBMP(head):
		return "image/bmp"
	}
	return ""
}

// isBMP: "BM", then a DIB header of a size some version of the format has. (Sniffers take
// "BM" alone for a bitmap, which made a text file that starts with "BM" an image.)
func isBMP(head []byte) bool {
	if len(head) < 18 || head[0] != 'B' || head[1] != 'M' {
		return false
	}
	switch binary.LittleEndian.Uint32(head[14:18]) {
	case 12, 16, 40, 52, 56, 64, 108, 124:
		return true
	}
	return false
}

var binaryExts = map[string]bool{
	".zip": true, ".tar": true, ".gz": true, ".tgz": true, ".bz2": true, ".xz": true, ".zst": true, ".7z": true, ".rar": true,
	".exe": true, ".dll": true, ".so": true, ".dylib": true, ".o": true, ".a": true, ".lib": true, ".obj": true,
	".class": true, ".jar": true, ".war": true, ".wasm": true, ".pyc": true, ".pyo": true,
	".bin": true, ".dat": true, ".db": true, ".sqlite": true, ".sqlite3": true,
	".doc": true, ".docx": true, ".xls": true, ".xlsx": true, ".ppt": true, ".pptx": true, ".odt": true, ".ods": true,
	".ico": true, ".tif": true, ".tiff": true, ".mp3": true, ".mp4": true, ".mov": true, ".avi": true, ".mkv": true,
	".wav": true, ".flac": true, ".ogg": true, ".woff": true, ".woff2": true, ".ttf": true, ".otf": true, ".eot": true,
}

// binaryReason says why a file looks binary, or "" for text.
func binaryReason(path string, head []byte) string {
	if binaryExts[strings.ToLower(filepath.Ext(path))] && !utf8.Valid(head) {
		return "a " + strings.ToLower(filepath.Ext(path)) + " file"
	}
	if len(head) == 0 {
		return ""
	}
	if bytes.IndexByte(head, 0) >= 0 {
		return "it contains NUL bytes"
	}
	// Cut a multi-byte rune split at the end of the sample.
	sample := head
	for i := 0; i < utf8.UTFMax && len(sample) > 0 && !utf8.FullRune(sample[max(0, len(sample)-utf8.UTFMax):]); i++ {
		sample = sample[:len(sample)-1]
	}
	if utf8.Valid(sample) {
		return ""
	}
	odd := 0
	for _, c := range sample {
		if c < 9 || (c > 13 && c < 32) || c == 127 {
			odd++
		}
	}
	if odd*10 > len(sample)*3 {
		return "most of it is not text"
	}
	return ""
}
