package rpc

import (
	"errors"
	"fmt"

	"github.com/tsdb/tsdb/errcode"
)

// Sentinel errors of the client. Each is matched with errors.Is.
var (
	// ErrUnauthorized means the server answered 401: the cluster secret is
	// missing or wrong. A *StatusError with status 401 matches it. Never retried.
	ErrUnauthorized = errors.New("rpc: unauthorized (wrong or missing cluster secret)")
	// ErrUnavailable means every attempt failed with a retryable error. It
	// wraps the last attempt's error (a transport error, ErrTimeout or a
	// *StatusError with status 429, 502, 503 or 504).
	ErrUnavailable = errors.New("rpc: unavailable")
	// ErrTimeout means one attempt took longer than Config.Timeout. Retried.
	ErrTimeout = errors.New("rpc: attempt timed out")
	// ErrResponseTooLarge means an answer was over Config.MaxResponseBytes,
	// as sent or once decompressed. Not retried: the next answer would be
	// just as large.
	ErrResponseTooLarge = errors.New("rpc: response too large")
	// ErrBadResponse means a 2xx answer could not be decoded (corrupt zstd,
	// invalid JSON, unknown Content-Encoding). Not retried.
	ErrBadResponse = errors.New("rpc: undecodable response")
	// ErrClosed means Call was made on a closed Client.
	ErrClosed = errors.New("rpc: client closed")
	// ErrTLS means the TLS handshake with an https peer failed for good:
	// its certificate does not chain to Config.TLS's CAs (or names another
	// host), or it does not speak TLS. Not retried.
	ErrTLS = errors.New("rpc: TLS handshake refused")
)

// Sentinel errors of the server helpers; DecodeRequest has already answered
// the request with the status named here when it returns one of them. Each
// is a member of the errcode kind that is answered with that status.
var (
	// ErrRequestTooLarge: the body is over the handler's limit, as sent or
	// once decompressed (413).
	ErrRequestTooLarge = errcode.New(errcode.ErrTooLarge, "rpc: request body too large")
	// ErrUnsupportedEncoding: the Content-Encoding is neither zstd nor
	// identity, or the Content-Type is not JSON (415).
	ErrUnsupportedEncoding = errcode.New(errcode.ErrUnsupportedMedia, "rpc: unsupported request encoding")
	// ErrBadRequest: the body is empty, corrupt, not JSON, has unknown fields
	// or trailing data (400).
	ErrBadRequest = errcode.New(errcode.ErrBadRequest, "rpc: bad request")
)

// StatusError is a non-2xx answer. Code and Message come from the JSON
// error body {"error": {"code", "message"}} when the server sent one;
// otherwise Code is empty and Message holds the start of the body as text.
type StatusError struct {
	// Status is the HTTP status code.
	Status int
	// Code is the stable error code of the body, such as "bad_request".
	Code string
	// Message is the human-readable message of the body.
	Message string
}

// Error formats the status, code and message.
func (e *StatusError) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("rpc: status %d: %s", e.Status, e.Message)
	}
	return fmt.Sprintf("rpc: status %d (%s): %s", e.Status, e.Code, e.Message)
}

// Is makes errors.Is(err, ErrUnauthorized) true for a 401 answer, and
// errors.Is(err, kind) true for the errcode kind its status and code map to
// (errcode.Sentinel, the table errcode.FromCode uses): a 409 "moved" answer
// matches errcode.ErrMoved, a 409 "conflict" errcode.ErrConflict. It matches
// no package's member sentinel (metadata.ErrConflict, partition.ErrUnloading):
// a caller that needs one translates the answer.
func (e *StatusError) Is(target error) bool {
	if target == ErrUnauthorized {
		return e.Status == 401
	}
	k := errcode.Sentinel(e.Status, e.Code)
	return k != nil && k == target
}

// RemoteAnswer marks the error as a peer's answer: errcode.Classify (and so
// the HTTP server) does not answer a client with a peer's code that no layer
// of this server translated; it is this server's internal error.
func (e *StatusError) RemoteAnswer() {}
