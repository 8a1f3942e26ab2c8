package replication

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/partition"
)

// TestKindOf: a batch read from a row snapshot is kind snapshot whatever
// the target's kind; otherwise the target's kind decides; the kinds are
// the API's.
func TestKindOf(t *testing.T) {
	for _, tc := range []struct {
		target   metadata.TargetKind
		snapshot bool
		want     MoveKind
	}{
		{metadata.TargetReplica, false, MovePush},
		{metadata.TargetJoining, false, MoveJoin},
		{metadata.TargetSplit, false, MoveSplit},
		{"", false, MovePush},
		{metadata.TargetReplica, true, MoveSnapshot},
		{metadata.TargetJoining, true, MoveSnapshot},
		{metadata.TargetSplit, true, MoveSnapshot},
	} {
		if got := KindOf(tc.target, wire.PushRequest{Snapshot: tc.snapshot}); got != tc.want {
			t.Errorf("KindOf(%q, snapshot %v) = %q, want %q", tc.target, tc.snapshot, got, tc.want)
		}
	}
	want := []string{api.MovedPush, api.MovedSnapshot, api.MovedSplit, api.MovedJoin}
	if fmt.Sprint(MoveKinds) != fmt.Sprint(want) {
		t.Errorf("MoveKinds %v, the API's kinds %v", MoveKinds, want)
	}
	if PushBytes(wire.PushRequest{Rows: make([]byte, 7)}) != 7 {
		t.Error("PushBytes is not the encoded rows' length")
	}
}

// movedByKind sums the successful pushes rec recorded by their kind (as
// the pusher must have classified them), bytes as re-encoded.
func movedByKind(rec *recorder) map[MoveKind]Moved {
	out := map[MoveKind]Moved{}
	for _, ps := range rec.all() {
		if ps.err != nil || ps.req.Count == 0 {
			continue
		}
		k := KindOf(ps.target.Kind, ps.req)
		m := out[k]
		m.Rows += uint64(ps.req.Count)
		m.Bytes += uint64(ps.bytes)
		out[k] = m
	}
	return out
}

// TestPusherStatsByKind: a replica, a joining and a split target fed from
// the log each count their rows and bytes under their own kind, and no
// push is marked as a snapshot.
func TestPusherStatsByKind(t *testing.T) {
	pid := uuid.New()
	src := newReplica(t, pid)
	for i := range 50 {
		mustApply(t, src, row("s1", fmt.Sprintf("cpu,host=h%d", i%5), int64(i), 1, "v", float64(i)))
	}
	rec := &recorder{}
	p := NewPusher(Config{Table: "metrics", Placement: src.placement(), Self: "s1", Log: src, Sender: rec, BatchRows: 8, KeepLog: true})
	begin := int64(20)
	rep := replicaTarget("s2", uuid.New(), pid)
	join := metadata.Target{ServerID: "s3", PlacementID: uuid.New(), PartitionID: pid, Kind: metadata.TargetJoining}
	split := metadata.Target{ServerID: "s4", PlacementID: uuid.New(), PartitionID: uuid.New(), Kind: metadata.TargetSplit, Begin: &begin}
	p.SetView(1, view(rep, join, split))
	mustApply(t, src, row("s1", "after", 100, 1, "v", 1)) // after the marks: the split's tail stream
	p.Notify()
	runPusher(t, p)
	waitUntil(t, p, "every target confirmed", p.Drained)

	st := p.Stats()
	want := movedByKind(rec)
	if len(want) != 3 || want[MovePush].Rows != 51 || want[MoveJoin].Rows != 51 || want[MoveSplit].Rows != 31 {
		t.Fatalf("pushes recorded by kind %+v, want 51 push, 51 join, 31 split rows", want)
	}
	if fmt.Sprint(st.Moved) != fmt.Sprint(want) {
		t.Fatalf("Stats().Moved %+v, the pushes delivered %+v", st.Moved, want)
	}
	for _, ps := range rec.all() {
		if ps.req.Snapshot {
			t.Fatalf("a push from the log marked as a snapshot: %+v", ps.req)
		}
	}
	if st.SnapshotsActive != 0 || st.SnapshotsDone+st.SnapshotsFailed+st.SnapshotsDropped != 0 {
		t.Fatalf("snapshots counted without a truncated log: %+v", st)
	}
}

// snapEnd is one call of Config.OnSnapshotEnd.
type snapEnd struct {
	target uuid.UUID
	rows   int
	result string
}

// snapEnds records the calls of Config.OnSnapshotEnd.
type snapEnds struct {
	mu    sync.Mutex
	calls []snapEnd
}

func (s *snapEnds) hook(target uuid.UUID, rows int, elapsed time.Duration, result string) {
	if elapsed < 0 {
		result = "negative elapsed"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, snapEnd{target, rows, result})
}

func (s *snapEnds) all() []snapEnd {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]snapEnd(nil), s.calls...)
}

