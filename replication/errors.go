package replication

import (
	"errors"

	"github.com/tsdb/tsdb/errcode"
)

// Sentinel errors of replication. Callers test them with errors.Is; the
// package wraps them with context (which push, which byte).
var (
	// ErrCorrupt is returned by DecodeRows, DecodeAggs and Receive for an
	// encoding that is truncated, malformed, has trailing bytes, or whose
	// row count disagrees with the request.
	ErrCorrupt = errors.New("replication: corrupt encoding")
	// ErrStalePlacement is what a Sender returns (wrapped) when the target
	// refused a push because it does not hold the placement as LOAD or
	// SERVE (HTTP 409 stale_placement). The Pusher calls Config.OnStale
	// and backs off. A member of errcode.ErrStalePlacement.
	ErrStalePlacement = errcode.New(errcode.ErrStalePlacement, "replication: stale placement")
)
