package http

import (
	"errors"
	"fmt"
	"time"

	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/errcode"
	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/http/ingest"
	"github.com/tsdb/tsdb/model"
)

// Sentinel errors of the server. Each is a member of a kind of package
// errcode, whose table maps it to the status and code it is answered with;
// the member keeps the text answers carry.
var (
	ErrBodyTooLarge        = errcode.New(errcode.ErrTooLarge, "http: request body too large")
	ErrUnsupportedEncoding = errcode.New(errcode.ErrUnsupportedMedia, "http: unsupported Content-Encoding")
	ErrUnsupportedType     = errcode.New(errcode.ErrUnsupportedMedia, "http: unsupported Content-Type")
	ErrCorruptBody         = errcode.New(errcode.ErrBadRequest, "http: corrupt compressed body")
	ErrInvalidQuery        = errcode.New(errcode.ErrInvalidQuery, "http: invalid query")
	// ErrBadRequest is wire.ErrBadRequest (the internal API's replica
	// code answers with it too).
	ErrBadRequest = wire.ErrBadRequest
	// ErrUnavailable: answered 503 api.CodeUnavailable.
	//
	// Deprecated: wire.ErrUnavailable under its old name, kept until issue 15's
	// node split lands; new code names wire.ErrUnavailable or wraps the kind.
	ErrUnavailable = wire.ErrUnavailable
	// ErrOffline, ErrServerNotFound and ErrQueueFull are the public API's
	// refusals (api.ErrOffline, …), which the front end answers with.
	//
	// Deprecated: api's values under their old names, kept until issue
	// 15's node split lands; new code names api.ErrOffline, … or wraps the
	// kind.
	ErrOffline        = api.ErrOffline
	ErrServerNotFound = api.ErrServerNotFound
	ErrQueueFull      = api.ErrQueueFull
)

// RetryError is a refusal the client should retry after a while
// (api.RetryError): it is answered as its Err is, with a Retry-After header
// of After (whole seconds, at least 1).
type RetryError = api.RetryError

// retryAfterSeconds is the Retry-After header value of d.
func retryAfterSeconds(d time.Duration) int {
	return max(1, int((d+time.Second-1)/time.Second))
}

// Sentinel errors of replication and forwarding (DESIGN.md section 5): the
// values of package cluster/wire (ErrMoved, …), which package replica
// answers with; classify answers them with errcode's table, and replica's
// client maps the codes back.
var (
	// ErrMoved: the partition is not served by this server under the
	// sender's view (split, moved, or the replica is UNLOAD and refuses
	// client writes). Answered 409 api.CodeMoved, like
	// partition.ErrUnloading: the front end refreshes its METADATA and
	// retries.
	//
	// Deprecated: wire.ErrMoved under its old name, kept until issue 15's
	// node split lands; new code names wire.ErrMoved or wraps the kind.
	ErrMoved = wire.ErrMoved
	// ErrStalePlacement: this server does not hold the placement a push or
	// sub-query names as LOAD or SERVE (dropped, never created, or UNLOAD).
	// Answered 409 api.CodeStalePlacement: the sender re-runs discovery.
	//
	// Deprecated: wire.ErrStalePlacement under its old name, kept until issue 15's
	// node split lands; new code names wire.ErrStalePlacement or wraps the kind.
	ErrStalePlacement = wire.ErrStalePlacement
	// ErrInsertOutcomeUnknown: the coordinator wrote the rows but fewer
	// replicas than the consistency level asks confirmed them before the
	// deadline. Answered 503 api.CodeOutcomeUnknownRows with the message
	// OutcomeUnknownMessage: the rows may still appear.
	//
	// Deprecated: wire.ErrInsertOutcomeUnknown under its old name, kept until issue 15's
	// node split lands; new code names wire.ErrInsertOutcomeUnknown or wraps the kind.
	ErrInsertOutcomeUnknown = wire.ErrInsertOutcomeUnknown
)

// OutcomeUnknownMessage starts the message of an api.CodeOutcomeUnknownRows
// answer.
const OutcomeUnknownMessage = "outcome unknown: the rows may still appear"

// apiError is an error with the status and code it is answered with.
type apiError struct {
	status int
	code   string
	msg    string
}

func (e *apiError) Error() string { return e.msg }

// classify maps an error to the status, code and message of its answer:
// an *apiError as it says, anything else by errcode's table (errcode.Classify,
// whose order is the precedence of answers), with two errors of packages
// outside the vocabulary put in their place in it: an ingest.ParseError is
// an invalid row (answered with the parse error's own message) and
// model.ErrInvalidTable an invalid table name.
func classify(err error) (int, string, string) {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.status, ae.code, ae.msg
	}
	var pe *ingest.ParseError
	if errors.As(err, &pe) {
		err = errcode.Mark(err, errcode.ErrInvalidRow)
	}
	if errors.Is(err, model.ErrInvalidTable) {
		err = errcode.Mark(err, errcode.ErrInvalidTableName)
	}
	status, code := errcode.Classify(err)
	switch {
	case code == api.CodeInvalidRow && pe != nil:
		return status, code, pe.Error()
	case code == api.CodeOutcomeUnknownRows:
		return status, code, OutcomeUnknownMessage + " (" + err.Error() + ")"
	case code == api.CodeInternal:
		return status, code, "internal error: " + err.Error()
	}
	return status, code, err.Error()
}

func badQuery(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidQuery}, args...)...)
}
