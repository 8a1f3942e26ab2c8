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
