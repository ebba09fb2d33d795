//go:build unix

package builtin

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolsd/toolsd/internal/fswalk"
	"github.com/toolsd/toolsd/registry"
)

// runWithin runs f and fails the test if it has not returned within d (a hang).
func runWithin[T any](t *testing.T, d time.Duration, what string, f func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- f() }()
	select {
	case v := <-done:
		return v
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
	}
	panic("unreachable")
}

// TestIgnoreFilesMustBeRegular: an ignore file that is a FIFO, a symlink to /dev/zero or
// over the size cap is not read (grep, glob and list neither hang nor exhaust memory), in
// the walked folders and in the folders above the search root.
func TestIgnoreFilesMustBeRegular(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(p string) error
	}{
		{"fifo", func(p string) error { return syscall.Mkfifo(p, 0o644) }},
		{"link to /dev/zero", func(p string) error { return os.Symlink("/dev/zero", p) }},
		{"link to a fifo", func(p string) error {
			if err := syscall.Mkfifo(p+".fifo", 0o644); err != nil {
				return err
			}
			return os.Symlink(filepath.Base(p)+".fifo", p)
		}},
		{"over the cap", func(p string) error {
			return os.WriteFile(p, []byte("*.txt\n"+strings.Repeat("#", fswalk.MaxIgnoreFileBytes)), 0o644)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, "-- sub/deeper/a.txt --\nneedle\n-- b.txt --\nneedle\n")
			for _, p := range []string{".gitignore", "sub/.ignore", "sub/deeper/.gitignore"} {
				if err := tc.make(e.path(p)); err != nil {
					t.Skip(err)
				}
			}
			for _, c := range []struct {
				tool string
				args map[string]any
				want string
			}{
				{"grep", map[string]any{"pattern": "needle"}, "sub/deeper/a.txt"},
				{"grep", map[string]any{"pattern": "needle", "path": "sub/deeper"}, "sub/deeper/a.txt"},
				{"glob", map[string]any{"pattern": "**/*.txt"}, "sub/deeper/a.txt"},
				{"glob", map[string]any{"pattern": "*.txt", "path": "sub/deeper"}, "sub/deeper/a.txt"},
				{"list", map[string]any{}, "a.txt"},
				{"list", map[string]any{"path": "sub"}, "a.txt"},
			} {
				type answer struct {
					res *registry.Result
					err error
				}
				a := runWithin(t, 10*time.Second, c.tool, func() answer {
					res, err := e.run(c.tool, c.args)
					return answer{res, err}
				})
				if a.err != nil {
					t.Fatalf("%s %v: %v", c.tool, c.args, a.err)
				}
				mustContain(t, c.tool+" output", a.res.Output, c.want)
			}
		})
	}
}

// TestSearchSkipsSpecialFiles: a FIFO (and a file swapped for one) in a walked folder is
// skipped; read and grep of one named directly refuse it with a clear message.
func TestSearchSkipsSpecialFiles(t *testing.T) {
	e := newEnv(t, "-- a.txt --\nneedle\n")
	if err := syscall.Mkfifo(e.path("pipe.txt"), 0o644); err != nil {
		t.Skip(err)
	}
	res := runWithin(t, 10*time.Second, "grep", func() *registry.Result {
		res, err := e.run("grep", map[string]any{"pattern": "needle"})
		if err != nil {
			t.Error(err)
		}
		return res
	})
	if res != nil {
		mustContain(t, "grep output", res.Output, "a.txt")
	}
	for _, tool := range []string{"grep", "read"} {
		args := map[string]any{"pattern": "needle", "path": "pipe.txt"}
		if tool == "read" {
			args = map[string]any{"filePath": "pipe.txt"}
		}
		err := runWithin(t, 10*time.Second, tool, func() error { _, err := e.run(tool, args); return err })
		if err == nil || !strings.Contains(err.Error(), "named pipe") {
			t.Errorf("%s of a FIFO: err = %v, want it named a named pipe", tool, err)
		}
	}
	// A file checked as regular and swapped for a FIFO before the open.
	e2 := newEnv(t, "-- f.txt --\nneedle\n")
	tg, err := resolvePath(e2.ws, "", "filePath", "f.txt")
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(e2.path("f.txt"))
	if err := syscall.Mkfifo(e2.path("f.txt"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = runWithin(t, 10*time.Second, "openChecked", func() error {
		f, _, err := openChecked(tg)
		if err == nil {
			f.Close()
		}
		return err
	})
	if err == nil {
		t.Fatal("opened a FIFO swapped in for a checked file")
	}
}
