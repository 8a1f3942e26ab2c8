package colcodec

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// Codec is the first byte of every encoded column: it names the layout of
// the rest. The numbering is part of the storage format (doc.go).
type Codec uint8

// The codec ids. Each column type has its own range, so a decoder refuses
// both an unknown id and the id of another type.
const (
	// CodecTimestamps: int64 timestamps as an integer stream (doc.go).
	CodecTimestamps Codec = 0x01
	// CodecFloatDecimal: float64 values as integer mantissas with one
	// shared decimal exponent.
	CodecFloatDecimal Codec = 0x10
	// CodecFloatXOR: float64 values Gorilla XOR encoded.
	CodecFloatXOR Codec = 0x11
	// CodecInts: int64 values as an integer stream.
	CodecInts Codec = 0x20
	// CodecBoolBits: a bitmap, one bit per value.
	CodecBoolBits Codec = 0x30
	// CodecBoolConst: every value equal, one byte.
	CodecBoolConst Codec = 0x31
	// CodecStringRaw: lengths then concatenated bytes.
	CodecStringRaw Codec = 0x40
	// CodecStringDict: a dictionary of distinct strings and one index per
	// value.
	CodecStringDict Codec = 0x41
	// CodecStringZstd: a CodecStringRaw or CodecStringDict column
	// compressed by one zstd frame.
	CodecStringZstd Codec = 0x42
	// CodecVersions: model.Version values, walls as an integer stream and
	// nodes through a dictionary.
	CodecVersions Codec = 0x50
)

// MaxCount bounds the number of values of one column, in encoders and
// decoders, so a corrupt count cannot make a decoder allocate without
// bound: a decoded column is at most 16 MiB (8 MiB of int64/float64;
// versions 16 MiB). Blocks are cut well below it.
const MaxCount = 1 << 20

// MaxStringBytes bounds the total size of the strings of one column.
const MaxStringBytes = 64 << 20

// String returns the codec's name for error messages.
func (c Codec) String() string {
	switch c {
	case CodecTimestamps:
		return "timestamps"
	case CodecFloatDecimal:
		return "float-decimal"
	case CodecFloatXOR:
		return "float-xor"
	case CodecInts:
		return "ints"
	case CodecBoolBits:
		return "bool-bits"
	case CodecBoolConst:
		return "bool-const"
	case CodecStringRaw:
		return "string-raw"
	case CodecStringDict:
		return "string-dict"
	case CodecStringZstd:
		return "string-zstd"
	case CodecVersions:
		return "versions"
	}
	return fmt.Sprintf("codec(0x%02x)", uint8(c))
}

// Of returns the codec id of an encoded column (its first byte), for
// statistics and error messages. ok is false for an empty input.
func Of(col []byte) (c Codec, ok bool) {
	if len(col) == 0 {
		return 0, false
	}
	return Codec(col[0]), true
}

// appendHeader appends a column header: codec id and value count.
func appendHeader(dst []byte, c Codec, n int) []byte {
	dst = append(dst, byte(c))
	return binary.AppendUvarint(dst, uint64(n))
}

// readHeader reads a column header, checks the codec is one of want and
// the count is at most MaxCount. It returns the codec, the count and the
// rest of src.
func readHeader(src []byte, kind string, want ...Codec) (Codec, int, []byte, error) {
	if len(src) == 0 {
		return 0, 0, nil, fmt.Errorf("%w: empty %s column", ErrCorrupt, kind)
	}
	c := Codec(src[0])
	known := false
	for _, w := range want {
		known = known || c == w
	}
	if !known {
		return 0, 0, nil, fmt.Errorf("%w: %s where a %s column was expected", ErrUnknownCodec, c, kind)
	}
	n, k := binary.Uvarint(src[1:])
	if k <= 0 {
		return 0, 0, nil, fmt.Errorf("%w: %s column: bad count", ErrCorrupt, c)
	}
	if n > MaxCount {
		return 0, 0, nil, fmt.Errorf("%w: %s column: count %d above MaxCount", ErrCorrupt, c, n)
	}
	return c, int(n), src[1+k:], nil
}

// grow returns dst[:n], reusing its array when it is large enough.
func grow[T any](dst []T, n int) []T {
	if cap(dst) >= n {
		return dst[:n]
	}
	return make([]T, n)
}

// zigzag maps signed to unsigned integers so that small magnitudes are
// small: 0, -1, 1, -2 → 0, 1, 2, 3.
func zigzag(v int64) uint64 { return uint64(v<<1) ^ uint64(v>>63) }

// unzigzag is the inverse of zigzag.
func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// uvarintLen is the length of binary.AppendUvarint(nil, u).
func uvarintLen(u uint64) int {
	return (bits.Len64(u|1) + 6) / 7
}

// readUvarint reads one uvarint from src at *pos.
func readUvarint(src []byte, pos *int, what string) (uint64, error) {
	if *pos > len(src) {
		return 0, fmt.Errorf("%w: truncated %s", ErrCorrupt, what)
	}
	if *pos < len(src) && src[*pos] < 0x80 {
		u := uint64(src[*pos]) // one byte, as most headers' counts are
		*pos++
		return u, nil
	}
	u, k := binary.Uvarint(src[*pos:])
	if k <= 0 {
		return 0, fmt.Errorf("%w: truncated or overlong varint (%s)", ErrCorrupt, what)
	}
	*pos += k
	return u, nil
}
