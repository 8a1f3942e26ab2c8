package colcodec

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// An integer stream is how timestamps, ints, decimal float mantissas,
// string lengths, dictionary indices and version walls are written. Its
// value count is known to the caller (it is in the column header). The
// encoder picks, per stream, the order of differences and the packing of
// the residuals that give the fewest bytes (doc.go).

// Orders of difference.
const (
	order0 = 0 // residual = v[i]
	order1 = 1 // residual = v[i] - v[i-1]
	order2 = 2 // residual = (v[i] - v[i-1]) - (v[i-1] - v[i-2])
)

// Packings of the zigzagged residuals.
const (
	packVarint  = 0 // one uvarint each
	packBits    = 1 // a width byte w, then w bits each
	packBuckets = 2 // Gorilla/Prometheus-style prefix buckets of 0/14/17/20/64 bits
	packRuns    = 3 // runs of equal residuals: (value uvarint, length uvarint)
	packRice    = 4 // Golomb-Rice: a parameter byte k, then z>>k in unary and k low bits
	numPackings = 5
)

// riceEscape is the unary length at which a Rice-coded value is written
// whole instead: riceEscape one bits, then its 64 bits.
const riceEscape = 24

const maxScale = 18

// streamCost is the size in bytes of the residuals under each packing.
// From costAcc, the packRice entry is an estimate (from bit lengths, with
// riceK its best parameter); riceExact measures it.
type streamCost struct {
	size  [numPackings]int
	riceK uint8
}

// costAcc accumulates the costs of a residual sequence: a histogram of
// the bit lengths of the zigzagged residuals gives the varint, bits and
// bucket sizes; runs are counted as they close.
type costAcc struct {
	hist    [65]int32 // hist[l]: residuals of bit length l
	runs    int       // bytes of closed runs
	nruns   int
	prev    uint64
	runLen  uint64
	started bool
}

func (a *costAcc) add(z uint64) {
	a.hist[bits.Len64(z)]++
	if z == a.prev && a.started {
		a.runLen++
		return
	}
	if a.started {
		a.runs += uvarintLen(a.prev) + uvarintLen(a.runLen)
	}
	a.started, a.prev, a.runLen = true, z, 1
	a.nruns++
}

func (a *costAcc) result() streamCost {
	runs := uvarintLen(uint64(a.nruns)) + a.runs
	if a.started {
		runs += uvarintLen(a.prev) + uvarintLen(a.runLen)
	}
	varint, bucket, count, width := 0, 0, 0, 0
	for l, c := range a.hist {
		if c == 0 {
			continue
		}
		n := int(c)
		count += n
		width = l
		varint += n * max(1, (l+6)/7)
		bucket += n * bucketBitsOfLen(l)
	}
	riceK, rice := a.riceEstimate(width)
	return streamCost{size: [numPackings]int{
		packVarint:  varint,
		packBits:    1 + (count*width+7)/8,
		packBuckets: (bucket + 7) / 8,
		packRuns:    runs,
		packRice:    rice,
	}, riceK: riceK}
}

// riceEstimate returns the Rice parameter k ≤ width of least estimated
// size, and that size in bytes: a value of bit length l > k is taken as
// z>>k = 0.75·2^(l−k).
//
// Only the bit lengths present are summed, in ascending order as the
// histogram holds them: a stream has few distinct lengths, and a short
// one (a block of a sparse series) would otherwise pay width² terms.
func (a *costAcc) riceEstimate(width int) (uint8, int) {
	var (
		lens   [65]int
		counts [65]float64
		n      int
	)
	for l := 0; l <= width; l++ {
		if c := a.hist[l]; c != 0 {
			lens[n], counts[n] = l, float64(c)
			n++
		}
	}
	if n == 0 {
		return 0, 1
	}
	// Below the shortest length less one, k+1 costs no more than k for
	// every value (0.75·2^(l−k) ≥ 0.375·2^(l−k) + 1 once l−k ≥ 2), so
	// the search starts there.
	bestK, best := 0, -1.0
	for k := max(0, lens[0]-1); k <= width; k++ {
		bits := 0.0
		for i := range n {
			bits += counts[i] * riceBitsEst(lens[i], k)
		}
		if best < 0 || bits < best {
			bestK, best = k, bits
		}
	}
	return uint8(bestK), 1 + int(best+7)/8
}

