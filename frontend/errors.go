package frontend

import tsdbhttp "github.com/tsdb/tsdb/http"

// The sentinels this package answers with, which the public API maps to its
// status codes, and the refusal that carries a Retry-After. They are the
// http package's until issue 15's error vocabulary (package errcode) holds
// them with their texts; then this file points them there and frontend no
// longer imports the http server package (as replica/errors.go).
var (
	errUnavailable          = tsdbhttp.ErrUnavailable
	errOffline              = tsdbhttp.ErrOffline
	errServerNotFound       = tsdbhttp.ErrServerNotFound
	errQueueFull            = tsdbhttp.ErrQueueFull
	errInsertOutcomeUnknown = tsdbhttp.ErrInsertOutcomeUnknown
)

// retryError is a refusal the client should retry after a while.
type retryError = tsdbhttp.RetryError
