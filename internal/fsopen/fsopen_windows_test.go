package fsopen

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolsd/toolsd/internal/fsopen/fsopentest"
)

// TestWindowsReadFile: on Windows a regular file is read, and a folder, a file over the cap
// and the devices Win32 reads in a file's name (NUL, CON: a console would block a read) are
// refused promptly, each with an error that names it.
func TestWindowsReadFile(t *testing.T) {
	const max = 1000
	dir := t.TempDir()
	reg := filepath.Join(dir, "reg")
	big := filepath.Join(dir, "big")
	for p, n := range map[string]int{reg: 5, big: max + 1} {
		if err := os.WriteFile(p, make([]byte, n), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if data, err := ReadFile(reg, max); err != nil || len(data) != 5 {
		t.Errorf("ReadFile(reg) = %d bytes, %v", len(data), err)
	}
	if _, err := ReadFile(filepath.Join(dir, "missing"), max); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want ErrNotExist", err)
	}
	for path, says := range map[string]string{
		dir:                         "a folder",
		big:                         "the limit is",
		"NUL":                       "",
		`\\.\NUL`:                   "",
		"CON":                       "",
		filepath.Join(dir, "CON"):   "",
		filepath.Join(dir, "nul.x"): "",
	} {
		var err error
		fsopentest.Promptly(t, 10*time.Second, "ReadFile("+path+")", func() { _, err = ReadFile(path, max) })
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), says) {
			t.Errorf("ReadFile(%s): %v; want an error naming it and saying %q", path, err, says)
		}
	}
}
