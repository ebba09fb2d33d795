package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsd/toolsd/protocol"
	"github.com/toolsd/toolsd/session"
)

// Asks of a client that speaks MCP 2026-07-28 go back to it as multi round-trip input
// requests: tools/call returns an input-required result holding the ask's form and a request
// state, and the client calls again with the person's answer and that state. The call keeps
// running in between (it waits in the permission broker), so nothing runs twice.

// mrtrVersion is the first protocol version with multi round-trip requests.
const mrtrVersion = "2026-07-28"

// askKey names the ask among a result's input requests.
const askKey = "toolsd/ask"

// resumeTTL bounds how long a call waits for the client to come back with an answer; then
// it is cancelled.
const resumeTTL = 30 * time.Minute

// usesMRTR reports whether the session's client speaks multi round-trip requests.
func usesMRTR(ss *sdk.ServerSession) bool {
	p := ss.InitializeParams()
	return p != nil && p.ProtocolVersion >= mrtrVersion
}

// resumable is a call of a multi round-trip client: its execution, and the ask it waits on.
type resumable struct {
	ci     *callInfo
	done   chan execResult // buffered 1; written once when the call ends
	cancel context.CancelFunc
	ask    protocol.AskedParams
	timer  *time.Timer
}

type execResult struct {
	res *protocol.ExecuteResult
	err error
}

// handleMRTR runs a tools/call of a multi round-trip client: a new call starts, a retry with a
// request state answers the ask the call waits on.
func (s *server) handleMRTR(ctx context.Context, req *sdk.CallToolRequest, ws *session.Client, p protocol.ExecuteParams) (*sdk.CallToolResult, error) {
	if state := req.Params.RequestState; state != "" {
		s.mu.Lock()
		r := s.resumables[state]
		delete(s.resumables, state)
		s.mu.Unlock()
		if r == nil {
			return errorResult("toolsd: this call's request state is unknown or expired (the call ended, or waited too long for an answer); make the call again"), nil
		}
		r.timer.Stop()
		var answer *sdk.ElicitResult
		if ir, ok := req.Params.InputResponses[askKey]; ok {
			answer, _ = ir.(*sdk.ElicitResult)
		}
		if _, err := ws.Reply(*replyFor(r.ask, answer)); err != nil && !errors.Is(err, session.ErrUnknownAsk) {
			s.log.Warn("answering an ask failed", "ask", r.ask.ID, "err", err)
		}
		return s.await(ctx, r)
	}
	execCtx, cancel := context.WithCancel(s.ctx)
	ci := &callInfo{ctx: execCtx, session: req.Session, token: req.Params.GetProgressToken(), asks: make(chan protocol.AskedParams, 4)}
	r := &resumable{ci: ci, done: make(chan execResult, 1), cancel: cancel}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		cancel()
		return errorResult("toolsd is shutting down"), nil
	}
	s.calls[p.CallID] = ci
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		res, err := ws.Execute(execCtx, p)
		s.mu.Lock()
		delete(s.calls, p.CallID)
		s.mu.Unlock()
		r.done <- execResult{res, err}
		cancel()
	}()
	return s.await(ctx, r)
}

// await waits until the call ends, or asks this client (then the result says so, with the
// form and a request state to come back with).
func (s *server) await(ctx context.Context, r *resumable) (*sdk.CallToolResult, error) {
	select {
	case x := <-r.done:
		if x.err != nil {
			return errorResult(x.err.Error()), nil
		}
		return toResult(x.res), nil
	case a := <-r.ci.asks:
		r.ask = a
		var b [12]byte
		_, _ = rand.Read(b[:])
		state := "toolsd-" + hex.EncodeToString(b[:])
		r.timer = time.AfterFunc(resumeTTL, func() {
			s.mu.Lock()
			if s.resumables[state] == r {
				delete(s.resumables, state)
			}
			s.mu.Unlock()
			r.cancel()
		})
		s.mu.Lock()
		s.resumables[state] = r
		s.mu.Unlock()
		return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{askKey: askForm(a)}, RequestState: state}, nil
	case <-ctx.Done():
		// The client gave up on this request: the call ends.
		r.cancel()
		return nil, ctx.Err()
	}
}
