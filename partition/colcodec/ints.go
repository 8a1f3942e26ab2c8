package colcodec

import "fmt"

// EncodeTimestamps appends the column of timestamps src (int64, usually
// nanoseconds, usually ascending and regular, any values allowed) to dst
// and returns the extended slice. It allocates only when dst must grow.
func EncodeTimestamps(dst []byte, src []int64) ([]byte, error) {
	return encodeInt64s(dst, CodecTimestamps, src)
}

// DecodeTimestamps decodes a column written by EncodeTimestamps into
// dst[:0] (reused when large enough) and returns it.
func DecodeTimestamps(dst []int64, src []byte) ([]int64, error) {
	return decodeInt64s(dst, src, "timestamps", CodecTimestamps)
}

// EncodeInts appends the column of int64 values src to dst and returns the
// extended slice. It allocates only when dst must grow.
func EncodeInts(dst []byte, src []int64) ([]byte, error) {
	return encodeInt64s(dst, CodecInts, src)
}

// DecodeInts decodes a column written by EncodeInts into dst[:0] (reused
// when large enough) and returns it.
func DecodeInts(dst []int64, src []byte) ([]int64, error) {
	return decodeInt64s(dst, src, "ints", CodecInts)
}

// Timestamps and ints share one layout under two ids, so that a column
// given to the wrong decoder is refused; the stream picks delta-of-delta
// for regular timestamps by itself.
func encodeInt64s(dst []byte, c Codec, src []int64) ([]byte, error) {
	if len(src) > MaxCount {
		return dst, fmt.Errorf("%w: %d %s values", ErrTooMany, len(src), c)
	}
	dst = appendHeader(dst, c, len(src))
	if len(src) == 0 {
		return dst, nil
	}
	return appendStream(dst, src), nil
}

func decodeInt64s(dst []int64, src []byte, kind string, c Codec) ([]int64, error) {
	_, n, rest, err := readHeader(src, kind, c)
	if err != nil {
		return dst[:0], err
	}
	if n == 0 {
		if len(rest) != 0 {
			return dst[:0], fmt.Errorf("%w: %s column: %d trailing bytes", ErrCorrupt, c, len(rest))
		}
		return dst[:0], nil
	}
	if err := checkStream(rest, 0, n); err != nil {
		return dst[:0], fmt.Errorf("%s column: %w", c, err)
	}
	dst = grow(dst, n)
	pos := 0
	if err := decodeStream(dst, rest, &pos); err != nil {
		return dst[:0], fmt.Errorf("%s column: %w", c, err)
	}
	if pos != len(rest) {
		return dst[:0], fmt.Errorf("%w: %s column: %d trailing bytes", ErrCorrupt, c, len(rest)-pos)
	}
	return dst, nil
}
