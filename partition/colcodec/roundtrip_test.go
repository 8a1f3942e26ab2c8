package colcodec

import (
	"bytes"
	"errors"
	"flag"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/tsdb/tsdb/model"
)

var seedFlag = flag.Uint64("colcodec.seed", 0, "seed of the randomized tests (0: from the clock)")

// newRand returns the test's random source and logs its seed.
func newRand(t testing.TB) *rand.Rand {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -colcodec.seed=%d)", seed, seed)
	return rand.New(rand.NewPCG(seed, 0x5eed))
}

// checkRoundTrip encodes vals after a prefix, decodes them (into nil and
// into a dirty reused slice) and compares; re-encodes and compares bytes;
// and checks that every strict prefix and one trailing byte are refused.
func checkRoundTrip[T any](t *testing.T, r *rand.Rand, vals []T,
	enc func([]byte, []T) ([]byte, error),
	dec func([]T, []byte) ([]T, error),
	eq func(a, b T) bool) []byte {
	t.Helper()
	prefix := []byte("prefix")
	out, err := enc(slices.Clone(prefix), vals)
	if err != nil {
		t.Fatalf("encode %d values: %v", len(vals), err)
	}
	if !bytes.HasPrefix(out, prefix) {
		t.Fatalf("encode overwrote dst's prefix")
	}
	col := out[len(prefix):]
	again, err := enc(nil, vals)
	if err != nil || !bytes.Equal(again, col) {
		t.Fatalf("encode is not deterministic: %v", err)
	}
	compare := func(got []T, how string) {
		t.Helper()
		if len(got) != len(vals) {
			t.Fatalf("%s: decoded %d values, want %d (codec %v)", how, len(got), len(vals), Codec(col[0]))
		}
		for i := range vals {
			if !eq(got[i], vals[i]) {
				t.Fatalf("%s: value %d of %d: got %v, want %v (codec %v)", how, i, len(vals), got[i], vals[i], Codec(col[0]))
			}
		}
	}
	got, err := dec(nil, col)
	if err != nil {
		t.Fatalf("decode %d values (codec %v): %v", len(vals), Codec(col[0]), err)
	}
	compare(got, "into nil")
	dirty := make([]T, len(vals)+5, len(vals)+10)
	if len(vals) > 0 {
		for i := range dirty {
			dirty[i] = vals[r.IntN(len(vals))]
		}
	}
	got, err = dec(dirty[:3], col)
	if err != nil {
		t.Fatalf("decode into a reused slice: %v", err)
	}
	compare(got, "into a reused slice")
	if len(vals) > 0 && &got[0] != &dirty[0] {
		t.Fatalf("decode did not reuse dst's array")
	}
	// Every strict prefix is refused (a sample of them on long columns).
	for k := 0; k < min(len(col), 48); k++ {
		l := k
		if len(col) > 48 {
			l = r.IntN(len(col))
		}
		if _, err := dec(nil, col[:l]); err == nil {
			t.Fatalf("decode of %d of %d bytes (codec %v) succeeded", l, len(col), Codec(col[0]))
		} else if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnknownCodec) {
			t.Fatalf("decode of a prefix: error %v is neither ErrCorrupt nor ErrUnknownCodec", err)
		}
	}
	if _, err := dec(nil, append(slices.Clone(col), 0)); err == nil {
		t.Fatalf("decode with a trailing byte (codec %v) succeeded", Codec(col[0]))
	}
	return col
}

