package partition

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/tsdb/tsdb/model"
)

func TestApplyLastWriterWins(t *testing.T) {
	s := openTestStore(t, "")
	r := lookingUp(createTestReplica(t, s))

	res := mustApply(t, r, row("cpu", 10, fl("a", 1, 5), fl("b", 1, 5)))
	if res.Changed != 1 || res.LastSeq != 1 {
		t.Fatalf("first write: %+v, want 1 change at seq 1", res)
	}

	tests := []struct {
		name        string
		write       model.Row
		wantChanged int
		want        model.Row
	}{
		{"newer version wins per field", row("cpu", 10, fl("a", 2, 6)), 1,
			row("cpu", 10, fl("a", 2, 6), fl("b", 1, 5))},
		{"older version loses", row("cpu", 10, fl("a", 3, 4), fl("b", 3, 4)), 0,
			row("cpu", 10, fl("a", 2, 6), fl("b", 1, 5))},
		{"tie changes nothing", row("cpu", 10, fl("a", 9, 6)), 0,
			row("cpu", 10, fl("a", 2, 6), fl("b", 1, 5))},
		{"other field at the same point is kept", row("cpu", 10, fl("c", 7, 1)), 1,
			row("cpu", 10, fl("a", 2, 6), fl("b", 1, 5), fl("c", 7, 1))},
		{"mixed: one field wins, one loses", row("cpu", 10, fl("a", 0, 3), fl("b", 8, 9)), 1,
			row("cpu", 10, fl("a", 2, 6), fl("b", 8, 9), fl("c", 7, 1))},
		{"higher node breaks a wall tie", row("cpu", 10, model.Field{Name: "c", Value: model.Int(4), Version: model.Version{Wall: 1, Node: 2}}), 1,
			row("cpu", 10, fl("a", 2, 6), fl("b", 8, 9), model.Field{Name: "c", Value: model.Int(4), Version: model.Version{Wall: 1, Node: 2}})},
	}
	for _, tt := range tests {
		high := r.HighSeq()
		res := mustApply(t, r, tt.write)
		if res.Changed != tt.wantChanged {
			t.Errorf("%s: changed %d, want %d", tt.name, res.Changed, tt.wantChanged)
		}
		wantHigh := high + uint64(tt.wantChanged)
		if r.HighSeq() != wantHigh || res.LastSeq != wantHigh {
			t.Errorf("%s: HighSeq %d, LastSeq %d, want %d (no sequence without a change)", tt.name, r.HighSeq(), res.LastSeq, wantHigh)
		}
		if err := sameRows(scanAll(t, r), []model.Row{tt.want}); err != nil {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
}

func TestApplyReplayIsIdempotent(t *testing.T) {
	s := openTestStore(t, "")
	r := lookingUp(createTestReplica(t, s))
	rng := newSeededRand(t)
	batch := randRows(rng, 200, testSeries, testTimes(rng, 30))
	mustApply(t, r, batch...)
	high := r.HighSeq()
	before := scanAll(t, r)
	res := mustApply(t, r, batch...)
	if res.Changed != 0 || r.HighSeq() != high || res.LastSeq != high {
		t.Fatalf("replay: %+v, HighSeq %d; want no change at %d", res, r.HighSeq(), high)
	}
	if err := sameRows(scanAll(t, r), before); err != nil {
		t.Fatalf("replay changed data: %v", err)
	}
}

// TestApplyDuplicatesInBatch checks that duplicates of one key inside a
// call merge in input order, ties keeping the earlier value.
func TestApplyDuplicatesInBatch(t *testing.T) {
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	res := mustApply(t, r,
		row("m", 1, fl("a", 1, 5)),
		row("m", 2, fl("a", 100, 1)),
		row("m", 1, fl("a", 2, 5), fl("b", 2, 5)), // a ties: keeps 1
		row("m", 1, fl("b", 3, 6)),                // b newer: 3
		row("m", 1, fl("a", 4, 4)),                // a older: loses
	)
	if res.Changed != 2 || res.LastSeq != 2 {
		t.Fatalf("result %+v, want 2 changes", res)
	}
	want := []model.Row{row("m", 1, fl("a", 1, 5), fl("b", 3, 6)), row("m", 2, fl("a", 100, 1))}
	if err := sameRows(scanAll(t, r), want); err != nil {
		t.Fatal(err)
	}
}

func TestApplyUnsortedAndDuplicateFields(t *testing.T) {
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	in := row("m", 1, fl("z", 1, 1), fl("a", 2, 1), fl("z", 3, 1))
	orig := append([]model.Field(nil), in.Fields...)
	mustApply(t, r, in)
	// As model.Row.Normalize: the later "z" wins an equal version.
	want := []model.Row{row("m", 1, fl("a", 2, 1), fl("z", 3, 1))}
	if err := sameRows(scanAll(t, r), want); err != nil {
		t.Fatal(err)
	}
	if err := sameRow(in, model.Row{Time: 1, Series: "m", Fields: orig}); err != nil {
		t.Fatalf("Apply modified its input: %v", err)
	}
}

func TestApplyRejectsInvalidRows(t *testing.T) {
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	good := row("ok", 1, fl("a", 1, 1))
	tests := []struct {
		name string
		bad  model.Row
	}{
		{"empty series", row("", 1, fl("a", 1, 1))},
		{"NUL in series", row("a\x00b", 1, fl("a", 1, 1))},
		{"no fields", row("m", 1)},
		{"zero version", row("m", 1, model.Field{Name: "a", Value: model.Float(1)})},
		{"empty field name", row("m", 1, fl("", 1, 1))},
		{"invalid kind", row("m", 1, model.Field{Name: "a", Version: ver(1)})},
		{"unknown kind", row("m", 1, model.Field{Name: "a", Value: model.Value{Kind: 9}, Version: ver(1)})},
	}
	for _, tt := range tests {
		_, err := r.Apply([]model.Row{good, tt.bad})
		if !errors.Is(err, ErrInvalidRow) {
			t.Errorf("%s: err %v, want ErrInvalidRow", tt.name, err)
		}
	}
	if rows := scanAll(t, r); len(rows) != 0 || r.HighSeq() != 0 {
		t.Fatalf("rejected batches wrote %d rows, HighSeq %d", len(rows), r.HighSeq())
	}
	if res, err := r.Apply(nil); err != nil || res.Changed != 0 {
		t.Fatalf("empty Apply: %+v, %v", res, err)
	}
}

// TestApplyRandomAgainstModel applies random overlapping batches and checks
// the stored rows and change counts against the naive model.
func TestApplyRandomAgainstModel(t *testing.T) {
	s := openTestStore(t, "")
	r := lookingUp(createTestReplica(t, s))
	rng := newSeededRand(t)
	times := testTimes(rng, 25)
	m := naiveModel{}
	for i := 0; i < 40; i++ {
		batch := randRows(rng, 1+rng.Intn(60), testSeries, times)
		want := m.apply(batch)
		high := r.HighSeq()
		res := mustApply(t, r, batch...)
		if res.Changed != want || res.LastSeq != high+uint64(want) {
			t.Fatalf("batch %d: %+v, want %d changes after seq %d", i, res, want, high)
		}
	}
	if err := sameRows(scanAll(t, r), m.rows()); err != nil {
		t.Fatal(err)
	}
	checkSeqIndex(t, r)
}

// checkSeqIndex reads the whole log and checks that its entries, in
// ascending sequence order up to the high sequence, fold (field by field,
// by version) into exactly the live rows.
func checkSeqIndex(t *testing.T, r *Replica) {
	t.Helper()
	log, err := r.ReadLog(0, 0)
	if err != nil {
		t.Fatalf("ReadLog: %v", err)
	}
	rows := scanAll(t, r)
	for i, e := range log {
		if i > 0 && e.Seq <= log[i-1].Seq {
			t.Fatalf("log not in ascending sequence order at %d", i)
		}
		if e.Seq > r.SyncedSeq() {
			t.Fatalf("log entry %d above the synced watermark %d", e.Seq, r.SyncedSeq())
		}
	}
	logRows := foldLog(log)
	if err := sameRows(logRows, rows); err != nil {
		t.Fatalf("log vs rows: %v", err)
	}
	if len(log) > 0 && log[len(log)-1].Seq != r.HighSeq() {
		t.Fatalf("last log entry %d, HighSeq %d", log[len(log)-1].Seq, r.HighSeq())
	}
}

// TestLogKeepsEveryChange: the log holds one record per batch (one entry
// for a batch of one change), under the sequence of its last change; an
// overwrite deletes no earlier change, and a read goes on from the middle
// of a record.
func TestLogKeepsEveryChange(t *testing.T) {
	s := openTestStore(t, "")
	r := lookingUp(createTestReplica(t, s))
	mustApply(t, r, row("a", 1, fl("x", 1, 1)), row("b", 1, fl("x", 1, 1)), row("c", 1, fl("x", 1, 1))) // seqs 1-3, one record
	mustApply(t, r, row("a", 1, fl("x", 2, 2)))                                                         // seq 4 overwrites a
	mustApply(t, r, row("b", 1, fl("y", 3, 1)))                                                         // seq 5 adds y to b
	mustApply(t, r, row("a", 1, fl("x", 9, 1)))                                                         // loses: no seq

	entries := func(after uint64, max int) string {
		t.Helper()
		log, err := r.ReadLog(after, max)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range log {
			got = append(got, fmt.Sprintf("%d:%s", e.Seq, e.Row.Series))
		}
		return fmt.Sprint(got)
	}
	if got := entries(0, 0); got != "[1:a 2:b 3:c 4:a 5:b]" {
		t.Fatalf("log = %v", got)
	}
	// A looked-up change's entry carries the whole row as it stored it.
	log, err := r.ReadLog(4, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := sameRow(log[0].Row, row("b", 1, fl("x", 1, 1), fl("y", 3, 1))); err != nil {
		t.Fatal(err)
	}
	// Reads that start or stop inside the record of seqs 1-3.
	for _, c := range []struct {
		after uint64
		max   int
		want  string
	}{
		{0, 1, "[1:a]"},
		{1, 1, "[2:b]"},
		{1, 0, "[2:b 3:c 4:a 5:b]"},
		{2, 2, "[3:c 4:a]"},
		{3, 1, "[4:a]"},
		{5, 10, "[]"},
	} {
		if got := entries(c.after, c.max); got != c.want {
			t.Fatalf("ReadLog(%d, %d) = %v, want %v", c.after, c.max, got, c.want)
		}
	}
	// The raw index holds the record and the two single entries.
	it, err := s.DB().NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var keys []uint64
	for ok := it.SeekGE(r.ks.seqLo); ok && string(it.Key()) < string(r.ks.seqHi); ok = it.Next() {
		seq, err := seqFromKey(it.Key())
		if err != nil {
			t.Fatal(err)
		}
		if isLogRecord(it.Value()) != (seq == 3) {
			t.Fatalf("log key %d: record %v", seq, isLogRecord(it.Value()))
		}
		keys = append(keys, seq)
	}
	if fmt.Sprint(keys) != "[3 4 5]" {
		t.Fatalf("log keys %v, want [3 4 5]", keys)
	}
	// A truncation inside the record keeps it, and reads above the point
	// skip its entries at or below it. (Rows only in a memory head pin
	// their records: written to pebble first.)
	drainMem(t, s)
	if err := r.TruncateLog(2); err != nil {
		t.Fatal(err)
	}
	if got := entries(2, 0); got != "[3:c 4:a 5:b]" {
		t.Fatalf("after TruncateLog(2): %v", got)
	}
	if _, err := r.ReadLog(1, 0); !errors.Is(err, ErrLogTruncated) {
		t.Fatalf("ReadLog below the point: %v", err)
	}
	if err := r.TruncateLog(3); err != nil {
		t.Fatal(err)
	}
	if got := entries(3, 0); got != "[4:a 5:b]" {
		t.Fatalf("after TruncateLog(3): %v", got)
	}
}

// TestGroupCommit applies from many goroutines at once and checks that
// every row is stored, sequences are unique and dense, and the watermark
// catches up.
func TestGroupCommit(t *testing.T) {
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	const writers, batches, perBatch = 8, 10, 20
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	results := make(chan ApplyResult, writers*batches)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for b := 0; b < batches; b++ {
				rows := make([]model.Row, perBatch)
				for i := range rows {
					rows[i] = row(fmt.Sprintf("s%d", w), int64(b*perBatch+i), fl("v", float64(i), 1))
				}
				res, err := r.Apply(rows)
				if err != nil {
					errs <- err
					return
				}
				if r.SyncedSeq() < res.LastSeq {
					errs <- fmt.Errorf("Apply returned before its rows were synced: %d < %d", r.SyncedSeq(), res.LastSeq)
					return
				}
				results <- res
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	close(results)
	for err := range errs {
		t.Fatal(err)
	}
	seen := map[uint64]bool{}
	for res := range results {
		if res.Changed != perBatch {
			t.Fatalf("batch changed %d rows, want %d", res.Changed, perBatch)
		}
		for q := res.LastSeq - perBatch + 1; q <= res.LastSeq; q++ {
			if seen[q] {
				t.Fatalf("sequence %d assigned twice", q)
			}
			seen[q] = true
		}
	}
	const total = writers * batches * perBatch
	for q := uint64(1); q <= total; q++ {
		if !seen[q] {
			t.Fatalf("sequence %d missing: not dense", q)
		}
	}
	if r.HighSeq() != total || r.SyncedSeq() != total {
		t.Fatalf("HighSeq %d, SyncedSeq %d, want %d", r.HighSeq(), r.SyncedSeq(), total)
	}
	if rows := scanAll(t, r); len(rows) != total {
		t.Fatalf("%d rows stored, want %d", len(rows), total)
	}
	checkSeqIndex(t, r)
}

// TestConcurrentOverwrites races writers on the same keys: the result must
// equal the model whatever the interleaving, since LWW is order-free.
func TestConcurrentOverwrites(t *testing.T) {
	t.Run("looked up", func(t *testing.T) { testConcurrentOverwrites(t, true) })
	t.Run("blind", func(t *testing.T) { testConcurrentOverwrites(t, false) })
}

// testConcurrentOverwrites runs TestConcurrentOverwrites with every write
// looked up first, or with late writes blind (merge operands); the log's
// fold into the stored rows is checked for the first.
func testConcurrentOverwrites(t *testing.T, lookUp bool) {
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	r.lookUpAlways = lookUp
	rng := newSeededRand(t)
	times := testTimes(rng, 12)
	var all [][]model.Row
	for i := 0; i < 24; i++ {
		rows := randRows(rng, 30, testSeries[:3], times)
		// As with real versions, one version always carries one value,
		// so a tie between concurrent batches is the same write twice.
		for _, r := range rows {
			for j := range r.Fields {
				v := r.Fields[j].Version
				r.Fields[j].Value = model.Float(float64(v.Wall*10) + float64(v.Node))
			}
		}
		all = append(all, rows)
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(all))
	for _, b := range all {
		wg.Add(1)
		go func(b []model.Row) {
			defer wg.Done()
			if _, err := r.Apply(b); err != nil {
				errs <- err
			}
		}(b)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	m := naiveModel{}
	for _, b := range all {
		m.apply(b)
	}
	if err := sameRows(scanAll(t, r), m.rows()); err != nil {
		t.Fatal(err)
	}
	if r.SyncedSeq() != r.HighSeq() {
		t.Fatalf("SyncedSeq %d != HighSeq %d", r.SyncedSeq(), r.HighSeq())
	}
	if lookUp {
		checkSeqIndex(t, r)
	}
}

func TestSyncTracker(t *testing.T) {
	tr := newSyncTracker(10)
	tr.add(11, 12)
	tr.add(13, 15)
	tr.add(16, 16)
	tr.done(13, nil) // out of order: no advance past the gap
	if got := tr.synced.Load(); got != 10 {
		t.Fatalf("synced %d, want 10", got)
	}
	done := make(chan error)
	go func() { done <- tr.wait(15) }()
	tr.done(11, nil)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := tr.synced.Load(); got != 15 {
		t.Fatalf("synced %d, want 15", got)
	}
	boom := errors.New("boom")
	go func() { done <- tr.wait(16) }()
	tr.done(16, boom)
	if err := <-done; !errors.Is(err, boom) {
		t.Fatalf("wait after failure: %v", err)
	}
	if err := tr.wait(15); err != nil {
		t.Fatalf("wait below the watermark: %v", err)
	}
}

// TestApplyFindsStoredRowsAfterReopen guards the lookup shortcut for rows
// newer than everything stored: after a reopen the bound comes from the
// last storage bucket, so an overwrite of the newest row must still merge
// with it (and supersede its index entry).
func TestApplyFindsStoredRowsAfterReopen(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{MemoryHead: memHeadTests, Dir: dir, MemTableSize: 4 << 20, CacheSize: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	r := lookingUp(createTestReplica(t, s))
	p := r.Info().Placement
	last := int64(5<<bucketShift + 12345)
	mustApply(t, r, row("a", 100, fl("x", 1, 1)), row("a", last, fl("x", 1, 1)), row("b", last-1, fl("x", 1, 1)))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTestStore(t, dir)
	r, _ = s.Replica(p)
	lookingUp(r)
	res := mustApply(t, r, row("a", last, fl("y", 2, 1)), row("b", last-1, fl("x", 9, 0)), row("c", last+1, fl("x", 3, 1)))
	if res.Changed != 2 {
		t.Fatalf("changed %d, want 2", res.Changed)
	}
	// Time-ordered writes after the reopen, then a late one below them.
	mustApply(t, r, row("a", last+10, fl("x", 4, 1)))
	mustApply(t, r, row("a", last+10, fl("x", 5, 2)), row("a", 100, fl("z", 6, 1)))
	want := []model.Row{
		row("a", 100, fl("x", 1, 1), fl("z", 6, 1)),
		row("b", last-1, fl("x", 1, 1)),
		row("a", last, fl("x", 1, 1), fl("y", 2, 1)),
		row("c", last+1, fl("x", 3, 1)),
		row("a", last+10, fl("x", 5, 2)),
	}
	if err := sameRows(scanAll(t, r), want); err != nil {
		t.Fatal(err)
	}
	checkSeqIndex(t, r)
}

// TestApplyTimeOrderedAgainstModel mixes mostly time-ordered batches with
// late and repeated rows, the pattern the lookup shortcut serves.
func TestApplyTimeOrderedAgainstModel(t *testing.T) {
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	rng := newSeededRand(t)
	m := naiveModel{}
	now := int64(-3 << bucketShift)
	for i := 0; i < 60; i++ {
		var times []int64
		for j := 0; j < 5; j++ {
			now += rng.Int63n(20e9)
			times = append(times, now)
		}
		if rng.Intn(3) == 0 {
			times = append(times, now-rng.Int63n(200e9)) // a late row
		}
		batch := randRows(rng, 1+rng.Intn(30), testSeries, times)
		want := m.apply(batch)
		if res := mustApply(t, r, batch...); res.Changed != want {
			t.Fatalf("batch %d: changed %d, want %d", i, res.Changed, want)
		}
	}
	if err := sameRows(scanAll(t, r), m.rows()); err != nil {
		t.Fatal(err)
	}
	checkSeqIndex(t, r)
}

// TestApplyOlderRowsAmongStored: rows older than the replica's newest are
// looked up in ascending key order with one iterator that seeks only past
// where it stands (rowLookup); new keys between, before and after stored
// ones, stored keys overwritten or tied, and keys past the last stored one
// all merge as the model says.
func TestApplyOlderRowsAmongStored(t *testing.T) {
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	m := naiveModel{}
	apply := func(rows ...model.Row) {
		t.Helper()
		want := m.apply(rows)
		if res := mustApply(t, r, rows...); res.Changed != want {
			t.Fatalf("changed %d rows, want %d", res.Changed, want)
		}
	}
	apply(row("z", 1<<50, fl("a", 1, 1))) // the newest: everything below is looked up
	for _, tm := range []int64{10, 30, 50} {
		apply(row("b", tm, fl("a", 1, 1)), row("d", tm, fl("a", 1, 1)))
	}
	var batch []model.Row
	for _, series := range []string{"a", "b", "c", "d", "e"} {
		for tm := int64(0); tm <= 60; tm += 10 {
			batch = append(batch, row(series, tm, fl("a", 2, 1+tm%20/10), fl("x", 3, 5))) // ties on a every other time
		}
	}
	apply(batch...)
	if err := sameRows(scanAll(t, r), m.rows()); err != nil {
		t.Fatal(err)
	}
	checkSeqIndex(t, r)
}

// TestRowLookupFind: rowLookup answers ascending lookups exactly as a map
// of the stored keys would, whatever the gaps between stored keys (it
// steps over a few, seeks past more).
func TestRowLookupFind(t *testing.T) {
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	rng := newSeededRand(t)
	stored := map[string]bool{}
	var rows []model.Row
	for i := 0; i < 400; i++ {
		if rng.Intn(3) == 0 {
			rows = append(rows, row(fmt.Sprintf("s%02d", i%20), int64(i/20), fl("a", 1, 1)))
			stored[string(r.ks.appendRowKey(nil, rows[len(rows)-1].Series, rows[len(rows)-1].Time))] = true
		}
	}
	mustApply(t, r, rows...)
	for round := 0; round < 20; round++ {
		if round == 10 {
			// From here on the rows are sealed: found in their blocks.
			if st, err := r.Seal(t.Context(), math.MaxInt64); err != nil || st.Rows != len(rows) {
				t.Fatalf("seal: %+v, %v; want %d rows", st, err, len(rows))
			}
		}
		it, err := newRowIter(s.db, r.memView(nil, nil), &r.ks, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		look := rowLookup{it: it}
		var keys [][]byte
		for i := 0; i < 400; i++ {
			if rng.Intn(1+round%4) == 0 {
				keys = append(keys, r.ks.appendRowKey(nil, fmt.Sprintf("s%02d", i%20), int64(i/20)))
			}
		}
		slices.SortFunc(keys, bytes.Compare)
		for _, k := range keys {
			found, err := look.find(k)
			if err != nil {
				t.Fatal(err)
			}
			if found != stored[string(k)] {
				t.Fatalf("round %d: find(%x) = %v, stored %v", round, k, found, stored[string(k)])
			}
			if found && !bytes.Equal(look.it.Key(), k) {
				t.Fatalf("find(%x) found, iterator on %x", k, look.it.Key())
			}
		}
		look.close()
	}
}

// TestLogRecordsBounded: a batch's changes are cut into records of at
// most maxRecordChanges changes and about maxRecordBytes, each under its
// last sequence, and read back whole and from inside any of them.
func TestLogRecordsBounded(t *testing.T) {
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	var small []model.Row
	for i := range 2*maxRecordChanges + 100 {
		small = append(small, row("s", int64(i), fl("v", float64(i), 1)))
	}
	mustApply(t, r, small...)
	big := strings.Repeat("x", 4<<10)
	var large []model.Row
	for i := range 100 { // 400 KiB of values: two records by size
		large = append(large, model.Row{Series: "t", Time: int64(i), Fields: []model.Field{{Name: "v", Value: model.String(big), Version: model.Version{Wall: 1, Node: 1}}}})
	}
	mustApply(t, r, large...)
	keys := rawLogKeys(t, s, r)
	n := uint64(len(small))
	if len(keys) != 5 || keys[0] != maxRecordChanges || keys[1] != 2*maxRecordChanges || keys[2] != n || keys[4] != n+100 {
		t.Fatalf("log keys %v; want %d, %d, %d, then two records of the large batch ending at %d", keys, maxRecordChanges, 2*maxRecordChanges, n, n+100)
	}
	all, err := r.ReadLog(0, 0)
	if err != nil || len(all) != int(n)+100 {
		t.Fatalf("ReadLog: %d entries, %v", len(all), err)
	}
	for i, e := range all {
		if e.Seq != uint64(i)+1 {
			t.Fatalf("entry %d has sequence %d", i, e.Seq)
		}
	}
	for _, after := range []uint64{1, maxRecordChanges - 1, maxRecordChanges, maxRecordChanges + 7, n - 1, n + 50} {
		got, err := r.ReadLog(after, 3)
		if err != nil || len(got) != min(3, int(n+100-after)) || got[0].Seq != after+1 {
			t.Fatalf("ReadLog(%d, 3) = %d entries, %v", after, len(got), err)
		}
		if err := sameRow(got[0].Row, all[after].Row); err != nil {
			t.Fatalf("ReadLog(%d, 3): %v", after, err)
		}
	}
}

// rawLogKeys returns the sequences of the replica's log keys, in order.
func rawLogKeys(t *testing.T, s *Store, r *Replica) []uint64 {
	t.Helper()
	it, err := s.DB().NewIter(&pebble.IterOptions{LowerBound: r.ks.seqLo, UpperBound: r.ks.seqHi})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var out []uint64
	for ok := it.First(); ok; ok = it.Next() {
		seq, err := seqFromKey(it.Key())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, seq)
	}
	return out
}
