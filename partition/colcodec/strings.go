package colcodec

import (
	"encoding/binary"
	"fmt"
	"sync"
	"unsafe"

	"github.com/klauspost/compress/zstd"
)

// zstdMinBody is the body size (bytes after the codec id) from which
// EncodeStrings tries zstd; zstdMaxRatio is the largest compressed/raw
// ratio it keeps (the saving must pay for the decompression).
const (
	zstdMinBody  = 512
	zstdMaxRatio = 0.8
)

// zstdCodec holds the zstd encoder and decoder of string columns, safe for
// concurrent use through EncodeAll/DecodeAll and built on first use. They
// start no goroutines (EncodeAll and DecodeAll run on the caller's).
var zstdCodec = sync.OnceValues(func() (*zstd.Encoder, *zstd.Decoder) {
	enc, err := zstd.NewWriter(nil,
		zstd.WithEncoderLevel(zstd.SpeedFastest),
		zstd.WithEncoderConcurrency(1),
		zstd.WithEncoderCRC(false), // the store checksums its blocks
		zstd.WithLowerEncoderMem(true))
	if err != nil {
		panic(fmt.Sprintf("colcodec: zstd encoder: %v", err)) // only bad options fail
	}
	dec, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(0), // GOMAXPROCS concurrent DecodeAll
		zstd.WithDecoderMaxMemory(MaxStringBytes+1<<20),
		zstd.WithDecoderLowmem(true))
	if err != nil {
		panic(fmt.Sprintf("colcodec: zstd decoder: %v", err))
	}
	return enc, dec
})

// StringEncoder encodes string columns reusing its scratch state (the
// dictionary map and buffers), so repeated calls allocate little. Not safe
// for concurrent use; the zero value is ready.
type StringEncoder struct {
	dict  map[string]int
	order []string // distinct strings in order of first appearance
	ints  []int64
	body  []byte
}

// EncodeStrings appends the column of strings src to dst and returns the
// extended slice, with a pooled StringEncoder.
func EncodeStrings(dst []byte, src []string) ([]byte, error) {
	e := stringEncoders.Get().(*StringEncoder)
	dst, err := e.Encode(dst, src)
	if cap(e.body) <= 1<<20 && len(e.order) <= 4096 {
		stringEncoders.Put(e)
	}
	return dst, err
}

var stringEncoders = sync.Pool{New: func() any { return new(StringEncoder) }}

// Encode appends the column of strings src to dst and returns the
// extended slice. It writes CodecStringDict when the dictionary form is
// smaller than CodecStringRaw, and wraps the chosen form in
// CodecStringZstd when it is at least zstdMinBody bytes and zstd shrinks
// it to at most zstdMaxRatio of its size.
func (e *StringEncoder) Encode(dst []byte, src []string) ([]byte, error) {
	if len(src) > MaxCount {
		return dst, fmt.Errorf("%w: %d strings", ErrTooMany, len(src))
	}
	total := 0
	for _, s := range src {
		total += len(s)
	}
	if total > MaxStringBytes {
		return dst, fmt.Errorf("%w: %d bytes of strings", ErrTooMany, total)
	}
	e.body = e.appendBody(e.body[:0], src, total)
	clear(e.dict) // do not keep the caller's strings alive
	clear(e.order)
	if len(e.body) >= zstdMinBody {
		enc, _ := zstdCodec()
		start := len(dst)
		dst = appendHeader(dst, CodecStringZstd, len(e.body))
		dst = enc.EncodeAll(e.body, dst)
		if float64(len(dst)-start) <= zstdMaxRatio*float64(len(e.body)) {
			return dst, nil
		}
		dst = dst[:start]
	}
	return append(dst, e.body...), nil
}

// appendBody appends the raw or dictionary form of src, whichever is
// smaller.
func (e *StringEncoder) appendBody(dst []byte, src []string, total int) []byte {
	if e.dict == nil {
		e.dict = make(map[string]int)
	}
	clear(e.dict)
	e.order = e.order[:0]
	e.ints = e.ints[:0]
	dictBytes := 0
	for _, s := range src {
		k, ok := e.dict[s]
		if !ok {
			k = len(e.order)
			e.dict[s] = k
			e.order = append(e.order, s)
			dictBytes += len(s)
		}
		e.ints = append(e.ints, int64(k))
	}
	// Estimated sizes: lengths about one byte each, indices bit-packed.
	rawSize := total + len(src)
	dictSize := dictBytes + len(e.order) + (len(src)*int(bitLen(uint64(len(e.order)-1)))+7)/8
	if len(src) == 0 || rawSize <= dictSize {
		dst = appendHeader(dst, CodecStringRaw, len(src))
		return appendStrings(dst, src, e.ints[:0])
	}
	dst = appendHeader(dst, CodecStringDict, len(src))
	dst = binary.AppendUvarint(dst, uint64(len(e.order)))
	idx := e.ints
	dst = appendStrings(dst, e.order, idx[len(idx):]) // lengths scratch after the indices
	if len(e.order) > 1 {
		dst = appendStream(dst, idx)
	}
	return dst
}

// appendStrings appends the lengths of ss as an integer stream, then
// their bytes. scratch holds the lengths.
func appendStrings(dst []byte, ss []string, scratch []int64) []byte {
	if len(ss) == 0 {
		return dst
	}
	for _, s := range ss {
		scratch = append(scratch, int64(len(s)))
	}
	dst = appendStream(dst, scratch)
	for _, s := range ss {
		dst = append(dst, s...)
	}
	return dst
}

