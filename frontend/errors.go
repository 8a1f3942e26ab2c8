package frontend

import (
	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/http/api"
)

// The sentinels this package answers with, which the public API maps to its
// status codes (each a member of an errcode kind, with the text answers
// carry), and the refusal that carries a Retry-After.
var (
	errUnavailable          = wire.ErrUnavailable
	errInsertOutcomeUnknown = wire.ErrInsertOutcomeUnknown
	errOffline              = api.ErrOffline
	errServerNotFound       = api.ErrServerNotFound
	errQueueFull            = api.ErrQueueFull
)

// retryError is a refusal the client should retry after a while.
type retryError = api.RetryError
