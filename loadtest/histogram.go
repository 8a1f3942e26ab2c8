package loadtest

import (
	"math"
	"math/bits"
	"time"
)

// Histogram buckets (HDR-like, log-linear): values below 2^subBits are
// counted exactly; above, each power of two is cut into 2^(subBits-1)
// equal buckets, so a bucket is at most 1/64 (1.6%) of its values wide.
// A histogram is a fixed array of about 30 KB whatever it records.
const (
	subBits    = 7
	subCount   = 1 << subBits // 128: exact values 0..127
	halfSub    = subCount / 2 // 64 buckets per power of two
	maxBuckets = (64-subBits)*halfSub + subCount
)

// Histogram records durations (nanoseconds) with bounded memory and a
// relative error under 1.6%. The zero value is empty and ready. It is not
// safe for concurrent use.
type Histogram struct {
	counts   [maxBuckets]uint64
	count    uint64
	sum      float64
	min, max int64
}

// bucketOf returns the bucket index of v >= 0.
func bucketOf(v int64) int {
	if v < subCount {
		return int(v)
	}
	e := bits.Len64(uint64(v)) - subBits // >= 1
	return e*halfSub + int(uint64(v)>>e)
}

// bucketRange returns the smallest and largest value of bucket i.
func bucketRange(i int) (lo, hi int64) {
	if i < subCount {
		return int64(i), int64(i)
	}
	e := i/halfSub - 1
	sub := int64(i%halfSub + halfSub)
	return sub << e, (sub+1)<<e - 1
}

// Record adds one duration; negative ones count as zero.
func (h *Histogram) Record(d time.Duration) {
	v := max(int64(d), 0)
	if h.count == 0 || v < h.min {
		h.min = v
	}
	h.max = max(h.max, v)
	h.counts[bucketOf(v)]++
	h.count++
	h.sum += float64(v)
}

// Merge adds every value recorded in o.
func (h *Histogram) Merge(o *Histogram) {
	if o.count == 0 {
		return
	}
	if h.count == 0 || o.min < h.min {
		h.min = o.min
	}
	h.max = max(h.max, o.max)
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.count += o.count
	h.sum += o.sum
}

// Count returns the number of recorded values.
func (h *Histogram) Count() uint64 { return h.count }

// Max returns the largest recorded value (0 when empty).
func (h *Histogram) Max() time.Duration { return time.Duration(h.max) }

// Mean returns the mean of the recorded values (0 when empty).
func (h *Histogram) Mean() time.Duration {
	if h.count == 0 {
		return 0
	}
	return time.Duration(h.sum / float64(h.count))
}

// Quantile returns the q-quantile (0 <= q <= 1) of the recorded values: the
// middle of the bucket holding the value of rank ceil(q*count), clamped to
// the exact minimum and maximum. It returns 0 when empty.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.count == 0 {
		return 0
	}
	rank := uint64(math.Ceil(min(max(q, 0), 1) * float64(h.count)))
	rank = max(rank, 1)
	var seen uint64
	for i, c := range h.counts {
		if seen += c; seen >= rank {
			lo, hi := bucketRange(i)
			return time.Duration(min(max(lo+(hi-lo)/2, h.min), h.max))
		}
	}
	return time.Duration(h.max)
}
