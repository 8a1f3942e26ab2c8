package metadata

import (
	"fmt"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/model"
)

// DropPartitionsOp drops whole partitions that retention has expired
// (DESIGN.md section 9), in one transaction. Only the oldest partitions can
// go: PartitionIDs must be exactly the first len(PartitionIDs) partitions of
// the map (in any order), each ending at or before Before, none splitting,
// and at least one partition must remain. The first remaining partition's
// begin becomes open, so the map still covers the whole axis; its range
// grows, and no range ever shrinks. Its former begin becomes the file's
// retention horizon (File.DroppedBefore, never lowered): partition
// discovery answers DROP, not UNLOAD, for the dropped replicas, and no push
// carries a row below the horizon, so expired rows are deleted, never
// pushed into the first remaining partition (docs/master.md, Retention).
type DropPartitionsOp struct {
	// PartitionIDs are the partitions to drop.
	PartitionIDs []uuid.UUID `json:"partition_ids"`
	// Before is the retention cutoff (integer ns): every dropped partition
	// must end at or before it.
	Before int64 `json:"before"`
}

func applyDropPartitions(next *File, op *DropPartitionsOp) (*File, error) {
	n := len(op.PartitionIDs)
	switch {
	case n == 0:
		return nil, fmt.Errorf("no partition ids")
	case n >= len(next.Partitions):
		return nil, fmt.Errorf("would drop %d of %d partitions; at least one must remain", n, len(next.Partitions))
	}
	drop := make(map[uuid.UUID]bool, n)
	for _, id := range op.PartitionIDs {
		if drop[id] {
			return nil, fmt.Errorf("partition %s listed twice", id)
		}
		if _, err := currentPartition(next, id); err != nil {
			return nil, err
		}
		drop[id] = true
	}
	for i := range n {
		if err := checkDroppable(&next.Partitions[i], drop, op.Before); err != nil {
			return nil, err
		}
	}
	next.Partitions = next.Partitions[n:]
	first := &next.Partitions[0]
	if next.DroppedBefore == nil || *first.Begin > *next.DroppedBefore {
		next.DroppedBefore = model.CloneBound(first.Begin)
	}
	first.Begin = nil
	if first.Split != nil {
		// The first child tiles from the parent's begin, so it grows too.
		first.Split.Children[0].Begin = nil
	}
	return next, nil
}

// checkDroppable checks one of the oldest partitions: the op names it, it
// ends at or before the cutoff, and it is not splitting.
func checkDroppable(p *Partition, drop map[uuid.UUID]bool, before int64) error {
	switch {
	case !drop[p.ID]:
		return fmt.Errorf("partition %s %s is older than a partition to drop but not listed; "+
			"only a prefix of the oldest partitions can be dropped", p.ID, fmtRange(p.Begin, p.End))
	case p.End == nil || *p.End > before:
		return fmt.Errorf("partition %s %s does not end at or before the cutoff %d", p.ID, fmtRange(p.Begin, p.End), before)
	case p.Split != nil:
		return fmt.Errorf("partition %s is splitting; it cannot be dropped before SPLIT_FINALIZE or SPLIT_ABORT", p.ID)
	}
	return nil
}
