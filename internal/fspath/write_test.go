package fspath

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/toolsd/toolsd/internal/wine"
)

func TestWriteFileModes(t *testing.T) {
	dir := realTemp(t)
	p := filepath.Join(dir, "sub", "f")
	must(t, WriteFile(p, []byte("one"), 0o600, true)) // new: perm, folders made
	if runtime.GOOS != "windows" {                    // Windows keeps no mode bits, only a read-only attribute
		must(t, os.Chmod(p, 0o751))
		must(t, WriteFile(p, []byte("two"), 0o644, true)) // keep: the existing mode stays
		if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o751 {
			t.Fatalf("keep: mode %o", fi.Mode().Perm())
		}
		must(t, WriteFile(p, []byte("three"), 0o4755, false)) // exact: setuid too
		fi, _ := os.Stat(p)
		if b, _ := os.ReadFile(p); string(b) != "three" || fi.Mode().Perm() != 0o755 || fi.Mode()&os.ModeSetuid == 0 {
			t.Fatalf("exact: %q mode %v", b, fi.Mode())
		}
	}
	link := filepath.Join(dir, "link")
	wine.Symlink(t, p, link)
	if err := WriteFile(link, []byte("x"), 0o644, true); !errors.Is(err, ErrSymlink) {
		t.Fatalf("writing through a symlink: %v", err)
	}
}
