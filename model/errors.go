package model

import (
	"errors"

	"github.com/tsdb/tsdb/errcode"
)

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

// Sentinel errors of the table and partition map validation, members of
// errcode's kinds. Package metadata exports the same values under the same
// names (metadata.ErrInvalidConfig is ErrInvalidConfig); their text keeps
// the "metadata:" prefix it has always had in HTTP answers and logs.
var (
	// ErrInvalidConfig: a TableConfig failed validation (TableConfig.Validate).
	ErrInvalidConfig = errcode.New(errcode.ErrInvalidConfig, "metadata: invalid table config")
	// ErrInvalidFile: a METADATA file breaks an invariant (File.Validate).
	ErrInvalidFile = errcode.New(errcode.ErrInvalidFile, "metadata: invalid metadata file")
)
