package errcode

import (
	"errors"
	"fmt"
	"net/http"
)

// Wire codes of the JSON error body {"error": {"code", "message"}}, public
// and internal API alike (package http/api re-exports them). Each is
// answered with one HTTP status, noted beside it.
const (
	CodeBadRequest       = "bad_request"            // 400
	CodeInvalidTableName = "invalid_table_name"     // 400
	CodeInvalidRow       = "invalid_row"            // 400
	CodeInvalidQuery     = "invalid_query"          // 400
	CodeUnauthorized     = "unauthorized"           // 401
	CodeNotFound         = "not_found"              // 404
	CodeTableNotFound    = "table_not_found"        // 404
	CodeMethodNotAllowed = "method_not_allowed"     // 405
	CodeTableExists      = "table_exists"           // 409
	CodeTooLarge         = "payload_too_large"      // 413
	CodeUnsupportedMedia = "unsupported_media_type" // 415
	CodeInternal         = "internal"               // 500
	CodeUnavailable      = "unavailable"            // 503
	// CodeOverloaded (503, with Retry-After): the server already serves
	// as many public requests as --max-concurrent-requests allows.
	CodeOverloaded = "overloaded"
	// CodeTooManyBuckets (422): an aggregate answer would hold more
	// buckets, summed over its series, than --max-query-buckets.
	CodeTooManyBuckets = "too_many_buckets"
	// CodeAnswerTooLarge (422): a partition's part of a query answer is
	// over --max-subquery-bytes.
	CodeAnswerTooLarge = "answer_too_large"

	// CodeOffline (503): the partition was taken out of service by an
	// operator (tsdb admin offline); inserts into it and queries of it
	// fail until it is back online.
	CodeOffline = "partition_offline"
	// CodeServerNotFound (404): no live or listed server has that id.
	CodeServerNotFound = "server_not_found"
	// CodeQueueFull (503, with Retry-After): the receiving server's smear
	// queue is full; retry after the given seconds, or elsewhere.
	CodeQueueFull = "queue_full"

	// CodeConflict (409): the change's base is not the current transaction,
	// or another change won the compare-and-swap. Re-read and re-plan.
	CodeConflict = "conflict"
	// CodeInvalidOp (400): the op failed its preconditions.
	CodeInvalidOp = "invalid_op"
	// CodeNotMetadataServer (421): the receiver is not a metadata server of
	// the table; ask one that is.
	CodeNotMetadataServer = "not_metadata_server"
	// CodeTxnMismatch (409): a file with other bytes is stored under that txnid.
	CodeTxnMismatch = "txn_mismatch"
	// CodeStale (409): the receiver's view is older than the min_txnseq the
	// request named, even after catching up.
	CodeStale = "stale"
	// CodeOutcomeUnknown (503): the commit may or may not have happened; the
	// requester re-reads TableConfig to learn which.
	CodeOutcomeUnknown = "outcome_unknown"
	// CodeNoQuorum (503): fewer than a majority of the metadata servers
	// stored the file; nothing was committed.
	CodeNoQuorum = "no_quorum"

	// CodeStalePlacement (409): the receiver does not hold the named
	// placement as LOAD or SERVE (dropped, never created, or UNLOAD). The
	// sender re-runs discovery.
	CodeStalePlacement = "stale_placement"
	// CodeMoved (409): the partition is not served by the receiver under
	// the sender's view (split, moved, UNLOAD); the front end refreshes its
	// METADATA and retries.
	CodeMoved = "moved"
	// CodeOutcomeUnknownRows (503): the rows were written by the
	// coordinator but not confirmed by enough replicas before the
	// deadline; they may still appear.
	CodeOutcomeUnknownRows = "insert_outcome_unknown"
	// CodeCannotSplit (409): the partition's rows are all at one time (or
	// it has none), so no split point leaves rows on both sides.
	CodeCannotSplit = "cannot_split"
)

