package rpc

import (
	"context"

	"go.lsp.dev/jsonrpc2"

	"github.com/toolsd/toolsd/protocol"
)

func (s *server) resolve(_ context.Context, b Backend, p protocol.ResolveParams) (protocol.ResolveResult, error) {
	if err := checkIDs("sessionID", p.SessionID); err != nil {
		return protocol.ResolveResult{}, err
	}
	return b.Resolve(p), nil
}

func (s *server) execute(ctx context.Context, b Backend, p protocol.ExecuteParams) (*protocol.ExecuteResult, error) {
	if err := checkIDs("sessionID", p.SessionID, "messageID", p.MessageID, "callID", p.CallID); err != nil {
		return nil, err
	}
	return b.Execute(ctx, p)
}

func (s *server) cancelCall(_ context.Context, b Backend, p protocol.CancelParams) (protocol.CancelResult, error) {
	if p.CallID == "" {
		return protocol.CancelResult{}, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "invalid params: callID is required")
	}
	if err := checkIDs("sessionID", p.SessionID, "callID", p.CallID); err != nil {
		return protocol.CancelResult{}, err
	}
	return protocol.CancelResult{Cancelled: b.Cancel(p.SessionID, p.CallID)}, nil
}
