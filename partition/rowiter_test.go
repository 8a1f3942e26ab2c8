package partition

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"sort"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/tsdb/tsdb/model"
)

// TestRowIterSeeks: a rowIter over head rows and sealed blocks answers a
// random mix of SeekGE (forward and back; to rows, past a series, to a
// bucket) and Next within random bounds as the sorted list of its keys
// does. Monotone seeks that pass over series without a block skip the
// pebble seeks of the block side (rowIter.sought), and a seek after a
// Next or a backward seek must not.
func TestRowIterSeeks(t *testing.T) {
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	fillRows(t, r, 20, timesN(500), func(int) int { return 64 })
	if st, err := r.Seal(t.Context(), splitTime(250)); err != nil || st.Rows == 0 {
		t.Fatalf("seal: %+v, %v", st, err)
	}
	// Head rows in sealed buckets too: every third series of the first
	// half written again, so some blocks have a head row over them and
	// some series have no block beside others that do.
	rows := scanAll(t, r)
	var again []model.Row
	for i, row := range rows {
		if i%3 == 0 && row.Time < splitTime(250) {
			again = append(again, row)
		}
	}
	mustApply(t, r, again...)
	flush(t, s)
	if n := countHeadRows(t, r); n == 0 {
		t.Fatal("no head rows over the blocks")
	}
	all := rowKeys(t, r, nil, nil)
	rng := newSeededRand(t)
	for round := range 40 {
		lower, upper := all[rng.Intn(len(all))], all[rng.Intn(len(all))]
		if bytes.Compare(lower, upper) > 0 {
			lower, upper = upper, lower
		}
		if round%4 == 0 {
			lower, upper = nil, nil
		}
		keys := rowKeys(t, r, lower, upper)
		it, err := newRowIter(s.db, r.memView(lower, upper), &r.ks, lower, upper)
		if err != nil {
			t.Fatal(err)
		}
		pos := -1
		for step := range 500 {
			if pos >= 0 && pos < len(keys) && rng.Intn(3) == 0 {
				ok := it.Next()
				pos++
				if ok != (pos < len(keys)) || ok && !bytes.Equal(it.Key(), keys[pos]) {
					_ = it.Close()
					t.Fatalf("round %d step %d: Next: %v %x, want row %d of %d", round, step, ok, it.Key(), pos, len(keys))
				}
				continue
			}
			k := append([]byte(nil), all[rng.Intn(len(all))]...)
			switch rng.Intn(3) {
			case 0: // past the series in its bucket
				k = k[:len(k)-timeLen]
				k[len(k)-1] = 1
			case 1: // the start of the bucket
				k = k[:len(r.ks.rowLo)+4]
			}
			low := k
			if lower != nil && bytes.Compare(low, lower) < 0 {
				low = lower
			}
			pos = sort.Search(len(keys), func(i int) bool { return bytes.Compare(keys[i], low) >= 0 })
			ok := it.SeekGE(k)
			if ok != (pos < len(keys)) || ok && !bytes.Equal(it.Key(), keys[pos]) {
				_ = it.Close()
				t.Fatalf("round %d step %d: SeekGE(%x): %v %x, want row %d of %d", round, step, k, ok, it.Key(), pos, len(keys))
			}
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// rowKeys lists the row keys of r in [lower, upper) by First and Next.
func rowKeys(t *testing.T, r *Replica, lower, upper []byte) [][]byte {
	t.Helper()
	it, err := newRowIter(r.store.db, r.memView(lower, upper), &r.ks, lower, upper)
	if err != nil {
		t.Fatal(err)
	}
	var keys [][]byte
	for ok := it.First(); ok; ok = it.Next() {
		keys = append(keys, append([]byte(nil), it.Key()...))
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	return keys
}

// TestRowIterSeekAgainAfterUpper: a Next that reaches upper inside the
// block a seek loaded leaves the block side where no later seek may
// trust it; a seek back to the start finds the block's first row again.
func TestRowIterSeekAgainAfterUpper(t *testing.T) {
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	mustApply(t, r, row("cpu", 10, fl("a", 1, 5)), row("cpu", 20, fl("a", 2, 5)), row("cpu", 30, fl("a", 3, 5)))
	if st, err := r.Seal(t.Context(), maxTime); err != nil || st.Rows != 3 {
		t.Fatalf("seal: %+v, %v", st, err)
	}
	if n := countHeadRows(t, r); n != 0 {
		t.Fatalf("%d head rows left", n)
	}
	upper := r.ks.appendRowKey(nil, "cpu", 20)
	it, err := newRowIter(s.db, r.memView(nil, upper), &r.ks, nil, upper)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = it.Close() }()
	first := r.ks.appendRowKey(nil, "cpu", 10)
	for pass := range 2 {
		if !it.First() || !bytes.Equal(it.Key(), first) {
			t.Fatalf("pass %d: First: %x, want %x", pass, it.Key(), first)
		}
		if it.Next() {
			t.Fatalf("pass %d: Next past upper: %x", pass, it.Key())
		}
	}
}

// TestBlockTimesDecodedOnlyWhenRead seals one series' block, breaks the
// codec byte of its timestamps column in the store, and reads it: an
// aggregate whose bucket holds the whole block answers from its header
// and summaries without decoding the times (rowIter.blockTimes), and
// every read that needs a row's time fails with ErrCorrupt, never a
// panic.
func TestBlockTimesDecodedOnlyWhenRead(t *testing.T) {
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	const width = int64(1) << bucketShift
	t0 := 25_000_000 * width // a storage bucket's start, in 2024
	const n = 300
	for i := range int64(n) {
		mustApply(t, r, row("cpu,host=a", t0+i*100e6, fl("v", float64(i%7), 1)))
	}
	if _, err := r.Seal(t.Context(), maxTime); err != nil {
		t.Fatal(err)
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: r.ks.blkLo, UpperBound: r.ks.blkHi})
	if err != nil {
		t.Fatal(err)
	}
	if !it.First() {
		t.Fatal("no block after the seal")
	}
	key, val := slices.Clone(it.Key()), slices.Clone(it.Value())
	if it.Next() {
		t.Fatalf("a second block %x", it.Key())
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	// version, flags, rows, first and last time, fields, then the
	// timestamps column (its length, its codec byte).
	off := 2
	_, k := binary.Uvarint(val[off:])
	off += k + 16
	_, k = binary.Uvarint(val[off:])
	off += k
	_, k = binary.Uvarint(val[off:])
	off += k
	val[off] ^= 0xff
	if err := s.db.Set(key, val, pebble.Sync); err != nil {
		t.Fatal(err)
	}

	whole := model.Query{From: t0, To: t0 + width, Step: width, Fields: []string{"v"}}
	got, err := r.Aggregate(whole)
	if err != nil {
		t.Fatalf("aggregate of the whole block in one bucket: %v", err)
	}
	if len(got) != 1 || len(got[0].Buckets) != 1 || got[0].Buckets[0].Fields[0].State.Count != n {
		t.Fatalf("aggregate of the whole block: %+v, want one bucket of %d rows", got, n)
	}
	for name, q := range map[string]model.Query{
		"buckets of 10 s":       {From: t0, To: t0 + width, Step: 10e9},
		"from inside the block": {From: t0 + 5e9, To: t0 + width, Step: width},
		"to inside the block":   {From: t0, To: t0 + 5e9, Step: width},
		"buckets offset by 7 s": {From: t0, To: t0 + width, Step: width, GroupAll: true, Offset: 7e9},
	} {
		if _, err := r.Aggregate(q); !errors.Is(err, ErrCorrupt) {
			t.Errorf("aggregate, %s: %v, want ErrCorrupt", name, err)
		}
	}
	if _, _, err := r.Scan(model.Query{From: t0, To: t0 + width}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("scan: %v, want ErrCorrupt", err)
	}
	if _, _, err := r.Scan(model.Query{From: t0 + 5e9, To: t0 + width, Fields: []string{"v"}}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("scan from inside the block: %v, want ErrCorrupt", err)
	}
}