// The kinds of cluster errors. Packages declare their own sentinels as
// members of these (New); see the package doc.
var (
	// ErrTooManyBuckets: an aggregate answer would hold more buckets than
	// the limit (partition.ErrTooManyBuckets).
	ErrTooManyBuckets = errors.New("too many buckets")
	// ErrAnswerTooLarge: a query answer is over a byte limit
	// (partition.ErrAnswerTooLarge).
	ErrAnswerTooLarge = errors.New("answer too large")
	// ErrStalePlacement: the receiver does not hold the placement a push or
	// sub-query names as LOAD or SERVE; the sender re-runs discovery.
	ErrStalePlacement = errors.New("stale placement")
	// ErrMoved: the partition is not served by the receiver under the
	// sender's view (split, moved, or an UNLOAD replica refusing writes);
	// the front end refreshes its METADATA and routes again.
	ErrMoved = errors.New("partition moved")
	// ErrCannotSplit: no split point leaves rows on both sides.
	ErrCannotSplit = errors.New("cannot split")
	// ErrInsertOutcomeUnknown: the coordinator wrote the rows but fewer
	// replicas than asked confirmed them in time; they may still appear.
	ErrInsertOutcomeUnknown = errors.New("insert outcome unknown")
	// ErrInvalidRow: a row of the request cannot be parsed or stored.
	ErrInvalidRow = errors.New("invalid row")
	// ErrTableNotFound: no table has that name.
	ErrTableNotFound = errors.New("table not found")
	// ErrTableExists: a table of that name already exists.
	ErrTableExists = errors.New("table already exists")
	// ErrInvalidTableName: the name is not a valid table name.
	ErrInvalidTableName = errors.New("invalid table name")
	// ErrInvalidConfig: a table config failed validation (answered as a bad
	// request).
	ErrInvalidConfig = errors.New("invalid table config")
	// ErrTooLarge: the request body is over the limit.
	ErrTooLarge = errors.New("request too large")
	// ErrUnsupportedMedia: the Content-Type or Content-Encoding is not one
	// the endpoint takes.
	ErrUnsupportedMedia = errors.New("unsupported media type")
	// ErrBadRequest: the request is malformed.
	ErrBadRequest = errors.New("bad request")
	// ErrInvalidQuery: the query's parameters are malformed.
	ErrInvalidQuery = errors.New("invalid query")
	// ErrOffline: an operator took a partition the request needs out of
	// service.
	ErrOffline = errors.New("partition offline")
	// ErrServerNotFound: no live or listed server has the id.
	ErrServerNotFound = errors.New("server not found")
	// ErrQueueFull: the smear queue cannot take the rows now.
	ErrQueueFull = errors.New("queue full")
	// ErrConflict: a metadata compare-and-swap lost, or the base is not the
	// current transaction; nothing was committed.
	ErrConflict = errors.New("conflict")
	// ErrTxnMismatch: a metadata file with other bytes is stored under the
	// same txnid.
	ErrTxnMismatch = errors.New("txnid stored with different content")
	// ErrInvalidOp: a metadata op failed its preconditions.
	ErrInvalidOp = errors.New("invalid op")
	// ErrInvalidFile: a METADATA file is invalid, corrupt or does not match
	// its checksum (answered as a bad request).
	ErrInvalidFile = errors.New("invalid metadata file")
	// ErrNotMetadataServer: the receiver is not a metadata server of the
	// table.
	ErrNotMetadataServer = errors.New("not a metadata server")
	// ErrNoQuorum: fewer than a majority of the metadata servers stored the
	// file; nothing was committed.
	ErrNoQuorum = errors.New("no quorum")
	// ErrOutcomeUnknown: a metadata commit may or may not have happened.
	ErrOutcomeUnknown = errors.New("commit outcome unknown")
	// ErrStale: the receiver's METADATA view is older than asked.
	ErrStale = errors.New("stale view")
	// ErrUnavailable: no replica could take or answer the request now.
	ErrUnavailable = errors.New("unavailable")
	// ErrFileNotFound: a METADATA file is not held (answered 503
	// unavailable; a peer's 404 not_found means it).
	ErrFileNotFound = errors.New("metadata file not found")
	// ErrUnauthorized: the credentials are missing or wrong.
	ErrUnauthorized = errors.New("unauthorized")
	// ErrOverloaded: the server serves as many requests as it may.
	ErrOverloaded = errors.New("overloaded")
	// ErrInternal: a failure of the server itself.
	ErrInternal = errors.New("internal error")
)

// direction says which ways a table row maps.
type direction uint8

