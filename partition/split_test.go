package partition

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/tsdb/tsdb/model"
)

const (
	splitBase = int64(1_700_000_000_000_000_000) // a 2023 time in ns, not bucket-aligned
	splitStep = int64(10e9)                      // 10 s between row times
)

// splitTime is the i-th row time of the split tests.
func splitTime(i int) int64 { return splitBase + int64(i)*splitStep }

// randText returns n bytes that snappy cannot compress much, so disk
// bytes follow raw bytes.
func randText(rng *rand.Rand, n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rng.Intn(len(alphabet))]
	}
	return string(b)
}

// fillRows applies, for each time in times, one row per series whose
// string field holds size(i) bytes (i is the time's index).
func fillRows(t testing.TB, r *Replica, series int, times []int64, size func(i int) int) {
	t.Helper()
	rng := rand.New(rand.NewSource(1))
	for i, ts := range times {
		rows := make([]model.Row, series)
		for s := range rows {
			rows[s] = model.Row{Time: ts, Series: fmt.Sprintf("cpu,host=h%03d", s), Fields: []model.Field{
				{Name: "text", Value: model.String(randText(rng, size(i))), Version: ver(1)},
				{Name: "v", Value: model.Float(rng.Float64()), Version: ver(1)},
			}}
		}
		mustApply(t, r, rows...)
	}
}

func timesN(n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = splitTime(i)
	}
	return out
}

func flush(t testing.TB, s *Store) {
	t.Helper()
	drainMem(t, s)
	if err := s.DB().Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
}

// timeWeight is the stored rows and key+value bytes at one time.
type timeWeight struct {
	t     int64
	rows  int
	bytes int
}

// weights reads the replica's rows in [from, to) straight from pebble and
// returns their weights per time, in time order.
func weights(t testing.TB, r *Replica, from, to int64) []timeWeight {
	t.Helper()
	drainMem(t, r.store)
	it, err := r.store.db.NewIter(&pebble.IterOptions{LowerBound: r.ks.rowLo, UpperBound: r.ks.rowHi})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	m := map[int64]*timeWeight{}
	for valid := it.First(); valid; valid = it.Next() {
		_, _, ts, err := rowKeyParts(it.Key())
		if err != nil {
			t.Fatal(err)
		}
		if ts < from || ts >= to {
			continue
		}
		w := m[ts]
		if w == nil {
			w = &timeWeight{t: ts}
			m[ts] = w
		}
		v := it.LazyValue()
		w.rows++
		w.bytes += len(it.Key()) + v.Len()
	}
	out := make([]timeWeight, 0, len(m))
	for _, w := range m {
		out = append(out, *w)
	}
	slices.SortFunc(out, func(a, b timeWeight) int { return cmpInt64(a.t, b.t) })
	return out
}

// shares returns the fractions of the rows and of the bytes before split.
func shares(ws []timeWeight, split int64) (rows, bytes float64) {
	var lr, lb, tr, tb int
	for _, w := range ws {
		if w.t < split {
			lr += w.rows
			lb += w.bytes
		}
		tr += w.rows
		tb += w.bytes
	}
	return float64(lr) / float64(tr), float64(lb) / float64(tb)
}

// mustSplit calls splitPoint in mode and checks that both sides are
// non-empty: first time < t <= last time.
func mustSplit(t *testing.T, r *Replica, mode splitMode, ws []timeWeight) int64 {
	t.Helper()
	split, used, err := r.splitPoint(mode)
	if err != nil {
		t.Fatalf("splitPoint(%v): %v", mode, err)
	}
	if mode != splitAuto && used != mode {
		t.Fatalf("splitPoint(%v) used %v", mode, used)
	}
	if split <= ws[0].t || split > ws[len(ws)-1].t {
		t.Fatalf("split %d outside (%d, %d]", split, ws[0].t, ws[len(ws)-1].t)
	}
	return split
}

var splitModes = []splitMode{splitEstimate, splitScan, splitAuto}

// TestSplitPointUniform: equal rows at evenly spaced times over about 70
// storage buckets split near the middle by row count.
func TestSplitPointUniform(t *testing.T) {
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	fillRows(t, r, 20, timesN(500), func(int) int { return 64 })
	flush(t, s)
	ws := weights(t, r, minTime, maxTime)
	for _, mode := range splitModes {
		t.Run(mode.String(), func(t *testing.T) {
			split := mustSplit(t, r, mode, ws)
			rows, bytes := shares(ws, split)
			t.Logf("split at time index %d: %.3f of rows, %.3f of bytes", (split-splitBase)/splitStep, rows, bytes)
			if rows < 0.4 || rows > 0.6 {
				t.Fatalf("split leaves %.3f of the rows on the left, want 0.4..0.6", rows)
			}
		})
	}
}

