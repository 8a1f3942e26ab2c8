package ingest

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/tsdb/tsdb/model"
)

// Sentinel errors of the parsers. A *ParseError wraps one of these or one of
// the model sentinels (model.ErrEmptySeries, model.ErrSeriesTooLong,
// model.ErrInvalidSeries, model.ErrNoFields, model.ErrTooManyFields,
// model.ErrInvalidField, model.ErrStringTooLong, model.ErrUnsupportedType);
// check them with errors.Is.
var (
	// ErrSyntax reports input that is not well-formed line protocol or JSON.
	ErrSyntax = errors.New("ingest: syntax error")
	// ErrNoRows reports a body that holds no rows (empty, blank lines and
	// comments only, or an empty JSON array).
	ErrNoRows = errors.New("ingest: no rows")
	// ErrInvalidValue reports a field value that cannot be read, such as
	// `v=abc` in line protocol. It wraps ErrSyntax.
	ErrInvalidValue error = &wrapped{"ingest: invalid field value", ErrSyntax}
	// ErrValueRange reports a number that does not fit its type: an integer
	// beyond int64, an unsigned integer above math.MaxInt64, a float beyond
	// float64.
	ErrValueRange = errors.New("ingest: number out of range")
	// ErrUnknownKey reports a key other than "time", "series" and "fields" in
	// a JSON row object (typo protection), or one given twice.
	ErrUnknownKey = errors.New("ingest: unknown or repeated key")
	// ErrMissingTime reports a JSON row without "time". It wraps
	// model.ErrInvalidTime.
	ErrMissingTime error = &wrapped{"ingest: missing time", model.ErrInvalidTime}
	// ErrTimeFormat reports a time that is neither RFC 3339 nor an integer
	// number of nanoseconds (or, in line protocol, of the precision's units).
	// It wraps model.ErrInvalidTime.
	ErrTimeFormat error = &wrapped{"ingest: invalid time", model.ErrInvalidTime}
	// ErrTimeRange reports a time that cannot be represented as int64
	// nanoseconds since the epoch (before 1677-09-21 or after 2262-04-11). It
	// wraps model.ErrInvalidTime.
	ErrTimeRange error = &wrapped{"ingest: time out of range", model.ErrInvalidTime}
	// ErrPrecision reports an unknown line protocol precision.
	ErrPrecision = errors.New("ingest: unknown precision")
)

// wrapped is a sentinel that is also another, more general sentinel
// (errors.Is matches both) while keeping a short message of its own.
type wrapped struct {
	msg  string
	base error
}

func (w *wrapped) Error() string { return w.msg }
func (w *wrapped) Unwrap() error { return w.base }

// ParseError is the error of every parser of this package. It names where the
// input broke: Line for line protocol and NDJSON (1-based, counting every
// '\n' of the body), Row for a JSON array (1-based), both 0 when no place
// applies (an empty body, for instance).
type ParseError struct {
	// Line is the 1-based line of the body (line protocol, NDJSON), or 0.
	Line int
	// Row is the 1-based row of a JSON array, or 0.
	Row int
	// Err is the sentinel the error wraps: one of this package's or of
	// package model.
	Err error
	// Msg describes the problem for a human, without the place.
	Msg string
}

// Error returns the place and the message, e.g. `line 3: invalid field value
// "abc" for field "v"` or `row 2: missing "time"`.
func (e *ParseError) Error() string {
	msg := e.Msg
	if msg == "" && e.Err != nil {
		msg = e.Err.Error()
	}
	switch {
	case e.Line > 0:
		return "line " + strconv.Itoa(e.Line) + ": " + msg
	case e.Row > 0:
		return "row " + strconv.Itoa(e.Row) + ": " + msg
	}
	return msg
}

// Unwrap returns the wrapped sentinel.
func (e *ParseError) Unwrap() error { return e.Err }

// perr builds a ParseError without a place; the parser's driver adds it.
func perr(err error, format string, args ...any) *ParseError {
	return &ParseError{Err: err, Msg: fmt.Sprintf(format, args...)}
}

// modelErr wraps an error of package model, dropping its "model: " prefix
// from the message.
func modelErr(err error) *ParseError {
	msg := err.Error()
	if len(msg) > 7 && msg[:7] == "model: " {
		msg = msg[7:]
	}
	return &ParseError{Err: err, Msg: msg}
}

// quote shortens s for an error message and quotes it.
func quote(s string) string {
	const max = 64
	if len(s) > max {
		return strconv.Quote(s[:max]) + "..."
	}
	return strconv.Quote(s)
}
