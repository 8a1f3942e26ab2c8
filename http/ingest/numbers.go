package ingest

import (
	"encoding/binary"
	"math"

	"github.com/tsdb/tsdb/model"
)

// pow10 holds the powers of ten that float64 represents exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// pow10u holds the powers of ten the fast paths scale mantissas by.
var pow10u = [...]uint64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15}

// fastNumber parses the common numbers of line protocol in one pass:
// -?d+(.d*)? as a float of at most 15 digits, and -?d+i, d+u as an int,
// followed by the end of the value. ok is false for anything else, which the
// caller parses in full (and reports). The float is exact for the reason
// given at simpleFloat.
func fastNumber(b []byte, i int, v *model.Value) (end int, ok bool) {
	n := len(b)
	neg := b[i] == '-'
	if neg {
		i++
	}
	m, j := scalarDigits(b, i)
	digits, frac := j-i, 0
	if digits == 0 || digits > 19 {
		return 0, false
	}
	if j < n {
		switch c := b[j]; c {
		case 'i', 'u':
			j++
			if c == 'u' && neg || j < n && !valueStop[b[j]] {
				return 0, false
			}
			x, ok := toInt64(m, neg)
			if !ok {
				return 0, false
			}
			*v = model.Int(x)
			return j, true
		case '.':
			for j++; j < n; j++ {
				d := b[j] - '0'
				if d > 9 {
					break
				}
				m = m*10 + uint64(d)
				frac++
			}
		}
	}
	if digits+frac > 15 || j < n && !valueStop[b[j]] {
		return 0, false
	}
	f := float64(m)
	if frac > 0 {
		f /= pow10[frac]
	}
	*v = model.Float(signed(f, neg))
	return j, true
}

// readDigits reads up to 20 decimal digits from b[i:], eight at a time
// where it can, and returns their value (meaningful for up to 19 digits,
// which cannot overflow) and the position after them.
func readDigits(b []byte, i int) (uint64, int) {
	var m uint64
	start := i
	for i+8 <= len(b) && i-start < 16 {
		v, ok := eightDigits(b[i : i+8])
		if !ok {
			break
		}
		m = m*1e8 + v
		i += 8
	}
	for i < len(b) && i-start < 20 {
		d := b[i] - '0'
		if d > 9 {
			break
		}
		m = m*10 + uint64(d)
		i++
	}
	return m, i
}

// scalarDigits is readDigits for short numbers (field values), one digit
// at a time.
func scalarDigits(b []byte, i int) (uint64, int) {
	var m uint64
	for start := i; i < len(b) && i-start < 20; i++ {
		d := b[i] - '0'
		if d > 9 {
			break
		}
		m = m*10 + uint64(d)
	}
	return m, i
}

// fastJSONTime parses an integer JSON time of at most 19 digits, in one
// pass, eight digits at a time. ok is false for anything else, which the
// caller parses in full (and reports).
func fastJSONTime(b []byte, i int) (t int64, end int, ok bool) {
	neg := i < len(b) && b[i] == '-'
	if neg {
		i++
	}
	if i < len(b) && b[i] == '0' {
		return 0, 0, false // rare; leading zeros need the full parse
	}
	m, j := readDigits(b, i)
	if d := j - i; d == 0 || d > 19 || j < len(b) && (b[j] == '.' || b[j] == 'e' || b[j] == 'E' || isDigit(b[j])) {
		return 0, 0, false
	}
	t, ok = toInt64(m, neg)
	return t, j, ok
}

// toInt64 returns the int64 of magnitude m and the given sign, if it fits.
func toInt64(m uint64, neg bool) (int64, bool) {
	if neg {
		if m > 1<<63 {
			return 0, false
		}
		return -int64(m), true // -(1<<63) wraps to MinInt64, as wanted
	}
	if m > math.MaxInt64 {
		return 0, false
	}
	return int64(m), true
}

// signed returns -f when neg, else f.
func signed(f float64, neg bool) float64 {
	if neg {
		return -f
	}
	return f
}

// simpleFloat parses the common short decimals (-?d*.d*, at most 15 digits,
// no exponent) exactly: the digits as an integer below 2^53 divided by an
// exactly represented power of ten is the correctly rounded result, as in
// strconv's own fast path, without its generality. ok is false for anything
// else, which the caller hands to strconv.ParseFloat.
func simpleFloat(b []byte) (f float64, ok bool) {
	i, n := 0, len(b)
	neg := n > 0 && b[0] == '-'
	if neg {
		i++
	}
	var mant uint64
	digits, frac := 0, -1
	for ; i < n; i++ {
		c := b[i]
		if d := c - '0'; d <= 9 {
			mant = mant*10 + uint64(d)
			digits++
			if frac >= 0 {
				frac++
			}
			continue
		}
		if c != '.' || frac >= 0 {
			return 0, false
		}
		frac = 0
	}
	if digits == 0 || digits > 15 {
		return 0, false
	}
	f = float64(mant)
	if frac > 0 {
		f /= pow10[frac]
	}
	if neg {
		f = -f
	}
	return f, true
}

