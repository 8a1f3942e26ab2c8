package http

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/valyala/fasthttp"
)

// bodyBuf is a pooled buffer for decompressed bodies.
type bodyBuf struct{ b []byte }

var bodyPool = sync.Pool{New: func() any { return new(bodyBuf) }}

// requestBody returns the request body, decompressed per Content-Encoding and
// no longer than limit. The returned release function gives pooled memory back
// and must be called once the body (and anything aliasing it) is no longer used.
func requestBody(ctx *fasthttp.RequestCtx, limit int, zd *zstd.Decoder) ([]byte, func(), error) {
	raw := ctx.Request.Body()
	enc := strings.ToLower(strings.TrimSpace(string(ctx.Request.Header.Peek("Content-Encoding"))))
	switch enc {
	case "", "identity":
		return raw, func() {}, nil
	case "gzip", "x-gzip":
		buf := bodyPool.Get().(*bodyBuf)
		release := func() { putBody(buf) }
		out, err := gunzip(buf.b[:0], raw, limit)
		buf.b = out
		if err != nil {
			release()
			return nil, nil, err
		}
		return out, release, nil
	case "zstd":
		buf := bodyPool.Get().(*bodyBuf)
		release := func() { putBody(buf) }
		out, err := unzstd(zd, buf.b[:0], raw, limit)
		buf.b = out
		if err != nil {
			release()
			return nil, nil, err
		}
		return out, release, nil
	}
	return nil, nil, fmt.Errorf("%w: %q (supported: gzip, zstd, identity)", ErrUnsupportedEncoding, enc)
}

func putBody(b *bodyBuf) {
	if cap(b.b) > 64<<20 {
		b.b = nil // do not pin huge buffers
	}
	bodyPool.Put(b)
}

func gunzip(dst, src []byte, limit int) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(src))
	if err != nil {
		return dst, fmt.Errorf("%w: gzip: %v", ErrCorruptBody, err)
	}
	defer zr.Close()
	w := bytes.NewBuffer(dst)
	n, err := io.Copy(w, io.LimitReader(zr, int64(limit)+1))
	if err != nil {
		return w.Bytes(), fmt.Errorf("%w: gzip: %v", ErrCorruptBody, err)
	}
	if n > int64(limit) {
		return w.Bytes(), fmt.Errorf("%w: decompressed body exceeds %d bytes", ErrBodyTooLarge, limit)
	}
	return w.Bytes(), nil
}

func unzstd(zd *zstd.Decoder, dst, src []byte, limit int) ([]byte, error) {
	// The decoder was built with WithDecoderMaxMemory(limit): DecodeAll stops
	// with ErrDecoderSizeExceeded instead of inflating a bomb.
	out, err := zd.DecodeAll(src, dst)
	if err != nil {
		if errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) {
			return out, fmt.Errorf("%w: decompressed body exceeds %d bytes", ErrBodyTooLarge, limit)
		}
		return out, fmt.Errorf("%w: zstd: %v", ErrCorruptBody, err)
	}
	if len(out) > limit {
		return out, fmt.Errorf("%w: decompressed body exceeds %d bytes", ErrBodyTooLarge, limit)
	}
	return out, nil
}

// newZstdDecoder returns a decoder for DecodeAll (safe for concurrent use)
// that refuses to produce more than limit bytes.
func newZstdDecoder(limit int) *zstd.Decoder {
	zd, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(uint64(limit)))
	if err != nil {
		panic(fmt.Sprintf("BUG: zstd decoder options: %v", err))
	}
	return zd
}
