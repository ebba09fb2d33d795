package rpc

import (
	"errors"

	"go.lsp.dev/jsonrpc2"

	"github.com/toolsd/toolsd/protocol"
	"github.com/toolsd/toolsd/session"
)

// mapError maps the sentinels of the lower layers to JSON-RPC codes: the one place where
// that happens.
func mapError(err error) (jsonrpc2.Code, bool) {
	var pe *session.ParamsError
	switch {
	case errors.As(err, &pe), errors.Is(err, session.ErrBadReply):
		return jsonrpc2.InvalidParams, true
	case errors.Is(err, session.ErrCancelled):
		return protocol.CodeRequestCancelled, true
	case errors.Is(err, session.ErrDuplicate), errors.Is(err, session.ErrCallRunning):
		return protocol.CodeConflict, true
	case errors.Is(err, session.ErrUnknownAsk), errors.Is(err, session.ErrNotFound):
		return protocol.CodeNotFound, true
	case errors.Is(err, session.ErrClosed):
		return jsonrpc2.InvalidRequest, true
	}
	return 0, false
}
