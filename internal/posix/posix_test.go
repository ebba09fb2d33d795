package posix

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolsd/toolsd/internal/wine"
)

// TestCalls: the calls behave as their Unix namesakes on every system, the way toolsd's
// callers use them (on Linux and macOS this is golang.org/x/sys/unix itself; on Windows it
// is posix_windows.go).
func TestCalls(t *testing.T) {
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "data"), []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	dfd, err := Open(dir, O_RDONLY|O_DIRECTORY|O_CLOEXEC, 0)
	must(err)
	defer Close(dfd)

	// Folders and files, made and opened relative to the folder.
	must(Mkdirat(dfd, "d", 0o755))
	if err := Mkdirat(dfd, "d", 0o755); !errors.Is(err, EEXIST) {
		t.Errorf("Mkdirat of an existing folder: %v, want EEXIST", err)
	}
	fd, err := Openat(dfd, "d/f", O_WRONLY|O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC, 0o644)
	must(err)
	must(Close(fd))
	if _, err := Openat(dfd, "d/f", O_WRONLY|O_CREAT|O_EXCL|O_CLOEXEC, 0o644); !errors.Is(err, EEXIST) {
		t.Errorf("O_EXCL on an existing file: %v, want EEXIST", err)
	}
	if _, err := Openat(dfd, "missing", O_RDONLY|O_CLOEXEC, 0); !errors.Is(err, ENOENT) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("opening a missing file: %v, want ENOENT", err)
	}
	if _, err := Openat(dfd, "data", O_RDONLY|O_DIRECTORY|O_CLOEXEC, 0); !errors.Is(err, ENOTDIR) {
		t.Errorf("O_DIRECTORY on a file: %v, want ENOTDIR", err)
	}
	var st Stat_t
	must(Fstatat(dfd, "d", &st, AT_SYMLINK_NOFOLLOW))
	if st.Mode&S_IFMT != S_IFDIR {
		t.Errorf("Fstatat of a folder: mode %o", st.Mode)
	}

	// Reading: Read at the offset, Pread at any, Seek.
	fd, err = Openat(dfd, "data", O_RDONLY|O_NONBLOCK|O_NOCTTY|O_NOFOLLOW|O_CLOEXEC, 0)
	must(err)
	must(Fstat(fd, &st))
	if st.Mode&S_IFMT != S_IFREG || st.Size != 10 {
		t.Errorf("Fstat of a 10-byte file: mode %o size %d", st.Mode, st.Size)
	}
	b := make([]byte, 4)
	if n, err := Read(fd, b); n != 4 || err != nil || string(b) != "0123" {
		t.Errorf("Read: %d %v %q", n, err, b[:max(n, 0)])
	}
	if n, err := Pread(fd, b, 6); n != 4 || err != nil || string(b) != "6789" {
		t.Errorf("Pread at 6: %d %v %q", n, err, b[:max(n, 0)])
	}
	if off, err := Seek(fd, 8, 0); off != 8 || err != nil {
		t.Errorf("Seek to 8: %d %v", off, err)
	}
	if n, err := Read(fd, b); n != 2 || err != nil || string(b[:2]) != "89" {
		t.Errorf("Read after Seek: %d %v %q", n, err, b[:max(n, 0)])
	}
	if n, err := Read(fd, b); n != 0 || err != nil {
		t.Errorf("Read at the end: %d %v, want 0, nil", n, err)
	}
	must(Close(fd))

	// Renaming and removing, relative to the folder.
	must(Renameat(dfd, "d/f", dfd, "g"))
	if err := Fstatat(dfd, "d/f", &st, AT_SYMLINK_NOFOLLOW); !errors.Is(err, ENOENT) {
		t.Errorf("the renamed file is still there: %v", err)
	}
	must(Fstatat(dfd, "g", &st, AT_SYMLINK_NOFOLLOW))
	if err := Unlinkat(dfd, "g", AT_REMOVEDIR); err == nil {
		t.Errorf("Unlinkat with AT_REMOVEDIR removed a file")
	}
	must(Unlinkat(dfd, "g", 0))
	must(Unlinkat(dfd, "d", AT_REMOVEDIR))

	// Links: made, described, read, refused by O_NOFOLLOW.
	if err := Symlinkat("data", dfd, "l"); err != nil {
		t.Skipf("cannot make a symbolic link here (Windows without developer mode?): %v", err)
	}
	if err := Fstatat(dfd, "l", &st, AT_SYMLINK_NOFOLLOW); errors.Is(err, ENOENT) {
		wine.Skip(t, "CreateSymbolicLink reports success and makes no link")
		t.Fatalf("Symlinkat made no link: %v", err)
	} else {
		must(err)
	}
	if st.Mode&S_IFMT != S_IFLNK {
		t.Errorf("Fstatat(AT_SYMLINK_NOFOLLOW) of a link: mode %o", st.Mode)
	}
	buf := make([]byte, 64)
	if n, err := Readlinkat(dfd, "l", buf); err != nil || string(buf[:n]) != "data" {
		t.Errorf("Readlinkat: %q, %v", buf[:max(n, 0)], err)
	}
	if fd, err := Openat(dfd, "l", O_RDONLY|O_NOFOLLOW|O_CLOEXEC, 0); !errors.Is(err, ELOOP) {
		if err == nil {
			Close(fd)
		}
		t.Errorf("O_NOFOLLOW on a link: %v, want ELOOP", err)
	}
	must(Unlinkat(dfd, "l", 0))
	if _, err := os.Stat(filepath.Join(dir, "data")); err != nil {
		t.Errorf("removing the link removed what it leads to: %v", err)
	}
}
