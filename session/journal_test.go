package session

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/toolsd/toolsd/checkpoint"
	"github.com/toolsd/toolsd/protocol"
)

// TestJournalStatusReachesEditors: when the checkpoints' journal stops serving (the kernel
// refused an inotify watch), every attached editor hears it at once as a warning with the
// fix, tools/resolve lists it for a client that comes later, and it clears when the journal
// serves again. (The tracker's side, with the refusals injected, is checkpoint's
// TestJournalRefusedSaidAndRecovered.)
func TestJournalStatusReachesEditors(t *testing.T) {
	w := openTestWorkspace(t)
	c, s := attach(t, w, "window", protocol.ClientEditor, true)
	off := checkpoint.JournalStatus{Off: "watches", Message: "Checkpoints: … walks the whole workspace …", Fix: "sudo sysctl fs.inotify.max_user_watches=524288"}
	want := protocol.Diagnostic{Path: protocol.DiagnosticCheckpoints, Severity: "warning", Message: off.Message, Fix: off.Fix}
	w.journalChanged(off)
	s.waitFor(t, "tools/changed with the checkpoints warning", func(s *fakeSink) bool {
		return len(s.changed) > 0 && slices.Contains(s.changed[len(s.changed)-1].Diagnostics, want)
	})
	if res := c.Resolve(protocol.ResolveParams{SessionID: "s1"}); !slices.Contains(res.Diagnostics, want) {
		t.Fatalf("tools/resolve diagnostics: %+v", res.Diagnostics)
	}
	w.journalChanged(checkpoint.JournalStatus{})
	s.waitFor(t, "tools/changed without it", func(s *fakeSink) bool {
		if len(s.changed) == 0 {
			return false
		}
		return !slices.ContainsFunc(s.changed[len(s.changed)-1].Diagnostics, func(d protocol.Diagnostic) bool { return d.Path == protocol.DiagnosticCheckpoints })
	})
}

// inotifyFDs counts this process's inotify instances.
func inotifyFDs(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	n := 0
	for _, fd := range fds {
		if l, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && l == "anon_inode:inotify" {
			n++
		}
	}
	return n
}

// TestOneInotifyInstance: a workspace's watchers (its config, its project tools) and the
// checkpoints' journal take one inotify instance between them (the user has 128 for every
// program), and give it back when the workspace closes.
func TestOneInotifyInstance(t *testing.T) {
	before := inotifyFDs(t)
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	w, err := OpenWorkspace(context.Background(), WorkspaceOptions{Folder: t.TempDir(), StorePath: filepath.Join(t.TempDir(), "s.db")})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.Checkpoints().Ready(): // the journal starts with the first look
	case <-time.After(30 * time.Second):
		t.Fatal("the first look did not end")
	}
	if w.Checkpoints().Journal().Off != "" {
		t.Fatalf("no journal: %+v", w.Checkpoints().Journal())
	}
	if n := inotifyFDs(t) - before; n != 1 {
		t.Errorf("the workspace holds %d inotify instances, want 1", n)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if n := inotifyFDs(t) - before; n != 0 {
		t.Errorf("%d inotify instances left after Close", n)
	}
}
