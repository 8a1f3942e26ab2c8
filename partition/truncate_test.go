package partition

import (
	"errors"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/tsdb/tsdb/model"
)

// TestTruncateLog: TruncateLog deletes the entries at or below its point;
// a read from below it fails with ErrLogTruncated, a read from at or above
// it answers as before; a LogSnapshot taken before the truncation still
// reads every entry; it never passes the synced watermark and never moves
// back; a truncation of everything keeps the entry at the high sequence
// (an older build's high sequence), and after a restart the next write
// gets the next sequence.
func TestTruncateLog(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir)
	r := lookingUp(createTestReplica(t, s))
	placement := r.Info().Placement
	for i := int64(0); i < 20; i++ {
		mustApply(t, r, row(fmt.Sprintf("s%d", i%5), i, fl("a", float64(i), 1)))
	}
	mustApply(t, r, row("s0", 0, fl("a", 9, 2))) // overwrites sequence 1's row at 21
	before, err := r.SnapshotLog()
	if err != nil {
		t.Fatal(err)
	}
	defer before.Close()
	drainMem(t, s) // rows only in memory pin their records
	if err := r.TruncateLog(r.SyncedSeq() + 1); !errors.Is(err, ErrCursorAhead) {
		t.Fatalf("TruncateLog above the watermark: %v", err)
	}
	if err := r.TruncateLog(10); err != nil {
		t.Fatal(err)
	}
	if err := r.TruncateLog(5); err != nil || r.LogStart() != 10 {
		t.Fatalf("TruncateLog back to 5: %v, start %d", err, r.LogStart())
	}
	if _, err := r.ReadLog(9, 0); !errors.Is(err, ErrLogTruncated) {
		t.Fatalf("ReadLog from below the truncation point: %v", err)
	}
	es, err := r.ReadLog(10, 0)
	if err != nil || len(es) != 11 || es[0].Seq != 11 || es[10].Seq != 21 {
		t.Fatalf("ReadLog from the truncation point: %d entries, %v", len(es), err)
	}
	old, err := before.ReadLog(0, 0)
	if err != nil || len(old) != 21 {
		t.Fatalf("snapshot taken before the truncation: %d entries, %v", len(old), err)
	}
	// A snapshot taken after it reads its rows instead.
	after, err := r.SnapshotLog()
	if err != nil {
		t.Fatal(err)
	}
	defer after.Close()
	if _, err := after.ReadLog(0, 0); !errors.Is(err, ErrLogTruncated) {
		t.Fatalf("snapshot ReadLog from below the truncation point: %v", err)
	}
	var rows []model.Row
	var pos *RowPos
	for {
		page, err := after.ReadRows(pos, RowRange{}, 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		rows = append(rows, page...)
		last := page[len(page)-1]
		pos = &RowPos{Series: last.Series, Time: last.Time}
	}
	if len(rows) != 20 || rows[0].Series != "s0" || rows[1].Series != "s0" || rows[1].Time != 5 {
		t.Fatalf("row snapshot not in key order (bucket, series, time): %v", rows)
	}
	want := scanAll(t, r)
	sortRows(rows)
	sortRows(want)
	if err := sameRows(rows, want); err != nil {
		t.Fatalf("row snapshot: %v", err)
	}

	// Everything confirmed: the entry at the high sequence stays, so an
	// older build (whose high sequence is its last entry's) would not
	// reuse sequences.
	high := r.HighSeq()
	if err := r.TruncateLog(high); err != nil {
		t.Fatal(err)
	}
	if r.LogStart() != high-1 {
		t.Fatalf("truncated to %d after TruncateLog(%d), want %d", r.LogStart(), high, high-1)
	}
	lastEntry := func() uint64 {
		t.Helper()
		it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: r.ks.seqLo, UpperBound: r.ks.seqHi})
		if err != nil {
			t.Fatal(err)
		}
		defer it.Close()
		if !it.Last() {
			t.Fatal("no log entry left after the truncation")
		}
		seq, err := seqFromKey(it.Key())
		if err != nil {
			t.Fatal(err)
		}
		return seq
	}
	if got := lastEntry(); got != high {
		t.Fatalf("last log entry %d after the truncation, want the high sequence %d", got, high)
	}
	if es, err := r.ReadLog(high-1, 0); err != nil || len(es) != 1 || es[0].Seq != high {
		t.Fatalf("ReadLog of a fully confirmed log: %v, %v", es, err)
	}
	before.Close()
	after.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTestStore(t, dir)
	r, ok := s.Replica(placement)
	if !ok {
		t.Fatal("replica gone after reopen")
	}
	if r.HighSeq() != high || r.SyncedSeq() != high || r.LogStart() != high-1 || lastEntry() != high {
		t.Fatalf("after reopen: high %d, synced %d, start %d, last entry %d; want %d, %d, %d, %d", r.HighSeq(), r.SyncedSeq(), r.LogStart(), lastEntry(), high, high, high-1, high)
	}
	if res := mustApply(t, r, row("new", 100, fl("a", 1, 1))); res.LastSeq != high+1 {
		t.Fatalf("first write after reopen got sequence %d, want %d", res.LastSeq, high+1)
	}
	es, err = r.ReadLog(high, 0)
	if err != nil || len(es) != 1 || es[0].Seq != high+1 || es[0].Row.Series != "new" {
		t.Fatalf("log after the write: %v, %v", es, err)
	}
}

