//go:build unix

package builtin

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestOpenCheckedFile: the file openChecked returns reads, reads at, seeks and stats as an
// *os.File of the same file does.
func TestOpenCheckedFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.txt")
	data := []byte("0123456789abcdef")
	if err := os.WriteFile(p, data, 0o640); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []uint32{0o640, 0o4755, 0o2700, 0o1644, 0} {
		if err := syscall.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		f, fi, err := openChecked(&target{Given: p, Abs: p})
		if err != nil {
			if mode == 0 && os.Geteuid() != 0 {
				continue // unreadable
			}
			t.Fatal(err)
		}
		want, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Name() != want.Name() || fi.Size() != want.Size() || fi.Mode() != want.Mode() || !fi.ModTime().Equal(want.ModTime()) || fi.IsDir() != want.IsDir() {
			t.Errorf("mode %o: info %s %d %v %v; os.Stat %s %d %v %v", mode, fi.Name(), fi.Size(), fi.Mode(), fi.ModTime(), want.Name(), want.Size(), want.Mode(), want.ModTime())
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || st.Ino != want.Sys().(*syscall.Stat_t).Ino {
			t.Errorf("Sys() = %#v", fi.Sys())
		}
		buf := make([]byte, 10)
		if n, err := io.ReadFull(f, buf); n != 10 || err != nil || string(buf) != "0123456789" {
			t.Errorf("ReadFull: %d %v %q", n, err, buf[:n])
		}
		if n, err := f.Read(buf); n != 6 || err != nil {
			t.Errorf("Read of the rest: %d %v", n, err)
		}
		if n, err := f.Read(buf); n != 0 || err != io.EOF {
			t.Errorf("Read at the end: %d %v, want io.EOF", n, err)
		}
		if n, err := f.ReadAt(buf[:4], 12); n != 4 || err != nil || string(buf[:4]) != "cdef" {
			t.Errorf("ReadAt: %d %v %q", n, err, buf[:n])
		}
		if n, err := f.ReadAt(buf, 12); n != 4 || err != io.EOF {
			t.Errorf("ReadAt past the end: %d %v, want 4 and io.EOF", n, err)
		}
		if off, err := f.Seek(3, io.SeekStart); off != 3 || err != nil {
			t.Errorf("Seek: %d %v", off, err)
		}
		if all, err := io.ReadAll(f); err != nil || string(all) != string(data[3:]) {
			t.Errorf("after Seek: %q %v", all, err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := openChecked(&target{Given: dir, Abs: dir}); err == nil {
		t.Error("openChecked of a folder succeeded")
	}
}

// TestAttachmentMime: the signatures agree with net/http's sniffer, but for a text that
// starts with "BM", which is text.
func TestAttachmentMime(t *testing.T) {
	bmp := append([]byte("BM\x46\x00\x00\x00\x00\x00\x00\x00\x36\x00\x00\x00\x28\x00\x00\x00"), make([]byte, 40)...)
	for _, head := range [][]byte{
		[]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), []byte("\xff\xd8\xff\xe0\x00\x10JFIF"), []byte("GIF89a\x01\x00"), []byte("GIF87a"),
		[]byte("RIFF\x24\x00\x00\x00WEBPVP8 "), []byte("%PDF-1.7\n"), bmp,
		[]byte("package main\n"), []byte("<html>"), []byte(""), []byte("\xff\xfe\x00t"), []byte("%!PS-Adobe-3.0"), []byte("RIFF\x24\x00\x00\x00WAVEfmt "),
	} {
		want := http.DetectContentType(head)
		switch want {
		case "image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf", "image/bmp":
		default:
			want = ""
		}
		if got := attachmentMime("f", head); got != want {
			t.Errorf("attachmentMime(%q) = %q, want %q", head, got, want)
		}
	}
	if got := attachmentMime("notes.txt", []byte("BMW and Audi, a comparison of the two makers' engines\n")); got != "" {
		t.Errorf("a text that starts with BM is %q", got)
	}
}