const (
	// both: the kind is answered with the code, and the code maps back.
	both direction = iota
	// answerOnly: the kind is answered with the code, which maps back to
	// another kind (several kinds share bad_request and unavailable).
	answerOnly
	// fromOnly: a peer's answer with this status and code maps to the
	// kind, which is answered otherwise.
	fromOnly
)

// row is one entry of the table.
type row struct {
	kind   error
	status int
	code   string
	dir    direction
}

// table is the one mapping between kinds, HTTP statuses and wire codes.
// Classify walks it in order (the first matching kind answers), so the
// order is the precedence of answers:
//
//   - Replication and forwarding first: a node wraps them deliberately,
//     and a partition that moved may be reported with the error that
//     revealed it (a stale METADATA view, an unknown table) while it is
//     the move the caller must act on. An answer over a limit before
//     everything: it is the query's own doing, whichever replica met it.
//     A stale placement before "moved": an UNLOAD replica refuses client
//     writes as moved, but a push it refuses is wrapped as a stale
//     placement, which wins.
//   - Then the request's own faults and the table's state.
//   - Then the metadata commit errors, the more specific first (an op
//     whose result fails validation is an invalid op, not a bad request).
//   - Then "unavailable": a no-quorum error may wrap a peer's missing file,
//     and it is the no-quorum the caller must see.
var table = []row{
	{ErrTooManyBuckets, http.StatusUnprocessableEntity, CodeTooManyBuckets, both},
	{ErrAnswerTooLarge, http.StatusUnprocessableEntity, CodeAnswerTooLarge, both},
	{ErrStalePlacement, http.StatusConflict, CodeStalePlacement, both},
	{ErrMoved, http.StatusConflict, CodeMoved, both},
	{ErrCannotSplit, http.StatusConflict, CodeCannotSplit, both},
	{ErrInsertOutcomeUnknown, http.StatusServiceUnavailable, CodeOutcomeUnknownRows, both},

	{ErrInvalidRow, http.StatusBadRequest, CodeInvalidRow, both},
	{ErrTableNotFound, http.StatusNotFound, CodeTableNotFound, both},
	{ErrTableExists, http.StatusConflict, CodeTableExists, both},
	{ErrInvalidTableName, http.StatusBadRequest, CodeInvalidTableName, both},
	{ErrInvalidConfig, http.StatusBadRequest, CodeBadRequest, answerOnly},
	{ErrTooLarge, http.StatusRequestEntityTooLarge, CodeTooLarge, both},
	{ErrUnsupportedMedia, http.StatusUnsupportedMediaType, CodeUnsupportedMedia, both},
	{ErrBadRequest, http.StatusBadRequest, CodeBadRequest, both},
	{ErrInvalidQuery, http.StatusBadRequest, CodeInvalidQuery, both},
	{ErrOffline, http.StatusServiceUnavailable, CodeOffline, both},
	{ErrServerNotFound, http.StatusNotFound, CodeServerNotFound, both},
	{ErrQueueFull, http.StatusServiceUnavailable, CodeQueueFull, both},

	{ErrConflict, http.StatusConflict, CodeConflict, both},
	{ErrTxnMismatch, http.StatusConflict, CodeTxnMismatch, both},
	{ErrInvalidOp, http.StatusBadRequest, CodeInvalidOp, both},
	{ErrInvalidFile, http.StatusBadRequest, CodeBadRequest, answerOnly},
	{ErrNotMetadataServer, http.StatusMisdirectedRequest, CodeNotMetadataServer, both},
	{ErrNoQuorum, http.StatusServiceUnavailable, CodeNoQuorum, both},
	{ErrOutcomeUnknown, http.StatusServiceUnavailable, CodeOutcomeUnknown, both},
	{ErrStale, http.StatusConflict, CodeStale, both},

	{ErrUnavailable, http.StatusServiceUnavailable, CodeUnavailable, both},
	{ErrFileNotFound, http.StatusServiceUnavailable, CodeUnavailable, answerOnly},
	// The metadata file endpoint answers a file it does not hold as 404
	// not_found ("ask another metadata server"), which is how an unknown
	// endpoint is answered too: a 404 not_found from a peer is taken as
	// the file's absence.
	{ErrFileNotFound, http.StatusNotFound, CodeNotFound, fromOnly},

	{ErrUnauthorized, http.StatusUnauthorized, CodeUnauthorized, both},
	{ErrOverloaded, http.StatusServiceUnavailable, CodeOverloaded, both},
	{ErrInternal, http.StatusInternalServerError, CodeInternal, both},
}

