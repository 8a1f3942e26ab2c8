package presplit

import (
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/metadata"
)

// Decision is the planner's verdict for one table. It always carries the
// rate and width (for logs and metrics); Points is empty when there is
// nothing to do, and Skip then says why.
type Decision struct {
	// PartitionID is the table's tail partition, the one to split.
	PartitionID uuid.UUID
	// Points are the split points of the pre-split: strictly increasing,
	// strictly inside the tail's range, multiples of Width. Empty when
	// Skip is not SkipNone.
	Points []int64
	// Width is the width the points were planned at.
	Width time.Duration
	// Rate is the estimated bytes per second of the time axis (0 when
	// unknown).
	Rate float64
	// RateKnown is false when no closed partition gave a rate (a new
	// table); Width is then UnknownWidth (clamped).
	RateKnown bool
	// Ahead is the number of bounded partitions that began at or after now
	// before the plan.
	Ahead int
	// Skip says why Points is empty; SkipNone when it is not.
	Skip Skip
}

// Children returns the number of children the pre-split makes,
// len(Points)+1, or 0 when there is no plan.
func (d Decision) Children() int {
	if len(d.Points) == 0 {
		return 0
	}
	return len(d.Points) + 1
}

// SplitBegin returns the SPLIT_BEGIN body of the decision with Presplit set.
// children are the Children() new children in range order, with fresh ids
// and placements the caller chose; metadata.Apply checks them.
func (d Decision) SplitBegin(children []metadata.SplitChild) metadata.SplitBeginOp {
	return metadata.SplitBeginOp{
		PartitionID: d.PartitionID,
		Points:      slices.Clone(d.Points),
		Children:    children,
		Presplit:    true,
	}
}

// PlanTable plans the pre-split of one table: it estimates the rate from
// stats (EstimateRate), derives the width for target bytes per partition
// (Width, or UnknownWidth clamped to [MinWidth, MaxWidth] when the rate is
// unknown), counts the bounded partitions
// of f that begin at or after now (Ahead), and plans the split of f's tail
// (Plan). ok is true when the decision has points; the master turns it into
// a SPLIT_BEGIN with Presplit true (Decision.SplitBegin) committed on f's
// transaction, and re-plans on a conflict.
//
// A table already pre-split far enough gets SkipCovered, so running the
// planner again on the file the plan produced, at the same now, does
// nothing. When the width has changed, the partitions already planned
// ahead are left as they are and only the tail is split at the new width.
//
// cfg's zero fields take their defaults; an invalid cfg gives an error
// wrapping ErrInvalidConfig. A nil file, a file without partitions, a last
// partition with a closed end or a zero target give ErrInvalidInput.
func PlanTable(f *metadata.File, stats []PartitionStats, target uint64, now int64, cfg Config) (Decision, bool, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return Decision{}, false, err
	}
	if err := checkInput(f, target); err != nil {
		return Decision{}, false, err
	}
	tail := f.Partitions[len(f.Partitions)-1]
	rate, known := EstimateRateOver(stats, now, cfg.RateWindow)
	d := Decision{
		PartitionID: tail.ID,
		Width:       tableWidth(rate, known, target, cfg),
		Rate:        rate,
		RateKnown:   known,
		Ahead:       countAhead(f.Partitions[:len(f.Partitions)-1], now),
	}
	d.Points, d.Skip = plan(tail, d.Ahead, now, d.Width, cfg)
	return d, d.Skip == SkipNone, nil
}

// tableWidth is Width for a known rate, else UnknownWidth clamped.
func tableWidth(rate float64, known bool, target uint64, cfg Config) time.Duration {
	if !known {
		return min(max(cfg.UnknownWidth, cfg.MinWidth), cfg.MaxWidth)
	}
	return Width(rate, target, cfg)
}

// checkInput refuses what no valid table has.
func checkInput(f *metadata.File, target uint64) error {
	switch {
	case f == nil:
		return fmt.Errorf("%w: no metadata file", ErrInvalidInput)
	case len(f.Partitions) == 0:
		return fmt.Errorf("%w: table %q has no partitions", ErrInvalidInput, f.Table)
	case f.Partitions[len(f.Partitions)-1].End != nil:
		return fmt.Errorf("%w: table %q: the last partition has a closed end", ErrInvalidInput, f.Table)
	case target == 0:
		return fmt.Errorf("%w: table %q: zero partition size target", ErrInvalidInput, f.Table)
	}
	return nil
}

// countAhead counts the partitions that begin at or after now.
func countAhead(parts []metadata.Partition, now int64) int {
	n := 0
	for i := range parts {
		if b := parts[i].Begin; b != nil && *b >= now {
			n++
		}
	}
	return n
}
