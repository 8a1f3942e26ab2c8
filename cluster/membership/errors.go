package membership

import "errors"

// Sentinel errors of the membership package. Callers test them with
// errors.Is; the package adds context with fmt.Errorf("...: %w", err).
var (
	// ErrDuplicateID: another live registration (a key attached to a lease
	// that is not ours) holds the same server id. Two processes with one id
	// would corrupt placements, so the second one must not serve. The error
	// text names the other's addr and start time.
	ErrDuplicateID = errors.New("membership: server id already registered")
	// ErrInvalidConfig: a Config failed validation; the message names every
	// offending field.
	ErrInvalidConfig = errors.New("membership: invalid config")
	// errLeaseLost is internal: the current lease is gone (not found,
	// unconfirmed past its deadline, or our key no longer carries it).
	errLeaseLost = errors.New("membership: lease lost")
)
