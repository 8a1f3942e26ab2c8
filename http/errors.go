package http

import (
	"errors"
	"fmt"
	"net/http"

	"time"

	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/http/ingest"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/partition"
)

// Sentinel errors of the server.
var (
	ErrBodyTooLarge        = errors.New("http: request body too large")
	ErrUnsupportedEncoding = errors.New("http: unsupported Content-Encoding")
	ErrUnsupportedType     = errors.New("http: unsupported Content-Type")
	ErrCorruptBody         = errors.New("http: corrupt compressed body")
	ErrInvalidQuery        = errors.New("http: invalid query")
	ErrBadRequest          = errors.New("http: bad request")
	ErrUnavailable         = errors.New("http: unavailable")
	// ErrOffline: an operator took the partition out of service; answered
	// 503 api.CodeOffline.
	ErrOffline = errors.New("http: partition offline")
	// ErrServerNotFound: no live or listed server has the id; answered
	// 404 api.CodeServerNotFound.
	ErrServerNotFound = errors.New("http: server not found")
	// ErrQueueFull: the server's smear queue cannot take the rows now;
	// answered 503 api.CodeQueueFull, with Retry-After when the error is a
	// *RetryError.
	ErrQueueFull = errors.New("http: smear queue full")
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

// retryAfterSeconds is the Retry-After header value of d.
func retryAfterSeconds(d time.Duration) int {
	return max(1, int((d+time.Second-1)/time.Second))
}

// Sentinel errors of replication and forwarding (DESIGN.md section 5). The
// node wraps them with context; classify answers them with the codes of
// package http/api, and the node's client maps those codes back.
var (
	// ErrMoved: the partition is not served by this server under the
	// sender's view (split, moved, or the replica is UNLOAD and refuses
	// client writes). Answered 409 api.CodeMoved, like
	// partition.ErrUnloading: the front end refreshes its METADATA and
	// retries.
	ErrMoved = errors.New("http: partition moved")
	// ErrStalePlacement: this server does not hold the placement a push or
	// sub-query names as LOAD or SERVE (dropped, never created, or UNLOAD).
	// Answered 409 api.CodeStalePlacement: the sender re-runs discovery.
	ErrStalePlacement = errors.New("http: stale placement")
	// ErrInsertOutcomeUnknown: the coordinator wrote the rows but fewer
	// replicas than the consistency level asks confirmed them before the
	// deadline. Answered 503 api.CodeOutcomeUnknownRows with the message
	// OutcomeUnknownMessage: the rows may still appear.
	ErrInsertOutcomeUnknown = errors.New("http: insert outcome unknown")
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

// classify maps an error to the status, code and message of its answer.
func classify(err error) (int, string, string) {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.status, ae.code, ae.msg
	}
	if status, code, msg, ok := classifyReplication(err); ok {
		return status, code, msg
	}
	var pe *ingest.ParseError
	switch {
	case errors.As(err, &pe):
		return http.StatusBadRequest, api.CodeInvalidRow, pe.Error()
	case errors.Is(err, metadata.ErrTableNotFound):
		return http.StatusNotFound, api.CodeTableNotFound, err.Error()
	case errors.Is(err, metadata.ErrTableExists):
		return http.StatusConflict, api.CodeTableExists, err.Error()
	case errors.Is(err, model.ErrInvalidTable):
		return http.StatusBadRequest, api.CodeInvalidTableName, err.Error()
	case errors.Is(err, metadata.ErrInvalidConfig):
		return http.StatusBadRequest, api.CodeBadRequest, err.Error()
	case errors.Is(err, ErrBodyTooLarge):
		return http.StatusRequestEntityTooLarge, api.CodeTooLarge, err.Error()
	case errors.Is(err, ErrUnsupportedEncoding), errors.Is(err, ErrUnsupportedType):
		return http.StatusUnsupportedMediaType, api.CodeUnsupportedMedia, err.Error()
	case errors.Is(err, ErrCorruptBody), errors.Is(err, ErrBadRequest):
		return http.StatusBadRequest, api.CodeBadRequest, err.Error()
	case errors.Is(err, ErrInvalidQuery):
		return http.StatusBadRequest, api.CodeInvalidQuery, err.Error()
	case errors.Is(err, ErrOffline):
		return http.StatusServiceUnavailable, api.CodeOffline, err.Error()
	case errors.Is(err, ErrServerNotFound):
		return http.StatusNotFound, api.CodeServerNotFound, err.Error()
	case errors.Is(err, ErrQueueFull):
		return http.StatusServiceUnavailable, api.CodeQueueFull, err.Error()
	}
	// The commit sentinels come before "unavailable": a no-quorum error may
	// wrap a peer's missing file, and it is the no-quorum the caller must see.
	if status, code, ok := classifyMetadata(err); ok {
		return status, code, err.Error()
	}
	if errors.Is(err, ErrUnavailable) || errors.Is(err, metadata.ErrFileNotFound) {
		return http.StatusServiceUnavailable, api.CodeUnavailable, err.Error()
	}
	return http.StatusInternalServerError, api.CodeInternal, "internal error: " + err.Error()
}

// classifyMetadata maps the metadata package's commit and file sentinels
// (met mostly on the internal API, but also by table creation) to their
// status and code. The more specific sentinels come first: an op whose
// result fails validation is an invalid op, not a bad request.
func classifyMetadata(err error) (int, string, bool) {
	switch {
	case errors.Is(err, metadata.ErrConflict):
		return http.StatusConflict, api.CodeConflict, true
	case errors.Is(err, metadata.ErrTxnMismatch):
		return http.StatusConflict, api.CodeTxnMismatch, true
	case errors.Is(err, metadata.ErrInvalidOp):
		return http.StatusBadRequest, api.CodeInvalidOp, true
	case errors.Is(err, metadata.ErrInvalidFile), errors.Is(err, metadata.ErrCorruptFile),
		errors.Is(err, metadata.ErrChecksum):
		return http.StatusBadRequest, api.CodeBadRequest, true
	case errors.Is(err, metadata.ErrNotMetadataServer):
		return http.StatusMisdirectedRequest, api.CodeNotMetadataServer, true
	case errors.Is(err, metadata.ErrNoQuorum):
		return http.StatusServiceUnavailable, api.CodeNoQuorum, true
	case errors.Is(err, metadata.ErrOutcomeUnknown):
		return http.StatusServiceUnavailable, api.CodeOutcomeUnknown, true
	case errors.Is(err, metadata.ErrStale):
		return http.StatusConflict, api.CodeStale, true
	}
	return 0, "", false
}

// classifyReplication maps the replication and forwarding sentinels. They
// come before every other sentinel: the node wraps one deliberately, and a
// partition that moved may be reported with the error that revealed it
// (a stale METADATA view, an unknown table), while it is the move the
// caller must act on.
func classifyReplication(err error) (int, string, string, bool) {
	switch {
	// An answer over a limit is the query's own doing, whichever replica
	// or layer met it (issue 14 item 7): the client must ask for less.
	case errors.Is(err, partition.ErrTooManyBuckets):
		return http.StatusUnprocessableEntity, api.CodeTooManyBuckets, err.Error(), true
	case errors.Is(err, partition.ErrAnswerTooLarge):
		return http.StatusUnprocessableEntity, api.CodeAnswerTooLarge, err.Error(), true
	case errors.Is(err, ErrStalePlacement):
		return http.StatusConflict, api.CodeStalePlacement, err.Error(), true
	case errors.Is(err, ErrMoved), errors.Is(err, partition.ErrUnloading):
		// An UNLOAD replica refuses client writes as "moved"; a push it
		// refuses is wrapped in ErrStalePlacement by the node, which wins.
		return http.StatusConflict, api.CodeMoved, err.Error(), true
	case errors.Is(err, partition.ErrCannotSplit):
		return http.StatusConflict, api.CodeCannotSplit, err.Error(), true
	case errors.Is(err, ErrInsertOutcomeUnknown):
		return http.StatusServiceUnavailable, api.CodeOutcomeUnknownRows,
			OutcomeUnknownMessage + " (" + err.Error() + ")", true
	}
	return 0, "", "", false
}

func badQuery(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidQuery}, args...)...)
}
