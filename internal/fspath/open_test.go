package fspath

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolsd/toolsd/internal/posix"
	"github.com/toolsd/toolsd/internal/wine"
)

// bothWays runs f with the one-call open (openat2 on Linux where the kernel has it,
// O_NOFOLLOW_ANY on macOS) and with the component-by-component
// fallback.
func bothWays(t *testing.T, f func(t *testing.T)) {
	t.Run("openat2", func(t *testing.T) {
		if !haveNoSymlinks() {
			t.Skip("no open that refuses links in one call here")
		}
		f(t)
	})
	t.Run("components", func(t *testing.T) {
		forceComponents = true
		defer func() { forceComponents = false }()
		f(t)
	})
}

func realTemp(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// readFD reads a small file through fd and closes it.
func readFD(t *testing.T, fd int) string {
	t.Helper()
	defer posix.Close(fd)
	b := make([]byte, 100)
	n, err := posix.Read(fd, b)
	must(t, err)
	return string(b[:n])
}

func TestOpenRefusesSymlinks(t *testing.T) {
	bothWays(t, func(t *testing.T) {
		dir, out := realTemp(t), realTemp(t)
		must(t, os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755))
		must(t, os.WriteFile(filepath.Join(dir, "a", "b", "f"), []byte("in"), 0o644))
		must(t, os.WriteFile(filepath.Join(out, "f"), []byte("out"), 0o644))
		wine.Symlink(t, out, filepath.Join(dir, "a", "link"))
		wine.Symlink(t, filepath.Join(out, "f"), filepath.Join(dir, "a", "flink"))

		fd, err := Open(filepath.Join(dir, "a", "b", "f"), posix.O_RDONLY)
		must(t, err)
		if got := readFD(t, fd); got != "in" {
			t.Fatalf("read %q", got)
		}
		for _, p := range []string{"a/link/f", "a/flink", "a/link"} {
			if fd, err := Open(filepath.Join(dir, p), posix.O_RDONLY); !errors.Is(err, ErrSymlink) {
				if err == nil {
					posix.Close(fd)
				}
				t.Errorf("Open(%s): err = %v, want ErrSymlink", p, err)
			}
		}
		if _, err := Open("rel/path", posix.O_RDONLY); !errors.Is(err, ErrNotBeneath) {
			t.Errorf("relative path: err = %v", err)
		}
		if _, err := Open(filepath.Join(dir, "missing", "f"), posix.O_RDONLY); !errors.Is(err, posix.ENOENT) {
			t.Errorf("missing: err = %v", err)
		}

		root, err := Open(dir, posix.O_RDONLY|posix.O_DIRECTORY)
		must(t, err)
		defer posix.Close(root)
		fd, err = OpenBeneath(root, "a/b/f", posix.O_RDONLY)
		must(t, err)
		if got := readFD(t, fd); got != "in" {
			t.Fatalf("read %q", got)
		}
		fd, err = OpenBeneath(root, ".", posix.O_RDONLY|posix.O_DIRECTORY)
		must(t, err)
		posix.Close(fd)
		for _, tc := range []struct {
			rel  string
			want error
		}{
			{"a/link/f", ErrSymlink}, {"a/flink", ErrSymlink}, {"a/link", ErrSymlink},
			{"../x", ErrNotBeneath}, {"a/../../x", ErrNotBeneath}, {"/etc/passwd", ErrNotBeneath}, {"", ErrNotBeneath},
		} {
			if fd, err := OpenBeneath(root, tc.rel, posix.O_RDONLY); !errors.Is(err, tc.want) {
				if err == nil {
					posix.Close(fd)
				}
				t.Errorf("OpenBeneath(%q): err = %v, want %v", tc.rel, err, tc.want)
			}
		}
	})
}

func TestMkdirAll(t *testing.T) {
	bothWays(t, func(t *testing.T) {
		dir, out := realTemp(t), realTemp(t)
		must(t, os.Mkdir(filepath.Join(dir, "a"), 0o755))
		wine.Symlink(t, out, filepath.Join(dir, "link"))

		fd, err := MkdirAll(filepath.Join(dir, "a", "b", "c"), 0o755)
		must(t, err)
		// The fd is the new folder, usable for a create in it.
		f, err := posix.Openat(fd, "x", posix.O_WRONLY|posix.O_CREAT|posix.O_EXCL, 0o644)
		must(t, err)
		posix.Close(f)
		posix.Close(fd)
		if _, err := os.Stat(filepath.Join(dir, "a", "b", "c", "x")); err != nil {
			t.Fatal(err)
		}
		fd, err = MkdirAll(filepath.Join(dir, "a"), 0o755) // exists
		must(t, err)
		posix.Close(fd)

		if _, err := MkdirAll(filepath.Join(dir, "link", "b"), 0o755); !errors.Is(err, ErrSymlink) {
			t.Errorf("through a link: err = %v, want ErrSymlink", err)
		}

		// A folder it just created is swapped for a link to outside before it is opened.
		afterMkdir = func(dirfd int, name string) {
			if name != "q" {
				return
			}
			must(t, posix.Renameat(dirfd, name, dirfd, name+".moved"))
			must(t, posix.Symlinkat(out, dirfd, name))
		}
		defer func() { afterMkdir = nil }()
		if _, err := MkdirAll(filepath.Join(dir, "a", "p", "q", "r", "s"), 0o755); !errors.Is(err, ErrSymlink) {
			t.Errorf("swapped while created: err = %v, want ErrSymlink", err)
		}
		if ents, _ := os.ReadDir(out); len(ents) > 0 {
			t.Fatalf("created outside: %v", ents)
		}
	})
}
