package wire

import "github.com/tsdb/tsdb/errcode"

// The refusals of the internal API's replication and forwarding (DESIGN.md
// section 5): the members of errcode's kinds that package replica answers
// with and the HTTP server maps, through errcode's table, to the status and
// code each is answered with. The HTTP server's sentinels of the same names
// (tsdbhttp.ErrMoved, …) are these values, so that errors.Is matches the
// member whichever package a caller names it by; their texts, which
// answers carry, keep the "http:" prefix they were answered with before
// they moved here.
var (
	// ErrMoved: the partition is not served by the receiver under the
	// sender's view (split, moved, or the replica is UNLOAD and refuses
	// client writes). Answered 409 moved: the front end refreshes its
	// METADATA and retries.
	ErrMoved = errcode.New(errcode.ErrMoved, "http: partition moved")
	// ErrStalePlacement: the receiver does not hold the placement a push
	// or sub-query names as LOAD or SERVE (dropped, never created, or
	// UNLOAD). Answered 409 stale_placement: the sender re-runs discovery.
	ErrStalePlacement = errcode.New(errcode.ErrStalePlacement, "http: stale placement")
	// ErrInsertOutcomeUnknown: the coordinator wrote the rows but fewer
	// replicas than the consistency level asks confirmed them before the
	// deadline. Answered 503 insert_outcome_unknown: the rows may still
	// appear.
	ErrInsertOutcomeUnknown = errcode.New(errcode.ErrInsertOutcomeUnknown, "http: insert outcome unknown")
	// ErrUnavailable: the receiver cannot take or answer the request now
	// (catching up, replication not running, no quorum of copies).
	// Answered 503 unavailable.
	ErrUnavailable = errcode.New(errcode.ErrUnavailable, "http: unavailable")
	// ErrBadRequest: the request is malformed (undecodable rows, a bad
	// consistency level). Answered 400 bad_request.
	ErrBadRequest = errcode.New(errcode.ErrBadRequest, "http: bad request")
)
