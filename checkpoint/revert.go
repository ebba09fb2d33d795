package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/toolsd/toolsd/internal/posix"

	"github.com/toolsd/toolsd/internal/fspath"
	"github.com/toolsd/toolsd/protocol"
	"github.com/toolsd/toolsd/store"
)

// ErrNoChanges is wrapped by errors about a call that has no checkpoint to show or revert.
var ErrNoChanges = errors.New("checkpoint: no changes recorded")

// ErrRunning is wrapped by the error of reverting a call that has not ended.
var ErrRunning = errors.New("checkpoint: the call is still running")

// Plan is what a revert would do: each path's state now and the state it gets back.
type Plan struct {
	Calls      []store.CallRef // reverted, newest first
	Files      []PlanFile
	Concurrent []store.CallRef
}

// PlanFile is one path of a Plan.
type PlanFile struct {
	Path          string
	Current       store.FileState
	Target        store.FileState
	Conflict      string
	ChangedBy     []store.CallRef
	AlsoTouchedBy []store.CallRef
	// NotKept: the target's content was not kept; the path cannot be restored.
	NotKept string
	Skipped string // set by Apply
}

// Conflicts reports whether any file changed since the reverted calls.
func (p *Plan) Conflicts() bool {
	for _, f := range p.Files {
		if f.Conflict != "" {
			return true
		}
	}
	return false
}

// Plan works out how to revert a call (from: the call and every later call of its session,
// newest first): it looks at the workspace, then walks the calls' checkpoints back,
// finding for each path the state before the earliest reverted call that changed it, and
// whether something else changed it since (a conflict).
func (t *Tracker) Plan(ctx context.Context, sessionID, callID string, from bool) (*Plan, error) {
	off, err := t.wait(ctx)
	if err != nil {
		return nil, err
	}
	if off != "" {
		return nil, fmt.Errorf("%w: checkpoints are off in this workspace: %s", ErrNoChanges, off)
	}
	var cps []*store.Checkpoint
	if from {
		cps, err = t.st.SessionCheckpoints(sessionID, callID)
	} else {
		var cp *store.Checkpoint
		if cp, err = t.st.Checkpoint(sessionID, callID); err == nil {
			cps = []*store.Checkpoint{cp}
		}
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: %v", ErrNoChanges, err)
	}
	if err != nil {
		return nil, err
	}
	set := map[store.CallRef]bool{}
	for _, cp := range cps {
		if cp.EndedAt == nil {
			return nil, fmt.Errorf("%w: call %q of session %q has not ended: wait for it or cancel it, then revert", ErrRunning, cp.CallID, cp.SessionID)
		}
		set[store.CallRef{SessionID: cp.SessionID, CallID: cp.CallID}] = true
	}
	t.syncMu.Lock()
	err = t.syncLocked(ctx)
	t.mu.Lock()
	current := func(p string) store.FileState { s, _ := t.index.get(p); return s }
	plan := &Plan{}
	sim := map[string]store.FileState{}
	byPath := map[string]*PlanFile{}
	concurrent := map[store.CallRef]bool{}
	for _, cp := range cps {
		ref := store.CallRef{SessionID: cp.SessionID, CallID: cp.CallID, Tool: cp.Tool}
		plan.Calls = append(plan.Calls, ref)
		for _, o := range cp.Concurrent {
			concurrent[o] = true
		}
		for _, f := range cp.Files {
			pf := byPath[f.Path]
			if pf == nil {
				pf = &PlanFile{Path: f.Path, Current: current(f.Path)}
				byPath[f.Path] = pf
				sim[f.Path] = pf.Current
			}
			cur := sim[f.Path]
			after := store.FileState{}
			if f.After != nil {
				after = *f.After
			}
			if !sameState(cur, after) && !sameState(cur, f.Before) && pf.Conflict == "" {
				pf.Conflict = fmt.Sprintf("changed since call %s", cp.CallID)
				pf.ChangedBy = append(pf.ChangedBy, laterOutside(t.st, f.Path, cp, set)...)
			}
			for _, o := range f.AlsoTouchedBy {
				if !set[store.CallRef{SessionID: o.SessionID, CallID: o.CallID}] {
					pf.AlsoTouchedBy = appendRef(pf.AlsoTouchedBy, o)
				}
			}
			sim[f.Path] = f.Before
		}
	}
	t.mu.Unlock()
	t.syncMu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("looking at the workspace: %w", err)
	}
	for o := range concurrent {
		if !set[store.CallRef{SessionID: o.SessionID, CallID: o.CallID}] {
			plan.Concurrent = append(plan.Concurrent, o)
		}
	}
	sortRefs(plan.Concurrent)
	for _, p := range sortedKeys(byPath) {
		pf := byPath[p]
		pf.Target = sim[p]
		if sameState(pf.Current, pf.Target) {
			continue // already as it was
		}
		if pf.Target.Kind == store.KindFile && (pf.Target.NotKept != "" || pf.Target.Content == "" || !t.st.HasContent(pf.Target.Content)) {
			pf.NotKept = pf.Target.NotKept
			if pf.NotKept == "" {
				pf.NotKept = "its content was not kept"
			}
		}
		if pf.Conflict != "" && len(pf.ChangedBy) == 0 {
			pf.Conflict += " outside toolsd (by the person or another program)"
		} else if pf.Conflict != "" {
			pf.Conflict += " by " + refList(pf.ChangedBy)
		}
		plan.Files = append(plan.Files, *pf)
	}
	return plan, nil
}