// TestSplitPointSealed: the rows of TestSplitPointUniform, sealed into
// blocks up to the middle of their time, then all of them, still split
// near the middle: the blocks weigh their buckets (their values, random
// strings, compress no better in blocks than in the head).
func TestSplitPointSealed(t *testing.T) {
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	fillRows(t, r, 20, timesN(500), func(int) int { return 64 })
	ws := weights(t, r, minTime, maxTime)
	for _, c := range []struct {
		name   string
		before int64
	}{{"half", splitTime(250)}, {"all", maxTime}} {
		if st, err := r.Seal(t.Context(), c.before); err != nil || st.Rows == 0 {
			t.Fatalf("seal %s: %+v, %v", c.name, st, err)
		}
		flush(t, s)
		if n := countHeadRows(t, r); c.name == "all" && n != 0 {
			t.Fatalf("%d head rows left after sealing everything", n)
		}
		for _, mode := range splitModes {
			t.Run(c.name+"/"+mode.String(), func(t *testing.T) {
				split := mustSplit(t, r, mode, ws)
				rows, _ := shares(ws, split)
				t.Logf("split at time index %d: %.3f of rows", (split-splitBase)/splitStep, rows)
				checkByteShare(t, mode, rows) // equal rows: the rows' share is the bytes'
			})
		}
	}
}

// TestSplitPointSkewed: 90% of the bytes in the last 10% of the time range;
// the split follows the bytes, not the time.
func TestSplitPointSkewed(t *testing.T) {
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	const n = 1000
	fillRows(t, r, 5, timesN(n), func(i int) int {
		if i >= n*9/10 {
			return 8000
		}
		return 0
	})
	flush(t, s)
	ws := weights(t, r, minTime, maxTime)
	if _, b := shares(ws, splitTime(n*9/10)); b > 0.12 {
		t.Fatalf("setup: first 90%% of the time holds %.3f of the bytes", b)
	}
	for _, mode := range splitModes {
		t.Run(mode.String(), func(t *testing.T) {
			split := mustSplit(t, r, mode, ws)
			_, bytes := shares(ws, split)
			t.Logf("split at time index %d: %.3f of bytes", (split-splitBase)/splitStep, bytes)
			if split < splitTime(n*9/10) {
				t.Fatalf("split at time index %d, want in the last 10%% (>= %d)", (split-splitBase)/splitStep, n*9/10)
			}
			checkByteShare(t, mode, bytes)
		})
	}
}

// checkByteShare checks the left side's share of the bytes: within 10% of
// the middle when the bytes are counted exactly, 15% when weighed by the
// sstable estimates (compressed, per block).
func checkByteShare(t *testing.T, mode splitMode, share float64) {
	t.Helper()
	tol := 0.1
	if mode == splitEstimate {
		tol = 0.15
	}
	if share < 0.5-tol || share > 0.5+tol {
		t.Fatalf("split leaves %.3f of the bytes on the left, want 0.5±%.2f", share, tol)
	}
}

// TestSplitPointBigAndSmallRows: big rows early, small rows late; the split
// balances bytes, far from the middle by row count.
func TestSplitPointBigAndSmallRows(t *testing.T) {
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	const n = 1000
	fillRows(t, r, 10, timesN(n), func(i int) int {
		if i < n/5 {
			return 1500
		}
		return 20
	})
	flush(t, s)
	ws := weights(t, r, minTime, maxTime)
	for _, mode := range splitModes {
		t.Run(mode.String(), func(t *testing.T) {
			split := mustSplit(t, r, mode, ws)
			rows, bytes := shares(ws, split)
			t.Logf("split at time index %d: %.3f of rows, %.3f of bytes", (split-splitBase)/splitStep, rows, bytes)
			checkByteShare(t, mode, bytes)
			if rows > 0.3 {
				t.Fatalf("split leaves %.3f of the rows on the left: it follows rows, not bytes", rows)
			}
		})
	}
}

// TestSplitPointCannotSplit: no rows, or every row at one time.
func TestSplitPointCannotSplit(t *testing.T) {
	cases := []struct {
		name  string
		fill  func(t *testing.T, r *Replica)
		flush bool
	}{
		{"empty", func(*testing.T, *Replica) {}, false},
		{"one_time_memtable", func(t *testing.T, r *Replica) { fillRows(t, r, 300, timesN(1), func(int) int { return 50 }) }, false},
		{"one_time_flushed", func(t *testing.T, r *Replica) { fillRows(t, r, 300, timesN(1), func(int) int { return 50 }) }, true},
		{"one_time_overwritten", func(t *testing.T, r *Replica) {
			for w := int64(1); w <= 3; w++ {
				mustApply(t, r, row("a", 7, fl("v", 1, w)), row("b", 7, fl("v", 1, w)))
			}
		}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := openTestStore(t, "")
			r := createTestReplica(t, s)
			c.fill(t, r)
			if c.flush {
				flush(t, s)
			}
			for _, mode := range splitModes {
				if split, _, err := r.splitPoint(mode); !errors.Is(err, ErrCannotSplit) {
					t.Fatalf("splitPoint(%v) = %d, %v; want ErrCannotSplit", mode, split, err)
				}
			}
		})
	}
}

