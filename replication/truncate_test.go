package replication

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/partition"
)

// Tests of log truncation (issue 16): a target whose cursor is below the
// truncation point gets a row snapshot, and the Pusher truncates what
// every target confirmed.

// fillForSnapshot writes n rows over 7 series, overwrites some, writes a
// tombstone, and returns the rows src holds. They end in pebble's head,
// out of the memory head (drainMemory), so that the log may be truncated
// past them.
func fillForSnapshot(t *testing.T, src *replicaLog, n int) []model.Row {
	t.Helper()
	for i := 0; i < n; i += 10 {
		var rows []model.Row
		for j := i; j < i+10; j++ {
			rows = append(rows, row("s1", fmt.Sprintf("cpu,host=h%d", j%7), int64(j), 1, "v", float64(j)))
		}
		mustApply(t, src, rows...)
	}
	mustApply(t, src, row("s1", "cpu,host=h1", 1, 2, "v", -1)) // an overwrite
	mustApply(t, src, model.Row{Time: 2, Series: "cpu,host=h2", Fields: []model.Field{
		{Name: "v", Value: model.Deleted(), Version: model.Version{Wall: 3, Node: model.NodeID("s1")}}}})
	drainMemory(t, src)
	return scanAll(t, src)
}

// deliveries counts, per row (series@time), the rows delivered by the
// successful pushes of rec to target.
func deliveries(rec *recorder, target uuid.UUID) map[string]int {
	out := map[string]int{}
	for _, ps := range rec.all() {
		if ps.err != nil || ps.req.ToPlacement != target {
			continue
		}
		for _, r := range ps.rows {
			out[fmt.Sprintf("%s@%d", r.Series, r.Time)]++
		}
	}
	return out
}

// TestTargetBelowTruncationGetsRowSnapshot: a target whose cursor is below
// the source's truncation point gets every row the source holds exactly
// once, through a row snapshot in several batches; its cursor claims the
// snapshot's sequence only with the last batch; rows written after follow
// through the log.
func TestTargetBelowTruncationGetsRowSnapshot(t *testing.T) {
	// Rows: batches of BatchRows rows, merged by the receiver; chunks:
	// batches of about MaxBatchBytes, ingested as sstables.
	for _, mode := range []string{"rows", "chunks"} {
		t.Run(mode, func(t *testing.T) {
			pid := uuid.New()
			src := newReplica(t, pid)
			want := fillForSnapshot(t, src, 200)
			high := src.SyncedSeq()
			if err := src.TruncateLog(high); err != nil {
				t.Fatal(err)
			}
			dst := newReplica(t, pid)
			rec := &recorder{apply: map[uuid.UUID]Applier{dst.placement(): dst}}
			var early atomic.Bool
			delivered := 0
			rec.onPush = func(ps recordedPush) {
				// Before the last batch of the snapshot, the cursor stays at 0.
				if ps.err == nil {
					delivered += len(ps.rows)
					if delivered < len(want)+1 && src.Confirmed(dst.placement()) != 0 {
						early.Store(true)
					}
				}
			}
			cfg := Config{Table: "metrics", Placement: src.placement(), Self: "s1", Log: src, Sender: rec, KeepLog: true}
			if mode == "rows" {
				cfg.BatchRows, cfg.RowSnapshots = 7, true
			} else {
				cfg.MaxBatchBytes = 300
			}
			p := NewPusher(cfg)
			p.SetView(1, view(replicaTarget("s2", dst.placement(), pid)))
			runPusher(t, p)
			waitUntil(t, p, "the target confirmed the snapshot", p.Drained)
			if early.Load() {
				t.Fatal("the cursor moved before the row snapshot's last batch")
			}
			if c := src.Confirmed(dst.placement()); c != high {
				t.Fatalf("cursor %d after the row snapshot, want its sequence %d", c, high)
			}
			if err := sameRows(scanAll(t, dst), want); err != nil {
				t.Fatalf("target after the row snapshot: %v", err)
			}
			got := deliveries(rec, dst.placement())
			if len(got) != len(want)+1 { // the tombstoned row is held (and pushed) but not scanned
				t.Fatalf("%d distinct rows delivered, want %d", len(got), len(want)+1)
			}
			for k, n := range got {
				if n != 1 {
					t.Fatalf("row %s delivered %d times, want once", k, n)
				}
			}
			if pushes := len(rec.all()); pushes < 200/7 {
				t.Fatalf("%d pushes: the snapshot was not sent in small batches", pushes)
			}
			ingested, merged := dst.store.ChunkStats()
			if mode == "chunks" && (ingested < 200/7 || merged != 0) || mode == "rows" && ingested+merged != 0 {
				t.Fatalf("%s: chunks ingested %d, merged %d", mode, ingested, merged)
			}
			// Rows written after the snapshot come through the log.
			mustApply(t, src, row("s1", "after", 1000, 1, "v", 1))
			p.Notify()
			waitUntil(t, p, "the new row confirmed", p.Drained)
			if !holds(scanAll(t, dst), "after", 1000) {
				t.Fatal("a row written after the snapshot did not reach the target")
			}
		})
	}
}

