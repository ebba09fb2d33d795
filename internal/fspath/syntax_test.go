package fspath

import (
	"errors"
	"testing"
)

var windows = syntax{windows: true}

func TestVolume(t *testing.T) {
	cases := []struct{ p, vol string }{
		{`C:\x`, `C:`},
		{`c:x`, `c:`},
		{`C:`, `C:`},
		{`\x`, ``},
		{`x\y`, ``},
		{`\\server\share\x`, `\\server\share`},
		{`//server/share/x`, `//server/share`},
		{`\\server`, `\\server`},
		{`\\?\C:\x`, `\\?\C:`},
		{`\\.\pipe\name`, `\\.\pipe`},
		{`\??\C:\x`, `\??\C:`},
		{`\\?\UNC\server\share\x`, `\\?\UNC\server\share`},
		{`\\?\Volume{1234}\x`, `\\?\Volume{1234}`},
		{`1:\x`, ``},
	}
	for _, c := range cases {
		if got := c.p[:windows.volume(c.p)]; got != c.vol {
			t.Errorf("volume(%s) = %s; want %s", c.p, got, c.vol)
		}
	}
	if n := host.volume(`C:\x`); host.windows != (n == 2) {
		t.Errorf("host volume(C:\\x) = %d on windows=%v", n, host.windows)
	}
}

// TestResolveWindows runs Resolve's logic with Windows' rules on Windows-shaped paths that
// exist nowhere, the links given as links a command line creates.
func TestResolveWindows(t *testing.T) {
	ws := `C:\ws`
	cases := []struct {
		from, p string
		links   map[string]string
		want    string
	}{
		{from: ws, p: `a\b`, want: `C:\ws\a\b`},
		{from: ws, p: `a/b\..\c`, want: `C:\ws\a\c`},
		{from: ws, p: `..\..\..`, want: `C:\`},
		{from: ws, p: `D:\x`, want: `D:\x`},
		{from: ws, p: `d:\x`, want: `D:\x`},
		{from: ws, p: `\x`, want: `C:\x`},
		{from: `D:\w`, p: `\x`, want: `D:\x`},
		{from: ws, p: `C:x`, want: `C:\ws\x`},
		{from: ws, p: `c:x`, want: `C:\ws\x`},
		{from: ws, p: `D:x`, want: `D:\x`},
		{from: ws, p: `\\server\share\x\..\..`, want: `\\server\share\`},
		{from: ws, p: `\\?\C:\ws\x`, want: `C:\ws\x`},
		{from: ws, p: `\\?\UNC\server\share\x`, want: `\\server\share\x`},
		{from: ws, p: `\\.\pipe\p`, want: `\\.\pipe\p`},
		{from: ws, p: `\\.\c:\ws`, want: `C:\ws`},
		{from: ws, p: `//./UNC/server/share/x`, want: `\\server\share\x`},
		{from: `\\server\share\ws`, p: `\x`, want: `\\server\share\x`},
		{from: `\\server\share\ws`, p: `..\..`, want: `\\server\share\`},
		// Links' targets: absolute ones replace where the path has led, volume and all.
		{from: ws, p: `l\y`, links: map[string]string{`C:\ws\l`: `D:\t`}, want: `D:\t\y`},
		{from: ws, p: `l\..\y`, links: map[string]string{`C:\ws\l`: `D:\t\u`}, want: `D:\t\y`},
		{from: ws, p: `l\y`, links: map[string]string{`C:\ws\l`: `C:\t`}, want: `C:\t\y`},
		{from: ws, p: `l\y`, links: map[string]string{`C:\ws\l`: `\\server\share\t`}, want: `\\server\share\t\y`},
		{from: ws, p: `l\y`, links: map[string]string{`C:\ws\l`: `\\?\D:\t`}, want: `D:\t\y`},
		{from: ws, p: `sub\l\y`, links: map[string]string{`C:\ws\sub\l`: `\t`}, want: `C:\t\y`},
		{from: ws, p: `sub\l\y`, links: map[string]string{`C:\ws\sub\l`: `..\t`}, want: `C:\ws\t\y`},
		{from: ws, p: `sub\l\y`, links: map[string]string{`C:\ws\sub\l`: `C:t`}, want: `C:\ws\sub\t\y`},
		{from: `\\server\share\ws`, p: `l\y`, links: map[string]string{`\\server\share\ws\l`: `\t`}, want: `\\server\share\t\y`},
	}
	for _, c := range cases {
		got, err := windows.resolve(c.from, c.p, c.links)
		if err != nil || got != c.want {
			t.Errorf("resolve(%s, %s, %v) = %q, %v; want %q", c.from, c.p, c.links, got, err, c.want)
		}
	}
	loop := map[string]string{`C:\ws\a`: `C:\ws\b`, `C:\ws\b`: `a`}
	if got, err := windows.resolve(ws, `a\x`, loop); !errors.Is(err, ErrLoop) {
		t.Errorf("resolve through a loop = %q, %v; want ErrLoop", got, err)
	}
}

// TestResolveUnixSyntax: names that would be volumes on Windows are plain names on Unix.
func TestResolveUnixSyntax(t *testing.T) {
	unix := syntax{}
	cases := []struct {
		from, p string
		links   map[string]string
		want    string
	}{
		{from: "/nowhere/ws", p: `C:\x`, want: `/nowhere/ws/C:\x`},
		{from: "/nowhere/ws", p: `C:x/../y`, want: `/nowhere/ws/y`},
		{from: "/nowhere/ws", p: `//srv/share`, want: `/srv/share`},
		{from: "/nowhere/ws", p: `l/y`, links: map[string]string{"/nowhere/ws/l": `C:\t`}, want: `/nowhere/ws/C:\t/y`},
		{from: "/", p: `../..`, want: `/`},
	}
	for _, c := range cases {
		got, err := unix.resolve(c.from, c.p, c.links)
		if err != nil || got != c.want {
			t.Errorf("resolve(%s, %s) = %q, %v; want %q", c.from, c.p, got, err, c.want)
		}
	}
}

func TestBeneath(t *testing.T) {
	for _, c := range []struct {
		rel           string
		unix, windows bool // stays beneath
	}{
		{"a/b", true, true},
		{".", true, true},
		{"a/../b", false, false},
		{"", false, false},
		{"/a", false, false},
		{`a\..\b`, true, false},
		{`\a`, true, false},
		{`C:a`, true, false},
		{`C:\a`, true, false},
		{`\\server\share\a`, true, false},
		{"a:x", true, false}, // a drive, not a stream
		{"ab:stream", true, true},
	} {
		if got := (syntax{}).beneath(c.rel) == nil; got != c.unix {
			t.Errorf("unix: beneath(%q) = %v", c.rel, got)
		}
		if got := windows.beneath(c.rel) == nil; got != c.windows {
			t.Errorf("windows: beneath(%q) = %v", c.rel, got)
		}
	}
}
