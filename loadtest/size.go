package loadtest

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// sizeUnits maps a lower-cased unit suffix to its multiplier: SI units
// (k, kB, M, MB, ...) are powers of 1000, IEC units (KiB, MiB, ...) powers
// of 1024, as on a disk's label and in the Go runtime respectively.
var sizeUnits = map[string]float64{
	"": 1, "b": 1,
	"k": 1e3, "kb": 1e3, "m": 1e6, "mb": 1e6, "g": 1e9, "gb": 1e9, "t": 1e12, "tb": 1e12,
	"ki": 1 << 10, "kib": 1 << 10, "mi": 1 << 20, "mib": 1 << 20,
	"gi": 1 << 30, "gib": 1 << 30, "ti": 1 << 40, "tib": 1 << 40,
}

// ParseSize parses a byte count such as "512", "2MB", "1.5 GiB" or "64kib".
// Units are case-insensitive; kB/MB/GB/TB (and k/M/G/T) are powers of
// 1000, KiB/MiB/GiB/TiB powers of 1024. The result is rounded to whole
// bytes and must not be negative.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i < 0 {
		i = len(t)
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	mult, ok := sizeUnits[unit]
	if num == "" || !ok {
		return 0, fmt.Errorf("%w: %q: want a number of bytes with an optional unit such as 512KiB or 2MB", ErrInvalidSize, s)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %q: %w", ErrInvalidSize, s, err)
	}
	b := math.Round(v * mult)
	if b >= math.MaxInt64 {
		return 0, fmt.Errorf("%w: %q is too large", ErrInvalidSize, s)
	}
	return int64(b), nil
}

// FormatSize writes n bytes with the largest IEC unit that keeps at least
// one whole unit, e.g. "512B", "4MiB", "1.5GiB". ParseSize reads it back
// (to within the rounding of the printed digits).
func FormatSize(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	v, u := float64(n), 0
	for math.Abs(v) >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64) + units[u]
}

// ByteSize is a byte count that implements pflag.Value, so a command line
// flag accepts ParseSize's forms ("2MB", "512KiB").
type ByteSize int64

// String writes the size as FormatSize does.
func (b *ByteSize) String() string { return FormatSize(int64(*b)) }

// Set parses s with ParseSize.
func (b *ByteSize) Set(s string) error {
	v, err := ParseSize(s)
	if err != nil {
		return err
	}
	*b = ByteSize(v)
	return nil
}

// Type names the flag's value in --help.
func (b *ByteSize) Type() string { return "size" }