// TestRowSnapshotResumesAfterFailure: a row snapshot interrupted by failed
// pushes resumes with the batch that failed (every row is delivered once,
// none restarts from the first row), and the cursor never claims it
// before its last batch got through; in the end the target holds every
// row.
func TestRowSnapshotResumesAfterFailure(t *testing.T) {
	pid := uuid.New()
	src := newReplica(t, pid)
	want := fillForSnapshot(t, src, 100)
	if err := src.TruncateLog(src.SyncedSeq()); err != nil {
		t.Fatal(err)
	}
	dst := newReplica(t, pid)
	rec := &recorder{apply: map[uuid.UUID]Applier{dst.placement(): dst}}
	var n atomic.Int64
	var early atomic.Bool
	rec.fail = func(_ metadata.Target, req wire.PushRequest) error {
		if k := n.Add(1); k == 5 || k == 6 || k == 9 { // failures mid-snapshot: it resumes
			return errDown
		}
		if req.Count == 9 && src.Confirmed(dst.placement()) != 0 {
			early.Store(true) // a full batch, so not the last one
		}
		return nil
	}
	p := NewPusher(Config{Table: "metrics", Placement: src.placement(), Self: "s1", Log: src, Sender: rec, BatchRows: 9,
		RetryMin: time.Millisecond, RetryMax: time.Millisecond, KeepLog: true})
	p.SetView(1, view(replicaTarget("s2", dst.placement(), pid)))
	runPusher(t, p)
	waitUntil(t, p, "the target confirmed the snapshot", p.Drained)
	if err := sameRows(scanAll(t, dst), want); err != nil {
		t.Fatalf("target after the interrupted row snapshot: %v", err)
	}
	if early.Load() {
		t.Fatal("the cursor moved before the row snapshot's last batch")
	}
	if c := src.Confirmed(dst.placement()); c != src.SyncedSeq() {
		t.Fatalf("cursor %d after the row snapshot, want %d", c, src.SyncedSeq())
	}
	// Every row was delivered once: no batch delivered before a failure
	// was sent again.
	got := deliveries(rec, dst.placement())
	if len(got) != len(want)+1 { // the tombstoned row is held (and pushed) but not scanned
		t.Fatalf("%d distinct rows delivered, want %d", len(got), len(want)+1)
	}
	for k, c := range got {
		if c != 1 {
			t.Fatalf("row %s delivered %d times: the snapshot restarted", k, c)
		}
	}
}

