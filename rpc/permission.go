package rpc

import (
	"context"

	"go.lsp.dev/jsonrpc2"

	"github.com/toolsd/toolsd/protocol"
)

func (s *server) reply(_ context.Context, b Backend, p protocol.ReplyParams) (*protocol.ReplyResult, error) {
	if p.ID == "" {
		return nil, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "invalid params: id (the ask's id from permission/asked) is required")
	}
	if err := checkIDs("id", p.ID); err != nil {
		return nil, err
	}
	return b.Reply(p)
}

func (s *server) listAsks(_ context.Context, b Backend, _ struct{}) (protocol.ListAsksResult, error) {
	return protocol.ListAsksResult{Asks: b.PendingAsks()}, nil
}

func (s *server) trust(_ context.Context, b Backend, p protocol.TrustParams) (protocol.TrustResult, error) {
	t, err := b.SetTrusted(p.Trusted)
	return protocol.TrustResult{Trusted: t}, err
}

func (s *server) listClients(_ context.Context, b Backend, _ struct{}) (protocol.ClientsParams, error) {
	return b.Clients(), nil
}