// riceBitsEst is the estimated Rice size in bits of a value of bit length
// l at parameter k.
func riceBitsEst(l, k int) float64 {
	if l <= k {
		return float64(1 + k)
	}
	if l-k > 6 {
		return riceEscape + 64
	}
	q := 0.75 * float64(uint64(1)<<(l-k))
	if q >= riceEscape {
		return riceEscape + 64
	}
	return q + 1 + float64(k)
}

// riceBits is the exact Rice size in bits of z at parameter k.
func riceBits(z uint64, k uint8) int {
	if q := z >> k; q < riceEscape {
		return int(q) + 1 + int(k)
	}
	return riceEscape + 64
}

// riceExact returns, among k−1, k and k+1, the parameter of least exact
// size for the order-o residuals at scale s, and that size in bytes.
func riceExact(v []int64, o, s, k uint8) (uint8, int) {
	lo := max(int(k), 1) - 1
	hi := min(int(k)+1, 63)
	var sum [3]int
	for i := heads(o, len(v)); i < len(v); i++ {
		z := zigzag(divPow10(residual(v, o, i), s))
		for j := lo; j <= hi; j++ {
			sum[j-lo] += riceBits(z, uint8(j))
		}
	}
	bestK, best := lo, sum[0]
	for j := lo + 1; j <= hi; j++ {
		if sum[j-lo] < best {
			bestK, best = j, sum[j-lo]
		}
	}
	return uint8(bestK), 1 + (best+7)/8
}

// bucketBitsOfLen is the size in the bucket packing of a value of bit
// length l.
func bucketBitsOfLen(l int) int {
	switch {
	case l == 0:
		return 1
	case l <= 14:
		return 2 + 14
	case l <= 17:
		return 3 + 17
	case l <= 20:
		return 4 + 20
	}
	return 4 + 64
}

// residual returns the order-o residual at i ≥ o, with wrapping arithmetic.
func residual(v []int64, o uint8, i int) int64 {
	switch o {
	case order1:
		return v[i] - v[i-1]
	case order2:
		return (v[i] - v[i-1]) - (v[i-1] - v[i-2])
	}
	return v[i]
}

// heads is the number of values written whole before the residuals.
func heads(o uint8, n int) int { return min(int(o), n) }

// scaleOf returns the largest s ≤ maxScale such that 10^s divides every
// order-o residual, or 0 when all residuals are zero.
func scaleOf(v []int64, o uint8) uint8 {
	s1, s2 := scales(v)
	switch o {
	case order1:
		return s1
	case order2:
		return s2
	}
	return 0
}

// decimalZeros returns the largest s ≤ limit such that 10^s divides r:
// one remainder when limit itself does (a scale that has settled, as on
// timestamps), and otherwise the powers counted up from 0, one remainder
// for a value that is no multiple of 10, where trying the scales from
// limit down took up to limit of them.
func decimalZeros(r int64, limit uint8) uint8 {
	if divisible(r, limit) {
		return limit
	}
	var s uint8
	for s < limit && r%10 == 0 {
		r /= 10
		s++
	}
	return s
}

// scales returns scaleOf for orders 1 and 2 in one pass, which ends as
// soon as both are 0 (at once on most data but timestamps).
func scales(v []int64) (s1, s2 uint8) {
	if len(v) < 2 {
		return 0, 0
	}
	s1, s2 = maxScale, maxScale
	nz1, nz2 := false, false
	prev := v[1] - v[0]
	if prev != 0 {
		nz1 = true
		s1 = decimalZeros(prev, s1)
	}
	for i := 2; i < len(v) && (s1 > 0 || s2 > 0); i++ {
		d := v[i] - v[i-1]
		if d != 0 && s1 > 0 {
			nz1 = true
			s1 = decimalZeros(d, s1)
		}
		if dd := d - prev; dd != 0 && s2 > 0 {
			nz2 = true
			s2 = decimalZeros(dd, s2)
		}
		prev = d
	}
	if !nz1 {
		s1 = 0
	}
	if !nz2 {
		s2 = 0
	}
	return s1, s2
}

// costOf returns the exact residual costs of order o at scale s, the
// Rice parameter chosen as chooseStream does.
func costOf(v []int64, o, s uint8) streamCost {
	var a costAcc
	for i := heads(o, len(v)); i < len(v); i++ {
		a.add(zigzag(divPow10(residual(v, o, i), s)))
	}
	c := a.result()
	c.riceK, c.size[packRice] = riceExact(v, o, s, c.riceK)
	return c
}

