package replication

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/partition"
)

// createIn creates a replica of [begin, end) of a table whose creation
// time is known, so that it shares the data space of the overlapping
// replicas already in s (partition's space.go).
func createIn(t *testing.T, s *partition.Store, pid uuid.UUID, begin, end *int64) *replicaLog {
	t.Helper()
	r, err := s.CreateReplica(partition.ReplicaInfo{Placement: uuid.New(), Table: "metrics", PartitionID: pid,
		Begin: begin, End: end, TableCreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatalf("CreateReplica: %v", err)
	}
	return &replicaLog{Replica: r, store: s, cursors: make(map[uuid.UUID]uint64)}
}

// TestLocalChildConfirmedWithoutPush is issue 16's item 3 seen from the
// parent's Pusher: a split child on the parent's server shares its rows,
// so its backfill and tail are confirmed up to the synced watermark
// without a push, while the child on another server gets its rows pushed;
// a joining placement beside its old one gets only its Complete signal.
func TestLocalChildConfirmedWithoutPush(t *testing.T) {
	local := openStore(t)
	pid, child := uuid.New(), uuid.New()
	parent := createIn(t, local, pid, nil, nil)
	for i := range 100 {
		mustApply(t, parent, row("s1", "cpu", int64(i), 1, "v", float64(i)))
	}
	mid := int64(50)
	localChild := createIn(t, local, child, nil, &mid)
	remoteChild := addReplica(t, openStore(t), child)
	rec := &recorder{apply: map[uuid.UUID]Applier{remoteChild.placement(): remoteChild.Replica}}
	p := newTestPusher(parent, rec, func(c *Config) { c.Placement = parent.placement() })
	split := func(server string, placement uuid.UUID) metadata.Target {
		return metadata.Target{ServerID: server, PlacementID: placement, PartitionID: child, End: &mid, Kind: metadata.TargetSplit}
	}
	p.SetView(1, view(split("s1", localChild.placement()), split("s2", remoteChild.placement())))
	runPusher(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.WaitConfirmedChild(ctx, parent.HighSeq(), child, []string{"s1", "s2"}, 2); err != nil {
		t.Fatal(err)
	}
	// Rows after the mark (the tail) reach the local child by sharing too.
	last := mustApply(t, parent, row("s1", "cpu", 10, 2, "w", 1)).LastSeq
	p.Notify()
	if err := p.WaitConfirmedChild(ctx, last, child, []string{"s1", "s2"}, 2); err != nil {
		t.Fatal(err)
	}
	for _, ps := range rec.all() {
		if ps.target.PlacementID == localChild.placement() {
			t.Fatalf("a push of %d rows went to the local child", ps.req.Count)
		}
	}
	if got, want := len(scanAll(t, localChild)), 50; got != want {
		t.Fatalf("the local child reads %d rows; want %d", got, want)
	}
	if got, want := len(scanAll(t, remoteChild)), 50; got != want {
		t.Fatalf("the remote child holds %d rows; want %d", got, want)
	}
	if p.Stats().SharedConfirms == 0 {
		t.Fatal("no shared confirmation counted")
	}

	// A joining placement of the parent's range beside it: only the
	// Complete signal is sent, with no rows.
	joiner := createIn(t, local, pid, nil, nil)
	j := metadata.Target{ServerID: "s1", PlacementID: joiner.placement(), PartitionID: pid, Kind: metadata.TargetJoining}
	p.SetView(2, view(j))
	deadline := time.Now().Add(30 * time.Second)
	for {
		var complete bool
		for _, ps := range rec.all() {
			if ps.target.PlacementID == joiner.placement() {
				if ps.req.Count != 0 {
					t.Fatalf("a push of %d rows went to the sharing joiner", ps.req.Count)
				}
				complete = complete || ps.req.Complete
			}
		}
		if complete {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the sharing joiner never got its Complete signal")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := parent.Confirmed(joiner.placement()); got != parent.SyncedSeq() {
		t.Fatalf("the joiner's cursor is %d; want the synced watermark %d", got, parent.SyncedSeq())
	}
}
