package wine

import (
	"io/fs"
	"os"
	"testing"
)

// SkipPrefix starts the reason of every skip under wine (scripts/wine-test.sh tells these
// apart from a test's failures).
const SkipPrefix = "under wine: "

// Skip skips t under wine, for why: a limit of wine's, never of Windows'. Elsewhere it does
// nothing.
func Skip(t testing.TB, why string) {
	t.Helper()
	if Under() {
		t.Skip(SkipPrefix + why)
	}
}

// Symlink is os.Symlink(old, new) for a test, failing it on an error; under wine 8, whose
// CreateSymbolicLinkW reports success and makes nothing, it skips the test when no link is
// there.
func Symlink(t testing.TB, old, new string) {
	t.Helper()
	if err := os.Symlink(old, new); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(new); Under() && (err != nil || fi.Mode()&fs.ModeSymlink == 0) {
		t.Skip(SkipPrefix + "CreateSymbolicLink reports success and makes no link")
	}
}