// streamChoice is an encoding decision: order, scale and packing.
type streamChoice struct {
	order, scale, packing uint8
	riceK                 uint8 // the Rice parameter, for packRice
	size                  int   // bytes of the residuals and heads (heads estimated)
}

// chooseStream costs orders 0, 1 and 2 (each at its own largest scale)
// under every packing in one pass and returns the smallest.
func chooseStream(v []int64) streamChoice {
	if regularStream(v) {
		// Every delta equal (regular timestamps, a constant): order 2
		// with zero-width residuals, the heads alone.
		return streamChoice{order: order2, packing: packBits, size: 1 + uvarintLen(zigzag(v[0])) + uvarintLen(zigzag(v[1]-v[0]))}
	}
	s1, s2 := scales(v)
	var a [3]costAcc
	var prev int64
	for i, x := range v {
		a[0].add(zigzag(x))
		if i == 0 {
			continue
		}
		d := x - v[i-1]
		a[1].add(zigzag(divPow10(d, s1)))
		if i >= 2 {
			a[2].add(zigzag(divPow10(d-prev, s2)))
		}
		prev = d
	}
	best := streamChoice{size: -1}
	var bestCost streamCost
	for o := uint8(0); o <= order2; o++ {
		if o > 0 && len(v) <= int(o) {
			break // no residuals: a higher order only adds head bytes
		}
		c := a[o].result()
		// Heads cost about the same in every order; count them so that
		// order 0 wins ties on short streams.
		headCost := 0
		for i := 0; i < heads(o, len(v)); i++ {
			headCost += uvarintLen(zigzag(v[i]))
		}
		s := [3]uint8{0, s1, s2}[o]
		for p := uint8(0); p < numPackings; p++ {
			if size := c.size[p] + headCost; best.size < 0 || size < best.size {
				best = streamChoice{order: o, scale: s, packing: p, size: size}
				bestCost = c
			}
		}
	}
	// The Rice size is estimated: measure it when it may win, and keep
	// it only if it does.
	if best.size < 0 {
		return streamChoice{}
	}
	c := bestCost
	other := -1
	for p := uint8(0); p < numPackings; p++ {
		if p != packRice && (other < 0 || c.size[p] < c.size[other]) {
			other = int(p)
		}
	}
	if c.size[packRice] <= c.size[other]+c.size[other]/8 {
		k, size := riceExact(v, best.order, best.scale, c.riceK)
		if size < c.size[other] {
			best.packing, best.riceK = packRice, k
			return best
		}
	}
	best.packing = uint8(other)
	return best
}

// regularStream reports whether v has more than two values and all its
// deltas are equal.
func regularStream(v []int64) bool {
	if len(v) <= 2 {
		return false
	}
	d := v[1] - v[0]
	for i := 2; i < len(v); i++ {
		if v[i]-v[i-1] != d {
			return false
		}
	}
	return true
}

// appendStream appends v as an integer stream, choosing the encoding.
func appendStream(dst []byte, v []int64) []byte {
	return appendStreamAs(dst, v, chooseStream(v))
}

