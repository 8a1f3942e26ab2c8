package rpc

import (
	"errors"
	"fmt"
	"math/bits"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// The codecs are shared by every Client and handler of the process:
// EncodeAll and DecodeAll are safe for concurrent use, and neither starts
// goroutines, so there is nothing to close.

// encoder compresses request and response bodies. SpeedFastest: internal
// traffic is mostly JSON rows and metadata, which compress well even at the
// fastest level, and CPU on a busy server is worth more than a few percent of
// bandwidth on the cluster network.
var encoder = sync.OnceValue(func() *zstd.Encoder {
	e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(0))
	if err != nil {
		panic(fmt.Sprintf("BUG: zstd encoder options: %v", err))
	}
	return e
})

// minDecoderLimit is the smallest WithDecoderMaxMemory a shared decoder gets.
// Our encoder never uses a window larger than the content, but the smallest
// window is 1 KiB; a floor keeps tiny limits from refusing tiny frames.
const minDecoderLimit = 64 << 10

// decoders holds one shared decoder per size class. WithDecoderMaxMemory is
// fixed when a decoder is built, so a limit is rounded up to a power of two
// (at most ~40 decoders ever exist, whatever limits callers use); the exact
// limit is checked on the output. The rounding lets at most 2x the limit be
// inflated before the check, never an unbounded bomb.
var decoders struct {
	sync.Mutex
	byClass map[int]*zstd.Decoder
}

// decoderFor returns the shared decoder that refuses to produce more than
// the size class of limit.
func decoderFor(limit int) *zstd.Decoder {
	class := minDecoderLimit
	if limit > class {
		class = 1 << bits.Len(uint(limit-1))
	}
	decoders.Lock()
	defer decoders.Unlock()
	if d, ok := decoders.byClass[class]; ok {
		return d
	}
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(uint64(class)))
	if err != nil {
		panic(fmt.Sprintf("BUG: zstd decoder options: %v", err))
	}
	if decoders.byClass == nil {
		decoders.byClass = make(map[int]*zstd.Decoder)
	}
	decoders.byClass[class] = d
	return d
}

// errTooLarge and errCorrupt are what decompress returns; callers wrap them
// into their side's sentinel.
var (
	errTooLarge = errors.New("over the limit once decompressed")
	errCorrupt  = errors.New("corrupt zstd body")
)

// decompress appends the zstd frames of src to dst, producing at most limit
// bytes.
func decompress(dst, src []byte, limit int) ([]byte, error) {
	start := len(dst)
	out, err := decoderFor(limit).DecodeAll(src, dst)
	switch {
	case errors.Is(err, zstd.ErrDecoderSizeExceeded), errors.Is(err, zstd.ErrWindowSizeExceeded):
		return out, fmt.Errorf("%w (limit %d bytes)", errTooLarge, limit)
	case err != nil:
		return out, fmt.Errorf("%w: %v", errCorrupt, err)
	case len(out)-start > limit:
		return out, fmt.Errorf("%w (%d bytes, limit %d)", errTooLarge, len(out)-start, limit)
	}
	return out, nil
}

// maxPooledBuffer keeps the pool from pinning the memory of one huge body.
const maxPooledBuffer = 4 << 20

// bufPool recycles decompression buffers. encoding/json copies what it
// decodes, so a buffer can be reused as soon as Unmarshal returns.
var bufPool = sync.Pool{New: func() any { return new([]byte) }}

func getBuf() *[]byte { return bufPool.Get().(*[]byte) }

func putBuf(b *[]byte) {
	if cap(*b) > maxPooledBuffer {
		return
	}
	*b = (*b)[:0]
	bufPool.Put(b)
}
