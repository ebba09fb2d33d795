package protect

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolsd/toolsd/internal/wine"
	"golang.org/x/sys/windows"
)

// TestRelReadsWin32Names: on Windows Rel reads names as Win32 does, and the short name the
// file system gives a real .git folder (where it gives short names) is protected.
func TestRelReadsWin32Names(t *testing.T) {
	for _, rel := range []string{".git./config", ".git::$INDEX_ALLOCATION/hooks/x", "GIT~1/config", ".toolsd /x"} {
		if _, ok := Rel(rel); !ok {
			t.Errorf("Rel(%q) is not protected on Windows", rel)
		}
	}
	dir := t.TempDir()
	git := filepath.Join(dir, ".git")
	if err := os.Mkdir(git, 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := windows.UTF16PtrFromString(git)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]uint16, windows.MAX_PATH)
	n, err := windows.GetShortPathName(p, &buf[0], uint32(len(buf)))
	if err != nil || n == 0 || int(n) > len(buf) {
		t.Skipf("no short name: %v", err)
	}
	short := filepath.Base(windows.UTF16ToString(buf[:n]))
	if strings.EqualFold(short, ".git") {
		t.Skip("this volume makes no short names")
	}
	if why, ok := Check(dir, filepath.Join(dir, short, "config")); !ok {
		wine.Skip(t, "its short names are hashes of its own ("+short+"), not the file system's")
		t.Errorf("Check(%s\\config), the short name of .git, = %q, not protected", short, why)
	}
}