// TestJoinAfterTruncationGetsRowSnapshot: a joiner whose mark is taken
// after the log was truncated reads no log below the truncation point: it
// gets the rows of the mark's snapshot, is told Complete only with the
// last of them, and then holds every row held at the mark.
func TestJoinAfterTruncationGetsRowSnapshot(t *testing.T) {
	pid := uuid.New()
	src := newReplica(t, pid)
	want := fillForSnapshot(t, src, 60)
	if err := src.TruncateLog(src.SyncedSeq()); err != nil {
		t.Fatal(err)
	}
	joiner := newReplica(t, pid)
	rec := &recorder{apply: map[uuid.UUID]Applier{joiner.placement(): joiner}}
	completed := make(chan struct{})
	var once atomic.Bool
	var early atomic.Bool
	rec.onPush = func(ps recordedPush) {
		if ps.err != nil || !ps.req.Complete || !once.CompareAndSwap(false, true) {
			return
		}
		if err := sameRows(scanAll(t, joiner), want); err != nil {
			early.Store(true)
		}
		close(completed)
	}
	p := NewPusher(Config{Table: "metrics", Placement: src.placement(), Self: "s1", Log: src, Sender: rec, BatchRows: 8, KeepLog: true})
	tg := metadata.Target{ServerID: "s9", PlacementID: joiner.placement(), PartitionID: pid, Kind: metadata.TargetJoining}
	p.SetView(1, view(tg))
	mustApply(t, src, row("s1", "cpu,host=h1", 1, 9, "v", 9)) // after the mark
	runPusher(t, p)
	select {
	case <-completed:
	case <-time.After(2 * time.Minute): // a hang guard, not a speed assertion
		t.Fatalf("the joiner never got Complete; status %+v", p.Status())
	}
	if early.Load() {
		t.Fatal("the joiner was told Complete before it held every row held at the mark")
	}
	waitUntil(t, p, "the joiner caught up", p.Drained)
	if err := sameRows(scanAll(t, joiner), scanAll(t, src)); err != nil {
		t.Fatalf("joiner differs from the source: %v", err)
	}
}

// TestSplitAfterTruncationGetsRowSnapshot: a split child whose mark is
// taken after the truncation gets, from the mark's row snapshot, exactly
// the rows of its range, and is reported past its mark.
func TestSplitAfterTruncationGetsRowSnapshot(t *testing.T) {
	src := newReplica(t, uuid.New())
	all := fillForSnapshot(t, src, 100)
	if err := src.TruncateLog(src.SyncedSeq()); err != nil {
		t.Fatal(err)
	}
	child := newReplica(t, uuid.New())
	rec := &recorder{apply: map[uuid.UUID]Applier{child.placement(): child}}
	p := NewPusher(Config{Table: "metrics", Placement: src.placement(), Self: "s1", Log: src, Sender: rec, BatchRows: 6, KeepLog: true})
	begin := int64(50)
	tg := metadata.Target{ServerID: "s2", PlacementID: child.placement(), PartitionID: uuid.New(), Kind: metadata.TargetSplit, Begin: &begin}
	p.SetView(1, view(tg))
	runPusher(t, p)
	waitUntil(t, p, "the child past its mark", func() bool {
		st := p.Status()
		return len(st) == 1 && st[0].MarkReached
	})
	var want []model.Row
	for _, r := range all {
		if r.Time >= begin {
			want = append(want, r)
		}
	}
	if err := sameRows(scanAll(t, child), want); err != nil {
		t.Fatalf("split child after the row snapshot: %v", err)
	}
}

