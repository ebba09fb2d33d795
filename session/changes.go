package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/toolsd/toolsd/checkpoint"
	"github.com/toolsd/toolsd/permission"
	"github.com/toolsd/toolsd/protocol"
	"github.com/toolsd/toolsd/registry"
	"github.com/toolsd/toolsd/store"
)

// ErrCallRunning is returned for a revert of a call that has not ended.
var ErrCallRunning = errors.New("session: the call is still running")

// window opens the checkpoint window of a call that may change the workspace; nil for a
// call that cannot (or when checkpoints are off).
func (s *Service) window(c *callState, e *registry.Entry) *checkpoint.Window {
	if s.opts.Checkpoints == nil || c.readOnly || e.ReadOnly || e.Changes == registry.ChangesNone {
		return nil
	}
	return s.opts.Checkpoints.NewWindow(store.CallRef{SessionID: c.sessionID, CallID: c.callID, Tool: e.ID}, e.Changes == registry.ChangesReported)
}

// Changes answers calls/changes.
func (s *Service) Changes(ctx context.Context, p protocol.CallsChangesParams) (*protocol.CallsChangesResult, error) {
	if strings.TrimSpace(p.SessionID) == "" {
		return nil, &ParamsError{"calls/changes: sessionID is required"}
	}
	if s.opts.Checkpoints == nil {
		return nil, fmt.Errorf("%w: checkpoints are off", ErrNotFound)
	}
	res, err := s.opts.Checkpoints.Changes(ctx, p)
	return res, checkpointErr(err)
}

func checkpointErr(err error) error {
	switch {
	case errors.Is(err, checkpoint.ErrRunning):
		return fmt.Errorf("%w: %v", ErrCallRunning, err)
	case errors.Is(err, checkpoint.ErrNoChanges), errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("%w: %v", ErrNotFound, err)
	case errors.Is(err, store.ErrInvalid):
		return &ParamsError{err.Error()}
	}
	return err
}

// Revert answers calls/revert: it restores what a call (or a call and every later call of
// its session) changed, unless files changed since (then it refuses, per file, unless
// forced). A revert that changes files is itself a recorded call of the session (tool
// protocol.ToolRevert), with its own checkpoint: it can be reverted.
func (s *Service) Revert(ctx context.Context, p protocol.CallsRevertParams) (*protocol.CallsRevertResult, error) {
	if strings.TrimSpace(p.SessionID) == "" || strings.TrimSpace(p.CallID) == "" {
		return nil, &ParamsError{"calls/revert: sessionID and callID are required"}
	}
	if p.Scope != "" && p.Scope != protocol.RevertCall && p.Scope != protocol.RevertFrom {
		return nil, &ParamsError{fmt.Sprintf("calls/revert: scope must be %q or %q, not %q", protocol.RevertCall, protocol.RevertFrom, p.Scope)}
	}
	tr := s.opts.Checkpoints
	if tr == nil {
		return nil, fmt.Errorf("%w: checkpoints are off", ErrNotFound)
	}
	plan, err := tr.Plan(ctx, p.SessionID, p.CallID, p.Scope == protocol.RevertFrom)
	if err != nil {
		return nil, checkpointErr(err)
	}
	switch {
	case p.DryRun:
		r := plan.Result(protocol.RevertPlanned)
		r.Message = planMessage(plan)
		return r, nil
	case len(plan.Files) == 0:
		r := plan.Result(protocol.RevertNothing)
		r.Message = "Nothing to revert: every file the calls changed is already as it was before them."
		return r, nil
	case plan.Conflicts() && !p.Force:
		r := plan.Result(protocol.RevertConflict)
		r.Message = "Not reverted: files changed since the calls (see each file's conflict). Revert with force to overwrite those changes."
		return r, nil
	}

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()

	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	callID := "revert_" + hex.EncodeToString(rnd[:])
	args, _ := json.Marshal(p)
	title := "Revert call " + p.CallID
	if p.Scope == protocol.RevertFrom {
		title = fmt.Sprintf("Revert %d call(s) from %s", len(plan.Calls), p.CallID)
	}
	c := &callState{sessionID: p.SessionID, callID: callID, tool: protocol.ToolRevert}
	rec := &protocol.CallRecord{
		CallID: callID, SessionID: p.SessionID, Tool: protocol.ToolRevert, Status: protocol.StatusRunning, Title: title,
		Args: args, Metadata: json.RawMessage("{}"), Attachments: []protocol.Attachment{}, Decisions: []protocol.Decision{}, StartedAt: s.opts.Now().UTC(),
	}
	if err := s.opts.Store.CreateCall(rec); err != nil {
		return nil, fmt.Errorf("recording the revert: %w", err)
	}
	s.progress(c, protocol.StatusRunning, title, nil)
	s.askProtected(ctx, c, plan, p.Force)
	w := tr.NewWindow(store.CallRef{SessionID: p.SessionID, CallID: callID, Tool: protocol.ToolRevert}, true)
	_, applyErr := tr.Apply(ctx, plan, w, p.Force)
	n, endErr := w.End(context.WithoutCancel(ctx))
	if endErr != nil {
		s.log.Error("recording a revert's checkpoint failed", "call", callID, "err", endErr)
	}
	res := plan.Result(protocol.RevertDone)
	res.RevertCallID = callID
	res.Message = doneMessage(res)
	status := protocol.StatusCompleted
	errText := ""
	if applyErr != nil {
		status, errText = protocol.StatusError, "the revert stopped: "+applyErr.Error()
		res.Message = errText + ". " + res.Message
	}
	md, _ := json.Marshal(map[string]any{"calls": res.Calls, "files": res.Files})
	end := s.opts.Now().UTC()
	decisions := c.takeDecisions()
	err = s.opts.Store.UpdateCall(p.SessionID, callID, func(r *protocol.CallRecord) {
		r.Status, r.Error, r.Output, r.Metadata, r.EndedAt, r.Changes = status, errText, res.Message, md, &end, n
		if len(decisions) > 0 {
			r.Decisions = decisions
		}
	})
	if err != nil {
		return nil, fmt.Errorf("the revert ran, but its record could not be updated: %w", err)
	}
	s.progress(c, status, title, nil)
	return res, nil
}

