package fspath

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func TestReal(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	out, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "sub", "f"), nil, 0o644))
	must(os.Symlink(out, filepath.Join(dir, "escape")))                         // a folder outside
	must(os.Symlink(filepath.Join(out, "new.txt"), filepath.Join(dir, "dang"))) // dangling, outside
	must(os.Symlink("sub", filepath.Join(dir, "rel")))                          // relative, inside
	must(os.Symlink("loop", filepath.Join(dir, "loop")))

	cases := []struct {
		in, want string
		fails    bool
	}{
		{in: "sub/f", want: filepath.Join(dir, "sub", "f")},
		{in: "sub/missing/deeper", want: filepath.Join(dir, "sub", "missing", "deeper")},
		{in: "escape/x", want: filepath.Join(out, "x")},
		{in: "dang", want: filepath.Join(out, "new.txt")},
		{in: "rel/f", want: filepath.Join(dir, "sub", "f")},
		{in: "sub/f/under-a-file", want: filepath.Join(dir, "sub", "f", "under-a-file")},
		{in: "loop/x", fails: true},
	}
	for _, c := range cases {
		got, err := Real(filepath.Join(dir, c.in))
		if c.fails {
			if err == nil {
				t.Errorf("Real(%s) = %s, want an error", c.in, got)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("Real(%s) = %q, %v; want %q", c.in, got, err, c.want)
		}
		// The kernel answers for what exists, and agrees with the walk by hand.
		r, ok := kernelPath(filepath.Join(dir, c.in))
		if _, err := os.Stat(filepath.Join(dir, c.in)); (err == nil) != ok || ok && r != c.want {
			t.Errorf("kernelPath(%s) = %q, %v (exists: %v); want %q", c.in, r, ok, err == nil, c.want)
		}
	}
	// A magic link is not a path: Real walks it by hand, as it did before it asked the kernel.
	pr, pw, err := os.Pipe()
	must(err)
	defer pr.Close()
	defer pw.Close()
	if r, ok := kernelPath(fmt.Sprintf("/proc/self/fd/%d", pr.Fd())); ok {
		t.Errorf("kernelPath of a pipe's fd link = %q, want no answer", r)
	}
}

// BenchmarkReal: the real path of an existing file four folders down.
func BenchmarkReal(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "a", "b", "c")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	f := filepath.Join(dir, "f.txt")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Real(f); err != nil {
			b.Fatal(err)
		}
	}
}

func TestWithin(t *testing.T) {
	cases := []struct {
		dir, p, rel string
		ok          bool
	}{
		{"/ws", "/ws", ".", true},
		{"/ws", "/ws/a/b", "a/b", true},
		{"/ws", "/ws2/a", "", false},
		{"/ws", "/", "", false},
		{"/ws", "/ws/../etc", "", false},
		{"", "/ws", "", false},
		{"/ws", "/ws/..a", "..a", true},
	}
	for _, c := range cases {
		rel, ok := Within(c.dir, filepath.Clean(c.p))
		if ok != c.ok || rel != c.rel {
			t.Errorf("Within(%q, %q) = %q, %v; want %q, %v", c.dir, c.p, rel, ok, c.rel, c.ok)
		}
	}
}
