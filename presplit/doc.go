// Package presplit is the pre-split planner (DESIGN.md section 8): a pure
// function of a table's partition map, the recent partitions' sizes, the
// table's size target and now, that says where to split the table's tail
// so that the time axis ahead of now is already cut into partitions of
// about the target size. It does no I/O, reads no clock and starts no
// goroutine; the master's loop (not here) builds the SPLIT_BEGIN with
// Presplit true, picks the children's ids and servers, commits it, and the
// tail's replicas finalize it under the rule of section 6.
//
// # Model
//
// A table's partitions are disjoint, sorted, and cover the time axis; the
// last one, the tail, has an open end. Rows are written mostly near now,
// so the partitions ahead of now are empty until time reaches them. The
// planner keeps them ahead of time:
//
//  1. Rate. EstimateRate measures bytes written per second of the time
//     axis from the closed partitions (both bounds set, End <= now) of the
//     last RateWindow (one hour) of covered time, as the lower
//     time-weighted median of the per-partition rates. The median makes a
//     burst covering less than half of the window (e.g. one partition that
//     size-split into many narrow children) change nothing; a sustained
//     change is followed after half a window. A mean would let a single
//     burst shrink widths for a whole window, and a high percentile for any
//     burst; both create narrow partitions that no op ever merges back.
//     No closed partition (a new table) means "unknown"; closed but empty
//     partitions mean idle (rate 0).
//  2. Width. Width is target/rate, rounded down to a nice width (1-2-5
//     below a second, then 1s 2s 5s 10s 15s 30s 1m 2m 5m 10m 15m 30m 1h 2h
//     3h 4h 6h 8h 12h, then whole days; all divide a day), clamped to
//     [MinWidth, MaxWidth] (default 1s to 24h). Rounding down keeps a
//     partition under the target at the estimated rate; nice widths keep
//     boundaries stable while the estimate jitters. A zero rate (idle)
//     gives MaxWidth: too wide is repaired by a size split (whose closed
//     lower child then yields a rate), too narrow is permanent. An unknown
//     rate (a new table) gives UnknownWidth (default 1h), a compromise: the
//     first bounded partition closes within about two hours and yields a
//     rate, an idle new table keeps only a few hourly partitions, and a
//     busy one is not left in day-wide partitions for days.
//  3. Plan. Plan splits the tail at consecutive multiples of the width
//     since the epoch (so runs at the same width agree on boundaries, and
//     boundaries fall on UTC days), from the first one at or after
//     max(now, tail begin) and above the tail's begin (skipping one closer
//     than width/2 to the begin, so no sliver partition appears), until the
//     new tail begins at or after now+Horizon+Refill and at least MinAhead
//     bounded partitions begin at or after now. It acts only when the tail
//     begins before now+Horizon or fewer than MinAhead bounded partitions
//     lie ahead: Refill (default Horizon/2) is a hysteresis that batches
//     the points of about Refill of time into one SPLIT_BEGIN instead of
//     one op per planner tick. One plan has at most MaxPoints (1000) points,
//     bounding the METADATA file growth of one op.
//
// PlanTable combines the three and returns a Decision (tail id, points,
// width, rate, and a Skip reason when there is nothing to do).
//
// # Decisions
//
//   - MinAhead counts bounded partitions (both ends set) beginning at or
//     after now; the open tail does not count. With the defaults (10m
//     horizon, 3 ahead) an idle table at the 1-day maximum width is
//     pre-split three days ahead, one point per day, and a new table (1h
//     partitions) three to four hours ahead.
//   - Only the tail is ever split. Partitions already planned ahead keep
//     their width when the rate changes (no op shrinks or re-cuts a range
//     in place, and re-splitting empty future partitions would cost ops for
//     little); the new width applies from the tail on, i.e. within about
//     Horizon+Refill of time. Oversized partitions meanwhile size-split.
//   - A tail that cannot take a SPLIT_BEGIN gets no plan: already splitting
//     (the master lets that split finish first), with joining servers or
//     none (Apply refuses the op), or offline (its replicas are not
//     expected to push the rows a finalize needs).
//   - A tail that begins before now (a new table's single partition, or
//     after the planner fell behind) is split too; its first child keeps
//     the rows already written. That is correct under section 6 but costs a
//     push of those rows; with the planner running it happens once per
//     table.
//   - The first child when the tail's begin is open stays open: (-inf, p1).
//
// # Invariants (tested, including with random inputs)
//
// Points are strictly increasing, strictly inside the tail's range (above a
// set Begin, never equal to it), multiples of the width, at most MaxPoints,
// and the resulting SPLIT_BEGIN passes metadata.Apply. Applying a complete
// plan and planning again at the same now gives SkipCovered.
package presplit
