package loadtest

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestHistogramBuckets checks the buckets tile the int64 range: every
// value falls in its bucket's range and consecutive buckets are adjacent.
func TestHistogramBuckets(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		v := rng.Int64N(1 << rng.IntN(63))
		lo, hi := bucketRange(bucketOf(v))
		if v < lo || v > hi {
			t.Fatalf("value %d in bucket %d of range [%d, %d]", v, bucketOf(v), lo, hi)
		}
		if hi-lo > lo/64+1 {
			t.Fatalf("bucket [%d, %d] wider than 1/64 of its values", lo, hi)
		}
	}
	for i := 1; i <= bucketOf(1<<62); i++ {
		_, prevHi := bucketRange(i - 1)
		if lo, _ := bucketRange(i); lo != prevHi+1 {
			t.Fatalf("bucket %d starts at %d, previous ends at %d", i, lo, prevHi)
		}
	}
	if b := bucketOf(1<<63 - 1); b >= maxBuckets {
		t.Fatalf("max int64 in bucket %d of %d", b, maxBuckets)
	}
}

// TestHistogramQuantiles records 1..10000 µs and checks the quantiles,
// mean, max and merge within the buckets' relative error.
func TestHistogramQuantiles(t *testing.T) {
	var a, b Histogram
	for i := 1; i <= 10000; i++ {
		h := &a
		if i%2 == 0 {
			h = &b
		}
		h.Record(time.Duration(i) * time.Microsecond)
	}
	a.Merge(&b)
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{
		{0, time.Microsecond}, {0.5, 5 * time.Millisecond}, {0.9, 9 * time.Millisecond},
		{0.99, 9900 * time.Microsecond}, {1, 10 * time.Millisecond},
	} {
		got := a.Quantile(tc.q)
		if diff := float64(got-tc.want) / float64(tc.want); diff > 0.016 || diff < -0.016 {
			t.Errorf("q%.2f = %v, want %v ±1.6%%", tc.q, got, tc.want)
		}
	}
	if a.Count() != 10000 || a.Max() != 10*time.Millisecond {
		t.Errorf("count %d max %v", a.Count(), a.Max())
	}
	if m := a.Mean(); m < 5000*time.Microsecond || m > 5001*time.Microsecond {
		t.Errorf("mean %v, want 5.0005ms", m)
	}
}

// TestHistogramEdges: empty, one value, negative values.
func TestHistogramEdges(t *testing.T) {
	var h Histogram
	if h.Quantile(0.5) != 0 || h.Mean() != 0 || h.Max() != 0 {
		t.Fatal("empty histogram not zero")
	}
	h.Record(-5)
	h.Record(3 * time.Second)
	if h.Quantile(0) != 0 || h.Quantile(1) != 3*time.Second {
		t.Errorf("q0 %v q1 %v", h.Quantile(0), h.Quantile(1))
	}
	var e Histogram
	e.Merge(&h)
	if e.Count() != 2 || e.Max() != 3*time.Second || e.Quantile(0) != 0 {
		t.Errorf("merge into empty: count %d max %v min %v", e.Count(), e.Max(), e.Quantile(0))
	}
}
