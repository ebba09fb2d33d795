//go:build unix

package project_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// writeTree copies a txtar archive into dir; files ending in .sh are made executable.
// "$DIR" in contents becomes dir.
func writeTree(t *testing.T, dir, archive string) {
	t.Helper()
	for _, f := range parseTxtar(archive) {
		p := filepath.Join(dir, f.name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(f.name, ".sh") {
			mode = 0o755
		}
		data := strings.ReplaceAll(f.data, "$DIR", dir)
		if err := os.WriteFile(p, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
	}
}

type txtarFile struct{ name, data string }

// parseTxtar reads the "-- name --" sections of a txtar archive (the go-internal package
// would pull golang.org/x/tools into go.mod for this).
func parseTxtar(a string) []txtarFile {
	var out []txtarFile
	for _, line := range strings.SplitAfter(a, "\n") {
		if strings.HasPrefix(line, "-- ") && strings.HasSuffix(line, " --\n") {
			out = append(out, txtarFile{name: strings.TrimSuffix(strings.TrimPrefix(line, "-- "), " --\n")})
			continue
		}
		if len(out) > 0 {
			out[len(out)-1].data += line
		}
	}
	return out
}
