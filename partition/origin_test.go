package partition

import (
	"testing"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/model"
)

// TestApplyFromRecordsOrigin: the sequence log names the placement a row's
// value was pushed from only when that placement holds the whole value
// (issue 14 item 2); rows written here, or merged with fields that did not
// come from the push, have no origin. The origin survives a reopen.
func TestApplyFromRecordsOrigin(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir)
	r := lookingUp(createTestReplica(t, s))
	placement := r.Info().Placement
	o := uuid.New()
	applyFrom := func(rows ...model.Row) {
		t.Helper()
		if _, err := r.ApplyFrom(rows, o, 0); err != nil {
			t.Fatalf("ApplyFrom: %v", err)
		}
	}

	mustApply(t, r, row("local", 100, fl("a", 1, 10)))                                // written here
	applyFrom(row("pushed", 100, fl("a", 1, 10)), row("pushed", 100, fl("b", 2, 11))) // new (two parts in one push)
	mustApply(t, r, row("over", 100, fl("a", 1, 10)))
	applyFrom(row("over", 100, fl("a", 2, 20))) // replaces every stored field
	mustApply(t, r, row("mixed", 100, fl("a", 1, 10), fl("b", 1, 10)))
	applyFrom(row("mixed", 100, fl("a", 2, 20))) // b is kept from here
	mustApply(t, r, row("older", 100, fl("a", 1, 30)))
	applyFrom(row("older", 100, fl("a", 2, 20), fl("b", 2, 20))) // a is kept from here
	mustApply(t, r, row("tie", 100, fl("a", 1, 10)))
	applyFrom(row("tie", 100, fl("a", 1, 10), fl("b", 2, 20))) // a is the same write
	applyFrom(row("later", 100, fl("a", 1, 10)))
	mustApply(t, r, row("later", 100, fl("a", 2, 20))) // then overwritten here

	want := map[string]uuid.UUID{
		"local": uuid.Nil, "pushed": o, "over": o, "mixed": uuid.Nil, "older": uuid.Nil, "tie": o, "later": uuid.Nil,
	}
	check := func(r *Replica) {
		t.Helper()
		entries, err := r.ReadLog(0, 0)
		if err != nil {
			t.Fatal(err)
		}
		// Each row's newest change is its stored value, with its origin
		// (the earlier changes stay in the log with theirs).
		newest := map[string]LogEntry{}
		for _, e := range entries {
			newest[e.Row.Series] = e
		}
		if len(entries) != 12 || len(newest) != len(want) {
			t.Fatalf("%d log entries of %d rows, want 12 of %d", len(entries), len(newest), len(want))
		}
		for _, e := range newest {
			if w, ok := want[e.Row.Series]; !ok || e.Origin != w {
				t.Errorf("row %s: origin %s, want %s", e.Row.Series, e.Origin, w)
			}
		}
	}
	check(r)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTestStore(t, dir)
	r, ok := s.Replica(placement)
	if !ok {
		t.Fatal("replica gone after reopen")
	}
	check(r)
}

// TestReadLogForLeavesTargetsValues: ReadLogFor returns every entry
// ReadLog does, at the same sequences, and those whose origin is the
// target with their time and origin only.
func TestReadLogForLeavesTargetsValues(t *testing.T) {
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	o, other := uuid.New(), uuid.New()
	mustApply(t, r, row("local", 1, fl("a", 1, 10)), row("local", 2, fl("a", 1, 10)))
	if _, err := r.ApplyFrom([]model.Row{row("fromO", 3, fl("a", 2, 11)), row("fromO", 4, fl("a", 2, 11))}, o, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ApplyFrom([]model.Row{row("fromOther", 5, fl("a", 3, 12))}, other, 0); err != nil {
		t.Fatal(err)
	}
	all, err := r.ReadLog(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, after := range []uint64{0, 2, 3} {
		got, err := r.ReadLogFor(after, 0, o)
		if err != nil {
			t.Fatal(err)
		}
		want := all[after:]
		if len(got) != len(want) {
			t.Fatalf("after %d: %d entries, want %d", after, len(got), len(want))
		}
		for i, e := range got {
			w := want[i]
			if e.Seq != w.Seq || e.Origin != w.Origin || e.Row.Time != w.Row.Time {
				t.Fatalf("after %d: entry %+v, want %+v", after, e, w)
			}
			if w.Origin == o {
				if e.Row.Series != "" || e.Row.Fields != nil {
					t.Fatalf("entry %d of the target's own values decoded: %+v", e.Seq, e.Row)
				}
				continue
			}
			if err := sameRow(e.Row, w.Row); err != nil {
				t.Fatalf("entry %d: %v", e.Seq, err)
			}
		}
	}
}
