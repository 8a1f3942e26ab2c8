package replication

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/partition"
)

// TestDropReadyWithApplyInFlight races the production drop condition
// (Pusher.DropReady, the one the node's lifecycle passes to
// Store.DropReplicaIf) with an Apply that made its batch visible and
// released the apply lock but has not returned: it is held in the store's
// throttle, before its WAL sync, while the replica is unloaded and every
// target has confirmed the synced watermark. The drop must not happen
// then (rule 3); once the Apply returned, its row must reach the target
// before the replica can be dropped.
func TestDropReadyWithApplyInFlight(t *testing.T) {
	pid := uuid.New()
	var hold atomic.Bool
	entered := make(chan struct{})
	release := make(chan struct{})
	store := openStoreWith(t, partition.Options{MemTableSize: 4 << 20, CacheSize: 8 << 20, Throttle: func(int) {
		if hold.CompareAndSwap(true, false) {
			close(entered)
			<-release
		}
	}})
	src := addReplica(t, store, pid)
	dst := newReplica(t, pid)
	rec := &recorder{apply: map[uuid.UUID]Applier{dst.placement(): dst}}
	p := NewPusher(Config{Table: "metrics", Placement: src.placement(), Self: "s1", Log: src, Sender: rec})
	tg := replicaTarget("s2", dst.placement(), pid)
	p.SetView(1, view(tg))
	runPusher(t, p)

	mustApply(t, src, row("s1", "cpu", 1, 1, "v", 1))
	p.Notify()
	waitUntil(t, p, "the first row confirmed", p.Drained)

	// An acknowledged-to-be write, held after its batch became visible.
	hold.Store(true)
	type result struct {
		res partition.ApplyResult
		err error
	}
	applied := make(chan result, 1)
	go func() {
		res, err := src.Apply([]model.Row{row("s1", "cpu", 2, 2, "v", 2)})
		applied <- result{res, err}
	}()
	<-entered

	// The replica learns it is UNLOAD: it refuses writes from now on.
	src.Unload()
	p.SetView(2, metadata.Discovery{Status: metadata.StatusUnload, Targets: []metadata.Target{tg}})

	dropped, err := store.DropReplicaIf(src.placement(), p.DropReady)
	if err != nil {
		t.Fatalf("DropReplicaIf: %v", err)
	}
	close(release)
	got := <-applied
	if dropped {
		if got.err == nil {
			t.Fatalf("the replica was dropped while an Apply was in flight, and that Apply returned nil: an acknowledged row is lost (target holds %d rows)", len(scanAll(t, dst)))
		}
		t.Fatalf("the replica was dropped while an Apply was in flight (the Apply failed: %v)", got.err)
	}
	if got.err != nil {
		t.Fatalf("in-flight Apply failed though the replica was not dropped: %v", got.err)
	}

	// The row the Apply stored goes to the target before the drop.
	p.Notify()
	waitUntil(t, p, "the in-flight row confirmed", func() bool {
		ok, err := store.DropReplicaIf(src.placement(), p.DropReady)
		if err != nil {
			t.Fatalf("DropReplicaIf: %v", err)
		}
		return ok
	})
	if n := len(scanAll(t, dst)); n != 2 {
		t.Fatalf("target holds %d rows after the drop; want 2", n)
	}
	if _, err := src.Apply([]model.Row{row("s1", "cpu", 3, 3, "v", 3)}); !errors.Is(err, partition.ErrDropped) {
		t.Fatalf("Apply after the drop: %v; want ErrDropped", err)
	}
}