// isFloat reports whether b is -?(d+(.d*)?|.d+)([eE][+-]?d+)?, the float
// syntax of line protocol (no inf, nan, hex or underscores).
func isFloat(b []byte) bool {
	i, n := 0, len(b)
	if i < n && b[i] == '-' {
		i++
	}
	digits := 0
	for ; i < n && isDigit(b[i]); i++ {
		digits++
	}
	if i < n && b[i] == '.' {
		for i++; i < n && isDigit(b[i]); i++ {
			digits++
		}
	}
	if digits == 0 {
		return false
	}
	if i < n && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < n && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i == n {
			return false
		}
		for ; i < n && isDigit(b[i]); i++ {
		}
	}
	return i == n
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// eightDigits parses eight ASCII digits at once (SWAR): a timestamp in
// nanoseconds has 19 of them.
func eightDigits(b []byte) (uint64, bool) {
	v := binary.LittleEndian.Uint64(b)
	const zeros, high = 0x3030303030303030, 0xF0F0F0F0F0F0F0F0
	if v&high != zeros || (v+0x0606060606060606)&high != zeros {
		return 0, false
	}
	v -= zeros
	v = (v*10 + v>>8) & 0x00FF00FF00FF00FF
	v = (v*100 + v>>16) & 0x0000FFFF0000FFFF
	v = (v*10000 + v>>32) & 0xFFFFFFFF
	return v, true
}

// parseInt parses an optional '-' and decimal digits into an int64. ok is
// false when b is not of that form; rangeErr is true when it is but the value
// does not fit.
func parseInt(b []byte) (v int64, ok, rangeErr bool) {
	neg := false
	if len(b) > 0 && b[0] == '-' {
		neg = true
		b = b[1:]
	}
	u, ok, rangeErr := parseUint(b)
	if !ok || rangeErr {
		return 0, ok, rangeErr
	}
	if neg {
		if u > 1<<63 {
			return 0, true, true
		}
		return -int64(u), true, false // -(1<<63) wraps to MinInt64, as wanted
	}
	if u > math.MaxInt64 {
		return 0, true, true
	}
	return int64(u), true, false
}

// parseUint parses decimal digits into a uint64.
func parseUint(b []byte) (v uint64, ok, rangeErr bool) {
	if len(b) == 0 {
		return 0, false, false
	}
	if len(b) < 20 { // below 10^19: cannot overflow
		for _, c := range b {
			d := c - '0'
			if d > 9 {
				return 0, false, false
			}
			v = v*10 + uint64(d)
		}
		return v, true, false
	}
	for _, c := range b {
		d := uint64(c - '0')
		if d > 9 {
			return 0, false, false
		}
		if v > (math.MaxUint64-d)/10 {
			rangeErr = true
			continue // keep checking the syntax
		}
		v = v*10 + d
	}
	return v, true, rangeErr
}

// fastJSONNumber parses the common JSON numbers in one pass: an integer
// that int64 holds, or a decimal -?d+.d+ of at most 15 digits without
// exponent (exact, see simpleFloat). ok is false for anything else, which
// the caller parses in full (and reports).
func fastJSONNumber(b []byte, i int) (end int, v model.Value, ok bool) {
	n := len(b)
	neg := i < n && b[i] == '-'
	if neg {
		i++
	}
	var m uint64
	j := i
	if j < n && b[j] == '0' {
		j++ // JSON allows no other leading zero
	} else {
		m, j = scalarDigits(b, i)
	}
	digits, frac := j-i, -1
	if j < n && b[j] == '.' {
		var f uint64
		f, j = scalarDigits(b, j+1)
		frac = j - (i + digits + 1)
		if frac == 0 || digits+frac > 15 {
			return 0, v, false
		}
		m = m*pow10u[frac] + f
	}
	if digits == 0 || digits > 19 || j < n && (b[j] == 'e' || b[j] == 'E' || isDigit(b[j])) {
		return 0, v, false
	}
	if frac >= 0 {
		return j, model.Float(signed(float64(m)/pow10[frac], neg)), true
	}
	x, ok := toInt64(m, neg)
	if !ok {
		return 0, v, false // a float, by the caller's full parse
	}
	return j, model.Int(x), true
}
