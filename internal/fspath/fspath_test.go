//go:build linux

package fspath

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
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

// TestRealStat: RealStat answers as Real and os.Lstat do, whether the openat2 shortcut
// answers (fast) or Real does.
func TestRealStat(t *testing.T) {
	bothWays(t, func(t *testing.T) {
		dir, out := realTemp(t), realTemp(t)
		must(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
		must(t, os.WriteFile(filepath.Join(dir, "sub", "f"), []byte("data"), 0o640))
		must(t, unix.Mkfifo(filepath.Join(dir, "sub", "fifo"), 0o600))
		must(t, os.Symlink("sub/f", filepath.Join(dir, "flink")))
		must(t, os.Symlink("sub", filepath.Join(dir, "rel")))
		must(t, os.Symlink(filepath.Join(out, "new.txt"), filepath.Join(dir, "dang")))
		must(t, os.Symlink("loop", filepath.Join(dir, "loop")))
		pr, pw, err := os.Pipe()
		must(t, err)
		defer pr.Close()
		defer pw.Close()

		cases := []struct {
			abs  string
			fast bool // clean, no symlink on the way: the openat2 shortcut answers
		}{
			{filepath.Join(dir, "sub", "f"), true},
			{filepath.Join(dir, "sub"), true},
			{filepath.Join(dir, "sub", "fifo"), true},
			{filepath.Clean(dir + "/sub/./../sub/f"), true},
			{"/", true},
			{filepath.Join(dir, "sub", "missing"), true},
			{filepath.Join(dir, "nodir", "missing"), true},
			{filepath.Join(dir, "flink"), false},
			{filepath.Join(dir, "rel", "f"), false},
			{filepath.Join(dir, "dang"), false},
			{filepath.Join(dir, "sub", "f", "under-a-file"), true},
			{filepath.Join(dir, "rel", "missing"), false},
			{filepath.Join(dir, "loop", "x"), false},
			{fmt.Sprintf("/proc/self/fd/%d", pr.Fd()), false},
			{"/proc/self/status", false},
			{fmt.Sprintf("/proc/%d/status", os.Getpid()), true},
			{dir + "/sub/../sub/f", false}, // not clean: off Real's contract, still the same answer
		}
		for _, c := range cases {
			if openat2Works() {
				fd, err := openat2(unix.AT_FDCWD, c.abs, unix.O_PATH, unix.RESOLVE_NO_SYMLINKS)
				if err == nil {
					unix.Close(fd)
				}
				answered := err == nil || errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR)
				if fast := answered && filepath.Clean(c.abs) == c.abs; fast != c.fast {
					t.Errorf("%s: shortcut %v (openat2: %v), the case means %v", c.abs, fast, err, c.fast)
				}
			}

			got, gotInfo, gotErr := RealStat(c.abs)
			want, wantErr := Real(c.abs)
			if got != want || (gotErr == nil) != (wantErr == nil) {
				t.Errorf("RealStat(%s) = %q, %v; Real = %q, %v", c.abs, got, gotErr, want, wantErr)
				continue
			}
			if wantErr != nil {
				if gotInfo != nil {
					t.Errorf("RealStat(%s) failed with info %v", c.abs, gotInfo)
				}
				continue
			}
			wantInfo, err := os.Lstat(want)
			if err != nil {
				if gotInfo != nil {
					t.Errorf("RealStat(%s) info = %v; os.Lstat: %v", c.abs, gotInfo, err)
				}
				continue
			}
			sameInfo(t, c.abs, gotInfo, wantInfo)
		}
	})
}

func sameInfo(t *testing.T, what string, got, want fs.FileInfo) {
	t.Helper()
	if got == nil {
		t.Errorf("%s: no info; want %s %v", what, want.Name(), want.Mode())
		return
	}
	if _, ok := got.(*FileInfo); reflect.TypeOf(got) != reflect.TypeOf(want) && !ok {
		t.Errorf("%s: info %T is neither os.Lstat's %T nor a *FileInfo", what, got, want)
	}
	if got.Name() != want.Name() || got.Size() != want.Size() || got.Mode() != want.Mode() || !got.ModTime().Equal(want.ModTime()) {
		t.Errorf("%s: info %s %d %v %v; os.Lstat %s %d %v %v", what,
			got.Name(), got.Size(), got.Mode(), got.ModTime(), want.Name(), want.Size(), want.Mode(), want.ModTime())
	}
	gs, ok := got.Sys().(*syscall.Stat_t)
	ws := want.Sys().(*syscall.Stat_t)
	if !ok || gs.Ino != ws.Ino || gs.Dev != ws.Dev {
		t.Errorf("%s: Sys() = %#v; os.Lstat's ino %d dev %d", what, got.Sys(), ws.Ino, ws.Dev)
	}
}

