package fspath

import (
	"runtime"
	"slices"
	"strings"
)

// syntax is how one system spells a path: its separator, and on Windows the volume a path may
// start with (`C:`, `\\server\share`, `\\?\C:`) and the ways it may be less than absolute (a
// path rooted on the current volume, `\x`, or relative to a drive's current folder, `C:x`).
// It is a value, not the build's constants, so that the resolution's Windows rules are tested
// on every system with Windows-shaped strings.
type syntax struct {
	windows bool
}

// host is the syntax of the system the binary runs on.
var host = syntax{windows: runtime.GOOS == "windows"}

func (s syntax) sep() string {
	if s.windows {
		return `\`
	}
	return "/"
}

func (s syntax) isSep(c byte) bool {
	return c == '/' || s.windows && c == '\\'
}

// volume is the length of the volume name p starts with: 0 on Unix and for a path with
// none; on Windows a drive (`C:`), a share (`\\server\share`), or a device path's prefix and
// what it names (`\\?\C:`, `\\.\pipe`, `\??\C:`, `\\?\UNC\server\share`), as
// filepath.VolumeName reads them.
func (s syntax) volume(p string) int {
	if !s.windows {
		return 0
	}
	if len(p) >= 2 && p[1] == ':' && isLetter(p[0]) {
		return 2
	}
	// `\\?\`, `\\.\` and `\??\` (either slash in the first three places) start a device path.
	if len(p) >= 4 && s.isSep(p[0]) && s.isSep(p[3]) &&
		(s.isSep(p[1]) && (p[2] == '?' || p[2] == '.') || p[1] == '?' && p[2] == '?') {
		n := 4
		if len(p) >= 8 && strings.EqualFold(p[4:7], "UNC") && s.isSep(p[7]) {
			return s.afterNames(p, 8, 2) // \\?\UNC\server\share
		}
		return s.afterNames(p, n, 1) // \\?\C:, \\.\pipe, \\?\Volume{…}
	}
	if len(p) >= 2 && s.isSep(p[0]) && s.isSep(p[1]) {
		return s.afterNames(p, 2, 2) // \\server\share
	}
	return 0
}

// afterNames is the index in p after the count names (separated by one separator each) that
// start at i.
func (s syntax) afterNames(p string, i, count int) int {
	for ; count > 0; count-- {
		for i < len(p) && !s.isSep(p[i]) {
			i++
		}
		if count > 1 && i < len(p) {
			i++
		}
	}
	return i
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// canonicalVolume spells the volume vol as a clean Win32 path does: a device path to a drive
// or a share (`\\?\C:`, `\\.\C:`, `\??\UNC\server\share`) as the drive or share itself, the drive's
// letter in upper case, a share with backslashes. Other device paths (`\\.\pipe`,
// `\\?\Volume{…}`) stay as they are, with backslashes.
func (s syntax) canonicalVolume(vol string) string {
	if !s.windows || vol == "" {
		return vol
	}
	vol = strings.ReplaceAll(vol, "/", `\`)
	if len(vol) > 4 && (vol[:4] == `\\?\` || vol[:4] == `\\.\` || vol[:4] == `\??\`) {
		rest := vol[4:]
		if len(rest) == 2 && rest[1] == ':' && isLetter(rest[0]) {
			vol = rest
		} else if len(rest) > 4 && strings.EqualFold(rest[:4], `UNC\`) {
			vol = `\\` + rest[4:]
		}
	}
	if len(vol) == 2 && vol[1] == ':' {
		vol = strings.ToUpper(vol)
	}
	return vol
}

// start is where the path p, read from the folder cur (a clean absolute path), starts, and
// the rest of p to follow from there. A relative path starts at cur; an absolute one at its
// volume's root. On Windows a path rooted without a volume (`\x`) starts at the root of cur's
// volume, and a drive-relative one (`C:x`) at cur when cur is on that drive; on another
// drive at that drive's root, for the folder a process last used there is not known here
// (so the answer is outside any workspace on cur's drive, which the callers treat with
// more care, never less).
func (s syntax) start(cur, p string) (from, rest string) {
	n := s.volume(p)
	vol, rest := s.canonicalVolume(p[:n]), p[n:]
	rooted := rest != "" && s.isSep(rest[0])
	switch {
	case n == 0 && !rooted:
		return cur, rest
	case n == 0:
		return cur[:s.volume(cur)] + s.sep(), rest
	case rooted || len(vol) != 2: // C:\x, or a share or a device, which are never relative
		return vol + s.sep(), rest
	case strings.EqualFold(vol, cur[:s.volume(cur)]):
		return cur, rest
	default:
		return vol + s.sep(), rest
	}
}

// join is the clean path of name (one component, not "." or "..") in the folder cur (a clean
// absolute path).
func (s syntax) join(cur, name string) string {
	if strings.HasSuffix(cur, s.sep()) {
		return cur + name
	}
	return cur + s.sep() + name
}

// parent is the folder holding cur (a clean absolute path); a root is its own parent.
func (s syntax) parent(cur string) string {
	v := s.volume(cur)
	i := strings.LastIndex(cur[v:], s.sep())
	if i <= 0 {
		return cur[:v] + s.sep()
	}
	return cur[:v+i]
}

// split is p's names, separated by any of the syntax's separators (some of them empty).
func (s syntax) split(p string) []string {
	if s.windows {
		p = strings.ReplaceAll(p, `\`, "/")
	}
	return strings.Split(p, "/")
}

// beneath refuses (ErrNotBeneath) a path that does not stay below the folder it is read from:
// empty, rooted, with a volume (on Windows `C:x` too), or with a ".." component.
func (s syntax) beneath(rel string) error {
	if rel == "" || s.isSep(rel[0]) || s.volume(rel) > 0 {
		return ErrNotBeneath
	}
	if slices.Contains(s.split(rel), "..") {
		return ErrNotBeneath
	}
	return nil
}
