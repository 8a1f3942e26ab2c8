package ingest

import (
	"fmt"
	"math"
	"time"
	"unsafe"
)

// The instants that int64 nanoseconds can hold.
var (
	minTime = time.Unix(0, math.MinInt64)
	maxTime = time.Unix(0, math.MaxInt64)
)

// ParseTime reads a time as the JSON formats and the query parameters take
// it: an integer number of nanoseconds since the Unix epoch ("-12",
// "1700000000000000000"), or RFC 3339 with optional fractional seconds and a
// "Z" or numeric offset ("2024-05-01T12:00:00.5Z"). It returns nanoseconds
// since the epoch, UTC. Errors wrap ErrTimeFormat, or ErrTimeRange for a time
// that int64 nanoseconds cannot hold (before 1677-09-21T00:12:43.145224192Z or
// after 2262-04-11T23:47:16.854775807Z); both wrap model.ErrInvalidTime.
func ParseTime(s string) (int64, error) {
	t, detail, sentinel := parseTime(s)
	if sentinel != nil {
		return 0, fmt.Errorf("%w: %s", sentinel, detail)
	}
	return t, nil
}

// parseTime is ParseTime returning the sentinel and the detail of an error
// apart, for callers that build a ParseError.
func parseTime(s string) (t int64, detail string, sentinel error) {
	if s == "" {
		return 0, "empty time", ErrTimeFormat
	}
	if isInteger(s) {
		v, _, rangeErr := parseInt(unsafe.Slice(unsafe.StringData(s), len(s)))
		if rangeErr {
			return 0, quote(s) + " ns is outside int64 nanoseconds", ErrTimeRange
		}
		return v, "", nil
	}
	tm, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, quote(s) + " is neither RFC 3339 nor integer nanoseconds", ErrTimeFormat
	}
	if tm.Before(minTime) || tm.After(maxTime) {
		return 0, quote(s) + " is outside int64 nanoseconds (1677-09-21 to 2262-04-11)", ErrTimeRange
	}
	return tm.UnixNano(), "", nil
}

// isInteger reports whether s is an optional '-' followed by decimal digits.
func isInteger(s string) bool {
	i := 0
	if len(s) > 0 && s[0] == '-' {
		i = 1
	}
	if i == len(s) {
		return false
	}
	for ; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// exactInt converts a JSON number literal (already checked against the JSON
// grammar) to the int64 it denotes, exactly: "17e17" and "1.5e3" are
// integers, "1.5" is not. ok is false for a value with a fractional part;
// rangeErr is true for an integer beyond int64.
func exactInt(b []byte) (v int64, ok, rangeErr bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	// The literal is mantissa digits (with at most one '.') and an optional
	// exponent. Write the value as D × 10^E with D free of leading and
	// trailing zeros.
	end := len(b)
	exp := 0
	for i, c := range b {
		if c == 'e' || c == 'E' {
			end = i
			exp = parseExp(b[i+1:])
			break
		}
	}
	mant := b[:end]
	first, last, pos, fracDigits, seenDot := -1, -1, 0, 0, false
	for _, c := range mant {
		if c == '.' {
			seenDot = true
			continue
		}
		if seenDot {
			fracDigits++
		}
		if c != '0' {
			if first < 0 {
				first = pos
			}
			last = pos
		}
		pos++
	}
	if first < 0 {
		return 0, true, false // zero
	}
	nd := last - first + 1
	e := exp - fracDigits + (pos - 1 - last)
	if e < 0 {
		return 0, false, false
	}
	if nd+e > 19 {
		return 0, true, true // at least 10^19
	}
	var u uint64
	pos = 0
	for _, c := range mant {
		if c == '.' {
			continue
		}
		if pos >= first && pos <= last {
			u = u*10 + uint64(c-'0')
		}
		pos++
	}
	for ; e > 0; e-- {
		u *= 10 // cannot overflow: the result is below 10^19
	}
	if neg {
		if u > 1<<63 {
			return 0, true, true
		}
		return -int64(u), true, false
	}
	if u > math.MaxInt64 {
		return 0, true, true
	}
	return int64(u), true, false
}

// parseExp reads an exponent: an optional sign and digits, clamped far beyond
// any meaningful value so that it cannot overflow.
func parseExp(b []byte) int {
	neg := false
	if len(b) > 0 && (b[0] == '+' || b[0] == '-') {
		neg = b[0] == '-'
		b = b[1:]
	}
	e := 0
	for _, c := range b {
		if e < 1<<30 {
			e = e*10 + int(c-'0')
		}
	}
	if neg {
		return -e
	}
	return e
}
