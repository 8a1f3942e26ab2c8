package presplit

import (
	"cmp"
	"slices"
	"time"

	"github.com/google/uuid"
)

// RateWindow is the span of the time axis EstimateRate looks at: the last
// hour covered by closed partitions, ending at the most recent closed
// partition's end. Config.RateWindow changes it for PlanTable.
const RateWindow = time.Hour

// PartitionStats is what the planner knows of one partition: its range and
// the bytes its replicas hold (the caller measures them, e.g. the largest
// or the median replica's estimate). The stats of one call should describe
// disjoint partitions, normally the table's current ones.
type PartitionStats struct {
	// ID is the partition's id (informational; the estimate does not use it).
	ID uuid.UUID
	// Begin is the inclusive lower bound in ns since the epoch; nil is open.
	Begin *int64
	// End is the exclusive upper bound in ns since the epoch; nil is open.
	End *int64
	// Bytes is the partition's measured size.
	Bytes uint64
}

// rateSample is one closed partition's rate and its weight in the window.
type rateSample struct {
	rate   float64 // bytes per second of the time axis
	weight float64 // ns of the partition inside the window
}

// closedRange is a partition with both bounds, ended at or before now.
type closedRange struct {
	begin, end int64
	bytes      uint64
}

// EstimateRate estimates the bytes a table writes per second of the time
// axis from its recent closed partitions.
//
// A partition is closed when both its bounds are set, its range is not
// empty and End <= now: time has moved past it, so its size reflects its
// whole range (rows still delayed by smearing or replication make it
// slightly low, which errs towards wider partitions). The open first
// partition, the current one (containing now) and the future ones are
// ignored: their data covers an unknown or partial span.
//
// The window is the RateWindow of the time axis ending at the most recent
// closed partition's End. Each closed partition overlapping it has the rate
// Bytes/span (its own whole span) and weighs as much as its overlap with the
// window, so a wide partition straddling the window's start counts only for
// the part inside. The estimate is the lower time-weighted median of these
// rates: the smallest rate r such that partitions with rate <= r cover at
// least half of the window's weighted time.
//
// Why a median and not a mean or a high percentile: a burst makes the
// partitions it hits size-split into many narrow children with high rates.
// A mean over the window would shrink the width by burstBytes/(rate x
// window) for as long as the burst is in the window, creating many narrow
// partitions that no op ever merges back; a high percentile would do so
// for any burst at all. The time-weighted median ignores any burst (or gap)
// covering less than half of the window, whatever its size: size splits,
// not the planner, handle it. A sustained change of the rate is adopted
// once it covers more than half of the window (30 minutes of time axis
// with the default window), after which new pre-split partitions track it.
// Ties resolve to the lower rate, i.e. wider partitions, because an
// oversized partition is fixed by a size split while an undersized one
// stays small forever. Weighting by time rather than counting partitions
// keeps the many narrow children of a burst from outvoting the steady
// partitions around them.
//
// ok is false when stats hold no closed partition, e.g. a new table (its
// only partition is open on both ends); the caller then knows nothing of
// the rate. A table whose recent closed partitions are empty is idle and
// gets (0, true).
func EstimateRate(stats []PartitionStats, now int64) (bytesPerSecond float64, ok bool) {
	return EstimateRateOver(stats, now, RateWindow)
}

// EstimateRateOver is EstimateRate over a window other than RateWindow.
func EstimateRateOver(stats []PartitionStats, now int64, window time.Duration) (bytesPerSecond float64, ok bool) {
	closed := closedBefore(stats, now)
	if len(closed) == 0 {
		return 0, false
	}
	slices.SortFunc(closed, func(a, b closedRange) int { return cmp.Compare(b.end, a.end) })
	anchor := closed[0].end
	from := subSat(anchor, int64(window))
	samples := make([]rateSample, 0, len(closed))
	for _, c := range closed {
		if c.end <= from {
			break // sorted by end, newest first: the rest is older still
		}
		lo := max(c.begin, from)
		samples = append(samples, rateSample{
			rate:   float64(c.bytes) / (spanNanos(c.begin, c.end) / float64(time.Second)),
			weight: spanNanos(lo, c.end),
		})
	}
	return lowerWeightedMedian(samples), true
}

// closedBefore returns the closed partitions of stats: both bounds set, a
// non-empty range, and End <= now.
func closedBefore(stats []PartitionStats, now int64) []closedRange {
	var out []closedRange
	for _, s := range stats {
		if s.Begin == nil || s.End == nil || *s.End <= *s.Begin || *s.End > now {
			continue
		}
		out = append(out, closedRange{begin: *s.Begin, end: *s.End, bytes: s.Bytes})
	}
	return out
}

// spanNanos returns hi-lo (hi > lo) in ns as a float64, exact in uint64
// arithmetic: an int64 difference overflows for ranges spanning most of the
// axis, and a float64 one loses the nanoseconds of small ranges.
func spanNanos(lo, hi int64) float64 {
	return float64(uint64(hi) - uint64(lo))
}

// lowerWeightedMedian returns the smallest rate whose cumulative weight
// (rates sorted ascending) reaches half the total. It sorts samples.
func lowerWeightedMedian(samples []rateSample) float64 {
	if len(samples) == 0 {
		return 0
	}
	slices.SortFunc(samples, func(a, b rateSample) int { return cmp.Compare(a.rate, b.rate) })
	var total float64
	for _, s := range samples {
		total += s.weight
	}
	var cum float64
	for _, s := range samples {
		cum += s.weight
		if 2*cum >= total {
			return s.rate
		}
	}
	return samples[len(samples)-1].rate
}
