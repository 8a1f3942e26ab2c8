package loadtest

import (
	"fmt"

	"github.com/tsdb/tsdb/internal/bytesize"
)

// ParseSize parses a byte count such as "512", "2MB", "1.5 GiB" or "64kib"
// (internal/bytesize, github.com/dustin/go-humanize underneath). Units are
// case-insensitive; kB/MB/GB/TB (and k/M/G/T) are powers of 1000,
// KiB/MiB/GiB/TiB powers of 1024. Fractions of a byte are dropped; the
// result is never negative. Errors wrap ErrInvalidSize.
func ParseSize(s string) (int64, error) {
	n, err := bytesize.Parse(s)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrInvalidSize, err)
	}
	return n, nil
}

// FormatSize writes n bytes with the largest IEC unit that keeps at least
// one whole unit, e.g. "512B", "4MiB", "1.5GiB". ParseSize reads it back
// (to within the rounding of the printed digits).
func FormatSize(n int64) string { return bytesize.Format(n) }