// appendStreamAs appends v as an integer stream with the given order,
// scale and packing. The scale must divide every residual (scaleOf).
func appendStreamAs(dst []byte, v []int64, c streamChoice) []byte {
	dst = append(dst, c.order|c.packing<<2, c.scale)
	h := heads(c.order, len(v))
	if h >= 1 {
		dst = binary.AppendUvarint(dst, zigzag(v[0]))
	}
	if h >= 2 {
		dst = binary.AppendUvarint(dst, zigzag(v[1]-v[0]))
	}
	o, s := c.order, c.scale
	switch c.packing {
	case packVarint:
		for i := h; i < len(v); i++ {
			dst = binary.AppendUvarint(dst, zigzag(divPow10(residual(v, o, i), s)))
		}
	case packBits:
		var or uint64
		for i := h; i < len(v); i++ {
			or |= zigzag(divPow10(residual(v, o, i), s))
		}
		w := bitLen(or)
		dst = append(dst, byte(w))
		if w == 0 {
			return dst
		}
		bw := bitWriter{buf: dst}
		for i := h; i < len(v); i++ {
			bw.write(zigzag(divPow10(residual(v, o, i), s)), w)
		}
		dst = bw.finish()
	case packBuckets:
		bw := bitWriter{buf: dst}
		for i := h; i < len(v); i++ {
			z := zigzag(divPow10(residual(v, o, i), s))
			switch {
			case z == 0:
				bw.write(0, 1)
			case z < 1<<14:
				bw.write(0b01|z<<2, 2+14) // prefix bits 1,0 (first bit first)
			case z < 1<<17:
				bw.write(0b011|z<<3, 3+17)
			case z < 1<<20:
				bw.write(0b0111|z<<4, 4+20)
			default:
				bw.write(0b1111, 4)
				bw.write(z, 64)
			}
		}
		dst = bw.finish()
	case packRice:
		k := uint(c.riceK)
		dst = append(dst, byte(k))
		bw := bitWriter{buf: dst}
		for i := h; i < len(v); i++ {
			z := zigzag(divPow10(residual(v, o, i), s))
			if q := z >> k; q < riceEscape {
				bw.write(1<<q-1, uint(q)+1) // q one bits, then a zero
				bw.write(z, k)
			} else {
				bw.write(1<<riceEscape-1, riceEscape)
				bw.write(z, 64)
			}
		}
		dst = bw.finish()
	case packRuns:
		nruns := 0
		for i := h; i < len(v); i++ {
			if i == h || residual(v, o, i) != residual(v, o, i-1) {
				nruns++
			}
		}
		dst = binary.AppendUvarint(dst, uint64(nruns))
		for i := h; i < len(v); {
			r := residual(v, o, i)
			j := i + 1
			for j < len(v) && residual(v, o, j) == r {
				j++
			}
			dst = binary.AppendUvarint(dst, zigzag(divPow10(r, s)))
			dst = binary.AppendUvarint(dst, uint64(j-i))
			i = j
		}
	}
	return dst
}

// checkStream reports whether the integer stream at src[pos:] can hold n
// values, from its header alone, so that a decoder refuses a count its
// input cannot hold before allocating for it. Only the zero-width bits
// packing and runs can hold many values in few bytes.
func checkStream(src []byte, pos, n int) error {
	if pos+2 > len(src) {
		return fmt.Errorf("%w: truncated integer stream header", ErrCorrupt)
	}
	shape := src[pos]
	pos += 2
	o, p := shape&3, shape>>2
	for range heads(o, n) {
		if _, err := readUvarint(src, &pos, "integer stream head"); err != nil {
			return err
		}
	}
	m, left := n-heads(o, n), len(src)-pos
	var minBits int
	switch p {
	case packVarint:
		minBits = 8 * m
	case packBits, packRice:
		if pos >= len(src) {
			return fmt.Errorf("%w: truncated integer stream parameter", ErrCorrupt)
		}
		w := int(src[pos])
		if p == packRice {
			w++
		}
		minBits, left = m*w, left-1
	case packBuckets:
		minBits = m
	}
	if minBits > 8*left {
		return fmt.Errorf("%w: %d values in %d bytes", ErrCorrupt, n, left)
	}
	return nil
}

// decodeStream decodes an integer stream of len(dst) values from src at
// *pos into dst.
func decodeStream(dst []int64, src []byte, pos *int) error {
	return decodeStreamPrefix(dst, len(dst), src, pos)
}

