package colcodec

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/tsdb/tsdb/model"
)

// Each fuzz target does two things with its input: decodes it as a column
// (which must not panic; when it succeeds, the values must re-encode and
// decode to themselves), and reads it as values to round-trip through the
// encoder. The seed corpus holds the encodings of the test shapes.

// fuzzSeeds adds to f the columns enc makes of small instances of every
// shape, and a few bytes that are not columns.
func fuzzSeeds[T any](f *testing.F, gens []func(*rand.Rand, int) []T, enc func([]byte, []T) ([]byte, error)) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, g := range gens {
		for _, n := range []int{0, 1, 2, 3, 9, 40} {
			col, err := enc(nil, g(r, n))
			if err != nil {
				f.Fatal(err)
			}
			f.Add(col)
		}
	}
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
}

// fuzzMaxReencode bounds the columns fuzzDecode re-encodes: a few bytes
// can claim MaxCount values (a run, a zero bit width), and re-encoding a
// million values per input would slow the fuzzer to a crawl.
const fuzzMaxReencode = 1 << 14

// fuzzDecode checks a decode of data: no panic, and a successful decode
// re-encodes to a column that decodes to the same values.
func fuzzDecode[T any](t *testing.T, data []byte,
	enc func([]byte, []T) ([]byte, error),
	dec func([]T, []byte) ([]T, error),
	eq func(a, b T) bool) {
	vals, err := dec(nil, data)
	if err != nil || len(vals) > fuzzMaxReencode {
		return
	}
	col, err := enc(nil, vals)
	if err != nil {
		t.Fatalf("re-encode of %d decoded values: %v", len(vals), err)
	}
	back, err := dec(nil, col)
	if err != nil {
		t.Fatalf("decode of a re-encoded column: %v", err)
	}
	if !slices.EqualFunc(vals, back, eq) {
		t.Fatalf("re-encoded column decodes to other values")
	}
}

// fuzzRoundTrip encodes vals and checks they decode to themselves.
func fuzzRoundTrip[T any](t *testing.T, vals []T,
	enc func([]byte, []T) ([]byte, error),
	dec func([]T, []byte) ([]T, error),
	eq func(a, b T) bool) {
	col, err := enc(nil, vals)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	back, err := dec(nil, col)
	if err != nil {
		t.Fatalf("decode of %d encoded values (codec %v): %v", len(vals), Codec(col[0]), err)
	}
	if !slices.EqualFunc(vals, back, eq) {
		t.Fatalf("round trip changed the values (codec %v)", Codec(col[0]))
	}
}

// int64sOf reads data as little-endian int64s; a leading byte picks a
// transform so that small deltas and sorted inputs are common.
func int64sOf(data []byte) []int64 {
	if len(data) == 0 {
		return nil
	}
	mode, data := data[0], data[1:]
	v := make([]int64, 0, len(data)/8)
	acc := int64(0)
	for len(data) >= 8 {
		x := int64(binary.LittleEndian.Uint64(data))
		data = data[8:]
		switch mode % 3 {
		case 1: // small steps
			acc += x >> 40
			x = acc
		case 2: // small steps of a power of ten
			acc += (x >> 50) * 1000
			x = acc
		}
		v = append(v, x)
	}
	return v
}

func int64Gens(shapes []int64Shape) []func(*rand.Rand, int) []int64 {
	var g []func(*rand.Rand, int) []int64
	for _, s := range shapes {
		g = append(g, s.gen)
	}
	return g
}

func FuzzDecodeTimestamps(f *testing.F) {
	fuzzSeeds(f, int64Gens(timestampShapes), EncodeTimestamps)
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzDecode(t, data, EncodeTimestamps, DecodeTimestamps, eqInt)
		fuzzRoundTrip(t, int64sOf(data), EncodeTimestamps, DecodeTimestamps, eqInt)
	})
}

func FuzzDecodeInts(f *testing.F) {
	fuzzSeeds(f, int64Gens(intShapes), EncodeInts)
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzDecode(t, data, EncodeInts, DecodeInts, eqInt)
		fuzzRoundTrip(t, int64sOf(data), EncodeInts, DecodeInts, eqInt)
	})
}