// TestSplitPointTwoTimes: with two distinct times, t is the second one,
// whichever holds more bytes and whether or not they share a bucket.
func TestSplitPointTwoTimes(t *testing.T) {
	const t1 = splitBase
	cases := []struct {
		name         string
		t2           int64
		size1, size2 int
	}{
		{"same_bucket", t1 + 1, 100, 100},
		{"same_bucket_heavy_first", t1 + 1, 5000, 10},
		{"same_bucket_heavy_second", t1 + 1, 10, 5000},
		{"far_buckets", t1 + 50<<bucketShift, 100, 100},
		{"far_buckets_heavy_first", t1 + 50<<bucketShift, 5000, 10},
		{"far_buckets_heavy_second", t1 + 50<<bucketShift, 10, 5000},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := openTestStore(t, "")
			r := createTestReplica(t, s)
			fillRows(t, r, 50, []int64{t1, c.t2}, func(i int) int { return []int{c.size1, c.size2}[i] })
			for _, flushed := range []bool{false, true} {
				if flushed {
					flush(t, s)
				}
				for _, mode := range splitModes {
					split, _, err := r.splitPoint(mode)
					if err != nil || split != c.t2 {
						t.Fatalf("flushed=%v splitPoint(%v) = %d, %v; want %d", flushed, mode, split, err, c.t2)
					}
				}
			}
		})
	}
}

// TestSplitPointMemtableOnly: with every row still in the memtable the
// estimates are 0; SplitPoint weighs by scanning and still splits near the
// middle, and the estimate mode alone still returns a valid t.
func TestSplitPointMemtableOnly(t *testing.T) {
	s := openPlainStore(t, "")
	r := createTestReplica(t, s)
	fillRows(t, r, 20, timesN(150), func(int) int { return 40 })
	if n, err := r.DiskUsage(); err != nil || n != 0 {
		t.Fatalf("setup: DiskUsage = %d, %v; want the rows in the memtable only", n, err)
	}
	ws := weights(t, r, minTime, maxTime)
	split, used, err := r.splitPoint(splitAuto)
	if err != nil {
		t.Fatal(err)
	}
	if used != splitScan {
		t.Fatalf("SplitPoint weighed by %v, want scan", used)
	}
	if rows, _ := shares(ws, split); rows < 0.4 || rows > 0.6 {
		t.Fatalf("split leaves %.3f of the rows on the left, want 0.4..0.6", rows)
	}
	if got, err := r.SplitPoint(); err != nil || got != split {
		t.Fatalf("SplitPoint = %d, %v; want %d", got, err, split)
	}
	mustSplit(t, r, splitEstimate, ws)
}

// TestSplitPointAutoUsesEstimates: a flushed replica above splitScanBelow
// is weighed by the estimates.
func TestSplitPointAutoUsesEstimates(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 6 MB")
	}
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	fillRows(t, r, 20, timesN(300), func(int) int { return 1000 })
	flush(t, s)
	if n, err := r.DiskUsage(); err != nil || n < splitScanBelow {
		t.Fatalf("setup: DiskUsage = %d, %v; want >= %d", n, err, splitScanBelow)
	}
	ws := weights(t, r, minTime, maxTime)
	split, used, err := r.splitPoint(splitAuto)
	if err != nil || used != splitEstimate {
		t.Fatalf("splitPoint = %d by %v, %v; want by estimate", split, used, err)
	}
	_, bytes := shares(ws, split)
	checkByteShare(t, splitEstimate, bytes)
}

// TestSplitPointBoundedRange: a replica with a range [begin, end) splits
// strictly inside it with both sides non-empty; stray rows outside the
// range (in the edge buckets and far away) are ignored.
func TestSplitPointBoundedRange(t *testing.T) {
	begin := splitTime(0) + 12345 // mid-bucket
	end := splitTime(400) + 7
	inside := make([]int64, 0, 400)
	for i := 0; i < 400; i++ {
		inside = append(inside, begin+int64(i)*splitStep)
	}
	for _, flushed := range []bool{false, true} {
		t.Run(fmt.Sprintf("flushed=%v", flushed), func(t *testing.T) {
			s := openTestStore(t, "")
			// The rows are written through a replica of the whole table,
			// and r shares its data space (space.go): the strays are
			// rows of that space outside r's range.
			// r is created once they are stored: a range the space holds
			// no row of would start a space of its own.
			wide := createSharingReplica(t, s, nil, nil)
			fillRows(t, wide, 10, inside, func(int) int { return 30 })
			// Strays: just before begin and at end (the edge buckets), and
			// heavy ones far outside.
			fillRows(t, wide, 10, []int64{begin - 1, end, end + 1}, func(int) int { return 30 })
			fillRows(t, wide, 10, []int64{begin - 1000*splitStep, end + 1000*splitStep}, func(int) int { return 20000 })
			r := createSharingReplica(t, s, &begin, &end)
			if flushed {
				flush(t, s)
			}
			ws := weights(t, r, begin, end)
			for _, mode := range splitModes {
				split := mustSplit(t, r, mode, ws)
				if split <= begin || split >= end {
					t.Fatalf("%v: split %d not strictly inside [%d, %d)", mode, split, begin, end)
				}
				if mode == splitEstimate && !flushed {
					continue // estimates are all 0: any valid t will do
				}
				if rows, _ := shares(ws, split); rows < 0.4 || rows > 0.6 {
					t.Fatalf("%v: split leaves %.3f of the in-range rows on the left", mode, rows)
				}
			}
		})
	}
}

