package colcodec

import "errors"

// Sentinel errors of the column codecs. Decoders wrap them with what they
// found; callers test them with errors.Is.
var (
	// ErrCorrupt is returned by a decoder for input that does not decode:
	// truncated, trailing bytes, a count larger than the input can hold
	// or than MaxCount, a reserved bit set, an index out of range.
	ErrCorrupt = errors.New("colcodec: corrupt column")
	// ErrUnknownCodec is returned by a decoder whose input starts with a
	// codec id it does not know, or with the id of another column type
	// (a float column given to DecodeInts).
	ErrUnknownCodec = errors.New("colcodec: unknown codec")
	// ErrTooMany is returned by an encoder given more than MaxCount
	// values, or strings whose total size exceeds MaxStringBytes.
	ErrTooMany = errors.New("colcodec: too many values for one column")
	// ErrInvalidValue is returned by an encoder given a value its column
	// cannot hold (EncodeDecimals: a mantissa of 2^53 or more in
	// magnitude, an exponent above 15).
	ErrInvalidValue = errors.New("colcodec: value out of the column's range")
)