// decodeStreamPrefix decodes the first len(dst) values of an integer
// stream of n ≥ len(dst) values from src at *pos into dst. Short of the
// whole stream it stops there: *pos is then left inside the stream, and
// the rest, not read, is not checked either.
func decodeStreamPrefix(dst []int64, n int, src []byte, pos *int) error {
	whole := len(dst) == n
	if *pos+2 > len(src) {
		return fmt.Errorf("%w: truncated integer stream header", ErrCorrupt)
	}
	shape, s := src[*pos], src[*pos+1]
	*pos += 2
	o, p := shape&3, shape>>2
	if o > order2 || p >= numPackings || s > maxScale {
		return fmt.Errorf("%w: integer stream shape 0x%02x scale %d", ErrCorrupt, shape, s)
	}
	h := heads(o, n)
	var hv [order2]int64
	for i := 0; i < h; i++ {
		u, err := readUvarint(src, pos, "integer stream head")
		if err != nil {
			return err
		}
		hv[i] = unzigzag(u)
	}
	if h == 2 {
		hv[1] += hv[0]
	}
	copy(dst, hv[:h])
	if len(dst) <= h && !whole {
		return nil // heads only
	}
	m := n - h     // the stream's residuals
	res := dst[h:] // those decoded, in place, then integrated
	mul := pow10[s]
	switch p {
	case packVarint:
		if m > len(src)-*pos {
			return fmt.Errorf("%w: %d varints in %d bytes", ErrCorrupt, m, len(src)-*pos)
		}
		for i := range res {
			u, err := readUvarint(src, pos, "integer stream residual")
			if err != nil {
				return err
			}
			res[i] = unzigzag(u)
		}
	case packBits:
		if *pos >= len(src) {
			return fmt.Errorf("%w: truncated bit width", ErrCorrupt)
		}
		w := uint(src[*pos])
		*pos++
		if w > 64 {
			return fmt.Errorf("%w: bit width %d", ErrCorrupt, w)
		}
		nbytes := (m*int(w) + 7) / 8
		if nbytes > len(src)-*pos {
			return fmt.Errorf("%w: %d values of %d bits in %d bytes", ErrCorrupt, m, w, len(src)-*pos)
		}
		br := newBitReader(src[*pos : *pos+nbytes])
		if w == 0 {
			clear(res) // every residual 0: regular timestamps' usual stream
		} else {
			for i := range res {
				res[i] = unzigzag(br.read(w))
			}
		}
		if whole && !br.clean() {
			return fmt.Errorf("%w: stray bits after packed values", ErrCorrupt)
		}
		*pos += nbytes
	case packBuckets:
		if m > 8*(len(src)-*pos) {
			return fmt.Errorf("%w: %d bucket values in %d bytes", ErrCorrupt, m, len(src)-*pos)
		}
		br := newBitReader(src[*pos:])
		for i := range res {
			var z uint64
			switch {
			case br.bit() == 0:
			case br.bit() == 0:
				z = br.read(14)
			case br.bit() == 0:
				z = br.read(17)
			case br.bit() == 0:
				z = br.read(20)
			default:
				z = br.read(64)
			}
			res[i] = unzigzag(z)
		}
		if br.over {
			return fmt.Errorf("%w: truncated bucket-packed values", ErrCorrupt)
		}
		*pos += int((br.pos + 7) / 8)
		if whole && br.pos%8 != 0 && src[*pos-1]>>(br.pos%8) != 0 {
			return fmt.Errorf("%w: stray bits after bucket-packed values", ErrCorrupt)
		}
	case packRice:
		if *pos >= len(src) {
			return fmt.Errorf("%w: truncated Rice parameter", ErrCorrupt)
		}
		k := uint(src[*pos])
		*pos++
		if k > 63 {
			return fmt.Errorf("%w: Rice parameter %d", ErrCorrupt, k)
		}
		if (int(k)+1)*m > 8*(len(src)-*pos) {
			return fmt.Errorf("%w: %d Rice values of at least %d bits in %d bytes", ErrCorrupt, m, k+1, len(src)-*pos)
		}
		used, ok := decodeRice(res, src[*pos:], k)
		if !ok {
			return fmt.Errorf("%w: truncated Rice-coded values", ErrCorrupt)
		}
		*pos += int((used + 7) / 8)
		if whole && used%8 != 0 && src[*pos-1]>>(used%8) != 0 {
			return fmt.Errorf("%w: stray bits after Rice-coded values", ErrCorrupt)
		}
	case packRuns:
		nruns, err := readUvarint(src, pos, "run count")
		if err != nil {
			return err
		}
		if nruns > uint64(m) || (nruns == 0) != (m == 0) {
			return fmt.Errorf("%w: %d runs for %d values", ErrCorrupt, nruns, m)
		}
		i := 0
		for range nruns {
			z, err := readUvarint(src, pos, "run value")
			if err != nil {
				return err
			}
			l, err := readUvarint(src, pos, "run length")
			if err != nil {
				return err
			}
			if l == 0 || l > uint64(m-i) {
				return fmt.Errorf("%w: run of %d at value %d of %d", ErrCorrupt, l, i, m)
			}
			r := unzigzag(z)
			for k := i; k < min(i+int(l), len(res)); k++ {
				res[k] = r
			}
			if i += int(l); !whole && i >= len(res) {
				break
			}
		}
		if whole && i != m || i < len(res) {
			return fmt.Errorf("%w: runs cover %d of %d values", ErrCorrupt, i, m)
		}
	}
	integrate(dst, o, h, mul)
	return nil
}

