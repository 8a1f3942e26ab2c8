// Package bytesize reads and writes byte counts with units ("250MB",
// "64KiB") for command-line flags and reports. Parsing is
// github.com/dustin/go-humanize's ParseBytes; this package adds the checks
// a flag needs (surrounding space, a signed 64-bit result) and a pflag.Value.
//
// Units are case-insensitive: B, k/kB, M/MB, G/GB, T/TB, ... are powers of
// 1000; Ki/KiB, Mi/MiB, Gi/GiB, Ti/TiB, ... powers of 1024. A plain number
// is a number of bytes. Invariants: Parse never returns a negative count
// and refuses what does not fit an int64; Format writes what Parse reads
// back (to within its two printed decimals).
package bytesize

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dustin/go-humanize"
)

// ErrInvalid: the text is not a byte count.
var ErrInvalid = errors.New("invalid size")

// Parse reads a byte count such as "512", "2MB", "1.5 GiB" or "64kib".
// Fractions are truncated to whole bytes.
func Parse(s string) (int64, error) {
	n, err := humanize.ParseBytes(strings.TrimSpace(s))
	if err != nil { // humanize's reasons (a float syntax error, an unknown unit) say less than this
		return 0, fmt.Errorf("%w %q: want a number of bytes with an optional unit such as 250MB or 64KiB", ErrInvalid, s)
	}
	if n > math.MaxInt64 {
		return 0, fmt.Errorf("%w %q: too large", ErrInvalid, s)
	}
	return int64(n), nil
}

// Format writes n bytes with the largest IEC unit that keeps at least one
// whole unit, rounded to two decimals: "512B", "4MiB", "1.5GiB", "1.91MiB".
func Format(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	v, u := float64(n), 0
	for math.Abs(v) >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64) + units[u]
}

// Value is a pflag.Value over an integer byte count: the flag accepts
// Parse's forms and --help shows its type as "size" and a non-zero
// default with its unit ("64MiB").
type Value[T ~int | ~int32 | ~int64] struct{ p *T }

// Var returns a Value storing into p; *p, as it is, is the default.
func Var[T ~int | ~int32 | ~int64](p *T) *Value[T] { return &Value[T]{p: p} }

// String writes the count as Format does ("0" for zero, so that --help
// omits a zero default as it does for plain numbers).
func (v *Value[T]) String() string {
	if v == nil || v.p == nil || *v.p == 0 {
		return "0"
	}
	return Format(int64(*v.p))
}

// Set parses s with Parse; *p is unchanged on error.
func (v *Value[T]) Set(s string) error {
	n, err := Parse(s)
	if err != nil {
		return err
	}
	if T(n) < 0 || int64(T(n)) != n {
		return fmt.Errorf("%w %q: too large", ErrInvalid, s)
	}
	*v.p = T(n)
	return nil
}

// Type names the flag's value in --help.
func (v *Value[T]) Type() string { return "size" }
