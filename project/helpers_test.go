//go:build unix

package project_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
	"golang.org/x/tools/txtar"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// writeTree copies a txtar archive into dir; files ending in .sh are made executable.
// "$DIR" in contents becomes dir.
func writeTree(t *testing.T, dir, archive string) {
	t.Helper()
	for _, f := range txtar.Parse([]byte(archive)).Files {
		p := filepath.Join(dir, f.Name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(f.Name, ".sh") {
			mode = 0o755
		}
		data := strings.ReplaceAll(string(f.Data), "$DIR", dir)
		if err := os.WriteFile(p, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
	}
}