// TestSplitPointBoundedRangeStraysOnly: rows exist but none inside the
// range: nothing to split.
func TestSplitPointBoundedRangeStraysOnly(t *testing.T) {
	s := openTestStore(t, "")
	begin, end := splitTime(10), splitTime(20)
	wide := createSharingReplica(t, s, nil, nil)
	r := createSharingReplica(t, s, &begin, &end)
	fillRows(t, wide, 5, []int64{begin - 1, end, splitTime(0), splitTime(30)}, func(int) int { return 10 })
	if _, err := r.SplitPoint(); !errors.Is(err, ErrCannotSplit) {
		t.Fatalf("SplitPoint: %v; want ErrCannotSplit", err)
	}
	fillRows(t, r, 5, []int64{begin}, func(int) int { return 10 })
	if _, err := r.SplitPoint(); !errors.Is(err, ErrCannotSplit) {
		t.Fatalf("SplitPoint with in-range rows at one time: %v; want ErrCannotSplit", err)
	}
	fillRows(t, r, 5, []int64{end - 1}, func(int) int { return 10 })
	if got, err := r.SplitPoint(); err != nil || got != end-1 {
		t.Fatalf("SplitPoint = %d, %v; want %d", got, err, end-1)
	}
}

// TestSplitPointDoesNotTakeApplyLock: SplitPoint completes while an Apply
// holds the apply lock.
func TestSplitPointDoesNotTakeApplyLock(t *testing.T) {
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	fillRows(t, r, 5, timesN(20), func(int) int { return 10 })
	entered := make(chan struct{})
	release := make(chan struct{})
	r.hookApplyLocked = func() {
		close(entered)
		<-release
	}
	applied := make(chan error, 1)
	go func() {
		_, err := r.Apply([]model.Row{row("late", splitTime(100), fl("v", 1, 1))})
		applied <- err
	}()
	<-entered
	done := make(chan error, 1)
	go func() {
		_, err := r.SplitPoint()
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("SplitPoint: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("SplitPoint blocked on the apply lock")
	}
	close(release)
	if err := <-applied; err != nil {
		t.Fatal(err)
	}
	r.hookApplyLocked = nil
}

// TestSplitPointDropped: a dropped replica reports ErrDropped.
func TestSplitPointDropped(t *testing.T) {
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	fillRows(t, r, 2, timesN(3), func(int) int { return 10 })
	if err := s.DropReplica(r.Info().Placement); err != nil {
		t.Fatal(err)
	}
	if _, err := r.SplitPoint(); !errors.Is(err, ErrDropped) {
		t.Fatalf("SplitPoint: %v; want ErrDropped", err)
	}
}

func TestChooseCut(t *testing.T) {
	sl := func(bytes ...uint64) []timeSlot {
		out := make([]timeSlot, len(bytes))
		for i, b := range bytes {
			out[i] = timeSlot{min: int64(i), bytes: b}
		}
		return out
	}
	cases := []struct {
		name              string
		slots             []timeSlot
		frac              float64
		hasBefore, hasAft bool
		want              int
		ok                bool
	}{
		{"middle", sl(1, 1, 1, 1), 0.5, false, false, 2, true},
		{"start_allowed", sl(1, 1, 1, 1), 0, true, false, 0, true},
		{"start_needs_rows_before", sl(1, 1, 1, 1), 0, false, false, 1, true},
		{"end_allowed", sl(1, 1, 1, 1), 1, false, true, 4, true},
		{"end_needs_rows_after", sl(1, 1, 1, 1), 1, false, false, 3, true},
		{"heavy_first", sl(10, 1, 1), 0.5, false, false, 1, true},
		{"heavy_last", sl(1, 1, 10), 0.5, false, false, 2, true},
		{"heavy_last_cut_after", sl(1, 1, 10), 0.95, false, true, 3, true},
		{"tie_takes_earliest", sl(2, 2), 0.25, true, true, 0, true},
		{"one_slot_alone", sl(5), 0.5, false, false, 0, false},
		{"one_slot_rows_before", sl(5), 0.5, true, false, 0, true},
		{"one_slot_rows_after", sl(5), 0.5, false, true, 1, true},
		{"empty_both_sides", nil, 0.5, true, true, 0, true},
		{"empty_one_side", nil, 0.5, true, false, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := chooseCut(c.slots, c.frac, c.hasBefore, c.hasAft)
			if ok != c.ok || (ok && got != c.want) {
				t.Fatalf("chooseCut = %d, %v; want %d, %v", got, ok, c.want, c.ok)
			}
		})
	}
}

func TestCutFraction(t *testing.T) {
	cases := []struct {
		total, before, through uint64
		want                   float64
	}{
		{100, 0, 100, 0.5},
		{100, 40, 60, 0.5},
		{100, 50, 100, 0},
		{100, 0, 50, 1},
		{100, 60, 80, 0},  // median before the bucket
		{100, 10, 20, 1},  // median after it
		{100, 30, 30, 1},  // empty bucket, median after
		{100, 70, 70, 0},  // empty bucket, median before
		{100, 50, 50, .5}, // empty bucket at the median
		{0, 0, 0, .5},
	}
	for _, c := range cases {
		if got := cutFraction(c.total, c.before, c.through); got != c.want {
			t.Errorf("cutFraction(%d, %d, %d) = %v, want %v", c.total, c.before, c.through, got, c.want)
		}
	}
}