func FuzzDecodeFloats(f *testing.F) {
	var gens []func(*rand.Rand, int) []float64
	for _, s := range floatShapes {
		gens = append(gens, s.gen)
	}
	fuzzSeeds(f, gens, EncodeFloats)
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzDecode(t, data, EncodeFloats, DecodeFloats, eqFloat)
		sameDecimals(t, data)
		// As values: raw bits, and decimals m/100 that take the decimal
		// form.
		ints := int64sOf(data)
		raw := make([]float64, len(ints))
		dec := make([]float64, len(ints))
		for i, x := range ints {
			raw[i] = math.Float64frombits(uint64(x))
			dec[i] = float64(x>>20) / 100
		}
		fuzzRoundTrip(t, raw, EncodeFloats, DecodeFloats, eqFloat)
		fuzzRoundTrip(t, dec, EncodeFloats, DecodeFloats, eqFloat)
	})
}

func FuzzDecodeBools(f *testing.F) {
	gens := []func(*rand.Rand, int) []bool{
		func(r *rand.Rand, n int) []bool { return randBools(r, n, 0.5) },
		func(r *rand.Rand, n int) []bool { return randBools(r, n, 1) },
	}
	fuzzSeeds(f, gens, EncodeBools)
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzDecode(t, data, EncodeBools, DecodeBools, eqBool)
		vals := make([]bool, len(data))
		for i, b := range data {
			vals[i] = b&1 == 1
		}
		fuzzRoundTrip(t, vals, EncodeBools, DecodeBools, eqBool)
	})
}

func FuzzDecodeStrings(f *testing.F) {
	var gens []func(*rand.Rand, int) []string
	for _, s := range stringShapes {
		gens = append(gens, s.gen)
	}
	fuzzSeeds(f, gens, EncodeStrings)
	big, _ := EncodeStrings(nil, stringShapes[3].gen(rand.New(rand.NewPCG(3, 4)), 200)) // a zstd column
	f.Add(big)
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzDecode(t, data, EncodeStrings, DecodeStrings, eqString)
		// As values: data cut at each 0 byte; repeated to reach zstd.
		var vals []string
		start := 0
		for i, b := range data {
			if b == 0 {
				vals = append(vals, string(data[start:i]))
				start = i + 1
			}
		}
		vals = append(vals, string(data[start:]))
		for len(vals) < 300 && len(data) > 0 {
			vals = append(vals, vals...)
		}
		fuzzRoundTrip(t, vals, EncodeStrings, DecodeStrings, eqString)
	})
}

func FuzzDecodeVersions(f *testing.F) {
	var gens []func(*rand.Rand, int) []model.Version
	for _, s := range versionShapes {
		gens = append(gens, s.gen)
	}
	fuzzSeeds(f, gens, EncodeVersions)
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzDecode(t, data, EncodeVersions, DecodeVersions, eqVersion)
		ints := int64sOf(data)
		vals := make([]model.Version, len(ints))
		for i, x := range ints {
			vals[i] = model.Version{Wall: x, Node: uint64(x) % 12}
		}
		fuzzRoundTrip(t, vals, EncodeVersions, DecodeVersions, eqVersion)
	})
}

// sameDecimals checks DecodeDecimals against DecodeFloats on a column
// (valid or not): it fails exactly when DecodeFloats fails on a decimal
// column, is not ok for any other, and its mantissas give DecodeFloats'
// values bit for bit.
func sameDecimals(t *testing.T, col []byte) {
	t.Helper()
	mant, scale, ok, err := DecodeDecimals(nil, col)
	floats, ferr := DecodeFloats(nil, col)
	c, known := Of(col)
	decimal := known && c == CodecFloatDecimal
	switch {
	case decimal && (err != nil) != (ferr != nil):
		t.Fatalf("decimal column: DecodeDecimals %v, DecodeFloats %v", err, ferr)
	case !decimal && (ok || len(mant) != 0):
		t.Fatalf("a %v column decoded as decimals: %v", c, mant)
	case !ok:
		return
	case len(mant) != len(floats):
		t.Fatalf("%d mantissas, %d floats", len(mant), len(floats))
	}
	for i, m := range mant {
		if got := float64(m) / scale; math.Float64bits(got) != math.Float64bits(floats[i]) {
			t.Fatalf("value %d: mantissa %d / %v is %v, DecodeFloats %v", i, m, scale, got, floats[i])
		}
	}
}
