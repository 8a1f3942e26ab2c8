package colcodec

import (
	"fmt"
	"math"
	"math/bits"
	"sync"
)

// maxDecimals is the largest shared decimal exponent of CodecFloatDecimal.
const maxDecimals = 15

// xorTryAbove is the decimal form's size in bytes per value above which
// EncodeFloats also tries the XOR form. Below it XOR never won on the test
// shapes (sizes_test.go: 2-decimal walks 1.3 bytes/value decimal, 7.5 XOR;
// a constant 0.004 and 0.13), and writing it costs about 7 ns per value.
const xorTryAbove = 2

// maxMantissa bounds |mantissa| so that float64(m) is exact.
const maxMantissa = 1 << 53

// EncodeFloats appends the column of float64 values src to dst and returns
// the extended slice. When every value is m / 10^e for one e ≤ 15 and
// integers |m| < 2^53 (bit for bit: -0, NaN and ±Inf are not), it writes
// CodecFloatDecimal, or CodecFloatXOR when the decimal form takes more than
// xorTryAbove bytes per value and the XOR form is smaller; otherwise
// CodecFloatXOR. Every value round-trips bit for bit. It allocates only
// when dst must grow (its scratch buffer of mantissas comes from a pool).
func EncodeFloats(dst []byte, src []float64) ([]byte, error) {
	e := floatEncoders.Get().(*FloatEncoder)
	dst, err := e.Encode(dst, src)
	if cap(e.mant) <= 64<<10 { // keep pooled buffers small
		floatEncoders.Put(e)
	}
	return dst, err
}

var floatEncoders = sync.Pool{New: func() any { return new(FloatEncoder) }}

// FloatEncoder encodes float columns reusing one scratch buffer of
// mantissas, so repeated calls do not allocate. Not safe for concurrent
// use; the zero value is ready.
type FloatEncoder struct {
	mant []int64
	// dec says the last Encode wrote the decimal form of exponent exp,
	// whose mantissas mant holds.
	dec bool
	exp uint8
}

// Mantissas returns the mantissas and the exponent of the column the last
// Encode wrote, when it wrote the decimal form (ok false otherwise): value
// i was float64(mant[i]) / 10^exp bit for bit. The slice is the encoder's
// scratch, overwritten by its next Encode.
func (e *FloatEncoder) Mantissas() (mant []int64, exp uint8, ok bool) {
	if !e.dec {
		return nil, 0, false
	}
	return e.mant, e.exp, true
}

// Encode is EncodeFloats with the encoder's scratch buffer.
func (e *FloatEncoder) Encode(dst []byte, src []float64) ([]byte, error) {
	return encodeFloats(dst, src, e)
}

func encodeFloats(dst []byte, src []float64, e *FloatEncoder) ([]byte, error) {
	e.dec = false
	if len(src) > MaxCount {
		return dst, fmt.Errorf("%w: %d float values", ErrTooMany, len(src))
	}
	start := len(dst)
	mant, exp, ok := decimalMantissas(e.mant[:0], src)
	e.mant, e.exp = mant, exp
	if !ok {
		return appendXOR(dst, src), nil
	}
	dst = appendHeader(dst, CodecFloatDecimal, len(src))
	dst = append(dst, exp)
	if len(src) > 0 {
		dst = appendStream(dst, mant)
	}
	decLen := len(dst) - start
	if decLen <= xorTryAbove*len(src) {
		e.dec = true
		return dst, nil
	}
	// Write the XOR form after the decimal one and keep the smaller.
	dst = appendXOR(dst, src)
	if xorLen := len(dst) - start - decLen; xorLen < decLen {
		copy(dst[start:], dst[start+decLen:])
		return dst[:start+xorLen], nil
	}
	e.dec = true
	return dst[:start+decLen], nil
}