// TestTimeSlots: sums are kept exactly and the map stays bounded when
// there are more distinct times than slots.
func TestTimeSlots(t *testing.T) {
	const max = 64
	s := newTimeSlots(max)
	rng := rand.New(rand.NewSource(2))
	var total uint64
	minT := int64(1 << 62)
	for i := 0; i < 10_000; i++ {
		ts := splitBase + rng.Int63n(1<<bucketShift)
		n := uint64(1 + rng.Intn(100))
		s.add(ts, n)
		total += n
		minT = min(minT, ts)
		if len(s.m) > max {
			t.Fatalf("%d slots, max %d", len(s.m), max)
		}
	}
	got := s.sorted()
	var sum uint64
	for i, sl := range got {
		sum += sl.bytes
		if i > 0 && sl.min <= got[i-1].min {
			t.Fatal("slots out of order")
		}
	}
	if sum != total || got[0].min != minT {
		t.Fatalf("sum %d first %d; want %d, %d", sum, got[0].min, total, minT)
	}
	if len(got) < max/(1<<splitCoarsenBits) {
		t.Fatalf("only %d slots left", len(got))
	}

	exact := newTimeSlots(max)
	for _, ts := range []int64{5, 3, 5, -1} {
		exact.add(ts, 10)
	}
	want := []timeSlot{{-1, 10}, {3, 10}, {5, 20}}
	if got := exact.sorted(); !slices.Equal(got, want) {
		t.Fatalf("slots %v, want %v", got, want)
	}
}

// BenchmarkSplitPoint finds the split point of 1M rows (1000 series x 1000
// times 10 s apart, about 146 storage buckets of ~6900 rows), flushed to
// sstables: by the estimates (what SplitPoint picks here) and by a full key
// scan (what it does when the data is small or largely unflushed). Run:
//
//	go test -run '^$' -bench SplitPoint ./partition/
func BenchmarkSplitPoint(b *testing.B) {
	s := openBenchStore(b)
	r := createTestReplica(b, s)
	rows := benchRows()
	const times = 1000
	for i := int64(0); i < times; i++ {
		setBenchTime(rows, i*benchInterval)
		if _, err := r.Apply(rows); err != nil {
			b.Fatal(err)
		}
	}
	flush(b, s)
	for _, mode := range []splitMode{splitAuto, splitScan} {
		b.Run("mode="+mode.String(), func(b *testing.B) {
			var split int64
			var used splitMode
			start := time.Now()
			for b.Loop() {
				var err error
				if split, used, err = r.splitPoint(mode); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(time.Since(start).Microseconds())/1e3/float64(b.N), "ms/split")
			i := split / benchInterval
			if i < times*4/10 || i > times*6/10 {
				b.Fatalf("split at time index %d of %d", i, times)
			}
			b.Logf("rows=%d weighed by %v, split at time index %d", benchBatch*times, used, i)
		})
	}
}

// rowsOnDisk returns pebble's estimate of the replica's rows on disk (the
// 'r' keyspace and the 'b' one of sealed blocks), after checking that the whole replica, its log included
// (whose entries carry the rows' values again), is clearly larger: SizeOver
// and Size must measure the rows only, or splits trigger early.
func rowsOnDisk(t *testing.T, r *Replica) uint64 {
	t.Helper()
	rows, err := estimateRows(r.store.db, r.applyMu.mem, &r.ks, r.ks.rowLo, r.ks.rowHi) // the head and the (absent) blocks
	if err != nil || rows == 0 {
		t.Fatalf("setup: rows on disk after flush = %d, %v", rows, err)
	}
	all, err := r.DiskUsage()
	if err != nil || all < rows+rows/4 {
		t.Fatalf("setup: the whole replica takes %d bytes on disk, its rows %d: the log should add about as much (%v)", all, rows, err)
	}
	return rows
}

// TestSizeOver: with the rows only in the memtable the estimate is 0 and
// SizeOver scans (stopping past the limit); once flushed the estimate of
// the rows alone (not the log) decides alone; a limit above the data is
// never reported as passed.
func TestSizeOver(t *testing.T) {
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	fillRows(t, r, 20, timesN(100), func(int) int { return 100 }) // about 250 KB
	ws := weights(t, r, minTime, maxTime)
	var total uint64
	for _, w := range ws {
		total += uint64(w.bytes)
	}
	for _, tc := range []struct {
		limit uint64
		over  bool
	}{{0, true}, {total / 4, true}, {total - 1, true}, {total, false}, {total * 4, false}} {
		over, n, err := r.SizeOver(tc.limit)
		if err != nil || over != tc.over {
			t.Fatalf("unflushed: SizeOver(%d) = %v, %d, %v; want over=%v (data: %d bytes)", tc.limit, over, n, err, tc.over, total)
		}
		if over && (n <= tc.limit || n > tc.limit+200) {
			t.Fatalf("unflushed: SizeOver(%d) measured %d; the scan should stop just past the limit", tc.limit, n)
		}
	}
	flush(t, s)
	est := rowsOnDisk(t, r)
	if over, n, err := r.SizeOver(est - 1); err != nil || !over || n != est {
		t.Fatalf("flushed: SizeOver(%d) = %v, %d, %v; want the estimate %d", est-1, over, n, err, est)
	}
	if over, _, err := r.SizeOver(est * 4); err != nil || over {
		t.Fatalf("flushed: SizeOver(%d) = %v, %v; want false", est*4, over, err)
	}
}

