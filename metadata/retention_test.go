package metadata

import (
	"reflect"
	"testing"

	"github.com/google/uuid"
)

func TestPlanRetention(t *testing.T) {
	four, sp := fourPartitions(), splitting()
	ids := func(names ...string) []uuid.UUID {
		var out []uuid.UUID
		for _, n := range names {
			out = append(out, testID(n))
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		f      *File
		cutoff int64
		want   []uuid.UUID // nil: nothing to drop
	}{
		{"nothing ends before the cutoff", four, -1, nil},
		{"the oldest ends at the cutoff", four, 0, ids("p0")},
		{"a partition across the cutoff stays", four, 150, ids("p0", "p1")},
		{"the last partition always stays", four, 1 << 40, ids("p0", "p1", "p2")},
		{"a splitting partition stops the prefix", sp, 1 << 40, ids("p0")},
		{"a single partition", single(), 1 << 40, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op, ok := PlanRetention(tc.f, tc.cutoff)
			if ok != (tc.want != nil) || !reflect.DeepEqual(op.PartitionIDs, tc.want) {
				t.Fatalf("got %v %v, want %v", ok, op.PartitionIDs, tc.want)
			}
			if !ok {
				return
			}
			// The plan is a valid op, and after it every dropped replica
			// is DROP with no target: its rows go nowhere.
			next := mustApply(t, tc.f, Op{Type: OpDropPartitions, DropPartitions: &op})
			for i := range len(op.PartitionIDs) {
				p := tc.f.Partitions[i]
				for _, pl := range p.Servers {
					d := Discover(next, pl.ServerID, ReplicaRef{PartitionID: p.ID, PlacementID: pl.PlacementID, Begin: p.Begin, End: p.End})
					if d.Status != StatusDrop || len(d.Targets) != 0 {
						t.Fatalf("dropped replica %s/%s: %s", p.ID, pl.ServerID, jsonOf(d))
					}
				}
			}
		})
	}
}