// EncodeDecimals appends a column of the decimal form (CodecFloatDecimal)
// whose value i is float64(mant[i]) / 10^exp, as EncodeFloats would write
// for such values, and returns the extended slice. It is for a caller that
// holds integers to store as a decimal column, such as the residuals of a
// block's predicted column (partition/block): DecodeDecimals gives mant back
// exactly. exp is at most 15 and every |mant[i]| below 2^53 (else
// ErrInvalidValue, dst unchanged); more than MaxCount values is ErrTooMany.
func EncodeDecimals(dst []byte, mant []int64, exp uint8) ([]byte, error) {
	switch {
	case len(mant) > MaxCount:
		return dst, fmt.Errorf("%w: %d decimal values", ErrTooMany, len(mant))
	case exp > maxDecimals:
		return dst, fmt.Errorf("%w: decimal exponent %d above %d", ErrInvalidValue, exp, maxDecimals)
	}
	for i, m := range mant {
		if m <= -maxMantissa || m >= maxMantissa {
			return dst, fmt.Errorf("%w: decimal mantissa %d (value %d) not below 2^53 in magnitude", ErrInvalidValue, m, i)
		}
	}
	dst = appendHeader(dst, CodecFloatDecimal, len(mant))
	dst = append(dst, exp)
	if len(mant) > 0 {
		dst = appendStream(dst, mant)
	}
	return dst, nil
}

// decimalMantissas returns m[i] and e with src[i] == float64(m[i]) / 10^e
// bit for bit, or ok false. One pass at the exponent found so far; a
// value that needs a larger one restarts it (at most maxDecimals times).
func decimalMantissas(m []int64, src []float64) ([]int64, uint8, bool) {
	e := uint8(0)
restart:
	m = m[:0]
	p := float64(pow10[e])
	for _, v := range src {
		f := math.Round(v * p)
		if math.Abs(f) < maxMantissa {
			if mi := int64(f); math.Float64bits(float64(mi)/p) == math.Float64bits(v) {
				m = append(m, mi)
				continue
			}
		}
		for {
			if e++; e > maxDecimals {
				return m, 0, false
			}
			if decimalExact(v, e) {
				goto restart
			}
		}
	}
	return m, e, true
}

// decimalExact reports whether v == float64(round(v·10^e)) / 10^e bit for
// bit with a mantissa below 2^53.
func decimalExact(v float64, e uint8) bool {
	p := float64(pow10[e])
	f := math.Round(v * p)
	if !(math.Abs(f) < maxMantissa) { // also false for NaN
		return false
	}
	d := float64(int64(f)) / p
	return math.Float64bits(d) == math.Float64bits(v)
}

// appendXOR appends a CodecFloatXOR column (Gorilla, VLDB 2015): the first
// value whole, then per value a 0 bit when it equals the previous one, or
// 1 and its XOR with the previous one: 0 and the meaningful bits when they
// fit in the previous window, or 1, the leading zero count (5 bits), the
// meaningful bit count (6 bits, 0 meaning 64) and the meaningful bits.
func appendXOR(dst []byte, src []float64) []byte {
	dst = appendHeader(dst, CodecFloatXOR, len(src))
	if len(src) == 0 {
		return dst
	}
	bw := bitWriter{buf: dst}
	prev := math.Float64bits(src[0])
	bw.write(prev, 64)
	lead, trail := uint(0xff), uint(0)
	for _, f := range src[1:] {
		cur := math.Float64bits(f)
		x := cur ^ prev
		prev = cur
		if x == 0 {
			bw.write(0, 1)
			continue
		}
		l, t := uint(bits.LeadingZeros64(x)), uint(bits.TrailingZeros64(x))
		if l > 31 {
			l = 31
		}
		if lead != 0xff && l >= lead && t >= trail {
			bw.write(0b01, 2) // 1, then 0: same window
			bw.write(x>>trail, 64-lead-trail)
			continue
		}
		lead, trail = l, t
		sig := 64 - l - t
		bw.write(0b11|uint64(l)<<2|uint64(sig&63)<<7, 2+5+6)
		bw.write(x>>t, sig)
	}
	return bw.finish()
}

