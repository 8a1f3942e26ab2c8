package model

import "errors"

// Sentinel errors of row validation. Callers add context (which row, which
// line) with fmt.Errorf("...: %w", err).
var (
	ErrEmptySeries     = errors.New("model: empty series")
	ErrSeriesTooLong   = errors.New("model: series too long")
	ErrInvalidSeries   = errors.New("model: invalid series")
	ErrNoFields        = errors.New("model: row has no fields")
	ErrTooManyFields   = errors.New("model: too many fields")
	ErrInvalidField    = errors.New("model: invalid field")
	ErrStringTooLong   = errors.New("model: string field too long")
	ErrUnsupportedType = errors.New("model: unsupported field type")
	ErrInvalidTime     = errors.New("model: invalid time")
	ErrInvalidTable    = errors.New("model: invalid table name")
)
