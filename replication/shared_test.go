package replication

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/model"
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

// parentOf100 creates in s a replica of partition pid over the whole time
// axis, sharing as createIn does, holding 100 rows at times 0 to 99.
func parentOf100(t *testing.T, s *partition.Store, pid uuid.UUID) *replicaLog {
	t.Helper()
	parent := createIn(t, s, pid, nil, nil)
	for i := range 100 {
		mustApply(t, parent, row("s1", "cpu", int64(i), 1, "v", float64(i)))
	}
	return parent
}

// TestLocalChildConfirmedWithoutPush is issue 16's item 3 seen from the
// parent's Pusher: a split child on the parent's server shares its rows,
// so its backfill and tail are confirmed up to the synced watermark
// without a push, while the child on another server gets its rows pushed;
// a joining placement beside its old one gets only its Complete signal.
func TestLocalChildConfirmedWithoutPush(t *testing.T) {
	local := openStore(t)
	pid, child := uuid.New(), uuid.New()
	parent := parentOf100(t, local, pid)
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

// TestLocalChildAheadOfRowsGetsThemPushed: a split child created beside
// its parent over a range the parent holds no row of (a pre-split child of
// a table's tail) starts a data space of its own, so rows the parent takes
// in that range afterwards (an insert routed by the old map) reach it as
// they reach a child on another server: by the parent's pushes, which the
// split's end waits for. Nothing the parent acknowledged is missing from
// the child once its target is confirmed.
func TestLocalChildAheadOfRowsGetsThemPushed(t *testing.T) {
	local := openStore(t)
	pid, child := uuid.New(), uuid.New()
	parent := parentOf100(t, local, pid)
	lo := int64(200)
	localChild := createIn(t, local, child, &lo, nil)
	if localChild.DataSpace() == parent.DataSpace() || parent.SharesData(localChild.placement()) {
		t.Fatal("a child ahead of every row of its parent shares the parent's space")
	}
	late := mustApply(t, parent, row("s1", "cpu", 250, 1, "v", 250), row("s1", "cpu", 150, 1, "v", 150)).LastSeq
	rec := &recorder{apply: map[uuid.UUID]Applier{localChild.placement(): localChild.Replica}}
	p := newTestPusher(parent, rec, func(c *Config) { c.Placement = parent.placement() })
	p.SetView(1, view(metadata.Target{ServerID: "s1", PlacementID: localChild.placement(), PartitionID: child, Begin: &lo, Kind: metadata.TargetSplit}))
	runPusher(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.WaitConfirmedChild(ctx, late, child, []string{"s1"}, 1); err != nil {
		t.Fatal(err)
	}
	rows := scanAll(t, localChild)
	if len(rows) != 1 || rows[0].Time != 250 {
		t.Fatalf("the child reads %v; want the one row at 250 the parent took after the child was made", rows)
	}
	if p.Stats().SharedConfirms != 0 {
		t.Fatal("a child in its own space was confirmed as sharing")
	}
}

// aliasFixture is a parent replica of 100 rows (times 0 to 99) whose
// Pusher has brought its peer on s2 (parentB) up to date, and the store
// of s2, where a split child will share parentB's rows.
type aliasFixture struct {
	pid, child uuid.UUID
	parent     *replicaLog
	remote     *partition.Store
	parentB    *replicaLog
	rec        *recorder
	p          *Pusher
	peer       metadata.Target
	ctx        context.Context
}

func newAliasFixture(t *testing.T) *aliasFixture {
	t.Helper()
	f := &aliasFixture{pid: uuid.New(), child: uuid.New()}
	f.parent = parentOf100(t, openStore(t), f.pid)
	f.remote = openStore(t)
	f.parentB = createIn(t, f.remote, f.pid, nil, nil)
	f.rec = &recorder{apply: map[uuid.UUID]Applier{f.parentB.placement(): f.parentB.Replica}}
	f.p = newTestPusher(f.parent, f.rec, func(c *Config) { c.Placement = f.parent.placement(); c.BatchRows = 10 })
	f.peer = replicaTarget("s2", f.parentB.placement(), f.pid)
	f.p.SetView(1, view(f.peer))
	runPusher(t, f.p)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	f.ctx = ctx
	if err := f.p.WaitConfirmed(ctx, f.parent.HighSeq(), []string{"s2"}, 1); err != nil {
		t.Fatal(err)
	}
	return f
}

// splitToChild creates on s2 the child of [-inf, 50), sharing parentB's
// rows, adds it to the parent's view as a split target and waits until
// it is confirmed up to the parent's high sequence.
func (f *aliasFixture) splitToChild(t *testing.T) *replicaLog {
	t.Helper()
	mid := int64(50)
	childB := createIn(t, f.remote, f.child, nil, &mid)
	f.rec.mu.Lock()
	f.rec.apply[childB.placement()] = childB.Replica
	f.rec.mu.Unlock()
	split := metadata.Target{ServerID: "s2", PlacementID: childB.placement(), PartitionID: f.child, End: &mid, Kind: metadata.TargetSplit}
	f.p.SetView(2, view(f.peer, split))
	if err := f.p.WaitConfirmedChild(f.ctx, f.parent.HighSeq(), f.child, []string{"s2"}, 1); err != nil {
		t.Fatal(err)
	}
	return childB
}

// pushedTo returns the rows of the delivered pushes to placement, and how
// many of them were row snapshots' rows.
func (s *recorder) pushedTo(placement uuid.UUID) (rows, snapshot int) {
	for _, ps := range s.all() {
		if ps.target.PlacementID == placement && ps.err == nil {
			rows += ps.req.Count
			if ps.req.Snapshot {
				snapshot += ps.req.Count
			}
		}
	}
	return rows, snapshot
}

// TestRemoteChildConfirmedByAlias is issue 16's item 3 seen from a parent
// replica on another server: the split child on s2 shares the rows of the
// parent replica there, which this Pusher already brought up to date, so
// the answer to an empty probe push names that replica and the child's
// cursor jumps to its cursor. The child receives none of the 50 rows of
// its range.
func TestRemoteChildConfirmedByAlias(t *testing.T) {
	f := newAliasFixture(t)
	childB := f.splitToChild(t)
	if pushed, _ := f.rec.pushedTo(childB.placement()); pushed != 0 {
		t.Fatalf("%d rows pushed to a child that shares a replica holding them all; want none", pushed)
	}
	if got, want := len(scanAll(t, childB)), 50; got != want {
		t.Fatalf("the child reads %d rows; want %d", got, want)
	}
	if f.p.Stats().AliasConfirms == 0 {
		t.Fatal("no alias confirmation counted")
	}

	// Rows written after the split reach the child through the replica it
	// shares: pushed to one of them, confirmed for both.
	last := mustApply(t, f.parent, row("s1", "cpu", 10, 2, "w", 1)).LastSeq
	f.p.Notify()
	if err := f.p.WaitConfirmedChild(f.ctx, last, f.child, []string{"s2"}, 1); err != nil {
		t.Fatal(err)
	}
	if got := scanAll(t, childB); len(got) != 50 || len(got[10].Fields) != 2 {
		t.Fatalf("the child reads %d rows, row 10 with %d fields; want 50 and 2", len(got), len(got[10].Fields))
	}
}

// TestAliasPassesRowSnapshotToTheLog: the parent's log is truncated, so
// the backfill of a split child on s2 starts as a row snapshot of the
// mark's snapshot. The answer to its first push (a probe) names the
// parent replica on s2 that the child shares, whose cursor here is behind
// the mark (its pushes fail since) but above the truncation point: the
// child's cursor moves there (alias), and the rest comes from the log,
// the changes since in the child's range, instead of a row snapshot of
// the child's whole range (50 rows more). The question is asked before a
// whole chunk of the snapshot is read: one row's read tells that there is
// something to ask about, and the answer makes the chunk unneeded.
func TestAliasPassesRowSnapshotToTheLog(t *testing.T) {
	f := newAliasFixture(t)
	f.parent.chunkReads = &chunkReads{}
	aliasTo := f.parent.HighSeq()
	f.rec.setFail(func(tg metadata.Target, _ wire.PushRequest) error {
		if tg.PlacementID == f.parentB.placement() {
			return errors.New("s2's parent replica unreachable")
		}
		return nil
	})
	for i := range 5 { // 5 changes in the child's range, 5 outside
		mustApply(t, f.parent, row("s1", "cpu", int64(i), 2, "w", 1), row("s1", "cpu", int64(60+i), 2, "w", 1))
	}
	drainMemory(t, f.parent)
	if err := f.parent.TruncateLog(aliasTo - 1); err != nil {
		t.Fatal(err)
	}
	childB := f.splitToChild(t)
	if pushed, snapshot := f.rec.pushedTo(childB.placement()); pushed != 5 || snapshot != 0 {
		t.Fatalf("the child got %d rows (%d of them from a row snapshot); want the 5 changes of its range since its sharer's cursor, none from a snapshot", pushed, snapshot)
	}
	rows := scanAll(t, childB)
	if len(rows) != 50 || len(rows[0].Fields) != 2 {
		t.Fatalf("the child reads %d rows, row 0 with %d fields; want 50 and 2", len(rows), len(rows[0].Fields))
	}
	if f.p.Stats().AliasConfirms == 0 {
		t.Fatal("no alias confirmation counted")
	}
	if looks, whole := f.parent.chunkReads.looks.Load(), f.parent.chunkReads.whole.Load(); looks == 0 || whole != 0 {
		t.Fatalf("the row snapshot was read %d times one row at a time and %d times a whole chunk; want looks only (the answer to the question made the chunk unneeded)", looks, whole)
	}
}

// TestInheritedRowsNotSnapshotted: a split child sharing its parent's rows
// has a log truncated at 1, the rows it held at its creation being in no
// entry. A target its parent serves (Config.Inherited) waits while the
// parent has not delivered them (InheritPending), then gets only the
// child's own rows, from sequence 2 (InheritHeld); a target no parent
// serves (InheritNone) gets a row snapshot of the whole range.
func TestInheritedRowsNotSnapshotted(t *testing.T) {
	store := openStore(t)
	pid, child := uuid.New(), uuid.New()
	parentOf100(t, store, pid) // the rows the child inherits
	mid := int64(50)
	c := createIn(t, store, child, nil, &mid)
	for i := range 5 {
		mustApply(t, c, row("s1", "cpu", int64(i), 2, "w", 1))
	}
	served, alone := uuid.New(), uuid.New()
	var state atomic.Int64 // the Inheritance answered for served
	state.Store(int64(InheritPending))
	var asked atomic.Int64 // the questions about served
	rec := &recorder{}
	p := newTestPusher(c, rec, func(cfg *Config) {
		cfg.Placement = c.placement()
		cfg.Tick = 20 * time.Millisecond // the waiting target asks again within one
		cfg.Inherited = func(target uuid.UUID) Inheritance {
			if target == served {
				asked.Add(1)
				return Inheritance(state.Load())
			}
			return InheritNone
		}
	})
	p.SetView(1, view(replicaTarget("s2", served, child), replicaTarget("s3", alone, child)))
	runPusher(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.WaitConfirmed(ctx, c.HighSeq(), []string{"s3"}, 1); err != nil {
		t.Fatal(err)
	}
	if got, _ := rec.pushedTo(alone); got != 50 {
		t.Fatalf("the target no parent serves got %d rows; want the 50 of the range", got)
	}
	// The waiting target was asked several times (so it stepped and
	// waited) and shows why it waits.
	deadline := time.Now().Add(30 * time.Second)
	for asked.Load() < 3 || !strings.Contains(statusOf(p, served).LastError, "inherited") {
		if time.Now().After(deadline) {
			t.Fatalf("asked %d times, status %+v", asked.Load(), statusOf(p, served))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got, _ := rec.pushedTo(served); got != 0 || c.Confirmed(served) != 0 {
		t.Fatalf("a target waiting for its parent got %d rows, cursor %d", got, c.Confirmed(served))
	}

	state.Store(int64(InheritHeld))
	p.Notify()
	if err := p.WaitConfirmed(ctx, c.HighSeq(), []string{"s2"}, 1); err != nil {
		t.Fatal(err)
	}
	if got, _ := rec.pushedTo(served); got != 5 {
		t.Fatalf("the target its parent served got %d rows; want the child's own 5", got)
	}
	if p.Stats().InheritedConfirms == 0 {
		t.Fatal("no inherited confirmation counted")
	}
}

// TestLoadingChildKeepsItsLog: a split child sharing its parent's rows
// (its log truncated at 1) keeps its log whole, values on, while it is
// LOAD, though its view has no target: once it serves, a sibling its
// parent serves gets the inherited rows from the parent and from the
// child only the rows pushed here while it loaded, read from the log. A
// log truncated while loading (as an RF 1 replica's is) leaves those rows
// below the truncation point, and the sibling would get a row snapshot of
// the child's whole range, its parent's 50 rows included.
func TestLoadingChildKeepsItsLog(t *testing.T) {
	store := openStore(t)
	pid, child := uuid.New(), uuid.New()
	parentOf100(t, store, pid)
	mid := int64(50)
	c := createIn(t, store, child, nil, &mid)
	if s := c.LogStart(); s != 1 {
		t.Fatalf("a child sharing its parent's rows starts its log at %d, want 1", s)
	}
	sibling := uuid.New()
	rec := &recorder{}
	p := newTestPusher(c, rec, func(cfg *Config) {
		cfg.Placement = c.placement()
		cfg.Tick = 5 * time.Millisecond
		cfg.TruncateMin = 1
		cfg.Inherited = func(target uuid.UUID) Inheritance {
			if target == sibling {
				return InheritHeld
			}
			return InheritNone
		}
	})
	runPusher(t, p)
	p.SetView(1, metadata.Discovery{Status: metadata.StatusLoad, Targets: []metadata.Target{}})
	if !c.LogValues() {
		t.Error("log values off while loading")
	}
	remoteParent := uuid.New()
	for i := range 10 {
		if _, err := c.ApplyFrom([]model.Row{row("s2", "cpu", int64(i), 2, "w", 1)}, remoteParent, 0); err != nil {
			t.Fatal(err)
		}
	}
	drainMemory(t, c)            // with a memory head, nothing else keeps the log
	waitTruncateChecks(t, p, 10) // a truncation would have happened
	if s := c.LogStart(); s != 1 {
		t.Errorf("the loading child's log truncated to %d", s)
	}

	p.SetView(2, view(replicaTarget("s2", sibling, child)))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.WaitConfirmed(ctx, c.HighSeq(), []string{"s2"}, 1); err != nil {
		t.Fatal(err)
	}
	if rows, snapshot := rec.pushedTo(sibling); rows != 10 || snapshot != 0 {
		t.Fatalf("the sibling got %d rows, %d of them by row snapshot; want the 10 pushed here while loading", rows, snapshot)
	}
	if p.Stats().InheritedConfirms == 0 {
		t.Fatal("no inherited confirmation counted")
	}
}

// statusOf returns p's status towards placement (zero if none).
func statusOf(p *Pusher, placement uuid.UUID) wire.TargetStatus {
	for _, st := range p.Status() {
		if st.Placement == placement {
			return st
		}
	}
	return wire.TargetStatus{}
}

// TestDelivered: a Pusher answers for a target of its view whether it
// confirmed its whole log (what a sharing replica's Config.Inherited
// asks of the replica it inherited its rows from), and "not served" for
// any other placement.
func TestDelivered(t *testing.T) {
	log := newFakeLog()
	for i := range 10 {
		log.add(row("s1", "cpu", int64(i), 1, "v", float64(i)))
	}
	rec := &recorder{}
	p := newTestPusher(log, rec, nil)
	pid, target := uuid.New(), uuid.New()
	if served, _ := p.Delivered(target); served {
		t.Fatal("a placement outside the view is served")
	}
	p.SetView(1, view(replicaTarget("s2", target, pid)))
	if served, all := p.Delivered(target); !served || all {
		t.Fatalf("before any push: served %v, all %v; want served, not all", served, all)
	}
	runPusher(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.WaitConfirmed(ctx, log.HighSeq(), []string{"s2"}, 1); err != nil {
		t.Fatal(err)
	}
	if served, all := p.Delivered(target); !served || !all {
		t.Fatalf("after the whole log was confirmed: served %v, all %v", served, all)
	}
	log.add(row("s1", "cpu", 99, 1, "v", 1))
	if _, all := p.Delivered(target); all {
		t.Fatal("a row not confirmed yet counts as delivered")
	}
}

// TestEmptyCatchUpNeedsNoSlot: the server's one catch-up slot is held by a
// bulk copy (a split child's backfill whose push waits for its answer). A
// replica sharing its parent's rows over a range that holds none (a
// pre-split child of the future) owes its target a row snapshot of that
// empty range: one read of one row tells there is nothing to copy, and
// the target is confirmed without waiting for the slot. Before, every
// such target queued behind the bulk copies: a pre-split of an empty
// tail took 61 s in a split storm, and "now" outran it.
func TestEmptyCatchUpNeedsNoSlot(t *testing.T) {
	store := openStore(t)
	pid := uuid.New()
	parent := parentOf100(t, store, pid)
	slots := make(chan struct{}, 1)
	var blocking atomic.Bool
	answer := make(chan struct{})
	defer close(answer)
	mid := int64(50)
	child := uuid.New()
	busy := metadata.Target{ServerID: "s2", PlacementID: uuid.New(), PartitionID: child, End: &mid, Kind: metadata.TargetSplit}
	rec := &recorder{fail: func(to metadata.Target, req wire.PushRequest) error {
		if to.PlacementID == busy.PlacementID && req.Count > 0 {
			blocking.Store(true)
			<-answer // the bulk copy's push holds the slot
		}
		return nil
	}}
	bulk := newTestPusher(parent, rec, func(c *Config) {
		c.Placement, c.CatchUpSlots, c.CatchUpBatchRows = parent.placement(), slots, 10
	})
	bulk.SetView(1, view(busy))
	runPusher(t, bulk)
	pollUntil(t, "the bulk copy holding the slot", func() bool { return blocking.Load() && len(slots) == 1 })

	// A row past the range keeps the range's replica in the parent's
	// space (a range the space holds no row at or after would start its
	// own: TestLocalChildAheadOfRowsGetsThemPushed).
	mustApply(t, parent, row("s1", "cpu", 400, 1, "v", 400))
	lo, hi := int64(200), int64(300)
	tail := createIn(t, store, uuid.New(), &lo, &hi) // shares the parent's rows: log truncated at 1, none in its range
	if tail.LogStart() != 1 {
		t.Fatalf("the sharing replica's log starts at %d, want 1", tail.LogStart())
	}
	sibling := replicaTarget("s3", uuid.New(), tail.Info().PartitionID)
	p := newTestPusher(tail, rec, func(c *Config) { c.Placement, c.CatchUpSlots = tail.placement(), slots })
	p.SetView(1, view(sibling))
	runPusher(t, p)
	pollUntil(t, "the empty range's target confirmed while the slot is held", func() bool {
		return statusOf(p, sibling.PlacementID).Confirmed >= 1
	})
	if n := len(rec.all()); n == 0 {
		t.Fatal("no push recorded at all")
	}
	for _, ps := range rec.all() {
		if ps.target.PlacementID == sibling.PlacementID && ps.req.Count > 0 {
			t.Fatalf("%d rows pushed to the empty range's target", ps.req.Count)
		}
	}
}
