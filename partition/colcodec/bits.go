package colcodec

import (
	"encoding/binary"
	"math/bits"
)

// bitWriter appends bits to a byte slice, least significant bit first:
// bit i of the stream is bit i%8 of byte i/8.
type bitWriter struct {
	buf []byte
	acc uint64 // pending bits, the oldest in the low end
	n   uint   // number of pending bits, < 64
}

// write appends the nb (≤ 64) low bits of v.
func (w *bitWriter) write(v uint64, nb uint) {
	if nb < 64 {
		v &= 1<<nb - 1
	}
	w.acc |= v << w.n
	if w.n+nb < 64 {
		w.n += nb
		return
	}
	w.buf = binary.LittleEndian.AppendUint64(w.buf, w.acc)
	spill := 64 - w.n // bits of v already written; v >> 64 is 0
	w.acc = v >> spill
	w.n = w.n + nb - 64
}

// finish appends the pending bits, padded with zeros to a byte, and
// returns the buffer.
func (w *bitWriter) finish() []byte {
	for i := uint(0); i < w.n; i += 8 {
		w.buf = append(w.buf, byte(w.acc>>i))
	}
	w.acc, w.n = 0, 0
	return w.buf
}

// bitReader reads a stream written by bitWriter. Reading past the end
// yields zeros and sets over; callers check over (or ok) once at the end.
type bitReader struct {
	src  []byte
	pos  uint // bit position
	end  uint // 8*len(src)
	over bool
}

func newBitReader(src []byte) bitReader {
	return bitReader{src: src, end: uint(len(src)) * 8}
}

// read returns the next nb (≤ 64) bits.
func (r *bitReader) read(nb uint) uint64 {
	if nb == 0 {
		return 0
	}
	if r.pos+nb > r.end {
		r.over = true
		r.pos = r.end
		return 0
	}
	i, off := r.pos>>3, r.pos&7
	r.pos += nb
	var v uint64
	if i+8 <= uint(len(r.src)) {
		v = binary.LittleEndian.Uint64(r.src[i:]) >> off
		if nb+off > 64 {
			v |= uint64(r.src[i+8]) << (64 - off)
		}
	} else {
		for k := uint(0); i+k < uint(len(r.src)); k++ {
			v |= uint64(r.src[i+k]) << (8 * k)
		}
		v >>= off // nb+off ≤ 64 here: the bounds check leaves fewer than 8 bytes
	}
	if nb < 64 {
		v &= 1<<nb - 1
	}
	return v
}

// peek returns the next 64 bits without consuming them, zeros past the
// end. Small enough to inline: the tail is peekSlow.
func (r *bitReader) peek() uint64 {
	i, off := r.pos>>3, r.pos&7
	if i+9 <= uint(len(r.src)) {
		return binary.LittleEndian.Uint64(r.src[i:])>>off | uint64(r.src[i+8])<<(64-off)
	}
	return r.peekSlow()
}

//go:noinline
func (r *bitReader) peekSlow() uint64 {
	i, off := r.pos>>3, r.pos&7
	var v uint64
	for k := uint(0); k < 8 && i+k < uint(len(r.src)); k++ {
		v |= uint64(r.src[i+k]) << (8 * k)
	}
	return v >> off // fewer than 9 bytes left: nothing past them
}

// skip consumes n bits.
func (r *bitReader) skip(n uint) {
	if r.pos+n > r.end {
		r.over = true
		r.pos = r.end
		return
	}
	r.pos += n
}

// bit returns the next bit.
func (r *bitReader) bit() uint64 {
	if r.pos >= r.end {
		r.over = true
		return 0
	}
	b := uint64(r.src[r.pos>>3]>>(r.pos&7)) & 1
	r.pos++
	return b
}

// clean reports whether only zero padding bits (fewer than 8) remain, so a
// decoder can refuse trailing bytes and stray bits.
func (r *bitReader) clean() bool {
	if r.over || r.end-r.pos >= 8 {
		return false
	}
	if r.pos == r.end {
		return true
	}
	last := r.src[len(r.src)-1] >> (r.pos & 7)
	return last == 0
}

// bitLen is the number of bits needed to write u.
func bitLen(u uint64) uint { return uint(bits.Len64(u)) }
