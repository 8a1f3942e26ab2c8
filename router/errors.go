package router

import "errors"

// Sentinel errors of the router.
var (
	// ErrNotLocal means a partition has no replica on this server and remote
	// routing is not available.
	ErrNotLocal = errors.New("router: partition has no replica on this server")
	// ErrNoPartition means the METADATA has no partition for a row's time,
	// which a valid file never allows.
	ErrNoPartition = errors.New("router: no partition covers the time")
)