// decodeRice decodes len(res) Rice-coded values of parameter k from src
// and returns the number of bits read, or ok false if src ends first. It
// keeps the unread bits in a local 64-bit buffer refilled 8 bytes at a
// time; escapes, values longer than the buffer and the end of src go
// through a bitReader.
func decodeRice(res []int64, src []byte, k uint) (used uint, ok bool) {
	mask := uint64(1)<<k - 1
	// acc holds the bits not yet consumed, the next in the low end; n
	// counts how many of its low bits are loaded; p is the next byte of
	// src to load.
	var (
		acc uint64
		n   uint
		p   int
	)
	for i := 0; i < len(res); i++ {
		var m int
		m, acc, n, p = decodeRiceFast(res[i:], src, k, acc, n, p)
		if i += m; i == len(res) {
			break
		}
		// One value the slow way, then the fast loop again.
		if n <= 55 {
			if p+8 <= len(src) {
				// Bits past n+8·adv are loaded too but not counted: the
				// next refill writes the same bytes there again.
				acc |= binary.LittleEndian.Uint64(src[p:]) << n
				adv := (63 - n) >> 3
				p += int(adv)
				n += adv * 8
			} else {
				for n <= 56 && p < len(src) {
					acc |= uint64(src[p]) << n
					p++
					n += 8
				}
			}
		}
		q := uint(bits.TrailingZeros64(^acc))
		if q < riceEscape && q+1+k <= n {
			res[i] = unzigzag(uint64(q)<<k | (acc>>(q+1))&mask)
			acc >>= q + 1 + k
			n -= q + 1 + k
			continue
		}
		br := bitReader{src: src, pos: uint(p)*8 - n, end: uint(len(src)) * 8}
		q = uint(bits.TrailingZeros64(^br.peek()))
		if q >= riceEscape {
			br.skip(riceEscape)
			res[i] = unzigzag(br.read(64))
		} else {
			br.skip(q + 1)
			res[i] = unzigzag(uint64(q)<<k | br.read(k))
		}
		if br.over {
			return 0, false
		}
		p, acc, n = int(br.pos>>3), 0, 0
		if off := br.pos & 7; off > 0 {
			acc, n = uint64(src[p])>>off, 8-off
			p++
		}
	}
	return uint(p)*8 - n, true
}

// decodeRiceFast is decodeRice's loop while 8 bytes remain to load at
// p. A refill loads whole bytes up to 56 to 63 bits in acc, without a
// branch; values are taken from acc until the next is longer than what it
// holds, then it refills. Every shift count is masked to 6 bits (all are
// below 64), so that no shift carries Go's check for counts of 64 and
// more, and q<<k is a multiplication, which needs no shift register. It
// returns the number of values decoded into res and the new acc, n and p;
// it stops at an escape, at a value longer than a refill loads, and near
// src's end. It is a small function of its own: inside decodeRice, with
// the escapes' path, its loop kept its state on the stack. Decoding the
// harness's float columns took 6.6–6.8 ns a value in decodeRice's older
// loop, which refilled by a branch before each value, and 4.7–4.9 here
// (BenchmarkDecodeDecimals, minimum of eight alternated runs).
func decodeRiceFast(res []int64, src []byte, k uint, acc uint64, n uint, p int) (int, uint64, uint, int) {
	i := 0
	unit := uint64(1) << (k & 63) // q<<k is q·unit
	mask := unit - 1
	for i < len(res) && p+8 <= len(src) {
		acc |= binary.LittleEndian.Uint64(src[p:]) << (n & 63)
		p += int((63 - n) >> 3)
		n |= 56
		for {
			q := uint(bits.TrailingZeros64(^acc))
			l := q + 1 + k
			if l > n {
				if q >= riceEscape || l > 56 { // an escape, or more than a refill loads
					return i, acc, n, p
				}
				break
			}
			if q >= riceEscape {
				return i, acc, n, p
			}
			acc >>= (q + 1) & 63
			res[i] = unzigzag(uint64(q)*unit | acc&mask)
			acc >>= k & 63
			n -= l
			if i++; i == len(res) {
				return i, acc, n, p
			}
		}
	}
	return i, acc, n, p
}

// integrate turns residuals dst[h:] (scaled by mul) back into values.
func integrate(dst []int64, o uint8, h int, mul int64) {
	if h >= len(dst) && o != order0 {
		return // only heads (a short stream)
	}
	switch o {
	case order0:
		if mul != 1 {
			for i := range dst {
				dst[i] *= mul
			}
		}
	case order1:
		prev := dst[0]
		for i := h; i < len(dst); i++ {
			prev += dst[i] * mul
			dst[i] = prev
		}
	case order2:
		prev, d := dst[1], dst[1]-dst[0]
		for i := h; i < len(dst); i++ {
			d += dst[i] * mul
			prev += d
			dst[i] = prev
		}
	}
}