// TestTryTruncateLog: TryTruncateLog does nothing and answers false while
// the data space's apply lock is held (a pusher's truncation never queues
// behind the space's writes), and truncates as TruncateLog once it is free.
func TestTryTruncateLog(t *testing.T) {
	s := openTestStore(t, t.TempDir())
	r := createTestReplica(t, s)
	for i := int64(0); i < 20; i++ {
		mustApply(t, r, row(fmt.Sprintf("s%d", i%5), i, fl("a", float64(i), 1)))
	}
	drainMem(t, s) // rows only in memory pin their records
	r.applyMu.Lock()
	done, err := r.TryTruncateLog(10)
	r.applyMu.Unlock()
	if done || err != nil || r.LogStart() == 10 {
		t.Fatalf("TryTruncateLog under the apply lock: %v, %v, start %d; want false, nil and nothing truncated", done, err, r.LogStart())
	}
	if done, err := r.TryTruncateLog(10); !done || err != nil || r.LogStart() != 10 {
		t.Fatalf("TryTruncateLog: %v, %v, start %d; want true, nil, 10", done, err, r.LogStart())
	}
	if _, err := r.ReadLog(9, 0); !errors.Is(err, ErrLogTruncated) {
		t.Fatalf("ReadLog from below the truncation point: %v", err)
	}
}

// TestReadRowsRange: ReadRows with a time range returns exactly the rows
// in it, across storage buckets and at the range's edges (where it seeks
// past a series' rows outside the range), paged.
func TestReadRowsRange(t *testing.T) {
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	var all []model.Row
	for i := int64(-6); i < 6; i++ {
		for _, tm := range []int64{i << bucketShift, i<<bucketShift + 7, (i+1)<<bucketShift - 1} {
			for _, series := range []string{"a", "ab", "b"} { // "a" a prefix of "ab"
				all = append(all, row(series, tm, fl("v", float64(tm), 1)))
			}
		}
	}
	mustApply(t, r, all...)
	ls, err := r.SnapshotLog()
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	p := func(v int64) *int64 { return &v }
	for _, rr := range []RowRange{
		{}, {Begin: p(0)}, {End: p(0)}, {Begin: p(7), End: p(2<<bucketShift - 1)},
		{Begin: p(-3 << bucketShift), End: p(-3<<bucketShift + 8)}, {Begin: p(5), End: p(5)},
		{Begin: p(minTime), End: p(maxTime)}, {End: p(minTime)},
	} {
		var got []model.Row
		var pos *RowPos
		for {
			page, err := ls.ReadRows(pos, rr, 4)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				break
			}
			got = append(got, page...)
			pos = &RowPos{Series: page[len(page)-1].Series, Time: page[len(page)-1].Time}
		}
		var want []model.Row
		for _, row := range all {
			if rr.contains(row.Time) {
				want = append(want, row)
			}
		}
		sortRows(got)
		sortRows(want)
		if err := sameRows(got, want); err != nil {
			t.Fatalf("range %v..%v: %v", rr.Begin, rr.End, err)
		}
	}
}
