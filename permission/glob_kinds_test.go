package permission

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolsd/toolsd/internal/fsopen/fsopentest"
)

// TestGlobThroughSpecialFiles: a glob whose folder part names a FIFO, a link to one, a link
// to /dev/zero or a socket (`ls fifo/*`) is expanded at once, matching nothing there, and so
// is the shell line that holds it: the analysis never opens such a thing as a folder.
func TestGlobThroughSpecialFiles(t *testing.T) {
	for _, k := range fsopentest.Kinds(1 << 20) {
		if k.Name == "folder" || k.Name == "oversized" {
			continue
		}
		t.Run(k.Name, func(t *testing.T) {
			ws := t.TempDir()
			k.Make(t, filepath.Join(ws, "x"))
			if err := os.WriteFile(filepath.Join(ws, "y"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			var got []string
			fsopentest.Promptly(t, 10*time.Second, "globMatches", func() { got = globMatches(ws, []string{"x", "*"}, maxGlob) })
			if len(got) != 0 {
				t.Fatalf("matches %v", got)
			}
			e, err := NewEngine(nil)
			if err != nil {
				t.Fatal(err)
			}
			fsopentest.Promptly(t, 10*time.Second, "DecideShell", func() { e.DecideShell("s", "", "ls x/* y", ws, ws) })
		})
	}
}