// Kind returns the first kind of the table that err matches (in the
// precedence order of Classify), or nil. Like Classify, it does not look
// through a peer's untranslated answer.
func Kind(err error) error {
	if r, ok := lookup(err); ok {
		return r.kind
	}
	return nil
}

// Classify returns the HTTP status and wire code err is answered with: those
// of the first kind of the table it matches, or 500 CodeInternal. It does
// not look through a peer's answer that no layer translated (see the
// package doc).
func Classify(err error) (status int, code string) {
	if r, ok := lookup(err); ok {
		return r.status, r.code
	}
	return http.StatusInternalServerError, CodeInternal
}

func lookup(err error) (row, bool) {
	if err == nil {
		return row{}, false
	}
	for _, r := range table {
		if r.dir != fromOnly && is(err, r.kind) {
			return r, true
		}
	}
	return row{}, false
}

// Sentinel returns the kind a peer's answer with status and code means, or
// nil for a code of no kind. The code decides; the status matters only for
// not_found, which means a missing METADATA file when it is a 404.
func Sentinel(status int, code string) error {
	for _, r := range table {
		switch {
		case r.code != code || r.dir == answerOnly:
		case r.dir == fromOnly && r.status != status:
		default:
			return r.kind
		}
	}
	return nil
}

// FromCode returns an error for a peer's answer: its text is msg, and it
// matches (errors.Is) the kind of status and code (Sentinel), or no kind
// for an unknown code.
func FromCode(status int, code, msg string) error {
	return &codeError{kind: Sentinel(status, code), msg: msg}
}

type codeError struct {
	kind error
	msg  string
}

func (e *codeError) Error() string { return e.msg }
func (e *codeError) Unwrap() error { return e.kind }

// New returns a sentinel with its own text that is a member of kind:
// errors.Is(err, s) matches only s (and errors wrapping it), and
// errors.Is(err, kind) matches s too.
func New(kind error, text string) error {
	return &member{kind: kind, text: text}
}

type member struct {
	kind error
	text string
}

func (m *member) Error() string { return m.text }
func (m *member) Unwrap() error { return m.kind }

// Mark returns err made a member of kind: the same text, errors.Is and
// errors.As see through it to err, and errors.Is(err, kind) holds. It lets a
// layer put an error of a package outside the vocabulary (a parse error, a
// model validation error) in its place in the table.
func Mark(err, kind error) error {
	if err == nil {
		return nil
	}
	return &marked{err: err, kind: kind}
}

type marked struct {
	err, kind error
}

func (m *marked) Error() string   { return m.err.Error() }
func (m *marked) Unwrap() []error { return []error{m.err, m.kind} }

// remote is implemented by errors that carry a peer's answer (such as
// *rpc.StatusError): Classify and Kind do not ask them which kind they are.
type remote interface {
	RemoteAnswer()
}

// Translate passes a peer's refusal on as a package's own sentinel: when
// err holds a peer's answer (the first error in its chain with a
// RemoteAnswer method, such as *rpc.StatusError) that matches the kind of
// one of members, it returns fmt.Errorf("%w: %w", member, err); otherwise
// err unchanged. The translated error matches the member (and so its kind)
// for callers and Classify alike.
func Translate(err error, members ...error) error {
	var r interface {
		error
		remote
	}
	if !errors.As(err, &r) {
		return err
	}
	for _, m := range members {
		if k := Kind(m); k != nil && errors.Is(r, k) {
			return fmt.Errorf("%w: %w", m, err)
		}
	}
	return err
}

// is is errors.Is, except that it does not call the Is method of a peer's
// answer (remote). target is always a kind of the table (a pointer), so
// comparing it with err cannot panic.
func is(err, target error) bool {
	for err != nil {
		if err == target {
			return true
		}
		if _, ok := err.(remote); !ok {
			if x, ok := err.(interface{ Is(error) bool }); ok && x.Is(target) {
				return true
			}
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if is(e, target) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}