// maxStringBody bounds the body of a CodecStringZstd column: the strings,
// their lengths and the indices (at most 10 bytes each), and headers.
const maxStringBody = MaxStringBytes + 20*MaxCount + 64

// DecodeStrings decodes a column written by EncodeStrings into dst[:0]
// (reused when large enough) and returns it. The strings share one
// allocation holding the column's bytes (the dictionary entries for
// CodecStringDict); src is not retained.
func DecodeStrings(dst []string, src []byte) ([]string, error) {
	if len(src) == 0 || Codec(src[0]) != CodecStringZstd {
		return decodeStringBody(dst, src, false)
	}
	c := CodecStringZstd
	pos := 1
	n, err := readUvarint(src, &pos, "zstd body length")
	if err != nil {
		return dst[:0], fmt.Errorf("%s column: %w", c, err)
	}
	if n > maxStringBody {
		return dst[:0], fmt.Errorf("%w: %s column: body of %d bytes", ErrCorrupt, c, n)
	}
	_, dec := zstdCodec()
	// Size the buffer by the header only as far as the input makes it
	// plausible; DecodeAll grows it if the frame really holds more.
	body, err := dec.DecodeAll(src[pos:], make([]byte, 0, min(int(n), 64*len(src))))
	if err != nil {
		return dst[:0], fmt.Errorf("%w: %s column: %w", ErrCorrupt, c, err)
	}
	if uint64(len(body)) != n {
		return dst[:0], fmt.Errorf("%w: %s column: body of %d bytes, header says %d", ErrCorrupt, c, len(body), n)
	}
	return decodeStringBody(dst, body, true)
}

// dictPool holds the dictionary entries DecodeStrings decodes.
var dictPool = sync.Pool{New: func() any { return new([]string) }}

// decodeStringBody decodes a CodecStringRaw or CodecStringDict column.
// owned says src is a fresh buffer the strings may point into.
func decodeStringBody(dst []string, src []byte, owned bool) ([]string, error) {
	c, n, rest, err := readHeader(src, "string", CodecStringRaw, CodecStringDict)
	if err != nil {
		return dst[:0], err
	}
	if n == 0 {
		if len(rest) != 0 {
			return dst[:0], fmt.Errorf("%w: %s column: trailing bytes", ErrCorrupt, c)
		}
		return dst[:0], nil
	}
	if c == CodecStringRaw {
		if err := checkStream(rest, 0, n); err != nil {
			return dst[:0], fmt.Errorf("%s column lengths: %w", c, err)
		}
	}
	dst = grow(dst, n)
	pos := 0
	entries := dst // CodecStringRaw: one entry per value
	if c == CodecStringDict {
		k, err := readUvarint(rest, &pos, "dictionary size")
		if err != nil {
			return dst[:0], err
		}
		if k == 0 || k > uint64(n) {
			return dst[:0], fmt.Errorf("%w: %s column: dictionary of %d for %d values", ErrCorrupt, c, k, n)
		}
		dp := dictPool.Get().(*[]string)
		entries = grow(*dp, int(k))
		defer func() {
			clear(entries) // the pool must not keep the strings alive
			if cap(entries) <= 4096 {
				*dp = entries
				dictPool.Put(dp)
			}
		}()
	}
	sp := scratchPool.Get().(*[]int64)
	defer scratchPool.Put(sp)
	lens := grow(*sp, len(entries))
	*sp = lens
	if err := decodeStream(lens, rest, &pos); err != nil {
		return dst[:0], fmt.Errorf("%s column lengths: %w", c, err)
	}
	sum := 0
	for _, l := range lens {
		if l < 0 || l > int64(len(rest)-pos-sum) {
			return dst[:0], fmt.Errorf("%w: %s column: string of %d bytes past the end", ErrCorrupt, c, l)
		}
		sum += int(l)
	}
	data := rest[pos : pos+sum]
	pos += sum
	var all string
	if owned {
		all = unsafe.String(unsafe.SliceData(data), len(data)) // our buffer, never written again
	} else {
		all = string(data)
	}
	off := 0
	for i, l := range lens {
		entries[i] = all[off : off+int(l)]
		off += int(l)
	}
	if c == CodecStringDict {
		if err := fillFromDict(dst, entries, rest, &pos, sp); err != nil {
			return dst[:0], fmt.Errorf("%s column: %w", c, err)
		}
	}
	if pos != len(rest) {
		return dst[:0], fmt.Errorf("%w: %s column: %d trailing bytes", ErrCorrupt, c, len(rest)-pos)
	}
	return dst, nil
}

// fillFromDict decodes the index stream of a dictionary column (absent
// for a one-entry dictionary) and sets dst[i] to its entry.
func fillFromDict(dst, entries []string, src []byte, pos *int, sp *[]int64) error {
	if len(entries) == 1 {
		for i := range dst {
			dst[i] = entries[0]
		}
		return nil
	}
	idx := grow(*sp, len(dst))
	*sp = idx
	if err := decodeStream(idx, src, pos); err != nil {
		return fmt.Errorf("indices: %w", err)
	}
	for i, j := range idx {
		if j < 0 || j >= int64(len(entries)) {
			return fmt.Errorf("%w: index %d of a dictionary of %d", ErrCorrupt, j, len(entries))
		}
		dst[i] = entries[j]
	}
	return nil
}
