package fspath

import (
	"path/filepath"
	"strings"
)

// forceComponents has no effect on Windows, where Open always walks the components.
var forceComponents bool

// haveNoSymlinks is false: Windows opens each component from the folder handle before it
// (internal/posix: NtCreateFile with OBJ_DONT_REPARSE and FILE_OPEN_REPARSE_POINT), which
// refuses a link, a junction or any other reparse point at every step.
func haveNoSymlinks() bool { return false }

func openNoSymlinks(dirfd int, path string, flags int, beneath bool) (int, error) {
	panic("fspath: openNoSymlinks on Windows")
}

// splitRoot splits the absolute path abs into the volume's root folder (`C:\`, or
// `\\server\share\`) and the slash-separated rest.
func splitRoot(abs string) (root, rest string) {
	vol := filepath.VolumeName(abs)
	return vol + `\`, filepath.ToSlash(strings.TrimLeft(abs[len(vol):], `\/`))
}
