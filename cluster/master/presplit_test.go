package master

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/model"
)

// TestPartitionSizesKeepTheLargest: the master asks every live server for
// its replicas' sizes with a key scan limited to the partitions that ended
// within the settle time, keeps the largest size of each partition over
// its replicas and over earlier passes (sealed rows shrink, and a closed
// partition is not scanned again), skips a server that does not answer,
// ignores replicas that are neither SERVE nor LOAD, and forgets the
// partitions no table lists.
func TestPartitionSizesKeepTheLargest(t *testing.T) {
	m, f := newFake(t, []string{"a", "b", "c"}, "a", "b")
	f.cfg.Smear.MaxDelay = model.Duration(20 * time.Second)
	sealed, grown, tail, gone := uuid.New(), uuid.New(), uuid.New(), uuid.New()
	f.file.Partitions = []metadata.Partition{{ID: sealed}, {ID: grown}, {ID: tail}}
	serve, unload := string(metadata.StatusServe), string(metadata.StatusUnload)
	f.replicas = map[string][]wire.ReplicaStatus{ // c is missing: its call fails
		"a": {{PartitionID: sealed, Status: serve, Bytes: 100}, {PartitionID: grown, Status: serve, Bytes: 500}},
		"b": {{PartitionID: grown, Status: string(metadata.StatusLoad), Bytes: 300}, {PartitionID: tail, Status: unload, Bytes: 9999}},
	}
	v, err := m.readView(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	known := map[uuid.UUID]uint64{sealed: 1000, grown: 50, gone: 77}
	now := time.Unix(5000, 0)
	got := m.partitionSizes(context.Background(), v, known, now)
	want := map[uuid.UUID]uint64{sealed: 1000, grown: 500}
	if len(got) != len(want) {
		t.Fatalf("sizes = %v; want %v", got, want)
	}
	for id, b := range want {
		if got[id] != b {
			t.Fatalf("sizes = %v; want %v", got, want)
		}
	}
	if len(f.sizeReqs) != 3 {
		t.Fatalf("%d size requests; want one per live server (3)", len(f.sizeReqs))
	}
	settle := 20*time.Second + presplitSettleMargin
	for _, req := range f.sizeReqs {
		if req.SizeScan != presplitSizeScan || req.SizeScanBefore != now.UnixNano() || req.SizeScanAfter != now.Add(-settle).UnixNano() {
			t.Fatalf("size request %+v; want a scan of the partitions that ended in (now-%v, now]", req, settle)
		}
	}
}
