package rpc

import (
	"context"

	"go.lsp.dev/jsonrpc2"

	"github.com/toolsd/toolsd/protocol"
)

func (s *server) changes(ctx context.Context, b Backend, p protocol.CallsChangesParams) (*protocol.CallsChangesResult, error) {
	if p.SessionID == "" {
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "invalid params: sessionID is required (and callID for one call's changes)")
	}
	return b.Changes(ctx, p)
}

func (s *server) revert(ctx context.Context, b Backend, p protocol.CallsRevertParams) (*protocol.CallsRevertResult, error) {
	if p.SessionID == "" || p.CallID == "" {
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "invalid params: sessionID and callID are required")
	}
	return b.Revert(ctx, p)
}
