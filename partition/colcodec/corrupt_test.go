package colcodec

import (
	"encoding/binary"
	"errors"
	"slices"
	"testing"
)

// TestLastByteBitFlips checks that encodings are canonical at their end:
// flipping any bit of a column's last byte either fails to decode or
// decodes to other values (padding bits are refused).
func TestLastByteBitFlips(t *testing.T) {
	r := newRand(t)
	check := func(name string, col []byte, same func([]byte) (bool, error)) {
		t.Helper()
		if Codec(col[0]) == CodecStringZstd {
			return // a zstd frame is not canonical; its body is checked
		}
		for bit := range 8 {
			c := slices.Clone(col)
			c[len(c)-1] ^= 1 << bit
			if ok, err := same(c); err == nil && ok {
				t.Errorf("%s (codec %v, %d bytes): flipping bit %d of the last byte decodes to the same values", name, Codec(col[0]), len(col), bit)
			}
		}
	}
	for _, n := range []int{1, 3, 9, 61} {
		for _, sh := range intShapes {
			v := sh.gen(r, n)
			col, _ := EncodeInts(nil, v)
			check(sh.name, col, func(c []byte) (bool, error) {
				got, err := DecodeInts(nil, c)
				return slices.Equal(got, v), err
			})
		}
		for _, sh := range floatShapes {
			if sh.name == "big-mantissas" {
				// Near 2^53, m/10^e and (m±1)/10^e can be the same float:
				// the mantissa's low bit need not change the value.
				continue
			}
			v := sh.gen(r, n)
			col, _ := EncodeFloats(nil, v)
			check(sh.name, col, func(c []byte) (bool, error) {
				got, err := DecodeFloats(nil, c)
				return slices.EqualFunc(got, v, eqFloat), err
			})
		}
		for _, p := range []float64{0.5, 1} {
			v := randBools(r, n, p)
			col, _ := EncodeBools(nil, v)
			check("bools", col, func(c []byte) (bool, error) {
				got, err := DecodeBools(nil, c)
				return slices.Equal(got, v), err
			})
		}
		for _, sh := range stringShapes {
			v := sh.gen(r, n)
			col, _ := EncodeStrings(nil, v)
			check(sh.name, col, func(c []byte) (bool, error) {
				got, err := DecodeStrings(nil, c)
				return slices.Equal(got, v), err
			})
		}
		for _, sh := range versionShapes {
			v := sh.gen(r, n)
			col, _ := EncodeVersions(nil, v)
			check(sh.name, col, func(c []byte) (bool, error) {
				got, err := DecodeVersions(nil, c)
				return slices.Equal(got, v), err
			})
		}
	}
}

// TestCorruptColumns checks hand-made corrupt columns: an index past a
// dictionary, a negative length, a short zstd body, an unset XOR window,
// runs that do not cover the stream.
func TestCorruptColumns(t *testing.T) {
	col := appendHeader(nil, CodecVersions, 2)
	col = appendStream(col, []int64{1, 1})
	col = binary.AppendUvarint(col, 2)
	col = binary.LittleEndian.AppendUint64(col, 7)
	col = binary.LittleEndian.AppendUint64(col, 8)
	col = appendStream(col, []int64{0, 2})
	if _, err := DecodeVersions(nil, col); !errors.Is(err, ErrCorrupt) {
		t.Errorf("versions: node index 2 of 2: %v, want ErrCorrupt", err)
	}
	col = appendHeader(nil, CodecStringDict, 2)
	col = binary.AppendUvarint(col, 2)
	col = appendStream(col, []int64{1, 1})
	col = append(col, "ab"...)
	col = appendStream(col, []int64{0, -1})
	if _, err := DecodeStrings(nil, col); !errors.Is(err, ErrCorrupt) {
		t.Errorf("strings: index -1: %v, want ErrCorrupt", err)
	}
	// A negative string length.
	col = appendHeader(nil, CodecStringRaw, 2)
	col = appendStream(col, []int64{3, -1})
	col = append(col, "ab"...)
	if _, err := DecodeStrings(nil, col); !errors.Is(err, ErrCorrupt) {
		t.Errorf("strings: length -1: %v, want ErrCorrupt", err)
	}
	// A zstd column whose frame holds fewer bytes than its header says.
	body, _ := EncodeStrings(nil, []string{"x"})
	enc, _ := zstdCodec()
	col = appendHeader(nil, CodecStringZstd, len(body)+1)
	col = enc.EncodeAll(body, col)
	if _, err := DecodeStrings(nil, col); !errors.Is(err, ErrCorrupt) {
		t.Errorf("strings: zstd body shorter than its header: %v, want ErrCorrupt", err)
	}
	// XOR: a window reused before one was set.
	col = appendHeader(nil, CodecFloatXOR, 2)
	col = append(col, 0, 0, 0, 0, 0, 0, 0, 0, 0b01)
	if _, err := DecodeFloats(nil, col); !errors.Is(err, ErrCorrupt) {
		t.Errorf("floats: XOR window reused before set: %v, want ErrCorrupt", err)
	}
	// Runs covering 1 of 3 values.
	col = appendHeader(nil, CodecInts, 3)
	col = append(col, order0|packRuns<<2, 0, 1, 0, 1)
	if _, err := DecodeInts(nil, col); !errors.Is(err, ErrCorrupt) {
		t.Errorf("ints: runs covering 1 of 3 values: %v, want ErrCorrupt", err)
	}
	// A bit width above 64, a reserved shape bit, a scale above 18.
	for _, hdr := range [][]byte{{order1 | packBits<<2, 0, 2, 65}, {0x80 | order1, 0, 2}, {order1, 19, 2}} {
		col = appendHeader(nil, CodecInts, 1)
		col = append(col, hdr...)
		if _, err := DecodeInts(nil, col); !errors.Is(err, ErrCorrupt) {
			t.Errorf("ints: stream header % x: %v, want ErrCorrupt", hdr, err)
		}
	}
}

// TestVersionRemainderOutOfRange: a wall remainder outside [0, 1e6) is
// corrupt (an encoder never writes one), not a wall made up from it.
func TestVersionRemainderOutOfRange(t *testing.T) {
	for _, rem := range []int64{-1, 1e6, 5e6} {
		col := appendHeader(nil, CodecVersions, 2)
		col = appendStream(col, []int64{1_700_000_000_000, 1_700_000_000_001})
		col = appendStream(col, []int64{0, rem})
		col = append(col, 1)
		col = binary.LittleEndian.AppendUint64(col, 42)
		if _, err := DecodeVersions(nil, col); !errors.Is(err, ErrCorrupt) {
			t.Errorf("remainder %d: %v, want ErrCorrupt", rem, err)
		}
	}
	// The same column with an in-range remainder decodes.
	col := appendHeader(nil, CodecVersions, 2)
	col = appendStream(col, []int64{1_700_000_000_000, 1_700_000_000_001})
	col = appendStream(col, []int64{0, 999_999})
	col = append(col, 1)
	col = binary.LittleEndian.AppendUint64(col, 42)
	got, err := DecodeVersions(nil, col)
	if err != nil || len(got) != 2 || got[1].Wall != 1_700_000_000_001_999_999 || got[0].Node != 42 {
		t.Fatalf("in range: %v, %v", got, err)
	}
}