// DecodeFloats decodes a column written by EncodeFloats into dst[:0]
// (reused when large enough) and returns it.
func DecodeFloats(dst []float64, src []byte) ([]float64, error) {
	c, n, rest, err := readHeader(src, "float", CodecFloatDecimal, CodecFloatXOR)
	if err != nil {
		return dst[:0], err
	}
	if c == CodecFloatXOR {
		return decodeXOR(dst, n, rest)
	}
	exp, body, err := checkDecimal(n, rest)
	if err != nil || n == 0 {
		return dst[:0], err
	}
	dst = grow(dst, n)
	// Decode the mantissas in place: an int64 and a float64 have the
	// same size, and each slot is converted once, after it is final.
	mant := int64View(dst)
	if err := decodeDecimal(mant, body); err != nil {
		return dst[:0], err
	}
	p := float64(pow10[exp])
	for i, m := range mant {
		dst[i] = float64(m) / p
	}
	return dst, nil
}

// DecodeDecimals decodes a column that EncodeFloats wrote in its decimal
// form (CodecFloatDecimal) into its mantissas, dst[:0] reused when large
// enough, and its scale 10^e: value i is float64(mant[i]) / scale, as
// DecodeFloats gives it bit for bit. An aggregate can fold the mantissas as
// integers and skip a division per value. A column of the XOR form is ok
// false, nothing decoded. A corrupt column may hold any int64 mantissas
// (the encoder writes them below 2^53 in magnitude): callers must not
// assume the bound.
func DecodeDecimals(dst []int64, src []byte) (mant []int64, scale float64, ok bool, err error) {
	c, n, rest, err := readHeader(src, "float", CodecFloatDecimal, CodecFloatXOR)
	if err != nil || c != CodecFloatDecimal {
		return dst[:0], 0, false, err
	}
	exp, body, err := checkDecimal(n, rest)
	if err != nil {
		return dst[:0], 0, false, err
	}
	scale = float64(pow10[exp])
	if n == 0 {
		return dst[:0], scale, true, nil
	}
	dst = grow(dst, n)
	if err := decodeDecimal(dst, body); err != nil {
		return dst[:0], 0, false, err
	}
	return dst, scale, true, nil
}

// DecodeDecimalsPrefix is DecodeDecimals of the first m values (0 ≤ m ≤
// n) of a column of n values: the stream is decoded up to them and no
// further, so its rest is neither read nor checked. A column of another
// count is ErrCorrupt. An aggregate that knows the sum of the rest (a
// block's summary less the prefix) reads no more than it needs.
func DecodeDecimalsPrefix(dst []int64, src []byte, n, m int) (mant []int64, scale float64, ok bool, err error) {
	c, count, rest, err := readHeader(src, "float", CodecFloatDecimal, CodecFloatXOR)
	switch {
	case err != nil || c != CodecFloatDecimal:
		return dst[:0], 0, false, err
	case count != n:
		return dst[:0], 0, false, fmt.Errorf("%w: %s column of %d values, not %d", ErrCorrupt, c, count, n)
	case m < 0 || m > n:
		return dst[:0], 0, false, fmt.Errorf("colcodec: prefix of %d values of %d", m, n)
	case m == n:
		return DecodeDecimals(dst, src)
	}
	exp, body, err := checkDecimal(n, rest)
	if err != nil {
		return dst[:0], 0, false, err
	}
	dst = grow(dst, m)
	if m > 0 {
		pos := 0
		if err := decodeStreamPrefix(dst, n, body, &pos); err != nil {
			return dst[:0], 0, false, fmt.Errorf("%s column: %w", c, err)
		}
	}
	return dst, float64(pow10[exp]), true, nil
}

