package fspath

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolsd/toolsd/internal/wine"
)

// TestVolumeAsFilepath: the syntax's Windows volumes are filepath.VolumeName's (with
// backslashes), but for `\\?\UNC\server\share`, whose server and share it keeps in the volume
// as filepath does only for `\\.\UNC\…`: a share, which `..` never leaves.
func TestVolumeAsFilepath(t *testing.T) {
	for _, p := range []string{`C:\x`, `c:x`, `C:`, `\x`, `x`, `\\server\share\x`, `//server/share/x`,
		`\\?\C:\x`, `\\.\pipe\name`, `\??\C:\x`, `\\.\UNC\server\share\x`, `\\?\Volume{1234}\x`} {
		got := strings.ReplaceAll(p[:host.volume(p)], "/", `\`)
		if want := filepath.VolumeName(p); got != want {
			t.Errorf("volume(%s) = %s; filepath.VolumeName says %s", p, got, want)
		}
	}
}

// TestResolveAbsoluteTarget: a real symlink whose target is an absolute path with a drive
// leads there, not to a name under the root of the current drive.
func TestResolveAbsoluteTarget(t *testing.T) {
	dir, out := realTemp(t), realTemp(t)
	// Rooted without a drive: the root of dir's drive.
	got, err := Resolve(dir, `\x`, nil)
	if want := filepath.VolumeName(dir) + `\x`; err != nil || !strings.EqualFold(got, want) {
		t.Errorf("Resolve(%s, \\x) = %q, %v; want %q", dir, got, err, want)
	}
	if err := os.Mkdir(filepath.Join(out, "t"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(out, "t"), filepath.Join(dir, "l")); err != nil {
		t.Skipf("no symlinks here (developer mode or the privilege is needed): %v", err)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "l")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		wine.Skip(t, "CreateSymbolicLink reports success and makes no link")
		t.Fatalf("os.Symlink made no link: %v, %v", fi, err)
	}
	got, err = Resolve(dir, `l\x`, nil)
	if want := filepath.Join(out, "t", "x"); err != nil || !strings.EqualFold(got, want) {
		t.Errorf("Resolve(%s, l\\x) = %q, %v; want %q", dir, got, err, want)
	}
	got, err = Resolve(dir, `l\..\y`, nil)
	if want := filepath.Join(out, "y"); err != nil || !strings.EqualFold(got, want) {
		t.Errorf("Resolve(%s, l\\..\\y) = %q, %v; want %q", dir, got, err, want)
	}
	// Real follows the link too, also to a name not there yet.
	got, err = Real(filepath.Join(dir, "l", "new"))
	if want := filepath.Join(out, "t", "new"); err != nil || !strings.EqualFold(got, want) {
		t.Errorf("Real(l\\new) = %q, %v; want %q", got, err, want)
	}
}
