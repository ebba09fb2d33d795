package session

import (
	"slices"
	"testing"

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
