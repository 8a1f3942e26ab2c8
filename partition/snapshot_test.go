package partition

import (
	"errors"
	"testing"
)

// TestLogSnapshotKeepsOverwrittenRows: a snapshot of the log reads the
// rows as they were when it was taken (the live log has an overwrite
// since as a change above its Seq), stops at its Seq, fails after Close
// and after a drop, and one left open does not keep the Store from
// closing.
func TestLogSnapshotKeepsOverwrittenRows(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{MemoryHead: memHeadTests, Dir: dir, MemTableSize: 4 << 20, CacheSize: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	r := lookingUp(createTestReplica(t, s))
	mustApply(t, r, row("a", 1, fl("v", 1, 1)), row("b", 2, fl("v", 1, 1)))
	snap, err := r.SnapshotLog()
	if err != nil {
		t.Fatal(err)
	}
	if snap.Seq() != 2 {
		t.Fatalf("Seq = %d; want 2", snap.Seq())
	}
	mustApply(t, r, row("a", 1, fl("v", 2, 2))) // a moves to sequence 3
	mustApply(t, r, row("c", 3, fl("v", 1, 1)))

	live, err := r.ReadLog(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(live) != 4 || live[0].Row.Series != "a" || live[1].Row.Series != "b" || live[2].Seq != 3 || live[2].Row.Series != "a" || live[3].Row.Series != "c" {
		t.Fatalf("live log %+v; want a@1, b@2, a@3, c@4", live)
	}
	got, err := snap.ReadLog(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Seq != 1 || got[0].Row.Series != "a" || got[0].Row.Fields[0].Value.F != 1 || got[1].Seq != 2 {
		t.Fatalf("snapshot log %+v; want a@1 (its value then) and b@2", got)
	}
	if got, err := snap.ReadLog(1, 1); err != nil || len(got) != 1 || got[0].Seq != 2 {
		t.Fatalf("snapshot ReadLog(1, 1) = %+v, %v; want b@2", got, err)
	}
	if got, err := snap.ReadLog(2, 0); err != nil || len(got) != 0 {
		t.Fatalf("snapshot ReadLog(Seq) = %+v, %v; want nothing", got, err)
	}
	snap.Close()
	snap.Close() // idempotent
	if _, err := snap.ReadLog(0, 0); !errors.Is(err, ErrSnapshotClosed) {
		t.Fatalf("ReadLog after Close: %v; want ErrSnapshotClosed", err)
	}

	dropped, err := r.SnapshotLog()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DropReplica(r.Info().Placement); err != nil {
		t.Fatal(err)
	}
	if _, err := dropped.ReadLog(0, 0); !errors.Is(err, ErrDropped) {
		t.Fatalf("ReadLog after the drop: %v; want ErrDropped", err)
	}
	r2 := lookingUp(createTestReplica(t, s))
	mustApply(t, r2, row("a", 1, fl("v", 1, 1)))
	if _, err := r2.SnapshotLog(); err != nil { // left open
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close with snapshots open: %v", err)
	}
	if _, err := r2.SnapshotLog(); !errors.Is(err, ErrClosed) {
		t.Fatalf("SnapshotLog after Close: %v; want ErrClosed", err)
	}
	dropped.Close() // after the Store closed: no-op
}
