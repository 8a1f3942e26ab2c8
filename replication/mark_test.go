package replication

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/model"
)

// Tests of what a mark covers (DESIGN.md section 5 join, section 6 split,
// rule 7) when rows held at the mark are overwritten after it: the
// overwrite writes a new entry above the mark, and the old one (at or
// below it) may be gone from the live log (truncated, or deleted by the
// overwrite in a log written before log records).

// holds reports whether rows holds a row of series at time ts.
func holds(rows []model.Row, series string, ts int64) bool {
	for _, r := range rows {
		if r.Series == series && r.Time == ts {
			return true
		}
	}
	return false
}

// TestSplitMarkCoversRowsOverwrittenAfterIt: a row the parent replica held
// when it learned of the split, overwritten after that, must be in the
// child when the parent reports the child past its mark (the readiness
// SPLIT_FINALIZE is committed on), even when the tail stream, which
// carries the overwrite, has not delivered anything.
func TestSplitMarkCoversRowsOverwrittenAfterIt(t *testing.T) {
	src := newReplica(t, uuid.New())
	mustApply(t, src, row("s1", "cpu", 10, 1, "v", 1)) // acknowledged before the split
	child := newReplica(t, uuid.New())
	rec := &recorder{apply: map[uuid.UUID]Applier{child.placement(): child}}
	p := NewPusher(Config{Table: "metrics", Placement: src.placement(), Self: "s1", Log: src, Sender: rec})
	tg := metadata.Target{ServerID: "s2", PlacementID: child.placement(), PartitionID: uuid.New(), Kind: metadata.TargetSplit}
	p.SetView(1, view(tg))
	p.mu.Lock()
	mark := p.mu.marks[tg.PlacementID]
	p.mu.Unlock()

	// Overwritten after the mark (a later write of the same point, not
	// acknowledged yet): its sequence entry moves above the mark.
	mustApply(t, src, row("s1", "cpu", 10, 2, "v", 2))
	// The tail stream's pushes (rows above the mark) do not get through.
	rec.setFail(func(_ metadata.Target, req wire.PushRequest) error {
		if req.LastSeq > mark {
			return errDown
		}
		return nil
	})
	runPusher(t, p)
	waitUntil(t, p, "the child past its mark", func() bool {
		st := p.Status()
		return len(st) == 1 && st[0].MarkReached
	})
	if !holds(scanAll(t, child), "cpu", 10) {
		t.Fatalf("the child is reported past the mark %d (SPLIT_FINALIZE may commit) but lacks the row the parent held at the mark", mark)
	}
}

// TestJoinCompleteCoversRowsOverwrittenAfterMark: a row the sender held
// when it first saw the joiner, overwritten after that, must be on the
// joiner when the sender tells it Complete (the signal JOIN_FINALIZE is
// committed on), even when the push carrying the overwrite never gets
// through.
func TestJoinCompleteCoversRowsOverwrittenAfterMark(t *testing.T) {
	pid := uuid.New()
	src := newReplica(t, pid)
	mustApply(t, src, row("s1", "cpu", 1, 1, "v", 1))
	mustApply(t, src, row("s1", "cpu", 2, 1, "v", 1)) // acknowledged before the join
	joiner := newReplica(t, pid)
	var completeDelivered atomic.Bool
	completed := make(chan struct{})
	rec := &recorder{apply: map[uuid.UUID]Applier{joiner.placement(): joiner}}
	// The sender's server becomes unreachable right after its Complete
	// got through.
	rec.fail = func(metadata.Target, wire.PushRequest) error {
		if completeDelivered.Load() {
			return errDown
		}
		return nil
	}
	rec.onPush = func(ps recordedPush) {
		if ps.err == nil && ps.req.Complete && completeDelivered.CompareAndSwap(false, true) {
			close(completed)
		}
	}
	p := NewPusher(Config{Table: "metrics", Placement: src.placement(), Self: "s1", Log: src, Sender: rec, BatchRows: 2})
	tg := metadata.Target{ServerID: "s9", PlacementID: joiner.placement(), PartitionID: pid, Kind: metadata.TargetJoining}
	p.SetView(1, view(tg))
	p.mu.Lock()
	mark := p.mu.marks[tg.PlacementID]
	p.mu.Unlock()

	// After the mark: a new row, then the overwrite of a row held at it.
	mustApply(t, src, row("s1", "cpu", 3, 2, "v", 1))
	mustApply(t, src, row("s1", "cpu", 2, 2, "v", 2))
	runPusher(t, p)
	select {
	case <-completed:
	case <-time.After(2 * time.Minute): // a hang guard, not a speed assertion
		t.Fatalf("the joiner never got Complete; status %+v", p.Status())
	}
	if !holds(scanAll(t, joiner), "cpu", 2) {
		t.Fatalf("the joiner was told Complete (mark %d) but lacks a row the sender held at the mark", mark)
	}
}

