package colcodec

import "fmt"

// EncodeBools appends the column of bools src to dst and returns the
// extended slice: CodecBoolConst when all values are equal, else
// CodecBoolBits. It allocates only when dst must grow.
func EncodeBools(dst []byte, src []bool) ([]byte, error) {
	if len(src) > MaxCount {
		return dst, fmt.Errorf("%w: %d bool values", ErrTooMany, len(src))
	}
	constant := true
	for _, b := range src {
		constant = constant && b == src[0]
	}
	if constant {
		dst = appendHeader(dst, CodecBoolConst, len(src))
		if len(src) > 0 && src[0] {
			return append(dst, 1), nil
		}
		return append(dst, 0), nil
	}
	dst = appendHeader(dst, CodecBoolBits, len(src))
	var acc byte
	for i, b := range src {
		if b {
			acc |= 1 << (i & 7)
		}
		if i&7 == 7 {
			dst = append(dst, acc)
			acc = 0
		}
	}
	if len(src)&7 != 0 {
		dst = append(dst, acc)
	}
	return dst, nil
}

// DecodeBools decodes a column written by EncodeBools into dst[:0]
// (reused when large enough) and returns it.
func DecodeBools(dst []bool, src []byte) ([]bool, error) {
	c, n, rest, err := readHeader(src, "bool", CodecBoolConst, CodecBoolBits)
	if err != nil {
		return dst[:0], err
	}
	if c == CodecBoolConst {
		if len(rest) != 1 || rest[0] > 1 {
			return dst[:0], fmt.Errorf("%w: %s column: want one byte 0 or 1, have % x", ErrCorrupt, c, rest)
		}
		dst = grow(dst, n)
		for i := range dst {
			dst[i] = rest[0] == 1
		}
		return dst, nil
	}
	if len(rest) != (n+7)/8 {
		return dst[:0], fmt.Errorf("%w: %s column: %d values in %d bytes", ErrCorrupt, c, n, len(rest))
	}
	if n&7 != 0 && rest[len(rest)-1]>>(n&7) != 0 {
		return dst[:0], fmt.Errorf("%w: %s column: stray bits", ErrCorrupt, c)
	}
	dst = grow(dst, n)
	for i := range dst {
		dst[i] = rest[i>>3]>>(i&7)&1 == 1
	}
	return dst, nil
}
