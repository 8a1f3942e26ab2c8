package partition

import (
	"bytes"
	"sort"
	"testing"

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
