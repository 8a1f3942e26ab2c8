package partition

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/google/uuid"

	"github.com/tsdb/tsdb/model"
)

// storedRows decodes every row of the replica's row keyspace as stored
// (tombstones kept), by series and time, with its sequence.
func storedRows(t *testing.T, r *Replica) map[string]LogEntry {
	t.Helper()
	mem := r.memView(nil, nil) // the head in memory too
	pb, err := r.store.db.NewIter(&pebble.IterOptions{LowerBound: r.ks.rowLo, UpperBound: r.ks.rowHi})
	if err != nil {
		t.Fatal(err)
	}
	it := newHeadIter(pb, mem, r.ks.rowLo, r.ks.rowHi)
	defer it.Close()
	out := map[string]LogEntry{}
	var raw rawRow
	var slab fieldSlab
	for ok := it.SeekGE(r.ks.rowLo); ok; ok = it.Next() {
		_, series, tm, err := rowKeyParts(it.Key())
		if err != nil {
			t.Fatal(err)
		}
		v, err := it.ValueAndErr()
		if err != nil {
			t.Fatal(err)
		}
		if err := decodeRaw(v, &raw); err != nil {
			t.Fatal(err)
		}
		out[fmt.Sprintf("%s@%d", series, tm)] = LogEntry{Seq: raw.seq, Row: toModelRow(string(series), tm, &raw, interner{}, nil, false, &slab)}
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
	return out
}

// rawLogEntry is one change of the log as stored, decoded from a record
// or a single entry.
type rawLogEntry struct {
	seq uint64
	e   seqEntry
}

// rawLog decodes the replica's log as stored: every change of every
// record and single entry, in sequence order.
func rawLog(t *testing.T, s *Store, r *Replica) []rawLogEntry {
	t.Helper()
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: r.ks.seqLo, UpperBound: r.ks.seqHi})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var out []rawLogEntry
	for ok := it.First(); ok; ok = it.Next() {
		seq, err := seqFromKey(it.Key())
		if err != nil {
			t.Fatal(err)
		}
		v := bytes.Clone(it.Value())
		if !isLogRecord(v) {
			e, err := seqValueParts(v)
			if err != nil {
				t.Fatalf("entry %d: %v", seq, err)
			}
			out = append(out, rawLogEntry{seq, e})
			continue
		}
		first, n, body, err := logRecordParts(v, seq)
		if err != nil {
			t.Fatal(err)
		}
		var rec recordReader
		for i := 0; i < n; i++ {
			var e seqEntry
			if e, body, err = rec.next(body, first+uint64(i)); err != nil {
				t.Fatalf("record %d, entry %d: %v", seq, i, err)
			}
			e.rowValue = bytes.Clone(e.rowValue) // a compact entry's is the reader's
			out = append(out, rawLogEntry{first + uint64(i), e})
		}
		if len(body) != 0 {
			t.Fatalf("record %d: %d bytes left", seq, len(body))
		}
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkLogIsStored checks the log of a replica whose writes are all
// looked up (each entry then carries the whole row as stored by its
// change): every stored row's newest entry is at its stored sequence with
// its stored value, every entry names a stored row, and every entry has
// the wanted origin (by series).
func checkLogIsStored(t *testing.T, r *Replica, entries []LogEntry, origins map[string]uuid.UUID) {
	t.Helper()
	stored := storedRows(t, r)
	newest := map[string]LogEntry{}
	for i, e := range entries {
		if i > 0 && e.Seq <= entries[i-1].Seq {
			t.Fatalf("entry %d: sequence %d after %d", i, e.Seq, entries[i-1].Seq)
		}
		k := fmt.Sprintf("%s@%d", e.Row.Series, e.Row.Time)
		if _, ok := stored[k]; !ok {
			t.Fatalf("entry %d (%s) has no stored row", e.Seq, k)
		}
		if o := origins[e.Row.Series]; e.Origin != o {
			t.Fatalf("entry %d (%s): origin %s, want %s", e.Seq, k, e.Origin, o)
		}
		newest[k] = e
	}
	if len(newest) != len(stored) {
		t.Fatalf("log entries name %d rows, %d stored", len(newest), len(stored))
	}
	for k, e := range newest {
		s := stored[k]
		if s.Seq != e.Seq {
			t.Fatalf("newest entry %d (%s): row stored with sequence %d", e.Seq, k, s.Seq)
		}
		if err := sameRow(e.Row, s.Row); err != nil {
			t.Fatalf("entry %d: %v", e.Seq, err)
		}
	}
}

// logTestRows writes rows of every kind, tombstones (kind 5), overwrites,
// a partial merge and pushed rows with an origin, and returns the wanted
// origin by series.
func logTestRows(t *testing.T, r *Replica) map[string]uuid.UUID {
	t.Helper()
	o := uuid.New()
	v := func(w int64) model.Version { return model.Version{Wall: w, Node: 7} }
	f := func(name string, val model.Value, w int64) model.Field {
		return model.Field{Name: name, Value: val, Version: v(w)}
	}
	mustApply(t, r,
		row("kinds", 1, f("f", model.Float(-0.5), 1), f("i", model.Int(-3), 1), f("b", model.Bool(true), 1), f("s", model.String("héllo"), 1)),
		row("kinds", -1<<40, f("s", model.String(""), 2)),
		row("dead", 5, f("a", model.Float(1), 1), f("b", model.Float(2), 1)),
		row("over", 5, f("a", model.Float(1), 1)),
		row("mixed", 5, f("a", model.Float(1), 1), f("b", model.Float(2), 1)),
	)
	mustApply(t, r, row("dead", 5, f("a", model.Deleted(), 2), f("b", model.Deleted(), 2))) // all tombstones
	mustApply(t, r, row("over", 5, f("a", model.Float(9), 3)))                              // overwrite: its first entry leaves
	if _, err := r.ApplyFrom([]model.Row{
		row("pushed", 7, f("a", model.Deleted(), 4), f("z", model.Int(1), 4)),
		row("mixed", 5, f("a", model.Float(3), 4)), // b kept from here: no origin
	}, o, 0); err != nil {
		t.Fatal(err)
	}
	return map[string]uuid.UUID{"pushed": o}
}

// TestLogEntriesCarryRows: each log entry carries its row's value as
// written, so ReadLog (live and from a LogSnapshot) returns exactly the
// stored rows, tombstones and origins included, without reading the row
// keyspace: with the rows deleted underneath it, the log still decodes.
func TestLogEntriesCarryRows(t *testing.T) {
	s := openPlainStore(t, "")
	r := lookingUp(createTestReplica(t, s))
	origins := logTestRows(t, r)
	entries, err := r.ReadLog(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	checkLogIsStored(t, r, entries, origins)
	if len(entries) != 9 {
		t.Fatalf("%d entries, want the 9 changes", len(entries))
	}
	// Every change carries a value, and the newest of each row holds the
	// stored value bytes.
	newest := map[string]rawLogEntry{}
	for _, le := range rawLog(t, s, r) {
		if le.e.rowValue == nil {
			t.Fatalf("entry %d without its value: %+v", le.seq, le.e)
		}
		newest[string(r.ks.appendRowKey(nil, string(le.e.series), le.e.t))] = le
	}
	for key, le := range newest {
		rv, closer, err := s.db.Get([]byte(key))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(rv, le.e.rowValue) {
			t.Fatalf("entry %d carries %x, the row holds %x", le.seq, le.e.rowValue, rv)
		}
		_ = closer.Close()
	}

	ls, err := r.SnapshotLog()
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	// Remove the rows (not the log) behind the replica's back: a read
	// that looked a row up would fail with ErrCorrupt.
	if err := s.db.DeleteRange(r.ks.rowLo, r.ks.rowHi, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	for name, read := range map[string]func(uint64, int) ([]LogEntry, error){"live": r.ReadLog, "snapshot": ls.ReadLog} {
		got, err := read(0, 0)
		if err != nil {
			t.Fatalf("%s: ReadLog without rows: %v", name, err)
		}
		if len(got) != len(entries) {
			t.Fatalf("%s: %d entries, want %d", name, len(got), len(entries))
		}
		for i := range got {
			if got[i].Seq != entries[i].Seq || got[i].Origin != entries[i].Origin {
				t.Fatalf("%s: entry %d = %d/%s, want %d/%s", name, i, got[i].Seq, got[i].Origin, entries[i].Seq, entries[i].Origin)
			}
			if err := sameRow(got[i].Row, entries[i].Row); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		// Paged reads give the same entries.
		page, err := read(entries[1].Seq, 2)
		if err != nil || len(page) != 2 || page[0].Seq != entries[2].Seq || page[1].Seq != entries[3].Seq {
			t.Fatalf("%s: page after %d: %v, %v", name, entries[1].Seq, page, err)
		}
	}
}

// legacyLog rewrites the log of r in the legacy form, as a store written
// before issue 16 has it: one entry (no row) per row, at the sequence of
// the row's newest change, and no log format marker. It returns the
// sequences it kept.
func legacyLog(t *testing.T, s *Store, r *Replica) map[uint64]bool {
	t.Helper()
	newest := map[string]rawLogEntry{}
	for _, le := range rawLog(t, s, r) {
		newest[fmt.Sprintf("%s@%d", le.e.series, le.e.t)] = le
	}
	b := s.db.NewBatch()
	if err := b.DeleteRange(r.ks.seqLo, r.ks.seqHi, nil); err != nil {
		t.Fatal(err)
	}
	kept := map[uint64]bool{}
	for _, le := range newest {
		if err := b.Set(r.ks.appendSeqKey(nil, le.seq), appendLegacySeqValue(nil, string(le.e.series), le.e.t, le.e.origin), nil); err != nil {
			t.Fatal(err)
		}
		kept[le.seq] = true
	}
	if err := b.Delete(logFormatKey, nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		t.Fatal(err)
	}
	return kept
}

// TestLegacyLogUpgrade: a store whose log entries have the legacy form
// (written before they carried rows) reads them by looking the rows up,
// and the next Open rewrites them in the current form once (with the
// marker written) without changing what ReadLog returns.
func TestLegacyLogUpgrade(t *testing.T) {
	dir := t.TempDir()
	s := openPlainStore(t, dir)
	r := lookingUp(createTestReplica(t, s))
	placement := r.Info().Placement
	origins := logTestRows(t, r)
	for i := int64(0); i < 300; i++ { // enough for several pages
		mustApply(t, r, row(fmt.Sprintf("bulk,n=%d", i%7), 1000+i, fl("a", float64(i), 1)))
	}
	all, err := r.ReadLog(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	kept := legacyLog(t, s, r)
	var want []LogEntry // what a legacy log holds: each row's newest change
	for _, e := range all {
		if kept[e.Seq] {
			want = append(want, e)
		}
	}
	same := func(what string, got []LogEntry) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d entries, want %d", what, len(got), len(want))
		}
		for i := range got {
			if got[i].Seq != want[i].Seq || got[i].Origin != want[i].Origin {
				t.Fatalf("%s: entry %d = %d/%s, want %d/%s", what, i, got[i].Seq, got[i].Origin, want[i].Seq, want[i].Origin)
			}
			if err := sameRow(got[i].Row, want[i].Row); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		}
	}
	// The fallback: legacy entries read through their rows.
	got, err := r.ReadLog(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	same("legacy", got)
	// A mixed log (a new write among legacy entries) reads both forms.
	mustApply(t, r, row("late", 1, fl("a", 1, 1)))
	got, err = r.ReadLog(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	same("mixed", got[:len(got)-1])
	if l := got[len(got)-1]; l.Row.Series != "late" {
		t.Fatalf("last entry %+v, want the late row", l)
	}
	want = got
	checkLogIsStored(t, r, want, origins)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openPlainStore(t, dir)
	r, ok := s.Replica(placement)
	if !ok {
		t.Fatal("replica gone after reopen")
	}
	v, closer, err := s.db.Get(logFormatKey)
	if err != nil || string(v) != logFormat {
		t.Fatalf("log format marker %q, %v; want %q", v, err, logFormat)
	}
	_ = closer.Close()
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: r.ks.seqLo, UpperBound: r.ks.seqHi})
	if err != nil {
		t.Fatal(err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		if e, err := seqValueParts(it.Value()); err != nil || e.rowValue == nil {
			t.Fatalf("entry %x not upgraded: %+v, %v", it.Key(), e, err)
		}
	}
	_ = it.Close()
	got, err = r.ReadLog(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	same("upgraded", got)
	checkLogIsStored(t, r, got, origins)
	if r.HighSeq() != want[len(want)-1].Seq {
		t.Fatalf("high sequence %d after the upgrade, want %d", r.HighSeq(), want[len(want)-1].Seq)
	}
}

// TestLogFormatUnknown: a store marked with a log format this build does
// not know is refused at Open rather than misread.
func TestLogFormatUnknown(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir)
	if err := s.db.Set(logFormatKey, []byte("9"), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err := Open(Options{MemoryHead: memHeadTests, Dir: dir}); err == nil {
		_ = s.Close()
		t.Fatal("Open accepted an unknown log format")
	}
}

// TestLogValuesOff: with SetLogValues(false) (a replica with no target)
// each Apply writes the entry of its last change only, in the legacy form
// (no value), and raises the truncation point to the sequence before it in
// the same batch. A read of the log from below the point fails with
// ErrLogTruncated, live and from a LogSnapshot (such a reader takes a row
// snapshot, which holds every row); from the point it gives the last
// change. With values on again the entries carry their rows and the log
// reads from the point; off again, the entries below the new point are
// deleted at once. The point, the high sequence and the entries survive a
// reopen.
func TestLogValuesOff(t *testing.T) {
	dir := t.TempDir()
	s := openPlainStore(t, dir)
	r := lookingUp(createTestReplica(t, s))
	r.SetLogValues(false)
	if r.LogValues() {
		t.Fatal("LogValues after SetLogValues(false)")
	}
	logTestRows(t, r)
	forms := func() (legacy, current int) {
		it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: r.ks.seqLo, UpperBound: r.ks.seqHi})
		if err != nil {
			t.Fatal(err)
		}
		defer it.Close()
		for ok := it.First(); ok; ok = it.Next() {
			e, err := seqValueParts(it.Value())
			if err != nil {
				t.Fatal(err)
			}
			if e.rowValue == nil {
				legacy++
			} else {
				current++
			}
		}
		return legacy, current
	}
	// tailOnly checks the log of a replica nobody reads: one legacy entry,
	// the newest change's, just above the truncation point, and no read
	// of the log from below it.
	tailOnly := func(when string) {
		t.Helper()
		if l, c := forms(); l != 1 || c != 0 {
			t.Fatalf("%s: %d legacy and %d current entries, want 1 and 0", when, l, c)
		}
		high := r.HighSeq()
		if r.LogStart() != high-1 {
			t.Fatalf("%s: truncation point %d at high sequence %d, want %d", when, r.LogStart(), high, high-1)
		}
		ls, err := r.SnapshotLog()
		if err != nil {
			t.Fatal(err)
		}
		defer ls.Close()
		for name, read := range map[string]func(uint64, int) ([]LogEntry, error){"live": r.ReadLog, "snapshot": ls.ReadLog} {
			if _, err := read(0, 0); !errors.Is(err, ErrLogTruncated) {
				t.Fatalf("%s: %s log from 0: %v, want ErrLogTruncated", when, name, err)
			}
			got, err := read(r.LogStart(), 0)
			if err != nil || len(got) != 1 || got[0].Seq != high {
				t.Fatalf("%s: %s log from the point: %+v, %v; want the entry at %d", when, name, got, err, high)
			}
		}
		// What a reader from below the point takes instead: every row.
		rows, err := ls.ReadRows(nil, RowRange{}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if stored := storedRows(t, r); len(rows) != len(stored) {
			t.Fatalf("%s: row snapshot of %d rows, %d stored", when, len(rows), len(stored))
		}
	}
	tailOnly("values off")
	if got := len(storedRows(t, r)); got != 6 {
		t.Fatalf("%d rows stored, want 6", got)
	}

	r.SetLogValues(true)
	mustApply(t, r, row("later", 9, model.Field{Name: "a", Value: model.Float(1), Version: model.Version{Wall: 9, Node: 7}}))
	if l, c := forms(); l != 1 || c != 1 {
		t.Fatalf("values on again: %d legacy and %d current entries, want 1 and 1", l, c)
	}
	got, err := r.ReadLog(r.LogStart(), 0)
	if err != nil || len(got) != 2 || got[1].Seq != r.HighSeq() || got[1].Row.Series != "later" {
		t.Fatalf("values on again, the log from the point: %+v, %v", got, err)
	}
	if st := storedRows(t, r)["later@9"]; st.Seq != got[1].Seq || sameRow(got[1].Row, st.Row) != nil {
		t.Fatalf("values on again: entry %+v, stored %+v", got[1], st)
	}

	r.SetLogValues(false)
	mustApply(t, r, row("off again", 10, fl("a", 1, 1)))
	tailOnly("values off again")

	placement := r.Info().Placement
	high, point := r.HighSeq(), r.LogStart()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openPlainStore(t, dir)
	r, ok := s.Replica(placement)
	if !ok {
		t.Fatal("replica gone after reopen")
	}
	if !r.LogValues() {
		t.Fatal("a reopened replica writes log values until its pusher says otherwise")
	}
	if r.HighSeq() != high || r.LogStart() != point {
		t.Fatalf("after reopen: high %d and point %d, want %d and %d", r.HighSeq(), r.LogStart(), high, point)
	}
	tailOnly("after reopen")
	r.SetLogValues(false)
	mustApply(t, r, row("after reopen", 11, fl("a", 1, 1)))
	tailOnly("values off after reopen")
}

// TestLegacyLogUpgradeSkipsMissingRow: a legacy entry whose row is missing
// does not fail Open: the upgrade leaves it as it is, counts it
// (UpgradeSkipped) and rewrites every other entry.
func TestLegacyLogUpgradeSkipsMissingRow(t *testing.T) {
	dir := t.TempDir()
	s := openPlainStore(t, dir)
	r := createTestReplica(t, s)
	placement := r.Info().Placement
	for i := int64(0); i < 20; i++ {
		mustApply(t, r, row(fmt.Sprintf("s%d", i%3), i, fl("a", float64(i), 1)))
	}
	n := len(legacyLog(t, s, r)) // 20 distinct rows: every entry kept
	// The row of the entry at sequence 5 (s1@4) disappears behind the
	// replica's back.
	if err := s.db.Delete(r.ks.appendRowKey(nil, "s1", 4), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openPlainStore(t, dir)
	if got := s.UpgradeSkipped(); got != 1 {
		t.Fatalf("UpgradeSkipped = %d, want 1", got)
	}
	r, ok := s.Replica(placement)
	if !ok {
		t.Fatal("replica gone after reopen")
	}
	legacy, current := 0, 0
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: r.ks.seqLo, UpperBound: r.ks.seqHi})
	if err != nil {
		t.Fatal(err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		e, err := seqValueParts(it.Value())
		if err != nil {
			t.Fatal(err)
		}
		if e.rowValue == nil {
			legacy++
			if seq, _ := seqFromKey(it.Key()); seq != 5 {
				t.Fatalf("entry %d left legacy, want only 5", seq)
			}
		} else {
			current++
		}
	}
	_ = it.Close()
	if legacy != 1 || current != n-1 {
		t.Fatalf("%d legacy and %d current entries, want 1 and %d", legacy, current, n-1)
	}
	if es, err := r.ReadLog(5, 0); err != nil || len(es) != n-5 {
		t.Fatalf("ReadLog after the skipped entry: %d entries, %v; want %d", len(es), err, n-5)
	}
	if _, err := r.ReadLog(0, 0); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("ReadLog across the skipped entry: %v, want ErrCorrupt", err)
	}
}

// TestLogFormatEntriesOpens: a store marked with the log format of entries
// only (before log records), or of records without compact entries, opens,
// its entries read as they are, the marker becomes the current one, and
// new batches are written as records that read back beside the old
// entries.
func TestLogFormatEntriesOpens(t *testing.T) {
	for _, old := range []string{logFormatEntries, logFormatRecords} {
		t.Run("from "+old, func(t *testing.T) { testLogFormatOpens(t, old) })
	}
}

func testLogFormatOpens(t *testing.T, old string) {
	dir := t.TempDir()
	s := openTestStore(t, dir)
	r := lookingUp(createTestReplica(t, s))
	placement := r.Info().Placement
	for i := int64(0); i < 5; i++ {
		mustApply(t, r, row("one", i, fl("a", float64(i), 1))) // single entries 1-5
	}
	if err := s.db.Set(logFormatKey, []byte(old), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTestStore(t, dir)
	v, closer, err := s.db.Get(logFormatKey)
	if err != nil || string(v) != logFormat {
		t.Fatalf("log format marker %q, %v; want %q", v, err, logFormat)
	}
	_ = closer.Close()
	r, ok := s.Replica(placement)
	if !ok {
		t.Fatal("replica gone after reopen")
	}
	r = lookingUp(r)
	mustApply(t, r, row("two", 1, fl("a", 1, 1)), row("two", 2, fl("a", 2, 1)), row("two", 3, fl("a", 3, 1))) // record 6-8, 7 and 8 compact
	entries, err := r.ReadLog(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	checkLogIsStored(t, r, entries, nil)
	if len(entries) != 8 || entries[7].Seq != 8 || entries[5].Row.Series != "two" || entries[7].Row.Fields[0].Value != model.Float(3) {
		t.Fatalf("log after reopen: %+v", entries)
	}
	if got, err := r.ReadLog(5, 1); err != nil || len(got) != 1 || got[0].Seq != 6 {
		t.Fatalf("ReadLog(5, 1) = %+v, %v; want the record's first change", got, err)
	}
}

// TestLogRecordCompact: a record's entries read back with the very row
// values written, whole or compact (log format 4): a value is written
// compact only after a whole one of its layout and versions, and only
// when it starts with its own sequence; anything else (another version,
// another layout, an int of another length, a string, only tombstones)
// is whole and starts a layout of its own.
func TestLogRecordCompact(t *testing.T) {
	var enc valueEncoder
	v1, v2 := model.Version{Wall: 5, Node: 1}, model.Version{Wall: 6, Node: 1}
	f := func(name string, v model.Value, ver model.Version) model.Field {
		return model.Field{Name: name, Value: v, Version: ver}
	}
	rows := [][]model.Field{
		{f("a", model.Float(1), v1), f("b", model.Float(2), v1)},
		{f("a", model.Float(3), v1), f("b", model.Float(4), v1)},      // compact
		{f("a", model.Float(5), v1), f("b", model.Float(6), v1)},      // compact
		{f("a", model.Float(5), v2), f("b", model.Float(6), v1)},      // versions differ
		{f("a", model.Float(7), v2), f("b", model.Float(8), v1)},      // compact
		{f("a", model.Float(7), v1), f("c", model.Float(8), v1)},      // another name
		{f("i", model.Int(1), v1), f("k", model.Bool(true), v1)},      // whole
		{f("i", model.Int(-2), v1), f("k", model.Bool(false), v1)},    // compact: same varint length
		{f("i", model.Int(1<<40), v1), f("k", model.Bool(false), v1)}, // a longer varint
		{f("s", model.String("x"), v1)},                               // strings: no layout
		{f("s", model.String("y"), v1)},                               // whole again
		{f("d", model.Value{Kind: model.KindDeleted}, v1)},            // no payloads
		{f("d", model.Value{Kind: model.KindDeleted}, v1)},            // whole again
		{f("a", model.Float(9), v1), f("d", model.Value{Kind: model.KindDeleted}, v1)},
		{f("a", model.Float(10), v1), f("d", model.Value{Kind: model.KindDeleted}, v1)}, // compact
		{f("a", model.Float(11), v1), f("d", model.Value{Kind: model.KindDeleted}, v1)}, // wrong sequence: whole
	}
	wantCompact := []bool{false, true, true, false, true, false, false, true, false, false, false, false, false, false, true, false}
	const first = 100
	origin := uuid.MustParse("6ba7b810-9dad-11d1-80b4-00c04fd430c8")
	rec := appendLogRecordHeader(nil, len(rows))
	whole := len(rec)
	var w recordWriter
	var vals [][]byte
	for i, fs := range rows {
		seq := uint64(first + i)
		valSeq := seq
		if i == len(rows)-1 {
			valSeq = 7
		}
		var efs []encField
		for j := range fs {
			efs = append(efs, encFromModel(&fs[j]))
		}
		v := enc.appendValue(nil, valSeq, efs)
		vals = append(vals, v)
		o := uuid.Nil
		if i%3 == 1 {
			o = origin
		}
		rec = w.appendEntry(rec, seq, fmt.Sprintf("s%d", i), int64(i)*1000, o, v)
		whole += len(appendRecordEntry(nil, fmt.Sprintf("s%d", i), int64(i)*1000, o, v))
	}
	if len(rec) >= whole {
		t.Fatalf("record of %d bytes, %d with whole entries only", len(rec), whole)
	}
	gotFirst, n, body, err := logRecordParts(rec, first+uint64(len(rows))-1)
	if err != nil || gotFirst != first || n != len(rows) {
		t.Fatalf("logRecordParts: first %d, %d entries, %v", gotFirst, n, err)
	}
	var rr recordReader
	for i := range n {
		compact := len(body) > timeLen && body[timeLen]&seqFlagCompact != 0
		var e seqEntry
		if e, body, err = rr.next(body, first+uint64(i)); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		if compact != wantCompact[i] {
			t.Errorf("entry %d: compact %v, want %v", i, compact, wantCompact[i])
		}
		if !bytes.Equal(e.rowValue, vals[i]) {
			t.Errorf("entry %d: value %x, want %x", i, e.rowValue, vals[i])
		}
		if string(e.series) != fmt.Sprintf("s%d", i) || e.t != int64(i)*1000 || (e.origin == origin) != (i%3 == 1) {
			t.Errorf("entry %d: series %q, time %d, origin %v", i, e.series, e.t, e.origin)
		}
	}
	if len(body) != 0 {
		t.Fatalf("%d bytes after the entries", len(body))
	}
}

// TestReadLogCompactEntries: ReadLog gives every change of a batch whose
// rows change layout and versions from row to row (so its records hold
// whole and compact entries of several templates) with the very fields it
// wrote, from the start and from inside a record, live and from a
// snapshot of the log.
func TestReadLogCompactEntries(t *testing.T) {
	s := openTestStore(t, t.TempDir())
	r := createTestReplica(t, s)
	f := func(name string, v model.Value, wall int64) model.Field {
		return model.Field{Name: name, Value: v, Version: model.Version{Wall: wall, Node: 1}}
	}
	var rows []model.Row
	for i := range 40 {
		t := int64(1000 + i)
		se := fmt.Sprintf("s%02d", i)
		switch i % 8 {
		case 0, 1, 2:
			rows = append(rows, row(se, t, f("a", model.Float(float64(i)), 5), f("b", model.Float(-float64(i)), 5)))
		case 3:
			rows = append(rows, row(se, t, f("a", model.Float(float64(i)), 6), f("b", model.Float(1), 5)))
		case 4:
			rows = append(rows, row(se, t, f("i", model.Int(int64(i)), 5), f("k", model.Bool(i%16 == 4), 5)))
		case 5:
			rows = append(rows, row(se, t, f("i", model.Int(int64(-i)), 5), f("k", model.Bool(true), 5)))
		case 6:
			rows = append(rows, row(se, t, f("s", model.String(se), 5)))
		case 7:
			rows = append(rows, row(se, t, f("a", model.Float(float64(i)), 5), f("d", model.Deleted(), 5)))
		}
	}
	mustApply(t, r, rows...)
	want := map[string]model.Row{}
	for _, rw := range rows {
		want[rw.Series] = rw
	}
	check := func(name string, got []LogEntry, n int) {
		t.Helper()
		if len(got) != n {
			t.Fatalf("%s: %d entries, want %d", name, len(got), n)
		}
		for _, e := range got {
			w := want[e.Row.Series]
			if e.Row.Time != w.Time || len(e.Row.Fields) != len(w.Fields) {
				t.Fatalf("%s: sequence %d: %+v, want %+v", name, e.Seq, e.Row, w)
			}
			for j := range w.Fields {
				if e.Row.Fields[j] != w.Fields[j] {
					t.Fatalf("%s: sequence %d field %d: %+v, want %+v", name, e.Seq, j, e.Row.Fields[j], w.Fields[j])
				}
			}
		}
	}
	all, err := r.ReadLog(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	check("live", all, len(rows))
	checkLogIsStored(t, r, all, nil)
	from, err := r.ReadLog(all[0].Seq+10, 0) // inside the record
	if err != nil {
		t.Fatal(err)
	}
	check("from inside", from, len(rows)-11)
	ls, err := r.SnapshotLog()
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	snap, err := ls.ReadLog(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	check("snapshot", snap, len(rows))
}

// TestReadLogCompactPayloadCorrupt: a compact entry whose payload no row
// value holds (a bool of 2) reads as ErrCorrupt, as the whole entry's
// would, not as a value.
func TestReadLogCompactPayloadCorrupt(t *testing.T) {
	s := openTestStore(t, t.TempDir())
	r := createTestReplica(t, s)
	b := func(series string, v bool) model.Row {
		return row(series, 1000, model.Field{Name: "k", Value: model.Bool(v), Version: ver(5)})
	}
	mustApply(t, r, b("a", true), b("b", false), b("c", true))
	if _, err := r.ReadLog(0, 0); err != nil {
		t.Fatal(err)
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: r.ks.seqLo, UpperBound: r.ks.seqHi})
	if err != nil {
		t.Fatal(err)
	}
	if !it.Last() {
		t.Fatal("no log")
	}
	k, v := bytes.Clone(it.Key()), bytes.Clone(it.Value())
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if !isLogRecord(v) || v[len(v)-1] != 1 {
		t.Fatalf("the batch's log is not a record ending in its last bool: %x", v)
	}
	v[len(v)-1] = 2 // the last (compact) entry's payload
	if err := s.db.Set(k, v, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if got, err := r.ReadLog(0, 0); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("ReadLog of a bool payload 2: %+v, %v; want ErrCorrupt", got, err)
	}
}

// TestLogRecordCorrupt: a log record cut short or with a changed byte
// reads as ErrCorrupt or as entries that account for every byte, never as
// a panic, and an entry decoder refuses a record.
func TestLogRecordCorrupt(t *testing.T) {
	var enc valueEncoder
	rec := appendLogRecordHeader(nil, 3)
	var w recordWriter
	for i := range 3 {
		val := enc.appendValue(nil, uint64(10+i), []encField{encFromModel(&model.Field{Name: "v", Value: model.Float(float64(i)), Version: model.Version{Wall: 5, Node: 1}})})
		rec = w.appendEntry(rec, uint64(10+i), fmt.Sprintf("s%d", i), int64(i), uuid.Nil, val)
	}
	decodeAll := func(v []byte) (int, error) {
		first, n, body, err := logRecordParts(v, 12)
		if err != nil {
			return 0, err
		}
		if first != 10 {
			return 0, fmt.Errorf("first %d", first)
		}
		var rr recordReader
		for i := 0; i < n; i++ {
			var e seqEntry
			if e, body, err = rr.next(body, first+uint64(i)); err != nil {
				return i, err
			}
			var raw rawRow
			if err := decodeRaw(e.rowValue, &raw); err != nil {
				return i, err
			}
		}
		if len(body) != 0 {
			return n, fmt.Errorf("%w: %d bytes left", ErrCorrupt, len(body))
		}
		return n, nil
	}
	if n, err := decodeAll(rec); n != 3 || err != nil {
		t.Fatalf("intact record: %d entries, %v", n, err)
	}
	if _, err := seqValueParts(rec); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("seqValueParts of a record: %v, want ErrCorrupt", err)
	}
	if _, _, _, err := logRecordParts(rec, 2); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a record of 3 changes under sequence 2: %v, want ErrCorrupt", err)
	}
	for cut := 0; cut < len(rec); cut++ {
		if _, err := decodeAll(rec[:cut]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("record cut at %d: %v, want ErrCorrupt", cut, err)
		}
	}
	for i := range rec {
		for _, b := range []byte{0x00, 0x01, 0x7f, 0xff} {
			v := bytes.Clone(rec)
			v[i] = b
			if _, err := decodeAll(v); err != nil && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("byte %d set to %#x: %v, want nil or ErrCorrupt", i, b, err)
			}
		}
	}
}
