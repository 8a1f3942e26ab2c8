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
)

// retryAfterSeconds is the Retry-After header value of d.
func retryAfterSeconds(d time.Duration) int {
	return max(1, int((d+time.Second-1)/time.Second))
}

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