// askProtected asks edit for the protected paths (permission.Protected) a revert would write,
// as every writer does: the revert is the person's act, but a path through which the
// workspace controls what runs unconfined later is written only when a person allows it
// there and then (nothing can settle that ask for them; a deny rule denies it). The paths it
// is not allowed to write are left as they are (the result says why); the rest is reverted.
func (s *Service) askProtected(ctx context.Context, c *callState, plan *checkpoint.Plan, force bool) {
	var paths []string
	var idx []int
	for i, f := range plan.Files {
		if f.NotKept != "" || f.Conflict != "" && !force {
			continue // Apply leaves it anyway
		}
		if _, ok := permission.Protected(permission.KeyEdit, f.Path); ok {
			paths = append(paths, f.Path)
			idx = append(idx, i)
		}
	}
	if len(paths) == 0 {
		return
	}
	_, err := s.ask(ctx, c, registry.AskRequest{Permission: permission.KeyEdit, Patterns: paths,
		Metadata: map[string]any{"revert": true, "files": paths}, Destructive: true})
	if err == nil {
		return
	}
	for _, i := range idx {
		plan.Files[i].Skipped = "a protected path, and writing it was not allowed: " + err.Error()
	}
}

func planMessage(p *checkpoint.Plan) string {
	if len(p.Files) == 0 {
		return "Nothing to revert: every file the calls changed is already as it was before them."
	}
	conflicts := 0
	for _, f := range p.Files {
		if f.Conflict != "" {
			conflicts++
		}
	}
	msg := fmt.Sprintf("The revert would restore %d path(s) changed by %d call(s).", len(p.Files), len(p.Calls))
	if conflicts > 0 {
		msg += fmt.Sprintf(" %d of them changed since: reverting them overwrites those changes.", conflicts)
	}
	return msg
}

func doneMessage(r *protocol.CallsRevertResult) string {
	var b strings.Builder
	restored, skipped := 0, 0
	for _, f := range r.Files {
		if f.Skipped != "" {
			skipped++
		} else {
			restored++
		}
	}
	fmt.Fprintf(&b, "Reverted %d path(s) changed by %d call(s).", restored, len(r.Calls))
	for _, f := range r.Files {
		if f.Skipped != "" {
			fmt.Fprintf(&b, "\n  left as it is: %s (%s)", f.Path, f.Skipped)
		} else {
			fmt.Fprintf(&b, "\n  %s %s", f.Action, f.Path)
		}
	}
	if skipped > 0 {
		fmt.Fprintf(&b, "\n%d path(s) were left as they are.", skipped)
	}
	return b.String()
}
