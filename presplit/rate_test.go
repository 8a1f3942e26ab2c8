package presplit

import (
	"math"
	"testing"
	"time"
)

const mb = 1 << 20

func TestEstimateRate(t *testing.T) {
	now := at(30 * time.Second)
	for _, tc := range []struct {
		name   string
		stats  []PartitionStats
		want   float64
		wantOK bool
	}{
		{name: "no stats"},
		{name: "new table: one open partition", stats: []PartitionStats{{Bytes: 5 * mb}}},
		{
			name: "only open, current and future partitions",
			stats: []PartitionStats{
				{End: i64(at(-time.Hour)), Bytes: 100 * mb},                        // open begin
				{Begin: i64(at(-time.Hour)), End: i64(at(time.Minute)), Bytes: mb}, // contains now
				{Begin: i64(at(time.Minute)), End: i64(at(2 * time.Minute))},       // future
				{Begin: i64(at(2 * time.Minute))},                                  // tail
			},
		},
		{name: "steady", stats: steadyStats(t0, 10*time.Minute, 6, mb), want: mb, wantOK: true},
		{name: "idle", stats: steadyStats(t0, 10*time.Minute, 6, 0), want: 0, wantOK: true},
		{
			name:  "partition ending exactly at now counts",
			stats: steadyStats(now, time.Minute, 1, 3*mb), want: 3 * mb, wantOK: true,
		},
		{
			// A day-wide partition is clipped to the window, and its rate is
			// its whole span's.
			name:  "wide partition",
			stats: steadyStats(t0, 24*time.Hour, 2, 2*mb), want: 2 * mb, wantOK: true,
		},
		{
			// The burst covers 20 of the window's 60 minutes: less than half,
			// so the median ignores it however large it is.
			name:  "bursty: one burst under half the window",
			stats: burst(steadyStats(t0, 10*time.Minute, 6, mb), 2, 3, 30*time.Second, 500*mb),
			want:  mb, wantOK: true,
		},
		{
			// The new rate covers 40 of 60 minutes: a sustained change.
			name:  "rate change over half the window",
			stats: append(steadyStats(t0, 5*time.Minute, 8, 10*mb), steadyStats(at(-40*time.Minute), 10*time.Minute, 6, mb)...),
			want:  10 * mb, wantOK: true,
		},
		{
			// Partitions that ended before the window (older than an hour
			// before the newest closed end) are ignored, whatever their rate.
			name: "old partitions outside the window",
			stats: append(steadyStats(t0, 15*time.Minute, 4, mb),
				steadyStats(at(-time.Hour), time.Second, 100, 1000*mb)...),
			want: mb, wantOK: true,
		},
		{
			// Equal weights on two rates: the lower one (wider partitions).
			name: "tie resolves low",
			stats: []PartitionStats{
				{Begin: i64(at(-time.Hour)), End: i64(at(-30 * time.Minute)), Bytes: 1800 * 4 * mb},
				{Begin: i64(at(-30 * time.Minute)), End: i64(t0), Bytes: 1800 * 2 * mb},
			},
			want: 2 * mb, wantOK: true,
		},
		{
			// The window ends at the newest closed end, not at now: a table
			// in a long current partition still has a rate.
			name:  "window anchored at the newest closed end",
			stats: steadyStats(at(-20*time.Hour), time.Hour, 3, 7*mb),
			want:  7 * mb, wantOK: true,
		},
		{
			name: "empty range ignored",
			stats: append(steadyStats(t0, time.Minute, 2, mb),
				PartitionStats{Begin: i64(t0), End: i64(t0), Bytes: 100 * mb}),
			want: mb, wantOK: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := EstimateRate(tc.stats, now)
			if ok != tc.wantOK || math.Abs(got-tc.want) > 1e-6*max(1, tc.want) {
				t.Fatalf("got (%g, %v), want (%g, %v)", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

// burst replaces stats[from:to] (newest first) by children of width w, each
// holding bytes, as size splits during a burst would leave them.
func burst(stats []PartitionStats, from, to int, w time.Duration, bytes uint64) []PartitionStats {
	out := append([]PartitionStats{}, stats[:from]...)
	for _, s := range stats[from:to] {
		for b := *s.Begin; b < *s.End; b += int64(w) {
			out = append(out, PartitionStats{Begin: i64(b), End: i64(b + int64(w)), Bytes: bytes})
		}
	}
	return append(out, stats[to:]...)
}

func TestEstimateRateInputOrderIrrelevant(t *testing.T) {
	stats := append(steadyStats(t0, 5*time.Minute, 8, 10*mb), steadyStats(at(-40*time.Minute), 10*time.Minute, 6, mb)...)
	want, _ := EstimateRate(stats, t0)
	for i := range stats {
		j := len(stats) - 1 - i
		if i >= j {
			break
		}
		stats[i], stats[j] = stats[j], stats[i]
	}
	if got, _ := EstimateRate(stats, t0); got != want {
		t.Fatalf("reversed input: got %g, want %g", got, want)
	}
}

// TestEstimateRateHugeRange: a range spanning most of the int64 axis does
// not overflow into a negative rate.
func TestEstimateRateHugeRange(t *testing.T) {
	stats := []PartitionStats{{Begin: i64(math.MinInt64 + 1), End: i64(math.MaxInt64 - 1), Bytes: 1 << 40}}
	got, ok := EstimateRate(stats, math.MaxInt64)
	if !ok || got <= 0 || math.IsInf(got, 0) {
		t.Fatalf("got %g %v", got, ok)
	}
}
