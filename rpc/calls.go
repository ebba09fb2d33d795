package rpc

import (
	"context"

	"go.lsp.dev/jsonrpc2"

	"github.com/toolsd/toolsd/protocol"
)

func (s *server) listCalls(_ context.Context, b Backend, p protocol.CallsListParams) (*protocol.CallsListResult, error) {
	if p.Limit < 0 {
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "invalid params: limit must be positive")
	}
	if err := checkIDs("sessionID", p.SessionID); err != nil {
		return nil, err
	}
	return b.ListCalls(p)
}

func (s *server) getCall(_ context.Context, b Backend, p protocol.CallsGetParams) (*protocol.CallRecord, error) {
	if p.CallID == "" {
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "invalid params: callID is required")
	}
	if err := checkIDs("callID", p.CallID, "sessionID", p.SessionID); err != nil {
		return nil, err
	}
	return b.GetCall(p)
}

func (s *server) callOutput(_ context.Context, b Backend, p protocol.CallsOutputParams) (*protocol.CallsOutputResult, error) {
	if p.CallID == "" || p.SessionID == "" {
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "invalid params: callID and sessionID are required")
	}
	if err := checkIDs("callID", p.CallID, "sessionID", p.SessionID); err != nil {
		return nil, err
	}
	if p.MaxBytes < 0 {
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "invalid params: maxBytes must not be negative")
	}
	return b.CallOutput(p)
}

func (s *server) readOutput(_ context.Context, b Backend, p protocol.OutputsReadParams) (*protocol.OutputsReadResult, error) {
	if p.OutputID == "" {
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "invalid params: outputID is required")
	}
	if err := checkIDs("outputID", p.OutputID); err != nil {
		return nil, err
	}
	if p.Offset < 0 || p.Limit < 0 {
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "invalid params: offset and limit must not be negative")
	}
	return b.ReadOutput(p)
}
