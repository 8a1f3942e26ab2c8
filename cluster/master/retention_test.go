package master

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/metadata"
)

// TestRetentionTick: a tick drops the partitions that end before now -
// retention, in one DROP_PARTITIONS; a table without retention, or
// nothing expired, commits nothing.
func TestRetentionTick(t *testing.T) {
	m, f := newFake(t, []string{"a"}, "a")
	now := time.Unix(100_000, 0)
	b1, b2 := now.Add(-3*time.Hour).UnixNano(), now.Add(-30*time.Minute).UnixNano()
	ids := []uuid.UUID{uuid.New(), uuid.New(), uuid.New()}
	f.file.Partitions = []metadata.Partition{
		{ID: ids[0], End: &b1, Servers: placements("a")},
		{ID: ids[1], Begin: &b1, End: &b2, Servers: placements("a")},
		{ID: ids[2], Begin: &b2, Servers: placements("a")},
	}
	st := &masterState{absent: map[string]time.Time{}, noMajority: map[uuid.UUID]time.Time{}}
	tick := func() {
		t.Helper()
		f.ops = nil
		if err := m.tick(context.Background(), st, now); err != nil {
			t.Fatal(err)
		}
	}
	tick()
	if len(f.ops) != 0 {
		t.Fatalf("retention 0 (keep forever): %+v", f.ops)
	}
	f.cfg.Retention = metadata.Duration(4 * time.Hour)
	tick()
	if len(f.ops) != 0 {
		t.Fatalf("nothing older than 4h: %+v", f.ops)
	}
	f.cfg.Retention = metadata.Duration(time.Hour)
	tick()
	if len(f.ops) != 1 || f.ops[0].Type != metadata.OpDropPartitions ||
		len(f.ops[0].DropPartitions.PartitionIDs) != 1 || f.ops[0].DropPartitions.PartitionIDs[0] != ids[0] ||
		f.ops[0].DropPartitions.Before != now.Add(-time.Hour).UnixNano() {
		t.Fatalf("retention 1h: %+v, want DROP_PARTITIONS of the first partition before now-1h", f.ops)
	}
	f.cfg.Retention = metadata.Duration(time.Minute)
	tick()
	if len(f.ops) != 1 || len(f.ops[0].DropPartitions.PartitionIDs) != 2 {
		t.Fatalf("retention 1m: %+v, want the two ended partitions dropped", f.ops)
	}
}
