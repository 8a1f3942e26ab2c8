package router

import (
	"errors"

	"github.com/tsdb/tsdb/errcode"
)

// Sentinel errors of the router. ErrMoved, ErrUnavailable and ErrOffline are
// members of the errcode kinds of the same names, ErrNotLocal of
// errcode.ErrUnavailable (errors.Is matches them as
// the kind too); the router tests its own members, which the Replicas
// implementation returns to steer it.
var (
	// ErrNotLocal means a partition has no replica on this server and remote
	// routing is not available. A member of errcode.ErrUnavailable (the
	// public answer is 503 unavailable), distinct from ErrUnavailable: the
	// router does not try another replica for it.
	ErrNotLocal = errcode.New(errcode.ErrUnavailable, "router: partition has no replica on this server")
	// ErrMoved means a replica no longer serves the partition under the
	// sender's METADATA (split, moved, unloading, or a placement it does
	// not hold): the router reloads the METADATA and routes again.
	// A member of errcode.ErrMoved; the router routes again on this member
	// only, not on the kind (a moved answer from a peer is translated into
	// it by the replica client).
	ErrMoved = errcode.New(errcode.ErrMoved, "router: partition moved")
	// ErrUnavailable means a replica could not be reached or could not
	// answer; the router tries the partition's next replica.
	// A member of errcode.ErrUnavailable; the router tries the next
	// replica on this member only, not on the kind.
	ErrUnavailable = errcode.New(errcode.ErrUnavailable, "router: replica unavailable")
	// ErrOffline means an operator took a partition the request needs out
	// of service (SET_OFFLINE); nothing is written or read until it is
	// back online.
	// A member of errcode.ErrOffline.
	ErrOffline = errcode.New(errcode.ErrOffline, "router: partition offline")
	// ErrNoPartition means the METADATA has no partition for a row's time,
	// which a valid file never allows.
	ErrNoPartition = errors.New("router: no partition covers the time")
)