// laterOutside lists the calls after cp, outside the reverted set, that changed path.
func laterOutside(st *store.Store, path string, cp *store.Checkpoint, set map[store.CallRef]bool) []store.CallRef {
	later, _ := st.LaterChanges(path, cp.SessionID, cp.CallID)
	var out []store.CallRef
	for _, r := range later {
		if !set[store.CallRef{SessionID: r.SessionID, CallID: r.CallID}] {
			out = appendRef(out, r)
		}
	}
	return out
}

func appendRef(rs []store.CallRef, r store.CallRef) []store.CallRef {
	for _, x := range rs {
		if x.SessionID == r.SessionID && x.CallID == r.CallID {
			return rs
		}
	}
	return append(rs, r)
}

func refList(rs []store.CallRef) string {
	var s []string
	for _, r := range rs {
		if r.Tool != "" {
			s = append(s, fmt.Sprintf("call %s (%s)", r.CallID, r.Tool))
		} else {
			s = append(s, "call "+r.CallID)
		}
	}
	return strings.Join(s, ", ")
}

// Apply carries a plan out, recording each path's state before it is touched in the
// revert's own window w (exact), so that the revert is itself a checkpoint and a crash in
// the middle leaves every file either restored or untouched. Paths with a conflict are
// restored only with force; paths whose content was not kept, or that changed since the
// plan, are skipped (PlanFile.Skipped says why), and so are those the caller marked Skipped
// before (session asks for protected paths first, as every writer does). It returns how
// many paths it restored.
func (t *Tracker) Apply(ctx context.Context, plan *Plan, w *Window, force bool) (int, error) {
	if err := w.Begin(ctx); err != nil {
		return 0, err
	}
	if w.off != "" {
		return 0, fmt.Errorf("the revert cannot be recorded: %s", w.off)
	}
	// Order: remove what goes (deepest first), then make folders (shallowest first), then
	// write files and links.
	type step struct {
		i     int
		phase int
	}
	var steps []step
	for i, f := range plan.Files {
		switch {
		case f.Skipped != "":
			continue // the caller refused it (a protected path no one allowed to write)
		case f.NotKept != "":
			plan.Files[i].Skipped = "its content before the calls was not kept (" + f.NotKept + ")"
			continue
		case f.Conflict != "" && !force:
			plan.Files[i].Skipped = "changed since: " + f.Conflict
			continue
		}
		if f.Current.Kind != store.KindAbsent && f.Current.Kind != f.Target.Kind {
			steps = append(steps, step{i, 0})
		}
		if f.Target.Kind != store.KindAbsent {
			steps = append(steps, step{i, 1})
		}
	}
	sort.SliceStable(steps, func(a, b int) bool {
		sa, sb := steps[a], steps[b]
		if sa.phase != sb.phase {
			return sa.phase < sb.phase
		}
		pa, pb := plan.Files[sa.i].Path, plan.Files[sb.i].Path
		da, db := strings.Count(pa, "/"), strings.Count(pb, "/")
		if sa.phase == 0 {
			if da != db {
				return da > db
			}
			return pa > pb
		}
		dirA, dirB := plan.Files[sa.i].Target.Kind == store.KindDir, plan.Files[sb.i].Target.Kind == store.KindDir
		if dirA != dirB {
			return dirA
		}
		if da != db {
			return da < db
		}
		return pa < pb
	})
	t.mu.Lock()
	for _, s := range steps {
		f := plan.Files[s.i]
		if _, seen := w.before[f.Path]; !seen {
			w.before[f.Path] = f.Current
		}
		w.reported[f.Path] = true
	}
	cp := w.openRecordLocked()
	t.mu.Unlock()
	if err := t.st.UpdateCheckpoints(&store.CheckpointUpdate{Open: []*store.Checkpoint{cp}}); err != nil {
		return 0, fmt.Errorf("recording the revert: %w", err)
	}
	done := map[int]bool{}
	for _, s := range steps {
		if err := ctx.Err(); err != nil {
			return len(done), err
		}
		f := &plan.Files[s.i]
		if f.Skipped != "" {
			continue
		}
		var err error
		if s.phase == 0 {
			err = t.remove(f)
		} else {
			err = t.restore(f)
		}
		if err != nil {
			f.Skipped = err.Error()
			continue
		}
		done[s.i] = true
	}
	if afterApply != nil {
		afterApply()
	}
	return len(done), nil
}

