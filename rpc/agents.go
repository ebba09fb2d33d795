package rpc

import (
	"context"

	"go.lsp.dev/jsonrpc2"

	"github.com/toolsd/toolsd/protocol"
)

// agentsBackend is the part of a backend that serves agents' own calls (session.Client):
// agents/before and agents/after, which `toolsd hook` sends (docs/agents.md).
type agentsBackend interface {
	AgentBefore(ctx context.Context, p protocol.AgentBeforeParams) (*protocol.AgentBeforeResult, error)
	AgentAfter(ctx context.Context, p protocol.AgentAfterParams) (*protocol.AgentAfterResult, error)
}

func init() {
	handlers[protocol.MethodAgentsBefore] = handler((*server).agentsBefore)
	handlers[protocol.MethodAgentsAfter] = handler((*server).agentsAfter)
}

func agents(b Backend) (agentsBackend, error) {
	ab, ok := b.(agentsBackend)
	if !ok {
		return nil, jsonrpc2.Errorf(jsonrpc2.MethodNotFound, "this daemon does not serve agents' calls")
	}
	return ab, nil
}

func (s *server) agentsBefore(ctx context.Context, b Backend, p protocol.AgentBeforeParams) (*protocol.AgentBeforeResult, error) {
	if err := checkIDs("sessionID", p.SessionID, "callID", p.CallID); err != nil {
		return nil, err
	}
	ab, err := agents(b)
	if err != nil {
		return nil, err
	}
	return ab.AgentBefore(ctx, p)
}

func (s *server) agentsAfter(ctx context.Context, b Backend, p protocol.AgentAfterParams) (*protocol.AgentAfterResult, error) {
	if err := checkIDs("sessionID", p.SessionID, "callID", p.CallID); err != nil {
		return nil, err
	}
	ab, err := agents(b)
	if err != nil {
		return nil, err
	}
	return ab.AgentAfter(ctx, p)
}
