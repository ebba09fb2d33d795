//go:build unix

package fsopen

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolsd/toolsd/internal/fsopen/fsopentest"
)

const capBytes = 1000

// kinds makes, in dir, every kind of fsopentest.Kinds and returns their paths with what the
// error must say, plus paths outside dir that a reader must refuse too.
func kinds(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{
		"/dev/null":         "a character device, not a regular file",
		"/proc/self/status": "has more than 1000 bytes", // says 0 bytes, holds more: the read's own cap
	}
	if fi, err := os.Stat("/proc/self/fd/0"); err == nil && !fi.Mode().IsRegular() {
		out["/proc/self/fd/0"] = "not a regular file" // the test's stdin: never read from it
	}
	for _, k := range fsopentest.Kinds(capBytes) {
		p := filepath.Join(dir, k.Name)
		k.Make(t, p)
		out[p] = k.Says
	}
	return out
}

func TestReadFileRefuses(t *testing.T) {
	for path, says := range kinds(t, t.TempDir()) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			var data []byte
			var err error
			fsopentest.Promptly(t, 10*time.Second, "ReadFile", func() { data, err = ReadFile(path, capBytes) })
			if err == nil {
				t.Fatalf("read %d bytes, want an error", len(data))
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), says) {
				t.Fatalf("error %q does not name %s and say %q", err, path, says)
			}
			var te *TypeError
			var tl *TooLargeError
			if !errors.As(err, &te) && !errors.As(err, &tl) {
				t.Fatalf("error %T %v is neither a TypeError nor a TooLargeError", err, err)
			}
		})
	}
}

// TestOpenFileRefuses checks OpenFile, and the check of the opened descriptor alone (what
// holds when the file is swapped after the stat that comes before the open).
func TestOpenFileRefuses(t *testing.T) {
	dir := t.TempDir()
	kinds(t, dir)
	opens := map[string]func(string, int, fs.FileMode) (*os.File, error){"OpenFile": OpenFile, "openChecked": openChecked}
	for fn, open := range opens {
		for _, flag := range []int{os.O_RDONLY, os.O_RDWR | os.O_CREATE} {
			for _, name := range []string{"fifo", "zero", "link-to-fifo", "folder", "socket"} {
				path := filepath.Join(dir, name)
				var err error
				fsopentest.Promptly(t, 10*time.Second, fn, func() {
					var f *os.File
					if f, err = open(path, flag, 0o600); err == nil {
						f.Close()
					}
				})
				var te *TypeError
				if !errors.As(err, &te) || te.Path != path {
					t.Errorf("%s(%s, %#x): %v, want a TypeError", fn, name, flag, err)
				}
			}
		}
	}
	// O_NOFOLLOW refuses a link, even to a regular file.
	reg := filepath.Join(dir, "reg")
	if err := os.WriteFile(reg, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "toreg")
	if err := os.Symlink(reg, link); err != nil {
		t.Fatal(err)
	}
	for fn, open := range opens {
		if _, err := open(link, os.O_RDONLY|syscall.O_NOFOLLOW, 0); err == nil || !strings.Contains(err.Error(), "a symbolic link, not a regular file") {
			t.Errorf("%s with O_NOFOLLOW on a link: %v", fn, err)
		}
	}
}

func TestReadFileAccepts(t *testing.T) {
	dir := t.TempDir()
	reg := filepath.Join(dir, "reg")
	if err := os.WriteFile(reg, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(reg, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{reg, link} {
		data, err := ReadFile(p, 5)
		if err != nil || string(data) != "hello" {
			t.Errorf("ReadFile(%s) = %q, %v", p, data, err)
		}
	}
	if _, err := ReadFile(filepath.Join(dir, "missing"), 5); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want ErrNotExist", err)
	}
	// Creating a file works, and gives a blocking file.
	f, err := OpenFile(filepath.Join(dir, "new"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte("x"), 10); err != nil {
		t.Fatal(err)
	}
}

func TestReadDir(t *testing.T) {
	dir := t.TempDir()
	kinds(t, dir)
	for _, name := range []string{"fifo", "link-to-fifo", "zero", "socket", "oversized"} {
		path := filepath.Join(dir, name)
		var err error
		fsopentest.Promptly(t, 10*time.Second, "ReadDir", func() { _, err = ReadDir(path, 0) })
		var te *TypeError
		if !errors.As(err, &te) || !strings.Contains(err.Error(), path) || !strings.HasSuffix(err.Error(), "not a folder") {
			t.Errorf("ReadDir(%s): %v, want a TypeError", name, err)
		}
	}
	ents, err := ReadDir(dir, 0)
	if err != nil || len(ents) != 6 || ents[0].Name() != "fifo" {
		t.Fatalf("ReadDir: %v %v", ents, err)
	}
	if ents, err := ReadDir(dir, 6); err != nil || len(ents) != 6 {
		t.Fatalf("ReadDir at the cap: %v %v", ents, err)
	}
	var tl *TooLargeError
	if _, err := ReadDir(dir, 5); !errors.As(err, &tl) || !strings.Contains(err.Error(), "more than 5 entries") {
		t.Fatalf("ReadDir over the cap: %v", err)
	}
	if _, err := ReadDir(filepath.Join(dir, "missing"), 0); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing folder: %v", err)
	}
	if ents, err := ReadDir(filepath.Join(dir, "folder"), 3); err != nil || len(ents) != 0 {
		t.Errorf("empty folder: %v %v", ents, err)
	}
}
