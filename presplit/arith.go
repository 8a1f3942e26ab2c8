package presplit

import "math"

// addSat returns a+d for d >= 0, saturated at math.MaxInt64.
func addSat(a, d int64) int64 {
	if a > math.MaxInt64-d {
		return math.MaxInt64
	}
	return a + d
}

// canAdd reports whether a+d (d >= 0) fits in an int64.
func canAdd(a, d int64) bool { return a <= math.MaxInt64-d }

// subSat returns a-d for d >= 0, saturated at math.MinInt64.
func subSat(a, d int64) int64 {
	if a < math.MinInt64+d {
		return math.MinInt64
	}
	return a - d
}

// alignUp returns the smallest multiple of w (w > 0) that is >= t, and
// false when that multiple does not fit in an int64.
func alignUp(t, w int64) (int64, bool) {
	q := t / w // truncates toward zero: already the ceiling when t < 0
	if t > 0 && t%w != 0 {
		q++
	}
	if q > math.MaxInt64/w {
		return 0, false
	}
	return q * w, true
}