// BenchmarkRealStat: RealStat against the Real and os.Lstat it replaces, for an existing
// file four folders down (the openat2 shortcut), the same through a symlinked folder and a
// missing file (both fall back to Real).
func BenchmarkRealStat(b *testing.B) {
	top := b.TempDir()
	dir := filepath.Join(top, "a", "b", "c")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "f.txt"), nil, 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.Symlink("c", filepath.Join(top, "a", "b", "l")); err != nil {
		b.Fatal(err)
	}
	for _, p := range []struct{ name, abs string }{
		{"file", filepath.Join(dir, "f.txt")},
		{"symlink", filepath.Join(top, "a", "b", "l", "f.txt")},
		{"missing", filepath.Join(dir, "new.txt")},
	} {
		b.Run(p.name+"/Real+Lstat", func(b *testing.B) {
			for b.Loop() {
				r, err := Real(p.abs)
				if err != nil {
					b.Fatal(err)
				}
				os.Lstat(r)
			}
		})
		b.Run(p.name+"/RealStat", func(b *testing.B) {
			for b.Loop() {
				if _, _, err := RealStat(p.abs); err != nil {
					b.Fatal(err)
				}
			}
		})
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

// TestFileInfo: a FileInfo of a stat is os.Lstat's info of the same file, for every type.
func TestFileInfo(t *testing.T) {
	dir := realTemp(t)
	must(t, unix.Mkfifo(filepath.Join(dir, "fifo"), 0o600))
	must(t, os.WriteFile(filepath.Join(dir, "f"), []byte("data"), 0o640))
	must(t, syscall.Chmod(filepath.Join(dir, "f"), 0o6755))
	must(t, os.Mkdir(filepath.Join(dir, "d"), 0o1777))
	must(t, os.Symlink("f", filepath.Join(dir, "l")))
	ln, err := net.Listen("unix", filepath.Join(dir, "sock"))
	must(t, err)
	defer ln.Close()
	for _, p := range []string{filepath.Join(dir, "fifo"), filepath.Join(dir, "f"), filepath.Join(dir, "d"), filepath.Join(dir, "l"), filepath.Join(dir, "sock"), "/dev/null", "/"} {
		var st syscall.Stat_t
		must(t, syscall.Lstat(p, &st))
		want, err := os.Lstat(p)
		must(t, err)
		got := NewFileInfo(filepath.Base(p), &st)
		if got.Mode() != want.Mode() || got.IsDir() != want.IsDir() {
			t.Errorf("%s: mode %v, os.Lstat's %v", p, got.Mode(), want.Mode())
		}
		sameInfo(t, p, got, want)
	}
}

// withinRel is Within by filepath.Rel alone, as it was before its shortcut.
func withinRel(dir, p string) (string, bool) {
	if dir == "" {
		return "", false
	}
	rel, err := filepath.Rel(dir, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// FuzzWithin: Within's shortcut answers as filepath.Rel does, clean paths or not.
func FuzzWithin(f *testing.F) {
	for _, c := range [][2]string{
		{"/ws", "/ws"}, {"/ws", "/ws/a/b"}, {"/ws", "/ws2/a"}, {"/ws", "/ws/../etc"}, {"/ws/", "/ws/a"},
		{"/", "/a"}, {"/", "/"}, {"/ws", "/ws/"}, {"/ws", "/ws//a"}, {"/ws", "/ws/./a"}, {"/ws", "/ws/a/.."},
		{"/a/../b", "/a/../b/c"}, {"ws", "ws/a"}, {"/ws", "/ws/..a"}, {"", "/x"},
	} {
		f.Add(c[0], c[1])
	}
	f.Fuzz(func(t *testing.T, dir, p string) {
		rel, ok := Within(dir, p)
		wrel, wok := withinRel(dir, p)
		if rel != wrel || ok != wok {
			t.Fatalf("Within(%q, %q) = %q, %v; filepath.Rel says %q, %v", dir, p, rel, ok, wrel, wok)
		}
	})
}