// TestSize: without a memory head, unflushed, the scan counts the rows;
// flushed, the estimate of the rows alone (not the log) is used as is.
func TestSize(t *testing.T) {
	s := openPlainStore(t, "")
	r := createTestReplica(t, s)
	fillRows(t, r, 20, timesN(100), func(int) int { return 100 }) // about 250 KB
	ws := weights(t, r, minTime, maxTime)
	var total uint64
	for _, w := range ws {
		total += uint64(w.bytes)
	}
	// Unflushed: the estimate knows nothing, the scan counts the rows.
	if n, err := r.Size(total * 2); err != nil || n != total {
		t.Fatalf("unflushed: Size(%d) = %d, %v; want the scanned %d", total*2, n, err, total)
	}
	if n, err := r.Size(total / 4); err != nil || n <= total/4 || n > total/4+200 {
		t.Fatalf("unflushed: Size(%d) = %d, %v; the scan should stop just past the limit", total/4, n, err)
	}
	flush(t, s)
	est := rowsOnDisk(t, r)
	// An estimate at or above the limit is used as is: no scan.
	if n, err := r.Size(est); err != nil || n != est {
		t.Fatalf("flushed: Size(%d) = %d, %v; want the estimate", est, n, err)
	}
}

// TestSizeFromMemoryHead: with a memory head the unsealed rows are counted
// where they are, without reading them (the master measures every recent
// replica on every pass): Size is the estimate, which counts the memory
// head's rows before anything is flushed, and a scan limit below it does
// not stop a scan there.
func TestSizeFromMemoryHead(t *testing.T) {
	s := openMemStore(t, nil, t.TempDir(), 0)
	r := createTestReplica(t, s)
	fillRows(t, r, 20, timesN(100), func(int) int { return 100 }) // about 250 KB
	if err := s.gate.Enter(ErrClosed); err != nil {
		t.Fatal(err)
	}
	est, err := r.rowDiskUsage()
	s.gate.Exit()
	if err != nil || est < 200_000 {
		t.Fatalf("estimate of 2,000 rows of ~120 bytes in the memory head = %d, %v; want the memory they hold", est, err)
	}
	for _, limit := range []uint64{est * 2, est / 4} {
		if n, err := r.Size(limit); err != nil || n != est {
			t.Fatalf("Size(%d) = %d, %v; want the estimate %d", limit, n, err, est)
		}
	}
	// The estimate weighs a row in memory as the split checker's scan
	// does (its key and value), so the pre-split's rate and the split
	// trigger measure one thing.
	if err := s.gate.Enter(ErrClosed); err != nil {
		t.Fatal(err)
	}
	scanned, err := r.scanSize(1 << 62)
	s.gate.Exit()
	if err != nil || scanned != est {
		t.Fatalf("scan of the rows in memory = %d, %v; want the estimate %d", scanned, err, est)
	}
}

// TestSizeOfSiblingsInOneBucket: pre-split children at "now" share their
// parent's data space and one storage bucket (68 s wide, the children
// 1 s). Each is measured by its own rows only: the bucket's estimate,
// flushed or not, would make every child as large as all of them together
// and set off a split of each (and the master's rate estimate ten times
// over). A child that does hold more than the limit is still over it once
// its rows are flushed and the WAL is gone.
func TestSizeOfSiblingsInOneBucket(t *testing.T) {
	s := openTestStore(t, "")
	base := int64(1) << 40 // a bucket's start
	parent := createSharingReplica(t, s, nil, nil)
	const children = 10
	// 50 series x 20 rows in each child's second; child 0 three times as
	// many times. They are written through the parent before the children
	// are created (a range the space holds no row of would start a space
	// of its own).
	for i := range children {
		n := 20
		if i == 0 {
			n = 60
		}
		var times []int64
		for j := range int64(n) {
			times = append(times, base+int64(i)*1e9+j*1e9/int64(n))
		}
		spaceRows(t, parent, 50, times, 1)
	}
	var kids []*Replica
	for i := range int64(children) {
		begin, end := base+i*1e9, base+(i+1)*1e9
		k := createSharingReplica(t, s, &begin, &end)
		if k.DataSpace() != parent.DataSpace() {
			t.Fatalf("child %d did not share its parent's rows", i)
		}
		kids = append(kids, k)
	}
	one, err := kids[1].Size(1 << 30)
	if err != nil || one == 0 {
		t.Fatalf("Size of a child = %d, %v", one, err)
	}
	for _, flushed := range []bool{false, true} {
		if flushed {
			flush(t, s)
		}
		for i, k := range kids {
			limit := 2 * one // above every child's rows but child 0's
			over, n, err := k.SizeOver(limit)
			if err != nil || over != (i == 0) {
				t.Fatalf("flushed=%v: child %d: SizeOver(%d) = %v, %d, %v; want over=%v (one child's rows: %d bytes)",
					flushed, i, limit, over, n, err, i == 0, one)
			}
			sz, err := k.Size(1 << 30)
			if err != nil || i > 0 && sz > one+one/2 {
				t.Fatalf("flushed=%v: child %d: Size = %d, %v; want about one child's %d bytes", flushed, i, sz, err, one)
			}
			// Unflushed, the rows are counted one by one (in the memory
			// head, or by the scan without one): child 0's three times
			// as many show. Flushed, the estimate shares the bucket by
			// time.
			if !flushed && i == 0 && sz < 2*one {
				t.Fatalf("unflushed: child 0 (3 times the rows of the others): Size = %d; want about 3 times one child's %d bytes", sz, one)
			}
		}
	}
	// The disk estimate (DiskUsage, the replicas API) gives each child the
	// share of the bucket its second covers: neither the whole bucket nor
	// nothing.
	bk := timeBucket(base)
	edge := kids[0].rangeBounds()
	bucket, err := s.db.EstimateDiskUsage(edge.bucketKey(bk), edge.bucketEnd(bk))
	if err != nil || bucket == 0 {
		t.Fatalf("the bucket's estimate = %d, %v", bucket, err)
	}
	for i, k := range kids {
		if err := s.gate.Enter(ErrClosed); err != nil {
			t.Fatal(err)
		}
		rows, err := k.rowDiskUsage()
		s.gate.Exit()
		if err != nil || rows == 0 || rows > bucket/4 {
			t.Fatalf("child %d: row disk usage %d, %v; want a share of the bucket's %d bytes (1 s of 10)", i, rows, err, bucket)
		}
	}
}

