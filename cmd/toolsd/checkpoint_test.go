//go:build unix

package main_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/toolsd/toolsd/internal/harness"
	"github.com/toolsd/toolsd/protocol"
)

var allowAll = map[string]any{"permission": map[string]any{"bash": "allow", "edit": "allow", "read": "allow", "external_directory": "allow"}}

// snapshot is every path of a folder (but .git) with its mode and content or link target.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		if rel == ".git" {
			return filepath.SkipDir
		}
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			tgt, _ := os.Readlink(p)
			out[rel] = "link -> " + tgt
		case fi.IsDir():
			out[rel] = fmt.Sprintf("dir %o", fi.Mode().Perm())
		default:
			b, _ := os.ReadFile(p)
			out[rel] = fmt.Sprintf("file %o %q", fi.Mode().Perm(), b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func snapDiff(a, b map[string]string) string {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	var ks []string
	for k := range keys {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	var d strings.Builder
	for _, k := range ks {
		if a[k] != b[k] {
			fmt.Fprintf(&d, "  %s: %q != %q\n", k, a[k], b[k])
		}
	}
	return d.String()
}

func (e *env) changes(sessionID, callID string) protocol.CallsChangesResult {
	e.t.Helper()
	var res protocol.CallsChangesResult
	if err := e.d.Call(e.ctx, protocol.MethodCallsChanges, protocol.CallsChangesParams{SessionID: sessionID, CallID: callID, Contents: true}, &res); err != nil {
		e.t.Fatalf("calls/changes %s: %v", callID, err)
	}
	return res
}

func (e *env) revert(p protocol.CallsRevertParams) protocol.CallsRevertResult {
	e.t.Helper()
	var res protocol.CallsRevertResult
	if err := e.d.Call(e.ctx, protocol.MethodCallsRevert, p, &res); err != nil {
		e.t.Fatalf("calls/revert %s: %v", p.CallID, err)
	}
	return res
}

func (e *env) run(callID, tool string, a map[string]any) *protocol.ExecuteResult {
	e.t.Helper()
	var kv []any
	for k, v := range a {
		kv = append(kv, k, v)
	}
	p := protocol.ExecuteParams{CallID: callID, Tool: tool, Args: args(kv...)}
	if tool == "apply_patch" {
		p.Model = &protocol.Model{ProviderID: "openai", ModelID: "gpt-5"}
	}
	res, err := e.execute(p)
	if err != nil {
		e.t.Fatalf("%s: %v", callID, err)
	}
	if res.Status != protocol.StatusCompleted {
		e.t.Fatalf("%s: %s %s", callID, res.Status, res.Error)
	}
	return res
}

func statuses(res protocol.CallsChangesResult) map[string]string {
	out := map[string]string{}
	for _, f := range res.Files {
		out[f.Path] = f.Status
	}
	return out
}

// TestCheckpointsThroughEachTool: bash, write, edit and apply_patch calls through the real
// daemon each leave a checkpoint; calls/changes describes it with a diff, calls/revert
// restores the workspace byte for byte (and mode), a revert of the whole session goes back
// to the start, and a revert can itself be reverted.
func TestCheckpointsThroughEachTool(t *testing.T) {
	e := newEnv(t, envOpts{options: allowAll, files: map[string]string{
		"a.txt": "alpha\nbeta\n", "b.txt": "bee\n", "dir/c.txt": "see\n", "tool.sh": "#!/bin/sh\n", "patch/old.txt": "old\nline\n", "patch/gone.txt": "bye\n",
	}})
	start := snapshot(t, e.ws)

	e.run("sh", "bash", map[string]any{"command": "sed -i s/beta/BETA/ a.txt && rm -rf dir && mv b.txt moved.txt && chmod +x tool.sh && printf '\\000\\001' > bin.dat"})
	got := statuses(e.changes("s1", "sh"))
	want := map[string]string{"a.txt": "modified", "dir": "deleted", "dir/c.txt": "deleted", "moved.txt": "renamed", "tool.sh": "modified", "bin.dat": "added"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("bash's changes: %v, want %v", got, want)
	}
	afterShell := snapshot(t, e.ws)

	e.run("wr", "write", map[string]any{"filePath": "new.txt", "content": "new\n"})
	e.run("ed", "edit", map[string]any{"filePath": "a.txt", "oldString": "alpha", "newString": "ALPHA"})
	e.run("ap", "apply_patch", map[string]any{"patchText": "*** Begin Patch\n*** Add File: patch/added.txt\n+added\n*** Update File: patch/old.txt\n*** Move to: patch/renamed.txt\n@@\n old\n-line\n+LINE\n*** Delete File: patch/gone.txt\n*** End Patch"})
	for call, w := range map[string]map[string]string{
		"wr": {"new.txt": "added"},
		"ed": {"a.txt": "modified"},
		"ap": {"patch/added.txt": "added", "patch/old.txt": "deleted", "patch/renamed.txt": "added", "patch/gone.txt": "deleted"},
	} {
		res := e.changes("s1", call)
		if fmt.Sprint(statuses(res)) != fmt.Sprint(w) {
			t.Errorf("%s's changes: %v, want %v", call, statuses(res), w)
		}
		for _, f := range res.Files {
			if f.Attribution != "call" {
				t.Errorf("%s: %s attributed %q, want call", call, f.Path, f.Attribution)
			}
		}
	}
	ed := e.changes("s1", "ed").Files[0]
	if !strings.Contains(ed.Diff, "-alpha\n+ALPHA\n") || ed.Before == nil || *ed.Before != "alpha\nBETA\n" {
		t.Errorf("edit's change: %+v", ed)
	}
	var rec protocol.CallRecord
	if err := e.d.Call(e.ctx, protocol.MethodCallsGet, protocol.CallsGetParams{SessionID: "s1", CallID: "ap"}, &rec); err != nil || rec.Changes != 4 {
		t.Errorf("calls/get ap: changes %d, %v", rec.Changes, err)
	}

	// Revert the edit alone, then everything after the shell call, then the shell call.
	r := e.revert(protocol.CallsRevertParams{SessionID: "s1", CallID: "ed"})
	if r.Status != protocol.RevertDone || len(r.Files) != 1 || r.RevertCallID == "" {
		t.Fatalf("revert of the edit: %+v", r)
	}
	if b, _ := os.ReadFile(filepath.Join(e.ws, "a.txt")); string(b) != "alpha\nBETA\n" {
		t.Fatalf("a.txt after reverting the edit: %q", b)
	}
	r = e.revert(protocol.CallsRevertParams{SessionID: "s1", CallID: "wr", Scope: protocol.RevertFrom})
	if r.Status != protocol.RevertDone {
		t.Fatalf("revert from wr: %+v", r)
	}
	if d := snapDiff(afterShell, snapshot(t, e.ws)); d != "" {
		t.Fatalf("after reverting every call from wr on, the workspace differs from after the shell call:\n%s", d)
	}
	rs := e.revert(protocol.CallsRevertParams{SessionID: "s1", CallID: "sh"})
	if d := snapDiff(start, snapshot(t, e.ws)); d != "" || rs.Status != protocol.RevertDone {
		t.Fatalf("after reverting the shell call (%s), the workspace differs from the start:\n%s", rs.Status, d)
	}
	// The revert is a call: reverting it brings the shell call's changes back.
	rr := e.revert(protocol.CallsRevertParams{SessionID: "s1", CallID: rs.RevertCallID})
	if d := snapDiff(afterShell, snapshot(t, e.ws)); d != "" || rr.Status != protocol.RevertDone {
		t.Fatalf("after reverting the revert (%s), the workspace differs from after the shell call:\n%s", rr.Status, d)
	}
	// And the whole session, from its first call: back to the start.
	all := e.revert(protocol.CallsRevertParams{SessionID: "s1", CallID: "sh", Scope: protocol.RevertFrom})
	if d := snapDiff(start, snapshot(t, e.ws)); d != "" {
		t.Fatalf("after reverting the session (%s), the workspace differs from the start:\n%s", all.Status, d)
	}
}

// TestProjectToolCheckpoint: a project tool's changes are found like a shell command's.
func TestProjectToolCheckpoint(t *testing.T) {
	e := newEnv(t, envOpts{
		options: map[string]any{"permission": map[string]any{"stamp": "allow"}},
		files: map[string]string{
			"log.txt":                 "first\n",
			".toolsd/tool/stamp.json": `{"description": "Stamps the log.", "parameters": {"type": "object", "properties": {}}, "command": ["sh", "-c", "echo stamped >> log.txt && echo new > made.txt"]}`,
		},
	})
	e.run("p1", "stamp", map[string]any{})
	res := e.changes("s1", "p1")
	if fmt.Sprint(statuses(res)) != fmt.Sprint(map[string]string{"log.txt": "modified", "made.txt": "added"}) || res.Files[0].Attribution != "during" {
		t.Fatalf("the project tool's changes: %+v", res)
	}
	if r := e.revert(protocol.CallsRevertParams{SessionID: "s1", CallID: "p1"}); r.Status != protocol.RevertDone {
		t.Fatalf("revert: %+v", r)
	}
	if b, _ := os.ReadFile(filepath.Join(e.ws, "log.txt")); string(b) != "first\n" {
		t.Fatalf("log.txt: %q", b)
	}
	if _, err := os.Stat(filepath.Join(e.ws, "made.txt")); !os.IsNotExist(err) {
		t.Fatalf("made.txt is still there: %v", err)
	}
}

// TestRevertConflict: a file changed since the call (outside toolsd) is not overwritten; the
// refusal names it, and a forced revert restores it.
func TestRevertConflict(t *testing.T) {
	e := newEnv(t, envOpts{options: allowAll, files: map[string]string{"a.txt": "a\n", "b.txt": "b\n"}})
	e.run("c1", "bash", map[string]any{"command": "echo agent >> a.txt && echo agent >> b.txt"})
	if err := os.WriteFile(filepath.Join(e.ws, "b.txt"), []byte("the person's edit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dry := e.revert(protocol.CallsRevertParams{SessionID: "s1", CallID: "c1", DryRun: true})
	r := e.revert(protocol.CallsRevertParams{SessionID: "s1", CallID: "c1"})
	if r.Status != protocol.RevertConflict || dry.Status != protocol.RevertPlanned || len(r.Files) != 2 {
		t.Fatalf("revert: %+v; dry run %+v", r, dry)
	}
	for _, f := range r.Files {
		if (f.Path == "b.txt") != (f.Conflict != "") || f.Path == "b.txt" && !strings.Contains(f.Conflict, "outside toolsd") {
			t.Errorf("%s: conflict %q", f.Path, f.Conflict)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(e.ws, "b.txt")); string(b) != "the person's edit\n" {
		t.Fatalf("the refused revert changed b.txt: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(e.ws, "a.txt")); string(b) != "a\nagent\n" {
		t.Fatalf("the refused revert changed a.txt: %q", b)
	}
	r = e.revert(protocol.CallsRevertParams{SessionID: "s1", CallID: "c1", Force: true})
	a, _ := os.ReadFile(filepath.Join(e.ws, "a.txt"))
	b, _ := os.ReadFile(filepath.Join(e.ws, "b.txt"))
	if r.Status != protocol.RevertDone || string(a) != "a\n" || string(b) != "b\n" {
		t.Fatalf("forced revert: %s; a %q b %q", r.Status, a, b)
	}
}

// waitFile waits until the file exists, or fails at the deadline.
func waitFile(t *testing.T, ctx context.Context, p string) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := os.Stat(p); err == nil {
			return
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("%s never appeared", p)
		}
	}
}

// TestKillMidCall: the daemon killed with SIGKILL during a shell call; the next daemon finds
// the call's checkpoint open, records what changed as the interrupted call's, and it can be
// reverted.
func TestKillMidCall(t *testing.T) {
	e := newEnv(t, envOpts{options: allowAll, args: []string{"--standalone"}, files: map[string]string{"a.txt": "a\n"}})
	marker := filepath.Join(t.TempDir(), "started")
	_, _ = e.start(protocol.ExecuteParams{CallID: "long", Tool: "bash", Args: args("command", "echo changed >> a.txt && rm a.txt && echo new > a.txt && touch "+marker+" && sleep 60")})
	waitFile(t, e.ctx, marker)
	e.d.Kill()
	<-e.d.Exited()

	e2 := newEnv(t, envOpts{options: allowAll, ws: e.ws, store: e.st})
	var rec protocol.CallRecord
	if err := e2.d.Call(e2.ctx, protocol.MethodCallsGet, protocol.CallsGetParams{SessionID: "s1", CallID: "long"}, &rec); err != nil || rec.Status != protocol.StatusInterrupted {
		t.Fatalf("the call: %s, %v", rec.Status, err)
	}
	res := e2.changes("s1", "long")
	if len(res.Files) != 1 || res.Files[0].Path != "a.txt" || res.Files[0].Attribution != "interrupted" || *res.Files[0].After != "new\n" || *res.Files[0].Before != "a\n" {
		t.Fatalf("changes of the interrupted call: %+v", res)
	}
	if r := e2.revert(protocol.CallsRevertParams{SessionID: "s1", CallID: "long"}); r.Status != protocol.RevertDone {
		t.Fatalf("revert: %+v", r)
	}
	if b, _ := os.ReadFile(filepath.Join(e.ws, "a.txt")); string(b) != "a\n" {
		t.Fatalf("a.txt after the revert: %q", b)
	}
}

// TestKillMidRevert: the daemon killed with SIGKILL while a revert restores many files: every
// file is then either as the reverted call left it or restored (never half written), the
// next daemon records what the revert did, and reverting again finishes the job.
func TestKillMidRevert(t *testing.T) {
	const n = 1500
	files := map[string]string{}
	for i := range n {
		files[fmt.Sprintf("f/%04d.txt", i)] = fmt.Sprintf("original %d\n", i)
	}
	e := newEnv(t, envOpts{options: allowAll, args: []string{"--standalone"}, files: files})
	e.run("many", "bash", map[string]any{"command": "sed -i '$a changed' f/*.txt"})
	if got := len(e.changes("s1", "many").Files); got != n {
		t.Fatalf("the call changed %d files, want %d", got, n)
	}
	_, _ = func() (uint64, error) {
		id, _, err := e.d.Dispatch(e.ctx, protocol.MethodCallsRevert, protocol.CallsRevertParams{SessionID: "s1", CallID: "many"})
		return id, err
	}()
	restored := func() int {
		k := 0
		for i := range n {
			b, _ := os.ReadFile(filepath.Join(e.ws, fmt.Sprintf("f/%04d.txt", i)))
			switch string(b) {
			case fmt.Sprintf("original %d\n", i):
				k++
			case fmt.Sprintf("original %d\nchanged\n", i):
			default:
				t.Fatalf("f/%04d.txt is neither before nor after: %q", i, b)
			}
		}
		return k
	}
	ctx := harness.Deadline(t, 30*time.Second)
	for {
		if _, err := os.Stat(filepath.Join(e.ws, "f/0000.txt")); err == nil {
			if b, _ := os.ReadFile(filepath.Join(e.ws, "f/0000.txt")); string(b) == "original 0\n" {
				break
			}
		}
		select {
		case <-ctx.Done():
			t.Fatal("the revert never started")
		case <-time.After(time.Millisecond):
		}
	}
	e.d.Kill()
	<-e.d.Exited()
	k := restored()
	if k == 0 || k == n {
		t.Fatalf("%d of %d files restored at the kill: the kill did not land in the middle of the revert", k, n)
	}

	e2 := newEnv(t, envOpts{options: allowAll, ws: e.ws, store: e.st})
	var list protocol.CallsListResult
	if err := e2.d.Call(e2.ctx, protocol.MethodCallsList, protocol.CallsListParams{SessionID: "s1"}, &list); err != nil {
		t.Fatal(err)
	}
	var rv *protocol.CallSummary
	for i, c := range list.Calls {
		if c.Tool == protocol.ToolRevert {
			rv = &list.Calls[i]
		}
	}
	if rv == nil || rv.Status != protocol.StatusInterrupted {
		t.Fatalf("no interrupted revert call in %+v", list.Calls)
	}
	if got := e2.changes("s1", rv.CallID); len(got.Files) != k {
		t.Fatalf("the interrupted revert's checkpoint has %d files, %d were restored", len(got.Files), k)
	}
	r := e2.revert(protocol.CallsRevertParams{SessionID: "s1", CallID: "many"})
	if r.Status != protocol.RevertDone || len(r.Files) != n-k {
		t.Fatalf("second revert: %s, %d files (want %d)", r.Status, len(r.Files), n-k)
	}
	if k := restored(); k != n {
		t.Fatalf("%d of %d files restored after the second revert", k, n)
	}
}
