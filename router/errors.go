package router

import "errors"

// Sentinel errors of the router.
var (
	// ErrNotLocal means a partition has no replica on this server and remote
	// routing is not available.
	ErrNotLocal = errors.New("router: partition has no replica on this server")
	// ErrMoved means a replica no longer serves the partition under the
	// sender's METADATA (split, moved, unloading, or a placement it does
	// not hold): the router reloads the METADATA and routes again.
	ErrMoved = errors.New("router: partition moved")
	// ErrUnavailable means a replica could not be reached or could not
	// answer; the router tries the partition's next replica.
	ErrUnavailable = errors.New("router: replica unavailable")
	// ErrOffline means an operator took a partition the request needs out
	// of service (SET_OFFLINE); nothing is written or read until it is
	// back online.
	ErrOffline = errors.New("router: partition offline")
	// ErrNoPartition means the METADATA has no partition for a row's time,
	// which a valid file never allows.
	ErrNoPartition = errors.New("router: no partition covers the time")
)
