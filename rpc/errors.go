package rpc

import (
	"context"
	"errors"

	"go.lsp.dev/jsonrpc2"

	"github.com/toolsd/toolsd/protocol"
	"github.com/toolsd/toolsd/session"
)

// toRPCError maps a handler's error to a JSON-RPC error: the one place where that
// happens. A *jsonrpc2.Error goes as it is; a cancelled request's error is -32800; the
// sentinels of the lower layers get their codes; anything else is an internal error,
// logged.
func (s *server) toRPCError(ctx context.Context, method string, err error) error {
	var re *jsonrpc2.Error
	if errors.As(err, &re) {
		return re
	}
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return jsonrpc2.NewError(protocol.CodeRequestCancelled, "request cancelled")
	}
	var pe *session.ParamsError
	code := jsonrpc2.InternalError
	switch {
	case errors.As(err, &pe), errors.Is(err, session.ErrBadReply):
		code = jsonrpc2.InvalidParams
	case errors.Is(err, session.ErrCancelled):
		code = protocol.CodeRequestCancelled
	case errors.Is(err, session.ErrDuplicate), errors.Is(err, session.ErrCallRunning):
		code = protocol.CodeConflict
	case errors.Is(err, session.ErrUnknownAsk), errors.Is(err, session.ErrNotFound):
		code = protocol.CodeNotFound
	case errors.Is(err, session.ErrClosed):
		code = jsonrpc2.InvalidRequest
	default:
		s.log.Error("internal error", "method", method, "err", err)
	}
	return jsonrpc2.NewError(code, err.Error())
}