// TestRowSnapshotStatsAndHook: every batch of a row snapshot is marked
// Snapshot and counted as kind snapshot; the snapshot's end calls
// OnSnapshotEnd once with result done and the rows delivered; a row
// written after it comes from the log as kind push.
func TestRowSnapshotStatsAndHook(t *testing.T) {
	pid := uuid.New()
	src := newReplica(t, pid)
	fillForSnapshot(t, src, 100)
	if err := src.TruncateLog(src.SyncedSeq()); err != nil {
		t.Fatal(err)
	}
	dst := newReplica(t, pid)
	rec := &recorder{apply: map[uuid.UUID]Applier{dst.placement(): dst}}
	var ends snapEnds
	p := NewPusher(Config{Table: "metrics", Placement: src.placement(), Self: "s1", Log: src, Sender: rec, BatchRows: 9,
		KeepLog: true, OnSnapshotEnd: ends.hook})
	p.SetView(1, view(replicaTarget("s2", dst.placement(), pid)))
	runPusher(t, p)
	waitUntil(t, p, "the target confirmed the snapshot", p.Drained)
	// The snapshot ends (counted, hook called) just after the cursor
	// moves: wait for it.
	pollUntil(t, "the snapshot's end reported", func() bool { return len(ends.all()) >= 1 })

	delivered := 0
	for _, ps := range rec.all() {
		if ps.req.Count > 0 && !ps.req.Snapshot { // not the empty probe for sharers
			t.Fatalf("a row snapshot batch not marked Snapshot: %+v", ps.req)
		}
		delivered += ps.req.Count
	}
	if got := ends.all(); len(got) != 1 || got[0] != (snapEnd{dst.placement(), delivered, SnapshotDone}) {
		t.Fatalf("OnSnapshotEnd calls %+v, want one done with %d rows", got, delivered)
	}
	st := p.Stats()
	if want := movedByKind(rec); len(want) != 1 || fmt.Sprint(st.Moved) != fmt.Sprint(want) {
		t.Fatalf("Stats().Moved %+v, want only the snapshot's pushes %+v", st.Moved, want)
	}
	if st.SnapshotsActive != 0 || st.SnapshotsDone != 1 || st.SnapshotsFailed != 0 || st.SnapshotsDropped != 0 {
		t.Fatalf("snapshot counts %+v, want one done", st)
	}

	mustApply(t, src, row("s1", "after", 1000, 1, "v", 1))
	p.Notify()
	waitUntil(t, p, "the new row confirmed", p.Drained)
	if st := p.Stats(); st.Moved[MovePush] != (Moved{Rows: 1, Bytes: uint64(len(AppendRows(nil, []model.Row{row("s1", "after", 1000, 1, "v", 1)})))}) {
		t.Fatalf("a row from the log after the snapshot counted %+v under push", st.Moved)
	}
	if len(ends.all()) != 1 {
		t.Fatalf("OnSnapshotEnd called again: %+v", ends.all())
	}
}

// failingSnapLog is a replicaLog whose row snapshots fail to read while
// fail is set.
type failingSnapLog struct {
	*replicaLog
	fail *atomic.Bool
}

func (l failingSnapLog) SnapshotLog() (LogSnapshot, error) {
	s, err := l.replicaLog.SnapshotLog()
	if err != nil {
		return nil, err
	}
	return failingSnap{s.(RowSnapshot), l.fail}, nil
}

type failingSnap struct {
	RowSnapshot
	fail *atomic.Bool
}

var errSnapRead = errors.New("test: snapshot read failed")

func (s failingSnap) ReadRows(after *partition.RowPos, rr partition.RowRange, maxRows int) ([]model.Row, error) {
	if s.fail.Load() {
		return nil, errSnapRead
	}
	return s.RowSnapshot.ReadRows(after, rr, maxRows)
}

// TestRowSnapshotFailedAndDropped: a row snapshot whose read fails ends as
// failed (and a new one starts); one still running when the Pusher stops
// ends as dropped; the active count follows.
func TestRowSnapshotFailedAndDropped(t *testing.T) {
	pid := uuid.New()
	src := newReplica(t, pid)
	fillForSnapshot(t, src, 100)
	if err := src.TruncateLog(src.SyncedSeq()); err != nil {
		t.Fatal(err)
	}
	var fail atomic.Bool
	var pushes atomic.Int64
	rec := &recorder{}
	rec.fail = func(_ metadata.Target, req wire.PushRequest) error {
		if req.Count == 0 {
			return nil // the probe for sharers (none)
		}
		if pushes.Add(1) == 1 {
			fail.Store(true) // the next read of the snapshot fails
			return nil
		}
		return errDown // the snapshot restarted after the failure stays in progress
	}
	var ends snapEnds
	target := uuid.New()
	p := NewPusher(Config{Table: "metrics", Placement: src.placement(), Self: "s1", Log: failingSnapLog{src, &fail}, Sender: rec,
		BatchRows: 9, KeepLog: true, RetryMin: time.Millisecond, RetryMax: time.Millisecond, OnSnapshotEnd: ends.hook})
	p.SetView(1, view(replicaTarget("s2", target, pid)))
	stop := runPusher(t, p)
	pollUntil(t, "a failed snapshot", func() bool { return p.Stats().SnapshotsFailed >= 1 })
	fail.Store(false)
	pollUntil(t, "a new snapshot in progress", func() bool { return pushes.Load() >= 3 })
	if st := p.Stats(); st.SnapshotsActive != 1 || st.SnapshotsDone != 0 {
		t.Fatalf("after a failure and a restart: %+v, want one active, none done", st)
	}
	stop()
	st := p.Stats()
	if st.SnapshotsActive != 0 || st.SnapshotsDropped != 1 || st.SnapshotsDone != 0 {
		t.Fatalf("after the stop: %+v, want none active, one dropped", st)
	}
	got := ends.all()
	if len(got) != int(st.SnapshotsFailed)+1 || got[len(got)-1].result != SnapshotDropped {
		t.Fatalf("OnSnapshotEnd calls %+v, want %d failed then one dropped", got, st.SnapshotsFailed)
	}
	for _, e := range got[:len(got)-1] {
		if e.result != SnapshotFailed || e.target != target || e.rows != 9 && e.rows != 0 {
			t.Fatalf("OnSnapshotEnd calls %+v: want failed ones of 9 rows (the first) or none", got)
		}
	}
	if got[0].rows != 9 {
		t.Fatalf("the first snapshot delivered one batch of 9 rows before failing: %+v", got)
	}
}
