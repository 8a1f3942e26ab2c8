package presplit

import (
	"math"
	"time"
)

// day is the unit of nice widths of a day or more.
const day = 24 * time.Hour

// niceWidths are the widths below a day a plan may use, ascending: a 1-2-5
// series below one second, then the usual clock steps. Every one divides a
// day, so partition boundaries at multiples of any of them (since the
// epoch) also fall on UTC day boundaries.
var niceWidths = buildNiceWidths()

func buildNiceWidths() []time.Duration {
	var out []time.Duration
	for d := time.Nanosecond; d < time.Second; d *= 10 {
		out = append(out, d, 2*d, 5*d)
	}
	for _, s := range []int{1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 14400, 21600, 28800, 43200} {
		out = append(out, time.Duration(s)*time.Second)
	}
	return out
}

// Width returns the partition width that makes a partition reach target
// bytes at rate bytes per second of the time axis.
//
// The raw width target/rate is rounded down to a nice width (see
// niceWidths; a day or more rounds down to whole days), then clamped to
// [MinWidth, MaxWidth] of cfg (defaults filled). Rounding down keeps a
// partition at or below the target at the estimated rate (between 40% and
// 100% of it), and nice widths keep the width, hence the split points,
// stable while the estimate jitters between planner runs.
//
// A rate that is zero, negative or NaN (an idle table) gives MaxWidth: a
// partition that turns out too big is cut by an ordinary size split, whose
// closed lower child then gives the estimator a rate, while a partition
// that turns out too small stays small forever (no op merges partitions).
// An infinite rate gives MinWidth. (An unknown rate is PlanTable's business:
// it uses Config.UnknownWidth.)
func Width(rate float64, target uint64, cfg Config) time.Duration {
	cfg = cfg.withDefaults()
	if !(rate > 0) { // also NaN
		return cfg.MaxWidth
	}
	secs := float64(target) / rate
	var w time.Duration
	if secs >= float64(math.MaxInt64)/float64(time.Second) {
		w = cfg.MaxWidth
	} else {
		w = niceFloor(time.Duration(secs * float64(time.Second)))
	}
	return min(max(w, cfg.MinWidth), cfg.MaxWidth)
}

// niceFloor returns the largest nice width <= d: whole days from a day up,
// else the largest of niceWidths, and 1ns below that.
func niceFloor(d time.Duration) time.Duration {
	if d >= day {
		return d / day * day
	}
	out := time.Nanosecond
	for _, n := range niceWidths {
		if n > d {
			break
		}
		out = n
	}
	return out
}
