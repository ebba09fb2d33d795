package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"unicode/utf8"

	"github.com/toolsd/toolsd/internal/textdiff"
	"github.com/toolsd/toolsd/protocol"
	"github.com/toolsd/toolsd/store"
)

// maxContentsBytes caps the text calls/changes returns for one side of one file.
const maxContentsBytes = 2 << 20

// Changes answers calls/changes: what one call changed, or (callID empty) the net change of
// every call of a session, each path from its state before the first call that changed it
// to its state after the last.
func (t *Tracker) Changes(ctx context.Context, p protocol.CallsChangesParams) (*protocol.CallsChangesResult, error) {
	// Calls a dead daemon left running are recorded by the first look.
	if _, err := t.wait(ctx); err != nil {
		return nil, err
	}
	var cps []*store.Checkpoint
	var err error
	if p.CallID != "" {
		var cp *store.Checkpoint
		if cp, err = t.st.Checkpoint(p.SessionID, p.CallID); err == nil {
			cps = []*store.Checkpoint{cp}
		}
	} else {
		cps, err = t.st.SessionCheckpoints(p.SessionID, "")
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: %v", ErrNoChanges, err)
	}
	if err != nil {
		return nil, err
	}
	res := &protocol.CallsChangesResult{Files: []protocol.FileChangeInfo{}, Calls: []protocol.CallRef{}, Concurrent: []protocol.CallRef{}, Notes: []string{}}
	paths := map[string]*netChange{}
	inSet := map[store.CallRef]bool{}
	concurrent := map[store.CallRef]bool{}
	for _, cp := range cps {
		inSet[store.CallRef{SessionID: cp.SessionID, CallID: cp.CallID}] = true
	}
	// Oldest first, so the first before and the last after win.
	for i := len(cps) - 1; i >= 0; i-- {
		cp := cps[i]
		ref := store.CallRef{SessionID: cp.SessionID, CallID: cp.CallID, Tool: cp.Tool}
		res.Calls = append([]protocol.CallRef{{SessionID: ref.SessionID, CallID: ref.CallID, Tool: ref.Tool}}, res.Calls...)
		if cp.EndedAt == nil {
			res.Notes = append(res.Notes, fmt.Sprintf("call %s is still running: its changes so far are not shown", cp.CallID))
			continue
		}
		res.Notes = append(res.Notes, cp.Notes...)
		if cp.Interrupted {
			res.Notes = append(res.Notes, fmt.Sprintf("call %s was interrupted (the daemon stopped during it): files found changed when toolsd started again may have been changed while it was not running", cp.CallID))
		}
		for _, o := range cp.Concurrent {
			if !inSet[store.CallRef{SessionID: o.SessionID, CallID: o.CallID}] {
				concurrent[o] = true
			}
		}
		for _, f := range cp.Files {
			if p.Path != "" && f.Path != p.Path {
				continue
			}
			n := paths[f.Path]
			if n == nil {
				n = &netChange{before: f.Before, attr: f.Attribution}
				paths[f.Path] = n
			}
			if f.After != nil {
				n.after = *f.After
			}
			if f.Attribution != AttrCall {
				n.attr = f.Attribution
			}
			n.calls = appendRef(n.calls, ref)
			for _, o := range f.AlsoTouchedBy {
				if !inSet[store.CallRef{SessionID: o.SessionID, CallID: o.CallID}] {
					n.also = appendRef(n.also, o)
				}
			}
		}
	}
	for o := range concurrent {
		res.Concurrent = append(res.Concurrent, protocol.CallRef{SessionID: o.SessionID, CallID: o.CallID, Tool: o.Tool})
	}
	sort.Slice(res.Concurrent, func(i, j int) bool { return res.Concurrent[i].CallID < res.Concurrent[j].CallID })
	var infos []protocol.FileChangeInfo
	for _, path := range sortedKeys(paths) {
		n := paths[path]
		if sameState(n.before, n.after) {
			continue
		}
		info := t.fileInfo(path, n.before, n.after, p.Contents)
		info.Attribution = n.attr
		info.AlsoTouchedBy = refs(n.also)
		info.Calls = refs(n.calls)
		infos = append(infos, info)
	}
	res.Files = pairRenames(infos, paths)
	return res, nil
}

// netChange is a path's change over one or more calls.
type netChange struct {
	before, after store.FileState
	attr          string
	also          []store.CallRef
	calls         []store.CallRef
}

