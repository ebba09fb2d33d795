package checkpoint

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestCheck: `toolsd checkpoints check` counts the folders the journal would watch (not the
// ignored ones), reads the limits and this user's use, and says whether the journal fits
// and, when it does not, what it costs and the sysctl that fixes it.
func TestCheck(t *testing.T) {
	ws := t.TempDir()
	for _, p := range []string{"a/b/c.txt", "a/d.txt", "e/f.txt", "node_modules/x/y.js"} {
		writeFile(t, filepath.Join(ws, p), "x", 0o644)
	}
	writeFile(t, filepath.Join(ws, ".gitignore"), "node_modules/\n", 0o644)
	out, err := Check(ws)
	if err != nil {
		t.Fatal(err)
	}
	// ws, a, a/b, e: node_modules is ignored.
	if !strings.Contains(out, "folders the change journal watches: 4 (of 7 files and folders not ignored)") {
		t.Errorf("counts:\n%s", out)
	}
	if !strings.Contains(out, "limit") || !strings.Contains(out, "change journal: ") {
		t.Errorf("report:\n%s", out)
	}
	full := checkReport(ws, 6510, 106510, [2]int{8192, 128}, inotifyUse{watches: 3000, instances: 128})
	for _, want := range []string{"does NOT fit", "no inotify instance is left", "walks the whole workspace (106510 files and folders)",
		"fix: sudo sysctl fs.inotify.max_user_watches=524288", "fix: sudo sysctl fs.inotify.max_user_instances=1024"} {
		if !strings.Contains(full, want) {
			t.Errorf("over the limits, the report lacks %q:\n%s", want, full)
		}
	}
	if ok := checkReport(ws, 6510, 106510, [2]int{524288, 128}, inotifyUse{watches: 3000, instances: 3}); !strings.Contains(ok, "fits") || strings.Contains(ok, "fix:") {
		t.Errorf("within the limits:\n%s", ok)
	}
	if _, err := Check(filepath.Join(ws, "missing")); err == nil {
		t.Error("a missing workspace: no error")
	}
}