// TestPusherTruncatesConfirmedLog: the Pusher truncates the log up to the
// lowest cursor of its targets, and no further; with KeepLog, or fewer
// entries to delete than TruncateMin, it does not.
func TestPusherTruncatesConfirmedLog(t *testing.T) {
	pid := uuid.New()
	src := newReplica(t, pid)
	fillForSnapshot(t, src, 50)
	a, b := newReplica(t, pid), newReplica(t, pid)
	rec := &recorder{apply: map[uuid.UUID]Applier{a.placement(): a, b.placement(): b}}
	var bDown atomic.Bool
	bDown.Store(true)
	failPushesTo(rec, b.placement(), &bDown)
	p := NewPusher(Config{Table: "metrics", Placement: src.placement(), Self: "s1", Log: src, Sender: rec,
		RetryMin: time.Millisecond, RetryMax: 5 * time.Millisecond, Tick: 5 * time.Millisecond, TruncateMin: 1})
	p.SetView(1, view(replicaTarget("s2", a.placement(), pid), replicaTarget("s3", b.placement(), pid)))
	runPusher(t, p)
	high := src.SyncedSeq()
	waitUntil(t, p, "a confirmed", func() bool { return src.Confirmed(a.placement()) == high })
	waitTruncateChecks(t, p, 10) // a truncation would have happened
	if s := src.LogStart(); s != 0 {
		t.Fatalf("log truncated to %d while b confirmed nothing", s)
	}
	bDown.Store(false)
	p.RetryNow()
	pollUntil(t, "the log truncated to what both confirmed", func() bool { return src.LogStart() == high-1 }) // the last entry stays
	if _, err := src.ReadLog(0, 0); !errors.Is(err, partition.ErrLogTruncated) {
		t.Fatalf("ReadLog from 0 of a truncated log: %v", err)
	}
	if err := sameRows(scanAll(t, b), scanAll(t, src)); err != nil {
		t.Fatalf("b: %v", err)
	}

	keep := newReplica(t, pid)
	fillForSnapshot(t, keep, 20)
	c := newReplica(t, pid)
	rec2 := &recorder{apply: map[uuid.UUID]Applier{c.placement(): c}}
	p2 := NewPusher(Config{Table: "metrics", Placement: keep.placement(), Self: "s1", Log: keep, Sender: rec2, Tick: 5 * time.Millisecond, KeepLog: true, TruncateMin: 1})
	p2.SetView(1, view(replicaTarget("s2", c.placement(), pid)))
	runPusher(t, p2)
	waitUntil(t, p2, "c confirmed", p2.Drained)
	waitTruncateChecks(t, p2, 10) // a truncation would have happened
	if s := keep.LogStart(); s != 0 {
		t.Fatalf("KeepLog: log truncated to %d", s)
	}

	// Fewer confirmed entries than TruncateMin: not truncated yet.
	few := newReplica(t, pid)
	fillForSnapshot(t, few, 20)
	d := newReplica(t, pid)
	rec3 := &recorder{apply: map[uuid.UUID]Applier{d.placement(): d}}
	p3 := NewPusher(Config{Table: "metrics", Placement: few.placement(), Self: "s1", Log: few, Sender: rec3, Tick: 5 * time.Millisecond, TruncateMin: 1000})
	p3.SetView(1, view(replicaTarget("s2", d.placement(), pid)))
	runPusher(t, p3)
	waitUntil(t, p3, "d confirmed", p3.Drained)
	waitTruncateChecks(t, p3, 10) // a truncation would have happened
	if s := few.LogStart(); s != 0 {
		t.Fatalf("log of %d entries truncated to %d with TruncateMin 1000", few.HighSeq(), s)
	}
}

// failPushesTo makes rec fail every push to placement while down holds
// (nil: always).
func failPushesTo(rec *recorder, placement uuid.UUID, down *atomic.Bool) {
	rec.setFail(func(tg metadata.Target, _ wire.PushRequest) error {
		if tg.PlacementID == placement && (down == nil || down.Load()) {
			return errDown
		}
		return nil
	})
}

// waitTruncateChecks waits until p's Run has made n more truncation
// checks (one per Tick), so that a check that the log was not truncated
// does not pass merely because no Tick came; the deadline is a hang
// guard.
func waitTruncateChecks(t *testing.T, p *Pusher, n int64) {
	t.Helper()
	target := p.truncateChecks.Load() + n
	pollUntil(t, fmt.Sprintf("%d truncation checks", n), func() bool { return p.truncateChecks.Load() >= target })
}

// pollUntil polls cond until it holds (truncation wakes no waiter); the
// deadline is a hang guard, not a speed assertion.
func pollUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestPusherWithoutTargetsKeepsNoLog: before its first view a Pusher
// neither truncates nor turns the log values off (a restart must not
// force row snapshots on targets not installed yet); a view with no
// target turns them off (Apply writes the short entries) and truncates up
// to the synced watermark; a target added later turns them back on and
// gets every row through a row snapshot.
func TestPusherWithoutTargetsKeepsNoLog(t *testing.T) {
	pid := uuid.New()
	src := newReplica(t, pid)
	fillForSnapshot(t, src, 50)
	p := NewPusher(Config{Table: "metrics", Placement: src.placement(), Self: "s1", Log: src, Sender: &recorder{},
		Tick: 5 * time.Millisecond, TruncateMin: 1})
	runPusher(t, p)
	waitTruncateChecks(t, p, 10) // a truncation would have happened
	if s := src.LogStart(); s != 0 {
		t.Fatalf("log truncated to %d before the first view", s)
	}
	if !src.LogValues() {
		t.Fatal("log values off before the first view")
	}
	p.SetView(1, view())
	if src.LogValues() {
		t.Fatal("log values on with no target")
	}
	mustApply(t, src, row("s1", "idle", 500, 1, "v", 1))
	drainMemory(t, src)
	pollUntil(t, "the log truncated with no target", func() bool { return src.LogStart() > 0 })
	if s, h := src.LogStart(), src.HighSeq(); s >= h {
		t.Fatalf("log truncated to %d, high sequence %d: the last entry must stay", s, h)
	}

	dst := newReplica(t, pid)
	rec := &recorder{apply: map[uuid.UUID]Applier{dst.placement(): dst}}
	p2 := NewPusher(Config{Table: "metrics", Placement: src.placement(), Self: "s1", Log: src, Sender: rec, BatchRows: 7})
	p2.SetView(1, view(replicaTarget("s2", dst.placement(), pid)))
	if !src.LogValues() {
		t.Fatal("log values off with a target")
	}
	runPusher(t, p2)
	waitUntil(t, p2, "the target confirmed", p2.Drained)
	if err := sameRows(scanAll(t, dst), scanAll(t, src)); err != nil {
		t.Fatalf("target: %v", err)
	}
}