// checkDecimal checks the body of a CodecFloatDecimal column of n values
// (after its header), before anything is allocated for them, and returns
// its exponent and its integer stream.
func checkDecimal(n int, rest []byte) (exp uint8, body []byte, err error) {
	c := CodecFloatDecimal
	if len(rest) == 0 {
		return 0, nil, fmt.Errorf("%w: %s column: no exponent", ErrCorrupt, c)
	}
	exp = rest[0]
	if exp > maxDecimals {
		return 0, nil, fmt.Errorf("%w: %s column: exponent %d", ErrCorrupt, c, exp)
	}
	rest = rest[1:]
	if n == 0 {
		if len(rest) != 0 {
			return 0, nil, fmt.Errorf("%w: %s column: trailing bytes", ErrCorrupt, c)
		}
		return exp, rest, nil
	}
	if err := checkStream(rest, 0, n); err != nil {
		return 0, nil, fmt.Errorf("%s column: %w", c, err)
	}
	return exp, rest, nil
}

// decodeDecimal decodes the integer stream of a checked CodecFloatDecimal
// column (checkDecimal) into mant, len(mant) values.
func decodeDecimal(mant []int64, body []byte) error {
	c := CodecFloatDecimal
	pos := 0
	if err := decodeStream(mant, body, &pos); err != nil {
		return fmt.Errorf("%s column: %w", c, err)
	}
	if pos != len(body) {
		return fmt.Errorf("%w: %s column: %d trailing bytes", ErrCorrupt, c, len(body)-pos)
	}
	return nil
}

func decodeXOR(dst []float64, n int, src []byte) ([]float64, error) {
	if n == 0 {
		if len(src) != 0 {
			return dst[:0], fmt.Errorf("%w: %s column: trailing bytes", ErrCorrupt, CodecFloatXOR)
		}
		return grow(dst, 0), nil
	}
	if 64+(n-1) > 8*len(src) {
		return dst[:0], fmt.Errorf("%w: %s column: %d values in %d bytes", ErrCorrupt, CodecFloatXOR, n, len(src))
	}
	dst = grow(dst, n)
	br := newBitReader(src)
	prev := br.read(64)
	dst[0] = math.Float64frombits(prev)
	lead, trail := uint(0xff), uint(0)
	for i := 1; i < n; i++ {
		if br.bit() == 1 {
			if br.bit() == 1 {
				lead = uint(br.read(5))
				sig := uint(br.read(6))
				if sig == 0 {
					sig = 64
				}
				if lead+sig > 64 {
					return dst[:0], fmt.Errorf("%w: %s column: window %d+%d bits", ErrCorrupt, CodecFloatXOR, lead, sig)
				}
				trail = 64 - lead - sig
			} else if lead == 0xff {
				return dst[:0], fmt.Errorf("%w: %s column: window reused before one was set", ErrCorrupt, CodecFloatXOR)
			}
			prev ^= br.read(64-lead-trail) << trail
		}
		dst[i] = math.Float64frombits(prev)
	}
	if !br.clean() {
		return dst[:0], fmt.Errorf("%w: %s column: truncated or trailing bytes", ErrCorrupt, CodecFloatXOR)
	}
	return dst, nil
}

// DecimalScale reports whether col, a column of EncodeFloats, is in the
// decimal form, and returns its scale 10^e (value i is float64(m[i]) /
// scale) and e. It reads the column's header only.
func DecimalScale(col []byte) (scale float64, exp uint8, ok bool) {
	c, _, rest, err := readHeader(col, "float", CodecFloatDecimal, CodecFloatXOR)
	if err != nil || c != CodecFloatDecimal || len(rest) == 0 || rest[0] > maxDecimals {
		return 0, 0, false
	}
	return float64(pow10[rest[0]]), rest[0], true
}

// ScaleOf returns 10^exp as a float64 (exactly), for exp ≤ 15, the scale
// of a decimal column of exponent exp; ok is false for a larger one.
func ScaleOf(exp uint8) (scale float64, ok bool) {
	if exp > maxDecimals {
		return 0, false
	}
	return float64(pow10[exp]), true
}
