package frontend

import (
	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/errcode"
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
	// ErrBeyondRetention refuses an insert with a row older than its
	// table's retention floor (a 400 invalid_row): such a row would be
	// acknowledged and never answered, and below the METADATA's retention
	// horizon it would not even be replicated.
	ErrBeyondRetention = errcode.New(errcode.ErrInvalidRow, "frontend: row older than the table's retention")
)

// retryError is a refusal the client should retry after a while.
type retryError = api.RetryError