// allocBytes returns the bytes f allocates (averaged over 10 runs).
func allocBytes(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 10 {
		f()
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / 10
}

func eqInt(a, b int64) bool             { return a == b }
func eqFloat(a, b float64) bool         { return math.Float64bits(a) == math.Float64bits(b) }
func eqBool(a, b bool) bool             { return a == b }
func eqString(a, b string) bool         { return a == b }
func eqVersion(a, b model.Version) bool { return a == b }

func TestTimestampsRoundTrip(t *testing.T) {
	r := newRand(t)
	for _, sh := range timestampShapes {
		for _, n := range append(testSizes, 1+r.IntN(5000)) {
			checkRoundTrip(t, r, sh.gen(r, n), EncodeTimestamps, DecodeTimestamps, eqInt)
		}
	}
}

func TestIntsRoundTrip(t *testing.T) {
	r := newRand(t)
	for _, sh := range intShapes {
		for _, n := range append(testSizes, 1+r.IntN(5000)) {
			checkRoundTrip(t, r, sh.gen(r, n), EncodeInts, DecodeInts, eqInt)
		}
	}
	// Mixtures of shapes in one column.
	for range 200 {
		var v []int64
		for range 1 + r.IntN(4) {
			sh := intShapes[r.IntN(len(intShapes))]
			v = append(v, sh.gen(r, r.IntN(50))...)
		}
		checkRoundTrip(t, r, v, EncodeInts, DecodeInts, eqInt)
	}
}

func TestFloatsRoundTrip(t *testing.T) {
	r := newRand(t)
	for _, sh := range floatShapes {
		for _, n := range append(testSizes, 1+r.IntN(5000)) {
			vals := sh.gen(r, n)
			checkRoundTrip(t, r, vals, EncodeFloats, DecodeFloats, eqFloat)
			col, err := EncodeFloats(nil, vals)
			if err != nil {
				t.Fatal(err)
			}
			sameDecimals(t, col)
		}
	}
	for range 200 {
		var v []float64
		for range 1 + r.IntN(4) {
			sh := floatShapes[r.IntN(len(floatShapes))]
			v = append(v, sh.gen(r, r.IntN(50))...)
		}
		checkRoundTrip(t, r, v, EncodeFloats, DecodeFloats, eqFloat)
	}
}

// TestFloatsCodecChoice checks which form EncodeFloats picks: the decimal
// form for the harness's 2-decimal walks, XOR when a value is not exact.
func TestFloatsCodecChoice(t *testing.T) {
	r := newRand(t)
	for _, tc := range []struct {
		shape string
		want  Codec
	}{
		{"harness-user", CodecFloatDecimal},
		{"constant", CodecFloatDecimal},
		{"integers", CodecFloatDecimal},
		{"specials", CodecFloatXOR},
		{"decimals-then-nan", CodecFloatXOR},
		{"negzero-only", CodecFloatXOR},
		{"random-bits", CodecFloatXOR},
	} {
		i := slices.IndexFunc(floatShapes, func(s floatShape) bool { return s.name == tc.shape })
		col, err := EncodeFloats(nil, floatShapes[i].gen(r, 2000))
		if err != nil {
			t.Fatal(err)
		}
		if Codec(col[0]) != tc.want {
			t.Errorf("%s: codec %v, want %v", tc.shape, Codec(col[0]), tc.want)
		}
	}
}

func TestBoolsRoundTrip(t *testing.T) {
	r := newRand(t)
	for _, p := range []float64{0, 1, 0.5, 0.01} {
		for _, n := range append(testSizes, 1+r.IntN(5000)) {
			checkRoundTrip(t, r, randBools(r, n, p), EncodeBools, DecodeBools, eqBool)
		}
	}
}

func TestStringsRoundTrip(t *testing.T) {
	r := newRand(t)
	seen := map[Codec]bool{}
	for _, sh := range stringShapes {
		for _, n := range append(testSizes, 1+r.IntN(3000)) {
			col := checkRoundTrip(t, r, sh.gen(r, n), EncodeStrings, DecodeStrings, eqString)
			seen[Codec(col[0])] = true
		}
	}
	for _, c := range []Codec{CodecStringRaw, CodecStringDict, CodecStringZstd} {
		if !seen[c] {
			t.Errorf("no shape was encoded with %v", c)
		}
	}
}

func TestVersionsRoundTrip(t *testing.T) {
	r := newRand(t)
	for _, sh := range versionShapes {
		for _, n := range append(testSizes, 1+r.IntN(5000)) {
			checkRoundTrip(t, r, sh.gen(r, n), EncodeVersions, DecodeVersions, eqVersion)
		}
	}
}

// TestWrongDecoder checks that each decoder refuses the columns of the
// others and unknown codec ids with ErrUnknownCodec.
func TestWrongDecoder(t *testing.T) {
	ts, _ := EncodeTimestamps(nil, []int64{1, 2})
	in, _ := EncodeInts(nil, []int64{1, 2})
	fl, _ := EncodeFloats(nil, []float64{1, 2})
	bo, _ := EncodeBools(nil, []bool{true})
	st, _ := EncodeStrings(nil, []string{"a"})
	ve, _ := EncodeVersions(nil, []model.Version{{Wall: 1, Node: 1}})
	unknown := []byte{0xee, 1, 0}
	decoders := map[string]func([]byte) error{
		"timestamps": func(b []byte) error { _, err := DecodeTimestamps(nil, b); return err },
		"ints":       func(b []byte) error { _, err := DecodeInts(nil, b); return err },
		"floats":     func(b []byte) error { _, err := DecodeFloats(nil, b); return err },
		"bools":      func(b []byte) error { _, err := DecodeBools(nil, b); return err },
		"strings":    func(b []byte) error { _, err := DecodeStrings(nil, b); return err },
		"versions":   func(b []byte) error { _, err := DecodeVersions(nil, b); return err },
	}
	cols := map[string][]byte{"timestamps": ts, "ints": in, "floats": fl, "bools": bo, "strings": st, "versions": ve, "unknown": unknown}
	for dn, dec := range decoders {
		for cn, col := range cols {
			err := dec(col)
			if cn == dn {
				if err != nil {
					t.Errorf("%s decoder on its own column: %v", dn, err)
				}
				continue
			}
			if !errors.Is(err, ErrUnknownCodec) {
				t.Errorf("%s decoder on a %s column: error %v, want ErrUnknownCodec", dn, cn, err)
			}
		}
	}
}

// TestCountBounds checks that a claimed count above MaxCount is refused
// before anything is allocated, and that encoders refuse more than
// MaxCount values.
func TestCountBounds(t *testing.T) {
	col := appendHeader(nil, CodecInts, MaxCount+1)
	col = append(col, 1, 0, 0) // order 1, bits, scale 0, width 0
	if _, err := DecodeInts(nil, col); !errors.Is(err, ErrCorrupt) {
		t.Errorf("count above MaxCount: %v, want ErrCorrupt", err)
	}
	if b := allocBytes(func() { _, _ = DecodeInts(nil, col) }); b > 4096 { // the error itself
		t.Errorf("refusing a count above MaxCount allocated %d bytes", b)
	}
	// A count larger than the stream's bytes can hold is refused before
	// the values are allocated, in every packing but zero-width bits and
	// runs.
	for _, stream := range [][]byte{
		{order0 | packVarint<<2, 0, 1, 2, 3},
		{order1 | packBits<<2, 0, 2, 1, 0xff},
		{order2 | packBuckets<<2, 0, 2, 2, 0xff},
		{order1 | packRice<<2, 0, 2, 0, 0xff},
	} {
		decoders := map[string]func([]byte) error{
			"ints":     func(b []byte) error { _, err := DecodeInts(nil, b); return err },
			"floats":   func(b []byte) error { _, err := DecodeFloats(nil, b); return err },
			"versions": func(b []byte) error { _, err := DecodeVersions(nil, b); return err },
		}
		for name, dec := range decoders {
			var col []byte
			switch name {
			case "ints":
				col = appendHeader(nil, CodecInts, MaxCount)
			case "floats":
				col = append(appendHeader(nil, CodecFloatDecimal, MaxCount), 2)
			case "versions":
				col = appendHeader(nil, CodecVersions, MaxCount)
			}
			col = append(col, stream...)
			if err := dec(col); !errors.Is(err, ErrCorrupt) {
				t.Errorf("%s: MaxCount values in stream % x: %v, want ErrCorrupt", name, stream, err)
			}
			if b := allocBytes(func() { _ = dec(col) }); b > 4096 {
				t.Errorf("%s: refusing MaxCount values in stream % x allocated %d bytes", name, stream, b)
			}
		}
	}
	if _, err := EncodeInts(nil, make([]int64, MaxCount+1)); !errors.Is(err, ErrTooMany) {
		t.Errorf("encode of MaxCount+1 ints: %v, want ErrTooMany", err)
	}
	if _, err := EncodeFloats(nil, make([]float64, MaxCount+1)); !errors.Is(err, ErrTooMany) {
		t.Errorf("encode of MaxCount+1 floats: %v, want ErrTooMany", err)
	}
}

// eachStreamChoice calls f with every order and packing of a stream of v,
// each with the scale and Rice parameter the encoder would take for it,
// and the encoder's estimate of its cost.
func eachStreamChoice(v []int64, f func(streamChoice, streamCost)) {
	for o := uint8(0); o <= order2; o++ {
		s := uint8(0)
		if o > 0 {
			s = scaleOf(v, o)
		}
		cost := costOf(v, o, s)
		for p := uint8(0); p < numPackings; p++ {
			f(streamChoice{order: o, scale: s, packing: p, riceK: cost.riceK}, cost)
		}
	}
}

// TestStreamCost checks the encoder's size estimates against the bytes it
// writes, for every order and packing, on every int shape.
func TestStreamCost(t *testing.T) {
	r := newRand(t)
	for _, sh := range intShapes {
		for _, n := range []int{3, 9, 2000} {
			v := sh.gen(r, n)
			eachStreamChoice(v, func(c streamChoice, cost streamCost) {
				o, p := c.order, c.packing
				out := appendStreamAs(nil, v, c)
				hdr := 2
				for i := 0; i < heads(o, n); i++ {
					if i == 0 {
						hdr += uvarintLen(zigzag(v[0]))
					} else {
						hdr += uvarintLen(zigzag(v[1] - v[0]))
					}
				}
				if got := len(out) - hdr; got != cost.size[p] {
					t.Errorf("%s n=%d order %d packing %d: wrote %d bytes, estimated %d", sh.name, n, o, p, got, cost.size[p])
				}
				got := make([]int64, n)
				pos := 0
				if err := decodeStream(got, out, &pos); err != nil || pos != len(out) || !slices.Equal(got, v) {
					t.Fatalf("%s n=%d order %d packing %d: round trip failed (err %v)", sh.name, n, o, p, err)
				}
			})
		}
	}
}

// TestRiceStreams round-trips Rice streams of every order and parameter
// class through decodeStream: values of a few bits, unary parts up to the
// escape, escapes, and values longer than a refill loads (k+q+1 over 56
// bits), at lengths that put the fast loop's exits near the end of the
// stream (an order-1 stream is integrated as it is decoded); every
// truncation of a stream is refused, none panics.
func TestRiceStreams(t *testing.T) {
	r := newRand(t)
	for _, k := range []uint8{0, 1, 3, 7, 20, 31, 40, 54, 55, 56, 57, 62, 63} {
		for _, n := range []int{1, 2, 3, 7, 8, 9, 33, 200} {
			res := make([]int64, n) // the residuals wanted
			for i := range res {
				var z uint64
				switch r.IntN(6) {
				case 0: // an escape, or the longest unary part
					z = r.Uint64()
				case 1:
					z = uint64(r.IntN(riceEscape)) << k
				default:
					z = r.Uint64() >> (63 - min(k, 62))
				}
				if k == 63 {
					z = r.Uint64() // q is 0 or 1
				}
				res[i] = unzigzag(z)
			}
			for o := uint8(0); o <= order2; o++ {
				// Values whose order-o residuals are res (wrapping).
				v := slices.Clone(res)
				for range o {
					for i := 1; i < n; i++ {
						v[i] += v[i-1]
					}
				}
				c := streamChoice{order: o, packing: packRice, riceK: k}
				out := appendStreamAs(nil, v, c)
				got := make([]int64, n)
				pos := 0
				if err := decodeStream(got, out, &pos); err != nil || pos != len(out) || !slices.Equal(got, v) {
					t.Fatalf("k=%d n=%d order %d: round trip failed (err %v, pos %d of %d)", k, n, o, err, pos, len(out))
				}
				for cut := range len(out) {
					pos := 0
					if err := decodeStream(got, out[:cut], &pos); err == nil {
						t.Fatalf("k=%d n=%d order %d: stream cut at %d of %d bytes decoded", k, n, o, cut, len(out))
					}
				}
			}
		}
	}
}

// TestDecodeDecimalsPrefix: every prefix of a decimal column, in every
// packing of its stream and order of differences, is the whole column's
// decode cut there; a column in the XOR form is not ok.
func TestDecodeDecimalsPrefix(t *testing.T) {
	r := newRand(t)
	for _, sh := range floatShapes {
		for _, n := range []int{1, 2, 3, 9, 300} {
			vals := sh.gen(r, n)
			col, err := EncodeFloats(nil, vals)
			if err != nil {
				t.Fatal(err)
			}
			whole, scale, ok, err := DecodeDecimals(nil, col)
			if err != nil {
				t.Fatalf("%s n=%d: %v", sh.name, n, err)
			}
			if !ok {
				if _, _, ok, err := DecodeDecimalsPrefix(nil, col, n, n/2); ok || err != nil {
					t.Fatalf("%s n=%d: prefix of an XOR column: ok %v, %v", sh.name, n, ok, err)
				}
				continue
			}
			// The same mantissas under every order and packing.
			_, _, rest, _ := readHeader(col, "float", CodecFloatDecimal, CodecFloatXOR)
			eachStreamChoice(whole, func(choice streamChoice, _ streamCost) {
				c := append(appendHeader(nil, CodecFloatDecimal, n), rest[0])
				c = appendStreamAs(c, whole, choice)
				for m := 0; m <= n; m++ {
					got, sc, ok, err := DecodeDecimalsPrefix(nil, c, n, m)
					if err != nil || !ok || sc != scale || !slices.Equal(got, whole[:m]) {
						t.Fatalf("%s n=%d order %d packing %d: prefix %d: %v, ok %v, scale %v:\n got %v\nwant %v",
							sh.name, n, choice.order, choice.packing, m, err, ok, sc, got, whole[:m])
					}
				}
				if _, _, _, err := DecodeDecimalsPrefix(nil, c, n+1, 1); !errors.Is(err, ErrCorrupt) {
					t.Fatalf("%s n=%d: a column of %d values read as %d: %v", sh.name, n, n, n+1, err)
				}
			})
		}
	}
}

// TestEncodeDecimals: a decimal column written from integers reads back
// as those integers (DecodeDecimals, and a prefix) and as the floats
// m / 10^e (DecodeFloats), and the FloatEncoder reports the mantissas of
// the decimal columns it writes and of no other; out-of-range mantissas
// and exponents are refused, dst unchanged.
func TestEncodeDecimals(t *testing.T) {
	r := newRand(t)
	for _, n := range append(testSizes, 1+r.IntN(5000)) {
		mant := make([]int64, n)
		for i := range mant {
			mant[i] = r.Int64N(1<<54) - 1<<53 + 1 // |m| < 2^53
			if r.IntN(2) == 0 {
				mant[i] = r.Int64N(5) - 2 // a residual's few bits
			}
		}
		exp := uint8(r.IntN(maxDecimals + 1))
		col, err := EncodeDecimals(nil, mant, exp)
		if err != nil {
			t.Fatal(err)
		}
		got, scale, ok, err := DecodeDecimals(nil, col)
		if err != nil || !ok || scale != float64(pow10[exp]) || !slices.Equal(got, mant) {
			t.Fatalf("n %d exp %d: DecodeDecimals ok %v scale %v err %v, equal %v", n, exp, ok, scale, err, slices.Equal(got, mant))
		}
		head := r.IntN(n + 1)
		got, _, ok, err = DecodeDecimalsPrefix(nil, col, n, head)
		if err != nil || !ok || !slices.Equal(got, mant[:head]) {
			t.Fatalf("n %d: prefix of %d: ok %v err %v", n, head, ok, err)
		}
		fs, err := DecodeFloats(nil, col)
		if err != nil || len(fs) != n {
			t.Fatalf("n %d: DecodeFloats: %d values, %v", n, len(fs), err)
		}
		for i, f := range fs {
			if want := float64(mant[i]) / float64(pow10[exp]); math.Float64bits(f) != math.Float64bits(want) {
				t.Fatalf("n %d value %d: %v, want %v", n, i, f, want)
			}
		}
	}
	dst := []byte{7}
	for _, tc := range []struct {
		mant []int64
		exp  uint8
	}{{[]int64{1 << 53}, 2}, {[]int64{0, -(1 << 53)}, 2}, {[]int64{1}, maxDecimals + 1}} {
		if got, err := EncodeDecimals(dst, tc.mant, tc.exp); !errors.Is(err, ErrInvalidValue) || !bytes.Equal(got, dst) {
			t.Errorf("EncodeDecimals(%v, %d) = %x, %v; want ErrInvalidValue, dst unchanged", tc.mant, tc.exp, got, err)
		}
	}

	var e FloatEncoder
	if _, err := e.Encode(nil, []float64{1.25, 2.5, -3}); err != nil {
		t.Fatal(err)
	}
	if m, exp, ok := e.Mantissas(); !ok || exp != 2 || !slices.Equal(m, []int64{125, 250, -300}) {
		t.Fatalf("Mantissas after a decimal column: %v %d %v", m, exp, ok)
	}
	if _, err := e.Encode(nil, []float64{1.0 / 3, math.Sqrt2}); err != nil { // no exponent up to 15 gives them back
		t.Fatal(err)
	}
	if _, _, ok := e.Mantissas(); ok {
		t.Fatal("Mantissas after an XOR column: ok")
	}
}

// TestDecimalZeros checks decimalZeros against its definition (the
// largest s ≤ limit with r % 10^s == 0, tried from limit down) on
// multiples of every power of ten, at every limit, both signs.
func TestDecimalZeros(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	pow := int64(1)
	for e := 0; e <= maxScale; e++ {
		for range 200 {
			r := (rng.Int64N(1<<62/pow) + 1) * pow
			if rng.IntN(2) == 0 {
				r = -r
			}
			for limit := uint8(0); limit <= maxScale; limit++ {
				want := limit
				for want > 0 && r%tenPow(want) != 0 {
					want--
				}
				if got := decimalZeros(r, limit); got != want {
					t.Fatalf("decimalZeros(%d, %d) = %d, want %d", r, limit, got, want)
				}
			}
		}
		if e < maxScale {
			pow *= 10
		}
	}
}

func tenPow(s uint8) int64 {
	p := int64(1)
	for range s {
		p *= 10
	}
	return p
}