// overwriteInCutBatch writes, on src: a@1 and r@2 (the write whose
// confirmation is awaited, at sequence first+1), then x and the overwrite
// of r, which moves r's only log entry to first+3. It returns first+1.
// A push of at most 2 rows from first reads a, x: r is above the batch.
func overwriteInCutBatch(t *testing.T, src *replicaLog, ts int64) uint64 {
	t.Helper()
	mustApply(t, src, row("s1", "cpu", ts, 10, "v", 1))
	w := mustApply(t, src, row("s1", "cpu", ts+1, 10, "v", 1)).LastSeq
	mustApply(t, src, row("s1", "cpu", ts+2, 11, "v", 1))
	mustApply(t, src, row("s1", "cpu", ts+1, 11, "w", 2)) // r gets a second field
	return w
}

// TestConfirmationCoversRowsOverwrittenInBatch: a target's cursor must not
// pass a write whose row was overwritten before it was read, while the row
// (at its new sequence, beyond a batch cut by its size) is not pushed: a
// WaitConfirmed for that write would otherwise return (an acknowledgement)
// while the target lacks the row.
func TestConfirmationCoversRowsOverwrittenInBatch(t *testing.T) {
	pid := uuid.New()
	src := newReplica(t, pid)
	dst := newReplica(t, pid)
	w := overwriteInCutBatch(t, src, 1)
	rec := &recorder{apply: map[uuid.UUID]Applier{dst.placement(): dst}}
	// Pushes beyond the first batch do not get through.
	failed := failPushesBeyond(rec, w+1)
	p := NewPusher(Config{Table: "metrics", Placement: src.placement(), Self: "s1", Log: src, Sender: rec, BatchRows: 2})
	tg := replicaTarget("s2", dst.placement(), pid)
	p.SetView(1, view(tg))
	runPusher(t, p)
	select {
	case <-failed: // the first batch went before: its confirmation is recorded
	case <-time.After(2 * time.Minute): // a hang guard
		t.Fatalf("no push failed; status %+v", p.Status())
	}
	if c := src.Confirmed(tg.PlacementID); c >= w && !holds(scanAll(t, dst), "cpu", 2) {
		t.Fatalf("the target confirmed sequence %d, past the write at %d, but lacks its row", c, w)
	}
}

// TestSplitTailCoversRowsOverwrittenAfterMark: an insert after the mark is
// acknowledged once the covering child's tail stream has it
// (WaitChildAfterMark), and SPLIT_FINALIZE does not wait for the tail: the
// tail's cursor must not pass a write whose row was overwritten before it
// was read while the row is not pushed, or the child may lack an
// acknowledged row at FINALIZE.
func TestSplitTailCoversRowsOverwrittenAfterMark(t *testing.T) {
	src := newReplica(t, uuid.New())
	mustApply(t, src, row("s1", "cpu", 0, 1, "v", 1))
	child := newReplica(t, uuid.New())
	rec := &recorder{apply: map[uuid.UUID]Applier{child.placement(): child}}
	p := NewPusher(Config{Table: "metrics", Placement: src.placement(), Self: "s1", Log: src, Sender: rec, BatchRows: 2})
	cid := uuid.New()
	tg := metadata.Target{ServerID: "s2", PlacementID: child.placement(), PartitionID: cid, Kind: metadata.TargetSplit}
	p.SetView(1, view(tg))
	p.mu.Lock()
	mark := p.mu.marks[tg.PlacementID]
	p.mu.Unlock()
	w := overwriteInCutBatch(t, src, 1) // after the mark
	// The tail's pushes beyond its first batch do not get through.
	failed := failPushesBeyond(rec, w+1)
	runPusher(t, p)
	select {
	case <-failed:
	case <-time.After(2 * time.Minute): // a hang guard
		t.Fatalf("no push failed; status %+v", p.Status())
	}
	waitUntil(t, p, "the child past its mark", func() bool { return p.Status()[0].MarkReached })
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // only asks whether the wait is over now
	if err := p.WaitChildAfterMark(ctx, w, cid, []string{"s2"}, 1); err == nil && !holds(scanAll(t, child), "cpu", 2) {
		t.Fatalf("the write at %d (mark %d) counts as held by the child, whose split may finalize, but the child lacks its row", w, mark)
	}
}

// failPushesBeyond makes rec refuse every push whose last sequence is above
// last; the channel it returns is closed at the first refused push.
func failPushesBeyond(rec *recorder, last uint64) <-chan struct{} {
	failed := make(chan struct{})
	var once atomic.Bool
	rec.fail = func(_ metadata.Target, req wire.PushRequest) error {
		if req.LastSeq > last {
			return errDown
		}
		return nil
	}
	rec.onPush = func(ps recordedPush) {
		if ps.err != nil && once.CompareAndSwap(false, true) {
			close(failed)
		}
	}
	return failed
}
