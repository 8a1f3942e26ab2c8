package api

import (
	"time"

	"github.com/tsdb/tsdb/errcode"
)

// The public API's refusals that the server's front end (package frontend)
// answers with. Each is a member of a kind of package errcode, whose table
// maps it to the status and code it is answered with; the member keeps the
// text answers carry.
var (
	// ErrOffline: an operator took the partition out of service; answered
	// 503 CodeOffline.
	ErrOffline = errcode.New(errcode.ErrOffline, "http: partition offline")
	// ErrServerNotFound: no live or listed server has the id; answered 404
	// CodeServerNotFound.
	ErrServerNotFound = errcode.New(errcode.ErrServerNotFound, "http: server not found")
	// ErrQueueFull: the server's smear queue cannot take the rows now;
	// answered 503 CodeQueueFull, with Retry-After when the error is a
	// *RetryError.
	ErrQueueFull = errcode.New(errcode.ErrQueueFull, "http: smear queue full")
)

// RetryError is a refusal the client should retry after a while: it is
// answered as its Err is, with a Retry-After header of After (whole
// seconds, at least 1).
type RetryError struct {
	Err   error
	After time.Duration
}

func (e *RetryError) Error() string { return e.Err.Error() }
func (e *RetryError) Unwrap() error { return e.Err }