// TestSizeScanRefusesKeyInWrongBucket: a row key whose storage bucket does
// not match its time would make the size scan's seek go backwards (an
// endless loop); the scan reports it as corrupt instead.
func TestSizeScanRefusesKeyInWrongBucket(t *testing.T) {
	s := openTestStore(t, "")
	base := int64(1) << 40               // a bucket's start
	createSharingReplica(t, s, nil, nil) // the space the child shares
	// The child's range spans two buckets, in part each.
	begin, end := base+1e9, base+1<<bucketShift+1e9
	child := createSharingReplica(t, s, &begin, &end)
	spaceRows(t, child, 3, []int64{begin, begin + 1}, 1)
	if n, err := scanSizeOf(s, child); err != nil || n == 0 {
		t.Fatalf("scanSize before the bad key = %d, %v", n, err)
	}
	// A key of the child's second bucket holding a time before its range.
	key := child.ks.appendBucketSeriesKey(nil, timeBucket(begin)+1, "cpu,host=h00")
	key = append(key, 0)
	key = binary.BigEndian.AppendUint64(key, orderedTime(base))
	if err := s.db.Set(key, []byte{0}, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	forgetSize(child) // else the last scan's memo answers: nothing was applied since
	if _, err := scanSizeOf(s, child); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("scanSize over a key in the wrong bucket: %v, want ErrCorrupt", err)
	}
}

// scanSizeOf runs r.scanSize inside the store's gate, as its callers do.
func scanSizeOf(s *Store, r *Replica) (uint64, error) {
	if err := s.gate.Enter(ErrClosed); err != nil {
		return 0, err
	}
	defer s.gate.Exit()
	return r.scanSize(1 << 30)
}

// forgetSize drops r's size memo: the next check scans.
func forgetSize(r *Replica) { r.sizeMemo.remember(time.Time{}, 0, 0, 0) }