// TestTargetAfterWritesNobodyRead: while a replica has no target its
// Applies keep only their last change's entry and raise the truncation
// point below it (partition.Replica.SetLogValues(false)); a target added
// later reads from below the point, takes a row snapshot and ends with
// every row. The pusher without targets keeps its log (KeepLog), so only
// the Applies' own points stand between the target and a log with holes,
// which it would take for rows overwritten since. With a memory head
// the Applies keep their whole records (the rows' durable form until a
// seal), so the target reads them from the log.
func TestTargetAfterWritesNobodyRead(t *testing.T) {
	pid := uuid.New()
	src, dst := newReplica(t, pid), newReplica(t, pid)
	rec := &recorder{apply: map[uuid.UUID]Applier{dst.placement(): dst}}
	p := NewPusher(Config{Table: "metrics", Placement: src.placement(), Self: "s1", Log: src, Sender: rec,
		Tick: 5 * time.Millisecond, KeepLog: true})
	p.SetView(1, view())
	if src.LogValues() {
		t.Fatal("log values on with no target")
	}
	for b := range 20 {
		rows := make([]model.Row, 0, 5)
		for i := range 5 {
			rows = append(rows, row("s1", fmt.Sprintf("series-%d", i), int64(b), 1, "v", float64(b)))
		}
		mustApply(t, src, rows...)
	}
	wantStart := uint64(99)
	if memHeadTests {
		wantStart = 0
	}
	if s, h := src.LogStart(), src.HighSeq(); s != wantStart || h != 100 {
		t.Fatalf("truncation point %d at high sequence %d, want %d and 100", s, h, wantStart)
	}
	p.SetView(2, view(replicaTarget("s2", dst.placement(), pid)))
	runPusher(t, p)
	waitUntil(t, p, "the target confirmed", p.Drained)
	got := scanAll(t, dst)
	if len(got) != 100 {
		t.Fatalf("the target holds %d rows, want 100", len(got))
	}
	if err := sameRows(got, scanAll(t, src)); err != nil {
		t.Fatalf("target: %v", err)
	}
}

// TestRowSnapshotIsCatchUp: a row snapshot to a replica target below the
// truncation point is a catch-up: it waits for a CatchUpSlots slot and is
// pushed in CatchUpBatchRows batches.
func TestRowSnapshotIsCatchUp(t *testing.T) {
	pid := uuid.New()
	src := newReplica(t, pid)
	want := fillForSnapshot(t, src, 60)
	if err := src.TruncateLog(src.SyncedSeq()); err != nil {
		t.Fatal(err)
	}
	dst := newReplica(t, pid)
	rec := &recorder{apply: map[uuid.UUID]Applier{dst.placement(): dst}}
	slots := make(chan struct{}, 1)
	slots <- struct{}{} // taken: the snapshot must wait
	p := NewPusher(Config{Table: "metrics", Placement: src.placement(), Self: "s1", Log: src, Sender: rec,
		BatchRows: 1000, CatchUpBatchRows: 5, CatchUpSlots: slots, RowSnapshots: true})
	p.SetView(1, view(replicaTarget("s2", dst.placement(), pid)))
	runPusher(t, p)
	time.Sleep(50 * time.Millisecond) // a push now would have taken no slot
	for _, ps := range rec.all() {
		// The empty probe for sharers takes no slot; rows would.
		if ps.req.Count != 0 {
			t.Fatalf("a push of %d rows while the only catch-up slot was taken", ps.req.Count)
		}
	}
	<-slots
	waitUntil(t, p, "the target confirmed the snapshot", p.Drained)
	for _, ps := range rec.all() {
		if len(ps.rows) > 5 {
			t.Fatalf("a row snapshot push of %d rows, CatchUpBatchRows is 5", len(ps.rows))
		}
	}
	if err := sameRows(scanAll(t, dst), want); err != nil {
		t.Fatalf("target: %v", err)
	}
}

