package presplit

import "errors"

// Sentinel errors of the presplit package. Callers test them with errors.Is;
// the package adds context with fmt.Errorf("...: %w", err).
var (
	// ErrInvalidConfig: a Config failed Validate. The message names every
	// offending field.
	ErrInvalidConfig = errors.New("presplit: invalid config")
	// ErrInvalidInput: PlanTable was given something no valid table has: no
	// file, no partitions, a last partition with a closed end, or a zero
	// size target.
	ErrInvalidInput = errors.New("presplit: invalid input")
)
