package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestManagedPolicyOwner: the managed policy counts only when root owns its folder and file
// and no one else may write them; otherwise it is ignored with a diagnostic.
func TestManagedPolicyOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make root-owned and other-owned files")
	}
	const rules = `{"permission": {"bash": {"git push *": "deny"}}, "limits": {"truncateLines": 10}}`
	setup := func(t *testing.T) (dir, file string) {
		dir = filepath.Join(t.TempDir(), "toolsd")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		file = filepath.Join(dir, "config.json")
		if err := os.WriteFile(file, []byte(rules), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir, file
	}
	t.Run("root-owned", func(t *testing.T) {
		_, file := setup(t)
		l, diags := loadManaged(file, nil)
		if l == nil || string(l.Settings.Permission) != `{"bash": {"git push *": "deny"}}` {
			t.Fatalf("layer %+v, diags %+v", l, diags)
		}
		if l.Settings.Limits.TruncateLines != 0 {
			t.Errorf("a managed limit reached the settings: %+v", l.Settings.Limits)
		}
		if len(diags) != 1 || !strings.Contains(diags[0].Message, `"limits" is ignored in the managed policy`) || diags[0].Line != 1 {
			t.Errorf("diags = %+v, want one warning about limits", diags)
		}
	})
	refused := []struct {
		name string
		mess func(dir, file string) error
		want string
	}{
		{"folder owned by another uid", func(dir, _ string) error { return os.Chown(dir, 1234, 0) }, "is owned by uid 1234, not root"},
		{"file owned by another uid", func(_, file string) error { return os.Chown(file, 1234, 1234) }, "is owned by uid 1234, not root"},
		{"file writable by others", func(_, file string) error { return os.Chmod(file, 0o646) }, "may be written by anyone"},
		{"folder writable by a group", func(dir, _ string) error {
			if err := os.Chown(dir, 0, 1234); err != nil {
				return err
			}
			return os.Chmod(dir, 0o775)
		}, "may be written by group 1234"},
		{"file a symlink to another's file", func(dir, file string) error {
			other := filepath.Join(filepath.Dir(dir), "mine.json")
			if err := os.WriteFile(other, []byte(rules), 0o644); err != nil {
				return err
			}
			if err := os.Chown(other, 1234, 1234); err != nil {
				return err
			}
			os.Remove(file)
			return os.Symlink(other, file)
		}, "is owned by uid 1234, not root"},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			dir, file := setup(t)
			if err := tc.mess(dir, file); err != nil {
				t.Fatal(err)
			}
			l, diags := loadManaged(file, nil)
			if l != nil {
				t.Errorf("the policy was read: %+v", l)
			}
			if len(diags) != 1 || diags[0].Severity != "error" || !strings.Contains(diags[0].Message, tc.want) || !strings.Contains(diags[0].Message, "the managed policy is ignored") {
				t.Errorf("diags = %+v, want an error saying %q", diags, tc.want)
			}
		})
	}
	t.Run("absent", func(t *testing.T) {
		l, diags := loadManaged(filepath.Join(t.TempDir(), "none", "config.json"), nil)
		if l != nil || len(diags) != 0 {
			t.Errorf("absent policy: %+v %+v", l, diags)
		}
	})
}

// TestManagedDirFixed: the managed folder is the system's, and no environment variable
// moves it.
func TestManagedDirFixed(t *testing.T) {
	for _, v := range []string{"XDG_CONFIG_HOME", "XDG_CONFIG_DIRS", "HOME", "TOOLSD_MANAGED_DIR"} {
		t.Setenv(v, t.TempDir())
	}
	if got := ManagedPath(""); got != "/etc/toolsd/config.json" && got != "/Library/Application Support/toolsd/config.json" {
		t.Errorf("ManagedPath = %s", got)
	}
}
