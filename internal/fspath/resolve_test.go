package fspath

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolsd/toolsd/internal/wine"
)

func TestResolve(t *testing.T) {
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
	must(os.MkdirAll(filepath.Join(out, "deep", "er"), 0o755))
	must(os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	wine.Symlink(t, filepath.Join(out, "deep", "er"), filepath.Join(dir, "link")) // absolute, outside
	wine.Symlink(t, "sub", filepath.Join(dir, "rel"))                             // relative, inside
	wine.Symlink(t, "../..", filepath.Join(dir, "sub", "up2"))                    // relative to its own folder
	wine.Symlink(t, "loop", filepath.Join(dir, "loop"))
	cases := []struct {
		from, p string
		links   map[string]string
		want    string
		fails   bool
	}{
		{from: dir, p: "sub/x", want: filepath.Join(dir, "sub", "x")},
		// The kernel follows link before "..": the parent of its target, not dir.
		{from: dir, p: "link/..", want: filepath.Join(out, "deep")},
		{from: dir, p: "link/../../secret", want: filepath.Join(out, "secret")},
		{from: dir, p: "rel/../sub", want: filepath.Join(dir, "sub")},
		{from: dir, p: "sub/up2", want: filepath.Dir(dir)},
		{from: filepath.Join(dir, "sub"), p: "../link/x", want: filepath.Join(out, "deep", "er", "x")},
		{from: "/", p: dir + "/link/..", want: filepath.Join(out, "deep")},
		{from: dir, p: "missing/../sub", want: filepath.Join(dir, "sub")},
		{from: dir, p: "loop/x", fails: true},
		// A link the command line creates before it uses it: its target is read from the
		// link's own folder.
		{from: dir, p: "made/x", links: map[string]string{filepath.Join(dir, "made"): "../.."}, want: filepath.Join(filepath.Dir(filepath.Dir(dir)), "x")},
		{from: dir, p: "sub/made/..", links: map[string]string{filepath.Join(dir, "sub", "made"): out}, want: filepath.Dir(out)},
	}
	for _, c := range cases {
		got, err := Resolve(c.from, c.p, c.links)
		if c.fails {
			if !errors.Is(err, ErrLoop) {
				t.Errorf("Resolve(%s) = %q, %v; want a loop error", c.p, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("Resolve(%s, %s) = %q, %v; want %q", c.from, c.p, got, err, c.want)
		}
	}
}
