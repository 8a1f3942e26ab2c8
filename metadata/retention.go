package metadata

import "github.com/google/uuid"

// PlanRetention is retention's pure decider: the DROP_PARTITIONS that
// deletes the oldest partitions of f lying wholly before the cutoff
// (now - retention, integer ns), or false when there is none. It takes the
// longest prefix of partitions that each end at or before cutoff, stops at
// the first splitting one (SPLIT_FINALIZE or SPLIT_ABORT comes first), and
// always leaves one partition. The op's effect on discovery (the dropped
// replicas are DROP, never UNLOAD with targets) is File.DroppedBefore's.
func PlanRetention(f *File, cutoff int64) (DropPartitionsOp, bool) {
	var ids []uuid.UUID
	for i := 0; i < len(f.Partitions)-1; i++ {
		p := &f.Partitions[i]
		if p.End == nil || *p.End > cutoff || p.Split != nil {
			break
		}
		ids = append(ids, p.ID)
	}
	if len(ids) == 0 {
		return DropPartitionsOp{}, false
	}
	return DropPartitionsOp{PartitionIDs: ids, Before: cutoff}, true
}