// fileInfo describes one path's change, with its diff.
func (t *Tracker) fileInfo(path string, before, after store.FileState, contents bool) protocol.FileChangeInfo {
	info := protocol.FileChangeInfo{Path: path, Kind: after.Kind, OldKind: before.Kind, Mode: after.Mode, OldMode: before.Mode,
		AlsoTouchedBy: []protocol.CallRef{}, Calls: []protocol.CallRef{}}
	switch {
	case before.Kind == store.KindAbsent:
		info.Status = protocol.ChangeAdded
	case after.Kind == store.KindAbsent:
		info.Status = protocol.ChangeDeleted
	case before.Kind != after.Kind:
		info.Status = protocol.ChangeTypeChanged
	default:
		info.Status = protocol.ChangeModified
	}
	old, oldOK := t.sideText(before)
	nw, newOK := t.sideText(after)
	for _, s := range []store.FileState{before, after} {
		if s.Kind == store.KindFile && (s.NotKept != "" || (s.Content == "" && s.Git == "")) && info.NotKept == "" {
			info.NotKept = s.NotKept
			if info.NotKept == "" {
				info.NotKept = "not kept"
			}
		}
	}
	switch {
	case !oldOK || !newOK:
		info.Diff = fmt.Sprintf("%s changed; its content was not kept (%s)\n", path, info.NotKept)
	case (before.Kind == store.KindFile || before.Kind == store.KindAbsent) && (after.Kind == store.KindFile || after.Kind == store.KindAbsent):
		d := textdiff.File(path, old, nw)
		info.Diff, info.Additions, info.Deletions = d.Text, d.Additions, d.Deletions
		info.Binary = !utf8.Valid(old) || !utf8.Valid(nw)
		if info.Diff == "" && before.Mode != after.Mode {
			info.Diff = fmt.Sprintf("mode %o -> %o\n", before.Mode, after.Mode)
		}
	default:
		info.Diff = fmt.Sprintf("%s: %s -> %s\n", path, describe(before), describe(after))
	}
	if contents && oldOK && newOK && !info.Binary {
		if before.Kind == store.KindFile && len(old) <= maxContentsBytes {
			s := string(old)
			info.Before = &s
		}
		if after.Kind == store.KindFile && len(nw) <= maxContentsBytes {
			s := string(nw)
			info.After = &s
		}
	}
	return info
}

func describe(s store.FileState) string {
	switch s.Kind {
	case store.KindAbsent:
		return "absent"
	case store.KindLink:
		return "link to " + s.Link
	case store.KindDir:
		return fmt.Sprintf("folder (mode %o)", s.Mode)
	}
	return fmt.Sprintf("file of %d bytes (mode %o)", s.Size, s.Mode)
}

// sideText is a side's bytes for a diff: empty for an absent path or a non-file; false when
// a file's content was not kept.
func (t *Tracker) sideText(s store.FileState) ([]byte, bool) {
	if s.Kind != store.KindFile {
		return nil, true
	}
	if s.NotKept != "" || s.Content == "" {
		return nil, false
	}
	data, err := t.st.Content(s.Content)
	if err != nil {
		return nil, false
	}
	return data, true
}

// pairRenames shows a deleted file and an added one with the same content as one rename.
func pairRenames(infos []protocol.FileChangeInfo, paths map[string]*netChange) []protocol.FileChangeInfo {
	added := map[string]int{} // content id -> index of an added file
	for i, in := range infos {
		if in.Status == protocol.ChangeAdded && in.Kind == store.KindFile {
			if c := paths[in.Path].after.Content; c != "" {
				added[c] = i
			}
		}
	}
	drop := map[int]bool{}
	for i, in := range infos {
		if in.Status != protocol.ChangeDeleted || in.OldKind != store.KindFile {
			continue
		}
		c := paths[in.Path].before.Content
		j, ok := added[c]
		if c == "" || !ok || drop[j] {
			continue
		}
		to := &infos[j]
		to.OldPath, to.Status, to.OldKind, to.OldMode = in.Path, protocol.ChangeRenamed, in.OldKind, in.OldMode
		to.Diff = fmt.Sprintf("rename from %s\nrename to %s\n", in.Path, to.Path)
		to.Additions, to.Deletions = 0, 0
		to.Before = in.Before
		for _, r := range in.Calls {
			if !hasRef(to.Calls, r) {
				to.Calls = append(to.Calls, r)
			}
		}
		drop[i] = true
		delete(added, c)
	}
	out := make([]protocol.FileChangeInfo, 0, len(infos))
	for i, in := range infos {
		if !drop[i] {
			out = append(out, in)
		}
	}
	return out
}

func hasRef(rs []protocol.CallRef, r protocol.CallRef) bool {
	for _, x := range rs {
		if x.SessionID == r.SessionID && x.CallID == r.CallID {
			return true
		}
	}
	return false
}
