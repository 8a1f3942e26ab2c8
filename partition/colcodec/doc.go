// Package colcodec encodes the columns of a time-series block (issue 17):
// timestamps, float64, int64, bool and string values, and the versions
// (model.Version) that let the per-field last-writer-wins rule decide
// merges with sealed data. It only turns slices into bytes and back: it
// knows nothing of pebble, series or blocks, holds no state but pooled
// scratch buffers, and every function is safe for concurrent use (the
// Encoder types are not: one per goroutine).
//
// # API
//
// For each column type an encoder appends to a caller's buffer and returns
// it, and a decoder fills dst[:0], reusing its array when large enough:
//
//	EncodeTimestamps / DecodeTimestamps  []int64 (ns, any order)
//	EncodeInts       / DecodeInts        []int64
//	EncodeFloats     / DecodeFloats      []float64
//	EncodeBools      / DecodeBools       []bool
//	EncodeStrings    / DecodeStrings     []string
//	EncodeVersions   / DecodeVersions    []model.Version
//
// A float column in the decimal form is also read as its mantissas for an
// aggregate (DecodeDecimals, and DecodeDecimalsPrefix for its first m
// values only, the rest of the stream neither read nor checked).
//
// With reused buffers none of them allocates per call (scratch buffers
// come from pools; FloatEncoder, StringEncoder and VersionEncoder hold
// their own for a caller that keeps one per goroutine), except
// DecodeStrings: one string holds the column's bytes and the values are
// its substrings. Encoders fail only with ErrTooMany (more than MaxCount
// values, more than MaxStringBytes of strings).
//
// Decoders never panic and never trust a count. A count above MaxCount or
// larger than the bytes that follow can hold, a truncated column, trailing
// bytes, stray padding bits, an index out of range or a reserved value is
// ErrCorrupt; a column of another type or of an unknown codec is
// ErrUnknownCodec. A count is checked against the bytes before the values
// are allocated, except in the forms that hold many values in a few bytes
// (zero-width bits, runs, a constant bool, a one-entry dictionary, zstd),
// where MaxCount and MaxStringBytes bound the allocation. Every value
// round-trips exactly, floats bit for bit (NaN payloads, ±Inf, -0).
//
// # Column layout
//
// Every column starts with a header:
//
//	codec(1) | count:uvarint
//
// codec is a Codec id (below; a decoder refuses any other) and count the
// number of values, at most MaxCount (2^20; for string-zstd, the length of
// the body before compression). A column of count 0 is the header alone
// (CodecBoolConst adds its value byte). uvarint is
// encoding/binary's (7 bits per byte, low first); zigzag(x) is
// (x << 1) ^ (x >> 63), so 0, -1, 1, -2 → 0, 1, 2, 3. Bit streams are
// written least significant bit first: bit i of a stream is bit i%8 of its
// byte i/8, a field of w bits is written low bit first, and the last byte
// is padded with zero bits (decoders refuse non-zero padding).
//
//	id    name             column type  body after the header
//	0x01  timestamps       int64        stream(count)
//	0x10  float-decimal    float64      exponent(1) | stream(count)
//	0x11  float-xor        float64      Gorilla XOR bits
//	0x20  ints             int64        stream(count)
//	0x30  bool-bits        bool         ceil(count/8) bytes, bit i = value i
//	0x31  bool-const       bool         one byte: 0 or 1, every value
//	0x40  string-raw       string       stream(count) of lengths | the bytes
//	0x41  string-dict      string       k:uvarint | stream(k) of lengths | the k entries' bytes | [stream(count) of indices]
//	0x42  string-zstd      string       (the count is the body's length) one zstd frame of a 0x40 or 0x41 column
//	0x50  versions         Version      stream(count) of wall ms | stream(count) of wall remainders | k:uvarint | k × node(8, LE) | [stream(count) of indices]
//
// # Integer streams
//
// stream(n) holds n int64 values; n comes from the enclosing layout. The
// encoder costs every order and packing below on the block and writes the
// smallest:
//
//	shape(1) | scale(1) | heads | residuals
//
// The fields:
//
//   - shape: bits 0-1 are the order o: 0 (residual = v[i]), 1
//     (v[i] − v[i−1]), 2 ((v[i] − v[i−1]) − (v[i−1] − v[i−2]), delta of
//     delta); bits 2-4 are the packing p (below); bits 5-7 are 0.
//   - scale s (0..18): every residual is a multiple of 10^s and is written
//     divided by it (timestamps of ms or s precision in ns; float
//     mantissas of round numbers). The encoder uses s = 0 for order 0.
//   - heads: min(o, n) uvarints: zigzag(v[0]) for o ≥ 1, then
//     zigzag(v[1] − v[0]) for o = 2.
//   - residuals: the m = n − min(o, n) residuals r, each written as
//     z = zigzag(r / 10^s) in the packing p.
//
// The packings:
//
//   - p = 0, varint: one uvarint each.
//   - p = 1, bits: a width byte w (0..64), then a bit stream of w bits
//     each, ceil(m·w/8) bytes. w = 0 (every residual zero: a constant, or
//     regular timestamps at order 2) takes no bytes.
//   - p = 2, buckets (Gorilla/Prometheus delta-of-delta style): a bit
//     stream with, per value, the bit 0 (z = 0); bits 1,0 and z in 14
//     bits; 1,1,0 and 17 bits; 1,1,1,0 and 20 bits; or 1,1,1,1 and 64 bits.
//   - p = 3, runs: a run count r:uvarint, then r × (z:uvarint,
//     length:uvarint ≥ 1), the lengths summing to m.
//   - p = 4, Rice (Golomb-Rice with parameter 2^k): a byte k (0..63), then
//     a bit stream with, per value, q = z >> k: when q < 24, q one bits, a
//     zero bit and the k low bits of z; else 24 one bits and z in 64 bits.
//     On the harness's 2-decimal random walks it takes 11% less than the
//     bits packing (about 9.8 bits per value, their entropy is about 9.7).
//
// Sizes are computed exactly for packings 0-3 from a histogram of the
// residuals' bit lengths, in one pass over the block for all three
// orders; Rice's is estimated from it and measured (for k−1, k, k+1) only
// when it may win. A stream whose deltas are all equal is written at order
// 2, bits, w = 0 without costing the others.
//
// Arithmetic wraps (two's complement), so any int64 sequence round-trips,
// MinInt64 − MaxInt64 included. Decoding: v = r·10^s for o = 0;
// v[i] = v[i−1] + r·10^s for o = 1; d = d + r·10^s, v[i] = v[i−1] + d for
// o = 2, starting from d = v[1] − v[0].
//
// Timestamps and ints share this layout under two ids. For one harness
// series (2,000 points 300 ms apart) the timestamps stream is order 2,
// bits, w = 0: 20 bytes for the whole column.
//
// # Floats
//
// float-decimal: every value v is m / 10^e (float64 division, correctly
// rounded) for one exponent e (0..15) and integers |m| < 2^53, checked bit
// for bit when encoding: exponent(1) is e and the stream holds the m.
// Values written with a few decimals (the harness's 12.34) take this form;
// -0, NaN, ±Inf and values with more digits do not. When the decimal form
// takes more than 2 bytes per value the encoder also builds the XOR form
// and keeps the smaller (below it XOR never won on the test shapes).
//
// float-xor (Gorilla, VLDB 2015, with Prometheus' field sizes): a bit
// stream of the first value's 64 bits, then per following value its XOR x
// with the previous one: the bit 0 when x = 0; else 1, then 0 and the
// meaningful bits of x when they fit the previous window (x has at least
// as many leading and trailing zeros as the window), else 1, the leading
// zero count (5 bits, capped at 31), the meaningful bit count (6 bits, 0
// meaning 64) and the meaningful bits, which set the new window.
//
// # Strings
//
// string-raw holds the lengths then the concatenated bytes. string-dict
// holds the k distinct strings in order of first appearance, then, when
// k > 1, each value's index (< k). The encoder writes the dictionary form
// when its estimated size is smaller. When that body is at least 512
// bytes and zstd (fastest level, no checksum: blocks are checksummed by
// the store) shrinks it to at most 80%, the column is string-zstd: the
// header's count is the body's length (at most MaxStringBytes + 20·MaxCount
// + 64) and the frame must decompress to exactly that many bytes.
//
// # Versions
//
// A version is (Wall int64, Node uint64). Each wall is split into whole
// milliseconds, floor(wall / 1e6), and the remainder in [0, 1e6) (a
// decoder refuses another), each written as a stream: the clock reads
// whole milliseconds (model.Clock) and counts in the nanosecond digits
// only when several requests read it in one millisecond, so the first
// stream compresses like millisecond timestamps and the second is mostly
// 0. One stream of whole walls would lose its common factor 1e6 to the
// first counted reading: on the peer harness's versions (points of a
// series arriving out of order, other requests in the same millisecond)
// about 3.1 bytes per value, against 0.9–1.05 split (TestSizes,
// harness-ms-shared). All walls equal (one write batch) cost a few bytes.
// The nodes are a dictionary of the k (1 ≤ k ≤ count) distinct nodes in
// order of first appearance, 8 bytes little-endian each, then, when
// k > 1, each value's index (< k) as a stream.
package colcodec
