package replica

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/partition"
)

// TestDroppedReplicaStaysForgotten: a discovery pass that listed a replica
// before its drop must not record its status nor start its pusher after
// the drop forgot them (seen in node.TestSplitUnderLoad: a split parent
// dropped while a METADATA install ran stayed UNLOAD for ever, its new
// pusher failing on the dropped replica, and the splits never settled).
func TestDroppedReplicaStaysForgotten(t *testing.T) {
	store, err := partition.Open(partition.Options{Dir: filepath.Join(t.TempDir(), "pebble")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	info := partition.ReplicaInfo{Placement: uuid.New(), Table: "t", PartitionID: uuid.New(), CreatedAt: time.Now()}
	rep, err := store.CreateReplica(info)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{store: store}
	s.mu.replicas = map[uuid.UUID]Status{}
	s.mu.runtimes = map[uuid.UUID]*replicaRuntime{}
	st := Status{Table: "t", Placement: info.Placement, PartitionID: info.PartitionID, TxnSeq: 7,
		Discovery: metadata.Discovery{Status: metadata.StatusUnload}}

	// rep is the replica as the discovery pass listed it, before the drop.
	if err := store.DropReplica(info.Placement); err != nil {
		t.Fatal(err)
	}
	if !rep.Dropped() {
		t.Fatal("Dropped() false after DropReplica")
	}
	if _, _, ok := s.recordStatus(rep, st); ok {
		t.Fatal("the status of a dropped replica was recorded")
	}
	if _, had := s.mu.replicas[info.Placement]; had {
		t.Fatal("a dropped replica has a status")
	}
	if rt := s.ensureRuntime(rep); rt != nil {
		t.Fatal("a pusher was started for a dropped replica")
	}
	if len(s.mu.runtimes) != 0 {
		t.Fatalf("%d runtimes after ensureRuntime of a dropped replica", len(s.mu.runtimes))
	}
	s.applyDiscovery(rep, st) // must not start one either, nor panic
	if len(s.mu.runtimes) != 0 {
		t.Fatal("applyDiscovery started a pusher for a dropped replica")
	}
}
