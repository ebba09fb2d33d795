//go:build unix

package attach

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A process of another user is refused before a byte it sends is read: SO_PEERCRED, checked
// on a socket that user can reach (the runtime folder is opened up for the test only).
func TestOtherUserRefused(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run a process as nobody")
	}
	o := startOwner(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	anchor := o.editor(ctx, "anchor", false) // keeps the owner from its grace meanwhile
	defer anchor.conn.Close()
	for _, p := range []string{filepath.Dir(o.paths.Dir), o.paths.Dir} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(o.paths.Socket, 0o666); err != nil {
		t.Fatal(err)
	}
	// A copy of this test binary that nobody may run.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "nobody")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	_ = os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "client")
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Env = []string{dialEnv + "=" + o.paths.Socket}
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("client as nobody: %v\n%s", err, out)
	}
	if !strings.HasPrefix(string(out), "uid 65534: read 0 bytes") {
		t.Fatalf("another user's client got an answer: %s", out)
	}
	if !strings.Contains(o.log.String(), "refused a connection from another user") || !strings.Contains(o.log.String(), "uid=65534") {
		t.Fatalf("no refusal logged:\n%s", o.log)
	}
	if strings.Contains(o.log.String(), "did not say hello") {
		t.Fatalf("the owner read from another user's connection:\n%s", o.log)
	}
}

// The runtime folder must be ours and private.
func TestRuntimeDirChecks(t *testing.T) {
	base := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", base)
	if err := os.Symlink(t.TempDir(), filepath.Join(base, "toolsd")); err != nil {
		t.Fatal(err)
	}
	if _, err := RuntimeDir(); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("a symlinked runtime folder: %v", err)
	}
	base2 := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", base2)
	if err := os.Mkdir(filepath.Join(base2, "toolsd"), 0o777); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(filepath.Join(base2, "toolsd"), 0o777)
	dir, err := RuntimeDir()
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Fatalf("an open runtime folder was left %v", fi.Mode().Perm())
	}
	if os.Getuid() == 0 {
		if err := os.Chown(dir, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if _, err := RuntimeDir(); err == nil || !strings.Contains(err.Error(), "belongs to uid 65534") {
			t.Fatalf("another user's runtime folder: %v", err)
		}
	}
}
