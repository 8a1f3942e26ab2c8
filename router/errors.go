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
	//
	// Deprecated: a member of errcode.ErrMoved kept until issue 15's node
	// split lands. It is still the router's signal to route again: the
	// router tests this member, not the kind (see the issue 15 report
	// before switching it to the kind).
	ErrMoved = errcode.New(errcode.ErrMoved, "router: partition moved")
	// ErrUnavailable means a replica could not be reached or could not
	// answer; the router tries the partition's next replica.
	//
	// Deprecated: a member of errcode.ErrUnavailable kept until issue 15's
	// node split lands. It is still the router's signal to try the next
	// replica: the router tests this member, not the kind.
	ErrUnavailable = errcode.New(errcode.ErrUnavailable, "router: replica unavailable")
	// ErrOffline means an operator took a partition the request needs out
	// of service (SET_OFFLINE); nothing is written or read until it is
	// back online.
	//
	// Deprecated: a member of errcode.ErrOffline kept until issue 15's
	// node split lands.
	ErrOffline = errcode.New(errcode.ErrOffline, "router: partition offline")
	// ErrNoPartition means the METADATA has no partition for a row's time,
	// which a valid file never allows.
	ErrNoPartition = errors.New("router: no partition covers the time")
)
