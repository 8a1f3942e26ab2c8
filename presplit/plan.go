package presplit

import (
	"time"

	"github.com/tsdb/tsdb/metadata"
)

// Skip says why a plan has no points.
type Skip uint8

// The reasons a plan has no points.
const (
	// SkipNone: the plan has points.
	SkipNone Skip = iota
	// SkipCovered: the tail already begins at or beyond now+Horizon and at
	// least MinAhead bounded partitions lie ahead; nothing to do.
	SkipCovered
	// SkipNotTail: the partition given as the tail has a closed end.
	SkipNotTail
	// SkipSplitting: the tail is already splitting (its Split is set).
	SkipSplitting
	// SkipJoining: the tail has joining servers; SPLIT_BEGIN refuses it
	// until they finalize or are removed.
	SkipJoining
	// SkipNoServers: the tail has no servers to push its rows to the
	// children; SPLIT_BEGIN refuses it until FORCE_JOIN.
	SkipNoServers
	// SkipOffline: an operator marked the tail offline.
	SkipOffline
	// SkipBadWidth: the width is not positive.
	SkipBadWidth
	// SkipAxisEnd: no aligned point fits in the time axis (int64 ns).
	SkipAxisEnd
)

// String names the reason, for logs and metric labels.
func (s Skip) String() string {
	switch s {
	case SkipNone:
		return "none"
	case SkipCovered:
		return "covered"
	case SkipNotTail:
		return "not_tail"
	case SkipSplitting:
		return "splitting"
	case SkipJoining:
		return "joining"
	case SkipNoServers:
		return "no_servers"
	case SkipOffline:
		return "offline"
	case SkipBadWidth:
		return "bad_width"
	case SkipAxisEnd:
		return "axis_end"
	}
	return "unknown"
}

// Plan returns the split points of a pre-split of tail, the table's last
// partition (End nil), at width, or ok false when there is nothing to do.
// ahead is the number of the table's other partitions that begin at or
// after now (they are bounded, being before the tail); PlanTable counts
// them. cfg's zero fields take their defaults.
//
// Nothing is planned (ok false) when the tail cannot be split by a
// SPLIT_BEGIN (its End is set, it is splitting, has joining servers, has no
// servers, or is offline), when width <= 0, or when the tail is far enough
// already: it begins at or after now+Horizon and ahead >= MinAhead.
//
// Otherwise the points are the consecutive multiples of width (since the
// epoch), starting at the first one at or after max(now, Begin) and above
// Begin, and continuing until the last point, which becomes the new tail's
// begin, is at or after now+Horizon+Refill and at least MinAhead bounded
// partitions begin at or after now (counting ahead, the first child when
// Begin >= now, and every child after the first). A first point closer
// than width/2 to Begin is skipped, so the first child is never a sliver:
// it spans [Begin, p1) with p1-Begin in [width/2, 3*width/2) when Begin is
// set (an open Begin keeps (-inf, p1)). So the points are strictly
// increasing, strictly inside the tail's range, and aligned; boundaries
// planned in different runs at the same width coincide. At most MaxPoints
// points are returned (a capped plan covers less, and the next run
// continues from its last point).
//
// Existing partitions between now and the tail are never re-cut, even when
// the width has changed since they were planned: only the tail is split,
// so a new width applies from the tail's begin on, i.e. within about
// Horizon+Refill of time.
func Plan(tail metadata.Partition, ahead int, now int64, width time.Duration, cfg Config) (points []int64, ok bool) {
	points, skip := plan(tail, ahead, now, width, cfg.withDefaults())
	return points, skip == SkipNone
}

// plan is Plan with the reason for an empty plan; cfg has its defaults.
func plan(tail metadata.Partition, ahead int, now int64, width time.Duration, cfg Config) ([]int64, Skip) {
	if skip := splittable(&tail); skip != SkipNone {
		return nil, skip
	}
	if width <= 0 {
		return nil, SkipBadWidth
	}
	begin := tail.Begin
	if begin != nil && *begin >= addSat(now, int64(cfg.Horizon)) && ahead >= cfg.MinAhead {
		return nil, SkipCovered
	}
	w := int64(width)
	p, ok := firstPoint(begin, now, w)
	if !ok {
		return nil, SkipAxisEnd
	}
	future := ahead
	if begin != nil && *begin >= now {
		future++ // the first child [Begin, p1) lies ahead too
	}
	fillTo := addSat(addSat(now, int64(cfg.Horizon)), int64(cfg.Refill))
	points := make([]int64, 0, min(cfg.MaxPoints, 64))
	for len(points) < cfg.MaxPoints {
		points = append(points, p)
		// Every child after the first begins at a point >= now; the last
		// point begins the new tail, which does not count.
		if p >= fillTo && future+len(points)-1 >= cfg.MinAhead {
			break
		}
		if !canAdd(p, w) {
			break
		}
		p += w
	}
	return points, SkipNone
}

// splittable says why a SPLIT_BEGIN of tail would be refused or unwise, or
// SkipNone.
func splittable(tail *metadata.Partition) Skip {
	switch {
	case tail.End != nil:
		return SkipNotTail
	case tail.Split != nil:
		return SkipSplitting
	case len(tail.Joining) > 0:
		return SkipJoining
	case len(tail.Servers) == 0:
		return SkipNoServers
	case tail.Offline:
		return SkipOffline
	}
	return SkipNone
}

// firstPoint returns the first split point: the smallest multiple of w at
// or after max(now, begin) and above begin, moved on by w when it lies
// closer than w/2 to begin. It is false when no such point fits in int64.
func firstPoint(begin *int64, now, w int64) (int64, bool) {
	start := now
	if begin != nil && *begin > start {
		start = *begin
	}
	p, ok := alignUp(start, w)
	if !ok {
		return 0, false
	}
	if begin != nil && (p <= *begin || p < addSat(*begin, w/2)) {
		if !canAdd(p, w) {
			return 0, false
		}
		p += w
	}
	return p, true
}