// afterApply, when set (by tests), runs after Apply wrote the files and before the window
// ends.
var afterApply func()

// abs is a workspace path's real absolute path.
func (t *Tracker) abs(rel string) string { return filepath.Join(t.ws, filepath.FromSlash(rel)) }

// unchangedSincePlan checks the path is still in the state the plan found.
func (t *Tracker) unchangedSincePlan(f *PlanFile) error {
	dir, name := path.Split(f.Path)
	dirfd, err := t.openDir(strings.TrimSuffix(dir, "/"))
	if err != nil {
		if f.Current.Kind == store.KindAbsent {
			return nil
		}
		return fmt.Errorf("its folder cannot be opened: %v", err)
	}
	defer posix.Close(dirfd)
	var st posix.Stat_t
	if err := posix.Fstatat(dirfd, name, &st, posix.AT_SYMLINK_NOFOLLOW); err != nil {
		if f.Current.Kind == store.KindAbsent {
			return nil
		}
		return errors.New("it was removed while the revert ran")
	}
	cur, ok := statState(&st)
	if !ok || f.Current.Kind == store.KindAbsent || !sameIdentity(cur, f.Current) && cur.Kind != store.KindDir || cur.Kind != f.Current.Kind {
		return errors.New("it changed while the revert ran")
	}
	return nil
}

// remove takes away what is at the path now (a file, a link, an empty folder).
func (t *Tracker) remove(f *PlanFile) error {
	if err := t.unchangedSincePlan(f); err != nil {
		return err
	}
	dir, name := path.Split(f.Path)
	dirfd, err := t.openDir(strings.TrimSuffix(dir, "/"))
	if err != nil {
		return err
	}
	defer posix.Close(dirfd)
	flags := 0
	if f.Current.Kind == store.KindDir {
		flags = posix.AT_REMOVEDIR
	}
	if err := posix.Unlinkat(dirfd, name, flags); err != nil {
		if errors.Is(err, posix.ENOTEMPTY) || errors.Is(err, posix.EEXIST) {
			return errors.New("the folder is not empty: it holds files the reverted calls did not make")
		}
		return &fs.PathError{Op: "remove", Path: f.Path, Err: err}
	}
	return nil
}

// restore puts the target state at the path.
func (t *Tracker) restore(f *PlanFile) error {
	if f.Current.Kind == f.Target.Kind {
		if err := t.unchangedSincePlan(f); err != nil {
			return err
		}
	}
	abs := t.abs(f.Path)
	switch f.Target.Kind {
	case store.KindDir:
		fd, err := fspath.MkdirAll(abs, f.Target.Mode)
		if err != nil {
			return err
		}
		defer posix.Close(fd)
		return posix.Fchmod(fd, f.Target.Mode)
	case store.KindLink:
		dfd, err := fspath.MkdirAll(filepath.Dir(abs), 0o755)
		if err != nil {
			return err
		}
		defer posix.Close(dfd)
		tmp := "." + filepath.Base(abs) + ".toolsd-revert"
		_ = posix.Unlinkat(dfd, tmp, 0)
		if err := posix.Symlinkat(f.Target.Link, dfd, tmp); err != nil {
			return err
		}
		if err := posix.Renameat(dfd, tmp, dfd, filepath.Base(abs)); err != nil {
			_ = posix.Unlinkat(dfd, tmp, 0)
			return err
		}
		return nil
	case store.KindFile:
		data, err := t.st.Content(f.Target.Content)
		if err != nil {
			return fmt.Errorf("its earlier content cannot be read from the store: %v", err)
		}
		return fspath.WriteFile(abs, data, f.Target.Mode, false)
	}
	return nil
}

// Result turns a plan into calls/revert's result.
func (p *Plan) Result(status string) *protocol.CallsRevertResult {
	r := &protocol.CallsRevertResult{Status: status, Calls: refs(p.Calls), Files: []protocol.RevertFile{}, Concurrent: refs(p.Concurrent)}
	for _, f := range p.Files {
		action := "restore"
		switch {
		case f.Target.Kind == store.KindAbsent:
			action = "delete"
		case f.Current.Kind == store.KindAbsent:
			action = "create"
		}
		skipped := f.Skipped
		if skipped == "" && f.NotKept != "" && status == protocol.RevertPlanned {
			skipped = "its content before the calls was not kept (" + f.NotKept + ")"
		}
		r.Files = append(r.Files, protocol.RevertFile{Path: f.Path, Action: action, Conflict: f.Conflict, ChangedBy: refs(f.ChangedBy), AlsoTouchedBy: refs(f.AlsoTouchedBy), Skipped: skipped})
	}
	return r
}

func refs(rs []store.CallRef) []protocol.CallRef {
	out := make([]protocol.CallRef, 0, len(rs))
	for _, r := range rs {
		out = append(out, protocol.CallRef{SessionID: r.SessionID, CallID: r.CallID, Tool: r.Tool})
	}
	return out
}