// testClock is a Config.Now that moves only when told.
type testClock struct{ ns atomic.Int64 }

func newTestClock() *testClock {
	c := &testClock{}
	c.ns.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *testClock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *testClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// failedPushTo reports whether rec recorded a failed push to target.
func failedPushTo(rec *recorder, target uuid.UUID) bool {
	for _, ps := range rec.all() {
		if ps.err != nil && ps.req.ToPlacement == target {
			return true
		}
	}
	return false
}

// TestLogTruncatedPastDownTarget: a target whose pushes have failed for
// at least LaggardAfter and whose cursor lags the log by more than
// MaxLogLag no longer holds the truncation point back: the log is
// truncated up to the other target's cursor, past it. One that has failed
// for less time (counted from its last success, not its first failure
// ever), or lags less, still holds it. Back, the passed target gets a
// row snapshot and ends with every row the source holds, each delivered
// once, and its cursor at the synced watermark.
func TestLogTruncatedPastDownTarget(t *testing.T) {
	pid := uuid.New()
	src := newReplica(t, pid)
	fillForSnapshot(t, src, 200)
	a, b := newReplica(t, pid), newReplica(t, pid)
	rec := &recorder{apply: map[uuid.UUID]Applier{a.placement(): a, b.placement(): b}}
	var bDown atomic.Bool
	bDown.Store(true)
	failPushesTo(rec, b.placement(), &bDown)
	clock := newTestClock()
	p := NewPusher(Config{Table: "metrics", Placement: src.placement(), Self: "s1", Log: src, Sender: rec, BatchRows: 16,
		RetryMin: time.Millisecond, RetryMax: 5 * time.Millisecond, Tick: 5 * time.Millisecond, TruncateMin: 1,
		LaggardAfter: time.Minute, MaxLogLag: 100, Now: clock.now})
	p.SetView(1, view(replicaTarget("s2", a.placement(), pid), replicaTarget("s3", b.placement(), pid)))
	runPusher(t, p)
	high := src.SyncedSeq()
	waitUntil(t, p, "a confirmed", func() bool { return src.Confirmed(a.placement()) == high })
	pollUntil(t, "a failed push to b", func() bool { return failedPushTo(rec, b.placement()) })

	// Failing for less than LaggardAfter: b still holds the log.
	clock.advance(59 * time.Second)
	waitTruncateChecks(t, p, 10) // a truncation would have happened
	if s := src.LogStart(); s != 0 {
		t.Fatalf("log truncated to %d while b had failed for less than LaggardAfter", s)
	}

	// A success ends the run of failures: b catches up, then fails again
	// for more rows than MaxLogLag; its failures began 90 s ago, its
	// current run 45 s ago, so it still holds the log.
	bDown.Store(false)
	p.RetryNow()
	waitUntil(t, p, "b caught up", p.Drained)
	before := len(rec.all())
	bDown.Store(true)
	for i := range 30 {
		var rows []model.Row
		for j := range 10 {
			rows = append(rows, row("s1", fmt.Sprintf("late,host=h%d", j), int64(1000+i*10+j), 1, "v", 1))
		}
		mustApply(t, src, rows...)
	}
	drainMemory(t, src)
	p.Notify()
	high = src.SyncedSeq()
	waitUntil(t, p, "a confirmed the new rows", func() bool { return src.Confirmed(a.placement()) == high })
	pollUntil(t, "a new failed push to b", func() bool {
		all := rec.all()
		for _, ps := range all[before:] {
			if ps.err != nil && ps.req.ToPlacement == b.placement() {
				return true
			}
		}
		return false
	})
	bCursor := src.Confirmed(b.placement())
	if high-bCursor <= 100 {
		t.Fatalf("b lags by %d only, the test needs more than MaxLogLag", high-bCursor)
	}
	clock.advance(45 * time.Second)
	waitTruncateChecks(t, p, 10) // a truncation would have happened
	if s := src.LogStart(); s > bCursor {
		t.Fatalf("log truncated to %d past b's cursor %d: b's failures counted from before its last success", s, bCursor)
	}

	// Failing for LaggardAfter and lagging more than MaxLogLag: passed.
	clock.advance(15 * time.Second)
	pollUntil(t, "the log truncated past b", func() bool { return src.LogStart() == high-1 }) // the last entry stays
	if c := src.Confirmed(b.placement()); c != bCursor {
		t.Fatalf("b's cursor moved from %d to %d while its pushes failed", bCursor, c)
	}
	if p.Drained() {
		t.Fatal("drained with b's cursor below the truncation point")
	}

	// Back, b gets a row snapshot: every row once, its cursor at the end.
	snapFrom := len(rec.all())
	bDown.Store(false)
	p.RetryNow()
	waitUntil(t, p, "b confirmed the row snapshot", p.Drained)
	if err := sameRows(scanAll(t, b), scanAll(t, src)); err != nil {
		t.Fatalf("b after the row snapshot: %v", err)
	}
	if c := src.Confirmed(b.placement()); c != src.SyncedSeq() {
		t.Fatalf("b's cursor %d after the row snapshot, want %d", c, src.SyncedSeq())
	}
	got := map[string]int{}
	for _, ps := range rec.all()[snapFrom:] {
		// Snapshot pushes only: a log batch b's goroutine read before the
		// truncation may still go out once b is back (a descheduled step,
		// seen once under make test's load), and its rows then come again
		// in the snapshot, where they tie.
		if ps.err != nil || ps.req.ToPlacement != b.placement() || !ps.req.Snapshot {
			continue
		}
		for _, r := range ps.rows {
			got[fmt.Sprintf("%s@%d", r.Series, r.Time)]++
		}
	}
	// The row snapshot holds every row, those b had before included (the
	// log from b's cursor is gone): the 7 series of fillForSnapshot and the
	// late rows, the tombstoned row too.
	if want := len(scanAll(t, src)) + 1; len(got) != want {
		t.Fatalf("%d distinct rows delivered after b came back, want the snapshot's %d", len(got), want)
	}
	for k, n := range got {
		if n != 1 {
			t.Fatalf("row %s delivered %d times, want once", k, n)
		}
	}
}

// TestLogHeldByDownTargetWithinLag: a target failing for longer than
// LaggardAfter but lagging by no more than MaxLogLag still holds the
// truncation point; so does a split target's tail stream, whatever its
// failures and lag.
func TestLogHeldByDownTargetWithinLag(t *testing.T) {
	pid := uuid.New()
	t.Run("within MaxLogLag", func(t *testing.T) {
		src := newReplica(t, pid)
		fillForSnapshot(t, src, 50)
		a, b := newReplica(t, pid), newReplica(t, pid)
		rec := &recorder{apply: map[uuid.UUID]Applier{a.placement(): a, b.placement(): b}}
		failPushesTo(rec, b.placement(), nil)
		clock := newTestClock()
		p := NewPusher(Config{Table: "metrics", Placement: src.placement(), Self: "s1", Log: src, Sender: rec,
			RetryMin: time.Millisecond, RetryMax: 5 * time.Millisecond, Tick: 5 * time.Millisecond, TruncateMin: 1,
			LaggardAfter: time.Minute, MaxLogLag: 1000, Now: clock.now})
		p.SetView(1, view(replicaTarget("s2", a.placement(), pid), replicaTarget("s3", b.placement(), pid)))
		runPusher(t, p)
		high := src.SyncedSeq()
		waitUntil(t, p, "a confirmed", func() bool { return src.Confirmed(a.placement()) == high })
		pollUntil(t, "a failed push to b", func() bool { return failedPushTo(rec, b.placement()) })
		clock.advance(time.Hour)
		waitTruncateChecks(t, p, 10) // a truncation would have happened
		if s := src.LogStart(); s != 0 {
			t.Fatalf("log truncated to %d past b, which lags by %d of MaxLogLag 1000", s, high)
		}
	})
	t.Run("split tail", func(t *testing.T) {
		src := newReplica(t, pid)
		fillForSnapshot(t, src, 50)
		a, child := newReplica(t, pid), newReplica(t, uuid.New())
		rec := &recorder{apply: map[uuid.UUID]Applier{a.placement(): a, child.placement(): child}}
		failPushesTo(rec, child.placement(), nil)
		clock := newTestClock()
		p := NewPusher(Config{Table: "metrics", Placement: src.placement(), Self: "s1", Log: src, Sender: rec,
			RetryMin: time.Millisecond, RetryMax: 5 * time.Millisecond, Tick: 5 * time.Millisecond, TruncateMin: 1,
			LaggardAfter: time.Minute, MaxLogLag: 10, Now: clock.now})
		begin := int64(20)
		split := metadata.Target{ServerID: "s3", PlacementID: child.placement(), PartitionID: uuid.New(), Kind: metadata.TargetSplit, Begin: &begin}
		p.SetView(1, view(replicaTarget("s2", a.placement(), pid), split))
		mark := src.SyncedSeq()
		for i := range 10 { // above the mark: the tail stream's rows
			var rows []model.Row
			for j := range 10 {
				rows = append(rows, row("s1", fmt.Sprintf("late,host=h%d", j), int64(1000+i*10+j), 1, "v", 1))
			}
			mustApply(t, src, rows...)
		}
		drainMemory(t, src)
		runPusher(t, p)
		high := src.SyncedSeq()
		waitUntil(t, p, "a confirmed", func() bool { return src.Confirmed(a.placement()) == high })
		pollUntil(t, "a failed push to the child", func() bool { return failedPushTo(rec, child.placement()) })
		clock.advance(time.Hour)
		waitTruncateChecks(t, p, 10) // a truncation would have happened
		if s, tail := src.LogStart(), src.Confirmed(tailCursor(child.placement())); s > max(tail, mark) {
			t.Fatalf("log truncated to %d past the split tail stream (cursor %d, mark %d)", s, tail, mark)
		}
	})
}

// TestLogTruncatedPastDownJoiner: a joiner that is down is passed like a
// replica target, but its mark's snapshot keeps what it reads up to the
// mark; back, it reads that snapshot, then takes a row snapshot for the
// rest (the live log is truncated past its mark), is told Complete and
// ends with every row of the source.
func TestLogTruncatedPastDownJoiner(t *testing.T) {
	pid := uuid.New()
	src := newReplica(t, pid)
	fillForSnapshot(t, src, 60)
	joiner := newReplica(t, pid)
	rec := &recorder{apply: map[uuid.UUID]Applier{joiner.placement(): joiner}}
	var down atomic.Bool
	down.Store(true)
	rec.fail = func(metadata.Target, wire.PushRequest) error {
		if down.Load() {
			return errDown
		}
		return nil
	}
	var completed atomic.Bool
	rec.onPush = func(ps recordedPush) {
		if ps.err == nil && ps.req.Complete {
			completed.Store(true)
		}
	}
	clock := newTestClock()
	p := NewPusher(Config{Table: "metrics", Placement: src.placement(), Self: "s1", Log: src, Sender: rec, BatchRows: 8,
		RetryMin: time.Millisecond, RetryMax: 5 * time.Millisecond, Tick: 5 * time.Millisecond, TruncateMin: 1,
		LaggardAfter: time.Minute, MaxLogLag: 10, Now: clock.now})
	tg := metadata.Target{ServerID: "s9", PlacementID: joiner.placement(), PartitionID: pid, Kind: metadata.TargetJoining}
	p.SetView(1, view(tg))
	mark := src.SyncedSeq()
	for i := range 5 { // above the mark, one an overwrite of a row held at it
		mustApply(t, src, row("s1", "cpu,host=h1", 1, int64(10+i), "v", float64(100+i)))
		mustApply(t, src, row("s1", fmt.Sprintf("late,host=h%d", i), int64(1000+i), 1, "v", 1))
	}
	drainMemory(t, src)
	runPusher(t, p)
	pollUntil(t, "a failed push to the joiner", func() bool { return failedPushTo(rec, joiner.placement()) })
	clock.advance(time.Minute)
	pollUntil(t, "the log truncated past the joiner's mark", func() bool { return src.LogStart() > mark })
	down.Store(false)
	p.RetryNow()
	waitUntil(t, p, "the joiner caught up", p.Drained)
	pollUntil(t, "the joiner told Complete", completed.Load)
	if err := sameRows(scanAll(t, joiner), scanAll(t, src)); err != nil {
		t.Fatalf("joiner after the truncation past it: %v", err)
	}
}