// TestSizeMemo: a child at "now" in a shared space whose storage bucket
// holds its siblings' rows. The split trigger's first check scans it; the
// checks that follow project from that scan by the sequences assigned
// since (no scan), and never below the rows' true size while the rows are
// alike; once the projection passes the limit they scan again, and the
// scan decides. A memo older than sizeMemoTTL (sizeMemoIdleTTL if no row
// came since), or one with no row to average from, is not used.
func TestSizeMemo(t *testing.T) {
	s := openTestStore(t, "")
	base := int64(1) << 40
	sib := createSharingReplica(t, s, nil, nil) // the space; its rows fill the bucket around the child
	begin, end := base+10e9, base+20e9
	child := createSharingReplica(t, s, &begin, &end)
	spaceRows(t, sib, 50, []int64{base + 1e9, base + 30e9}, 1)
	spaceRows(t, child, 20, []int64{begin, begin + 1}, 1)
	exact := func() uint64 {
		t.Helper()
		if err := s.gate.Enter(ErrClosed); err != nil {
			t.Fatal(err)
		}
		defer s.gate.Exit()
		n, _, err := child.countSize(1 << 62)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	check := func(limit uint64, wantScan bool) uint64 {
		t.Helper()
		before := child.sizeScans.Load()
		if err := s.gate.Enter(ErrClosed); err != nil {
			t.Fatal(err)
		}
		n, err := child.scanSize(limit)
		s.gate.Exit()
		if err != nil {
			t.Fatal(err)
		}
		if scanned := child.sizeScans.Load() > before; scanned != wantScan {
			t.Fatalf("scanSize(%d) = %d: scanned %v, want %v", limit, n, scanned, wantScan)
		}
		return n
	}
	size0 := exact()
	if n := check(1<<30, true); n != size0 {
		t.Fatalf("first check = %d, want the scan's %d", n, size0)
	}
	if n := check(1<<30, false); n != size0 {
		t.Fatalf("check with nothing applied since = %d, want the memo's %d", n, size0)
	}
	spaceRows(t, child, 20, []int64{begin + 2, begin + 3}, 1) // as many rows again, alike
	size1 := exact()
	if n := check(1<<30, false); n < size1 {
		t.Fatalf("projection %d below the true size %d", n, size1)
	}
	// Under a limit the projection stays within, it answers; past one,
	// only a scan can tell.
	check(size1+size1/8, false)
	if n := check(size1-1, true); n <= size1-1 {
		t.Fatalf("check past the limit = %d, want the scan's count past %d", n, size1-1)
	}
	// A memo past its age is not used: sizeMemoTTL once rows came since,
	// sizeMemoIdleTTL while none did.
	age := func(d time.Duration) {
		child.sizeMemo.mu.Lock()
		child.sizeMemo.at = child.sizeMemo.at.Add(-d)
		child.sizeMemo.mu.Unlock()
	}
	age(sizeMemoTTL + time.Second)
	check(1<<30, true)
	age(sizeMemoTTL + time.Second) // nothing applied since that scan
	check(1<<30, false)
	spaceRows(t, child, 1, []int64{begin + 4}, 1)
	check(1<<30, true)
	age(sizeMemoIdleTTL + time.Second)
	check(1<<30, true)
	// Nothing in range: a projection needs an average row.
	eb, ee := base+40e9, base+50e9 // no row of the space lies there
	empty := createSharingReplica(t, s, &eb, &ee)
	if err := s.gate.Enter(ErrClosed); err != nil {
		t.Fatal(err)
	}
	_, _ = empty.scanSize(1 << 30)
	s.gate.Exit()
	if empty.sizeMemo.rows != 0 || empty.sizeMemo.at.IsZero() {
		t.Fatalf("memo of the empty range: %d rows at %v, want 0 rows remembered", empty.sizeMemo.rows, empty.sizeMemo.at)
	}
	mustApply(t, empty, row("cpu,host=h00", eb+1, fl("v", 1, 2)))
	if _, ok := empty.sizeMemo.project(empty.HighSeq(), 1<<30, time.Now()); ok {
		t.Fatal("a memo of an empty range projected a size after a row was applied")
	}
}

// TestSplitPointOneBucket: a partition whose rows all lie in one storage
// bucket (a narrow partition at "now", rows 1 ms apart) splits in the
// middle of that bucket in every mode without weighing buckets first
// (splitPoint reports the mode it was given, where a weighing reports the
// one it used): of its bytes while its rows are in pebble's head (their
// sizes grow with their time, so the middle by bytes is not the middle by
// count), of its rows once sealed, as before.
func TestSplitPointOneBucket(t *testing.T) {
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	base := bucketStart(timeBucket(splitBase)) + 1e9 // well inside one bucket
	times := make([]int64, 400)
	for i := range times {
		times[i] = base + int64(i)*1e6
	}
	fillRows(t, r, 10, times, func(i int) int { return 16 + i })
	if timeBucket(times[0]) != timeBucket(times[len(times)-1]) {
		t.Fatal("setup: the rows span more than one bucket")
	}
	ws := weights(t, r, minTime, maxTime)
	for _, sealed := range []bool{false, true} {
		if sealed {
			if st, err := r.Seal(t.Context(), maxTime); err != nil || st.Rows == 0 {
				t.Fatalf("seal: %+v, %v", st, err)
			}
			flush(t, s)
		}
		for _, mode := range splitModes {
			split, used, err := r.splitPoint(mode)
			if err != nil {
				t.Fatalf("sealed=%v splitPoint(%v): %v", sealed, mode, err)
			}
			if used != mode {
				t.Errorf("sealed=%v splitPoint(%v) says it weighed by %v", sealed, mode, used)
			}
			rows, bytes := shares(ws, split)
			// In pebble's head each row weighs its bytes; a sealed
			// block's rows weigh alike (cut reads no row's size there).
			share, of := bytes, "bytes"
			if sealed {
				share, of = rows, "rows"
			}
			if share < 0.45 || share > 0.55 {
				t.Errorf("sealed=%v mode %v: split leaves %.3f of the bytes and %.3f of the rows on the left, want the middle of the %s",
					sealed, mode, bytes, rows, of)
			}
		}
	}
}

// BenchmarkSplitPointNarrow: the split point of a one-second partition in
// memory whose data space holds a minute of rows in the same storage bucket
// (the smear load test's shape: the pre-split's partitions at "now" and the
// children of splits that copied nothing share their parent's space): 200
// series of three floats, a row every 20 ms.
func BenchmarkSplitPointNarrow(b *testing.B) {
	s := openTestStore(b, "")
	base := bucketStart(timeBucket(splitBase)) + 1e9
	begin, end := base+30e9, base+31e9
	wide := createSharingReplica(b, s, nil, nil)
	r := createSharingReplica(b, s, &begin, &end)
	v := model.Version{Wall: 1, Node: 1}
	for i := range 3000 {
		rows := make([]model.Row, 200)
		for j := range rows {
			rows[j] = model.Row{Time: base + int64(i)*20e6, Series: fmt.Sprintf("loadtest,s=%d", j), Fields: []model.Field{
				{Name: "a", Value: model.Float(float64(i)), Version: v},
				{Name: "b", Value: model.Float(float64(j)), Version: v},
				{Name: "c", Value: model.Float(float64(i + j)), Version: v},
			}}
		}
		if _, err := wide.Apply(rows); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.SplitPoint(); err != nil {
			b.Fatal(err)
		}
	}
}
