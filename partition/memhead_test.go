package partition

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/google/uuid"

	"github.com/tsdb/tsdb/model"
)

// openMemStore opens a store with a memory head in dir on fs (nil: the
// real one), closed at the end of the test.
func openMemStore(t testing.TB, fs vfs.FS, dir string, budget int64) *Store {
	t.Helper()
	s, err := Open(Options{Dir: dir, FS: fs, MemTableSize: 4 << 20, CacheSize: 8 << 20, MemoryHead: true, MemoryHeadBytes: budget})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// memRows returns the number of rows in r's space's memory head.
func memRows(r *Replica) int {
	n := 0
	if v := r.memView(nil, nil); v != nil {
		for _, b := range v.buckets {
			for _, s := range b.series {
				n += len(s.rows)
			}
		}
	}
	return n
}

// randomRows returns n rows over a few series, storage buckets and fields,
// with overwrites and tombstones among them.
func randomRows(rng *rand.Rand, n int, wall *int64) []model.Row {
	rows := make([]model.Row, 0, n)
	for range n {
		*wall++
		t := int64(rng.Intn(4))<<bucketShift + int64(rng.Intn(50))
		f := fl(fmt.Sprintf("f%d", rng.Intn(3)), float64(rng.Intn(1000)), *wall)
		if rng.Intn(10) == 0 {
			f.Value = model.Value{Kind: model.KindDeleted}
		}
		rows = append(rows, row(fmt.Sprintf("s%02d", rng.Intn(12)), t, f))
	}
	return rows
}

// TestMemCursorSeeks: the memory head's cursor finds, for every bound and
// seek key (row keys, bucket and series prefixes, keys between rows), the
// same row as a sorted list of the keys does.
func TestMemCursorSeeks(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	ks := newKeyspace(uuid.New(), uuid.Nil)
	h := newMemHead()
	var keys [][]byte
	seen := map[string]bool{}
	for range 400 {
		series := fmt.Sprintf("s%d", rng.Intn(9))
		if rng.Intn(4) == 0 {
			series += "x" // a series that is a prefix of another
		}
		tm := int64(rng.Intn(5)-2)<<bucketShift + int64(rng.Intn(20)-10)
		if rng.Intn(20) == 0 {
			tm = []int64{math.MinInt64, math.MaxInt64}[rng.Intn(2)]
		}
		h.mu.Lock()
		h.bytes.Add(h.insertLocked(series, tm, []byte{byte(rng.Intn(256))}, uuid.Nil, 1))
		h.mu.Unlock()
		k := ks.appendRowKey(nil, series, tm)
		if !seen[string(k)] {
			seen[string(k)] = true
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, bytes.Compare)
	// Probes: every key, its successor and predecessor-ish, bucket and
	// series prefixes.
	var probes [][]byte
	for _, k := range keys {
		probes = append(probes, k, append(slices.Clone(k), 0), k[:len(k)-1], k[:rowHeaderLen], k[:rowHeaderLen-2])
		_, series, _, _ := rowKeyParts(k)
		probes = append(probes, ks.appendBucketSeriesKey(nil, binary.BigEndian.Uint32(k[len(ks.rowLo):]), string(series)))
	}
	probes = append(probes, ks.rowLo, ks.rowHi, nil)
	for i := range 50 {
		lower, upper := probes[rng.Intn(len(probes))], probes[rng.Intn(len(probes))]
		if i == 0 {
			lower, upper = nil, nil
		}
		v := h.view(ks.rowLo, lower, upper)
		c := newMemCursor(v, lower, upper)
		in := func(k []byte) bool {
			return (lower == nil || bytes.Compare(k, lower) >= 0) && (upper == nil || bytes.Compare(k, upper) < 0)
		}
		for _, p := range probes {
			if p == nil {
				continue
			}
			var want []byte
			for _, k := range keys {
				if bytes.Compare(k, p) >= 0 && (lower == nil || bytes.Compare(k, lower) >= 0) {
					if in(k) {
						want = k
					}
					break
				}
			}
			ok := c.SeekGE(p)
			if ok != (want != nil) || ok && !bytes.Equal(c.Key(), want) {
				var got []byte
				if ok {
					got = c.Key()
				}
				t.Fatalf("bounds [%x, %x): SeekGE(%x) = %x, want %x", lower, upper, p, got, want)
			}
		}
		// A walk from the start gives every key in bounds, in order.
		var walked [][]byte
		for ok := c.SeekGE(ks.rowLo); ok; ok = c.Next() {
			walked = append(walked, slices.Clone(c.Key()))
		}
		var want [][]byte
		for _, k := range keys {
			if in(k) {
				want = append(want, k)
			}
		}
		if len(walked) != len(want) {
			t.Fatalf("bounds [%x, %x): walk gave %d keys, want %d", lower, upper, len(walked), len(want))
		}
		for j := range want {
			if !bytes.Equal(walked[j], want[j]) {
				t.Fatalf("bounds [%x, %x): key %d = %x, want %x", lower, upper, j, walked[j], want[j])
			}
		}
	}
}

// TestMemHeadMatchesPebbleHead is the differential test of the memory
// head: a store with one and a store without read the same rows (scans,
// aggregates, the log) after every random batch, through seals, drains
// for the memory budget, reopens and crashes (a copy of the file system
// with only what was synced).
func TestMemHeadMatchesPebbleHead(t *testing.T) {
	for seed := range int64(6) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { memHeadMatchesPebbleHead(t, seed) })
	}
	// Seals of a few rows a batch: each batch reads a bounded view of
	// the series in memory and stops at its end.
	defer func(n int) { sealBatchRows = n }(sealBatchRows)
	sealBatchRows = 7
	for seed := range int64(4) {
		t.Run(fmt.Sprintf("small seal batches %d", seed), func(t *testing.T) { memHeadMatchesPebbleHead(t, 100+seed) })
	}
}

func memHeadMatchesPebbleHead(t *testing.T, seed int64) {
	rng := rand.New(rand.NewSource(seed))
	fs := vfs.NewCrashableMem()
	memStore := openMemStore(t, fs, "mem", 0)
	plain := openPlainStore(t, "")
	info := testInfo(uuid.New())
	mr, err := memStore.CreateReplica(info)
	if err != nil {
		t.Fatal(err)
	}
	pr, err := plain.CreateReplica(info)
	if err != nil {
		t.Fatal(err)
	}
	check := func(step string) {
		t.Helper()
		if err := sameRows(scanAll(t, mr), scanAll(t, pr)); err != nil {
			t.Fatalf("%s: scans differ: %v", step, err)
		}
		q := model.Query{From: math.MinInt64, To: math.MaxInt64, Step: 1 << 30}
		ma, err := mr.Aggregate(q)
		if err != nil {
			t.Fatal(err)
		}
		pa, err := pr.Aggregate(q)
		if err != nil {
			t.Fatal(err)
		}
		// Sums of floats may be added in another order (a block's
		// summaries, a bucket's rows): equal to a relative 1e-9.
		if err := sameUpToFloats(fmt.Sprint(ma), fmt.Sprint(pa)); err != nil {
			t.Fatalf("%s: aggregates differ: %v\n%v\n%v", step, err, ma, pa)
		}
	}
	wall := int64(0)
	for round := range 40 {
		rows := randomRows(rng, 1+rng.Intn(60), &wall)
		mustApply(t, mr, rows...)
		mustApply(t, pr, rows...)
		check(fmt.Sprintf("round %d", round))
		switch rng.Intn(6) {
		case 0: // seal the first buckets
			before := int64(rng.Intn(4)+1) << bucketShift
			for _, r := range []*Replica{mr, pr} {
				if _, err := r.Seal(context.Background(), before); err != nil {
					t.Fatal(err)
				}
			}
			check(fmt.Sprintf("round %d, after a seal", round))
		case 1: // the memory budget: every bucket (ended) sealed early
			memStore.memBudget = 1
			if err := memStore.fitMemHeads(); err != nil {
				t.Fatal(err)
			}
			memStore.memBudget = DefaultMemoryHeadBytes
			if n := memStore.MemoryHeadBytes(); n != 0 {
				t.Fatalf("round %d: %d bytes in memory past a budget of 1", round, n)
			}
			check(fmt.Sprintf("round %d, after the budget", round))
		case 4: // the oldest bucket to pebble's head as rows (the
			// budget's way with the present's bucket)
			if err := mr.drainOldestBucket(); err != nil {
				t.Fatal(err)
			}
			check(fmt.Sprintf("round %d, after a drain of a bucket", round))
		case 3: // a truncation as far as every target confirmed: the
			// records of rows only in memory stay
			if err := mr.TruncateLog(mr.SyncedSeq()); err != nil {
				t.Fatal(err)
			}
		case 2: // a crash: only what was synced survives
			crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
			memStore.Close()
			fs = crashed
			memStore = openMemStore(t, fs, "mem", 0)
			var ok bool
			if mr, ok = memStore.Replica(info.Placement); !ok {
				t.Fatal("replica missing after the crash")
			}
			check(fmt.Sprintf("round %d, after a crash", round))
		}
	}
}

// TestMemHeadKeepsRowsInRecords: with a memory head an Apply writes its
// log record and no row key; the log is truncated only below the rows
// still in memory, so a replica nobody pushes from keeps the records of
// its unsealed rows, and sheds them once they are sealed; the rows read
// the same throughout, and after a reopen.
func TestMemHeadKeepsRowsInRecords(t *testing.T) {
	fs := vfs.NewCrashableMem()
	s := openMemStore(t, fs, "k", 0)
	r := createTestReplica(t, s)
	r.SetLogValues(false) // RF 1: nobody reads the log
	var rows []model.Row
	for i := range 100 {
		rows = append(rows, row(fmt.Sprintf("s%d", i%10), int64(i/10)<<bucketShift, fl("a", float64(i), 1)))
	}
	mustApply(t, r, rows...)
	if n := countKeys(t, s.db, r.ks.rowLo, r.ks.rowHi); n != 0 {
		t.Fatalf("%d row keys in pebble, want none", n)
	}
	if n := memRows(r); n != 100 {
		t.Fatalf("%d rows in memory, want 100", n)
	}
	if err := r.TruncateLog(r.SyncedSeq()); err != nil || r.LogStart() != 0 {
		t.Fatalf("TruncateLog with every row in memory: %v, start %d; want 0", err, r.LogStart())
	}
	want := scanAll(t, r)
	sortRows(rows)
	if err := sameRows(want, rows); err != nil {
		t.Fatal(err)
	}
	// Seal the first five buckets: their records may go, the others'
	// stay.
	if _, err := r.Seal(t.Context(), 5<<bucketShift); err != nil {
		t.Fatal(err)
	}
	if n := memRows(r); n != 50 {
		t.Fatalf("%d rows in memory after the seal, want 50", n)
	}
	if got := r.LogStart(); got != 50 {
		t.Fatalf("log start after the seal = %d, want 50 (the rows of sequences 51 to 100 are in memory)", got)
	}
	if err := sameRows(scanAll(t, r), want); err != nil {
		t.Fatalf("after the seal: %v", err)
	}
	// A reopen after a crash replays the records of the rows in memory.
	// The seal's batch is not synced (nor is the truncation after it):
	// any later synced write, as here, makes both durable.
	if err := s.db.LogData(nil, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	s.Close()
	s = openMemStore(t, crashed, "k", 0)
	r, _ = s.Replica(r.Info().Placement)
	if n := memRows(r); n != 50 {
		t.Fatalf("%d rows in memory after the reopen, want 50", n)
	}
	if err := sameRows(scanAll(t, r), want); err != nil {
		t.Fatalf("after the reopen: %v", err)
	}
	// Opened without the option after a crash, the store writes them to
	// pebble's head and is marked 8 (6 before predicted fields, 4 before
	// the decimal summaries).
	crashed = crashed.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	s.Close()
	s, err := Open(Options{Dir: "k", FS: crashed, MemTableSize: 4 << 20, CacheSize: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	r, _ = s.Replica(r.Info().Placement)
	if r.applyMu.mem != nil || countKeys(t, s.db, r.ks.rowLo, r.ks.rowHi) != 50 {
		t.Fatalf("opened without a memory head: %d row keys in pebble, want 50", countKeys(t, s.db, r.ks.rowLo, r.ks.rowHi))
	}
	if got := readMarker(t, s); got != "8" {
		t.Fatalf("marker %q, want 8", got)
	}
	if err := sameRows(scanAll(t, r), want); err != nil {
		t.Fatalf("opened without a memory head: %v", err)
	}
}

// TestMemHeadDropKeepsSharersRows: a parent whose rows are in memory, their
// records in its log only, is dropped after a local split: the child, in
// the same data space, keeps every row of its range through a crash. The
// drop writes the memory head to pebble before it deletes the parent's
// log; without that the child's rows would live in no durable form.
func TestMemHeadDropKeepsSharersRows(t *testing.T) {
	fs := vfs.NewCrashableMem()
	s := openMemStore(t, fs, "d", 0)
	mid := int64(3) << bucketShift
	parent := createSharingReplica(t, s, nil, nil)
	var rows []model.Row
	for i := range 60 {
		rows = append(rows, row(fmt.Sprintf("s%d", i%6), int64(i/6)<<bucketShift, fl("a", float64(i), 1)))
	}
	mustApply(t, parent, rows...)
	child := createSharingReplica(t, s, &mid, nil)
	if child.DataSpace() != parent.DataSpace() {
		t.Fatal("the child does not share the parent's space")
	}
	if err := s.DropReplica(parent.Info().Placement); err != nil {
		t.Fatal(err)
	}
	var want []model.Row
	for _, r := range rows {
		if r.Time >= mid {
			want = append(want, r)
		}
	}
	sortRows(want)
	if err := sameRows(scanAll(t, child), want); err != nil {
		t.Fatalf("child after the drop: %v", err)
	}
	crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	s.Close()
	s = openMemStore(t, crashed, "d", 0)
	child, _ = s.Replica(child.Info().Placement)
	if err := sameRows(scanAll(t, child), want); err != nil {
		t.Fatalf("child after the drop and a crash: %v", err)
	}
}

// TestMemHeadDropOfCoveredParent: a parent that its children cover whole
// deletes no row when it is dropped, so its rows stay in memory and only
// their durable form moves from its log to pebble, in the drop's batch:
// the rows of its range, not the memory head's other rows (a split storm
// drops a parent every second or two, and every drop wrote the whole
// head, the 68 s of every sibling, before). Every row survives a crash
// after each drop.
func TestMemHeadDropOfCoveredParent(t *testing.T) {
	fs := vfs.NewCrashableMem()
	s := openMemStore(t, fs, "d", 0)
	mid, mid2 := int64(3)<<bucketShift, int64(6)<<bucketShift
	parent := createSharingReplica(t, s, nil, nil)
	var rows []model.Row
	for i := range 60 {
		rows = append(rows, row(fmt.Sprintf("s%d", i%6), int64(i/6)<<bucketShift, fl("a", float64(i), 1)))
	}
	mustApply(t, parent, rows...)
	sortRows(rows)
	left := createSharingReplica(t, s, nil, &mid)
	right := createSharingReplica(t, s, &mid, nil)
	in := func(lo, hi int64) (out []model.Row) {
		for _, r := range rows {
			if r.Time >= lo && r.Time < hi {
				out = append(out, r)
			}
		}
		return out
	}
	check := func(stage string, reps map[*Replica][2]int64) {
		t.Helper()
		for r, span := range reps {
			if err := sameRows(scanAll(t, r), in(span[0], span[1])); err != nil {
				t.Fatalf("%s: %s: %v", stage, r.Info().Placement, err)
			}
		}
	}
	inMemory := s.MemoryHeadBytes()
	if err := s.DropReplica(parent.Info().Placement); err != nil {
		t.Fatal(err)
	}
	if got := s.MemoryHeadDrainedRows(); got != int64(len(rows)) {
		t.Fatalf("the parent's drop wrote %d rows to pebble; want its %d", got, len(rows))
	}
	if got := s.MemoryHeadBytes(); got != inMemory {
		t.Fatalf("%d bytes in memory after the drop; want the %d before (its rows stay)", got, inMemory)
	}
	check("after the parent's drop", map[*Replica][2]int64{left: {math.MinInt64, mid}, right: {mid, math.MaxInt64}})

	// The right child takes rows of its own (new ones and an overwrite
	// of one its parent wrote), splits in turn and is dropped: its drop
	// writes those rows only, not again the ones its parent's drop wrote
	// (memRow.persisted).
	first := in(mid, math.MaxInt64)[0]
	own := []model.Row{
		row("s0", mid+7, fl("a", 100, 2)),
		row("s9", mid2+1, fl("a", 101, 2)),
		row(first.Series, first.Time, fl("a", 102, 2)), // written by the parent
	}
	mustApply(t, right, own...)
	for i, r := range rows {
		if r.Series == own[2].Series && r.Time == own[2].Time {
			rows[i] = own[2]
		}
	}
	rows = append(rows, own[:2]...)
	sortRows(rows)
	a := createSharingReplica(t, s, &mid, &mid2)
	b := createSharingReplica(t, s, &mid2, nil)
	drained := s.MemoryHeadDrainedRows()
	if err := s.DropReplica(right.Info().Placement); err != nil {
		t.Fatal(err)
	}
	if got, want := s.MemoryHeadDrainedRows()-drained, int64(len(own)); got != want {
		t.Fatalf("the right child's drop wrote %d rows to pebble; want the %d it changed", got, want)
	}
	spans := map[*Replica][2]int64{left: {math.MinInt64, mid}, a: {mid, mid2}, b: {mid2, math.MaxInt64}}
	check("after the right child's drop", spans)

	crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	s.Close()
	s = openMemStore(t, crashed, "d", 0)
	reopened := map[*Replica][2]int64{}
	for r, span := range spans {
		again, ok := s.Replica(r.Info().Placement)
		if !ok {
			t.Fatalf("%s missing after the crash", r.Info().Placement)
		}
		reopened[again] = span
	}
	check("after a crash", reopened)
}

// TestMemHeadBudget: past Options.MemoryHeadBytes a seal sheds the
// oldest buckets in memory until the rest fits: a bucket that has ended
// is sealed early, the present's is written to pebble's head as rows; the
// log of a replica nobody pushes from is then truncated below them, and
// the rows read the same throughout.
func TestMemHeadBudget(t *testing.T) {
	const budget = 32 << 10
	s := openMemStore(t, nil, t.TempDir(), budget)
	r := createTestReplica(t, s)
	r.SetLogValues(false)
	var rows []model.Row
	for i := range 400 { // 20 buckets that ended in 1970
		rows = append(rows, row(fmt.Sprintf("s%d", i%20), int64(i/20)<<bucketShift, fl("a", float64(i), 1)))
	}
	now := time.Now().UnixNano()
	for i := range 100 { // the present's bucket
		rows = append(rows, row(fmt.Sprintf("s%d", i%20), now-int64(i), fl("a", float64(i), 1)))
	}
	mustApply(t, r, rows...)
	sortRows(rows)
	if n := s.MemoryHeadBytes(); n <= budget {
		t.Fatalf("setup: %d bytes in memory, want more than the budget", n)
	}
	// Nothing is sealable (Before far in the past): only the budget acts.
	if _, err := s.Seal(t.Context(), SealPolicy{Before: math.MinInt64}); err != nil {
		t.Fatal(err)
	}
	if n := s.MemoryHeadBytes(); n > budget || n == 0 {
		t.Fatalf("%d bytes in memory after the seal, want at most the budget and more than 0", n)
	}
	if s.MemoryHeadEarlySealedRows() == 0 || s.MemoryHeadDrainedRows() != 0 {
		t.Fatalf("early sealed %d rows, drained %d: want the ended buckets sealed, nothing drained",
			s.MemoryHeadEarlySealedRows(), s.MemoryHeadDrainedRows())
	}
	if _, ok := r.applyMu.mem.buckets[timeBucket(0)]; ok {
		t.Fatal("the oldest bucket is still in memory")
	}
	if _, ok := r.applyMu.mem.buckets[timeBucket(now)]; !ok {
		t.Fatal("the present's bucket is not in memory any more")
	}
	if r.LogStart() == 0 {
		t.Fatal("log not truncated after the seal")
	}
	if err := sameRows(scanAll(t, r), rows); err != nil {
		t.Fatal(err)
	}
	// A budget nothing fits: the present's bucket goes to pebble's head.
	s.memBudget = 1
	if err := s.FitMemoryHeads(); err != nil {
		t.Fatal(err)
	}
	if n := s.MemoryHeadBytes(); n != 0 || s.MemoryHeadDrainedRows() == 0 {
		t.Fatalf("%d bytes in memory and %d rows drained, want 0 and the present's rows", n, s.MemoryHeadDrainedRows())
	}
	if err := sameRows(scanAll(t, r), rows); err != nil {
		t.Fatal(err)
	}
}

var floatText = regexp.MustCompile(`-?[0-9]+(\.[0-9]+)?(e[-+][0-9]+)?`)

// sameUpToFloats compares a and b, their numbers with a fraction on
// either side to a relative 1e-9 and the rest exactly.
func sameUpToFloats(a, b string) error {
	fa, fb := floatText.FindAllString(a, -1), floatText.FindAllString(b, -1)
	if floatText.ReplaceAllString(a, "#") != floatText.ReplaceAllString(b, "#") || len(fa) != len(fb) {
		return fmt.Errorf("not the same apart from fractions")
	}
	for i := range fa {
		if fa[i] == fb[i] {
			continue
		}
		if !strings.ContainsAny(fa[i]+fb[i], ".e") {
			return fmt.Errorf("%s against %s", fa[i], fb[i]) // integers: exact
		}
		x, _ := strconv.ParseFloat(fa[i], 64)
		y, _ := strconv.ParseFloat(fb[i], 64)
		if math.Abs(x-y) > 1e-9*max(math.Abs(x), math.Abs(y)) {
			return fmt.Errorf("%s against %s", fa[i], fb[i])
		}
	}
	return nil
}

func readMarker(t *testing.T, s *Store) string {
	t.Helper()
	v, closer, err := s.db.Get(formatKey)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	return string(v)
}

// TestMemHeadOverwritesFold: a row overwritten again and again in memory
// keeps one folded value, not every operand: its memory grows by one
// value a write (the arena keeps the old ones until the seal), not by all
// the operands so far (quadratic without the fold), and it reads as the
// newest write.
func TestMemHeadOverwritesFold(t *testing.T) {
	s := openMemStore(t, nil, t.TempDir(), 0)
	r := createTestReplica(t, s)
	mustApply(t, r, row("s", 10, fl("a", 0, 1)), row("s", 20, fl("b", 0, 1)))
	before := s.MemoryHeadBytes()
	const writes = 400
	for i := range writes {
		// Time 10 is below the newest row (20): written without a read,
		// as an operand over the row in memory.
		mustApply(t, r, row("s", 10, fl("a", float64(i+1), int64(i+2))))
	}
	grown := s.MemoryHeadBytes() - before
	v := r.memView(nil, nil)
	s20 := &v.buckets[0].series[0]
	one := len(s20.stored(1)) // time 20's: one write's value
	if r := s20.rows[1]; r.shaped() {
		one = int(s20.shape.valueLen(r.len()))
	}
	if grown > int64(writes*(one+8)) {
		t.Fatalf("%d overwrites took %d bytes of memory, a value being %d bytes: operands kept, not folded", writes, grown, one)
	}
	got := scanAll(t, r)
	if len(got) != 2 || got[0].Time != 10 || got[0].Fields[0].Value != model.Float(writes) {
		t.Fatalf("rows = %v, want time 10 with a = %d first", got, writes)
	}
}

// TestMemViewStableUnderWrites: scans take views of the memory head while
// Applies write rows below the newest (inserted in the middle of a
// series' rows, and overwritten): every scan sees each row whole, a value
// whose field matches its version, and never fewer rows than the writes
// that had returned before it began. Run with -race: a view whose rows a
// writer changed in place is a data race.
func TestMemViewStableUnderWrites(t *testing.T) {
	s := openMemStore(t, nil, t.TempDir(), 0)
	r := createTestReplica(t, s)
	mustApply(t, r, row("s0", 1000, fl("a", 1, 1)))
	var done atomic.Bool
	var written atomic.Int64 // distinct rows written so far
	written.Store(1)
	errc := make(chan error, 2)
	go func() {
		defer done.Store(true)
		wall := int64(1)
		distinct := map[string]bool{"s0/1000": true}
		for i := range 3000 {
			wall++
			series := fmt.Sprintf("s%d", i%7)
			tm := int64(999 - (i*37)%997) // below 1000, out of order, repeating
			if _, err := r.Apply([]model.Row{row(series, tm, fl("a", float64(wall), wall))}); err != nil {
				errc <- err
				return
			}
			distinct[fmt.Sprintf("%s/%d", series, tm)] = true
			written.Store(int64(len(distinct)))
		}
		errc <- nil
	}()
	go func() {
		for !done.Load() {
			floor := written.Load()
			rows, _, err := r.Scan(model.Query{From: minTime, To: maxTime})
			if err != nil {
				errc <- err
				return
			}
			if int64(len(rows)) < floor {
				errc <- fmt.Errorf("a scan saw %d rows, %d were written before it", len(rows), floor)
				return
			}
			for _, row := range rows {
				f := row.Fields[0]
				if f.Value != model.Float(float64(f.Version.Wall)) {
					errc <- fmt.Errorf("row %s/%d: a = %v with version %v", row.Series, row.Time, f.Value, f.Version)
					return
				}
			}
		}
		errc <- nil
	}()
	for range 2 {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
}

// TestMemHeadMinSeqCached: minSeq, cached between removals, answers what
// a walk of every series' sequences answers, through random inserts of
// two placements, removals of series and clears.
func TestMemHeadMinSeqCached(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	h := newMemHead()
	ps := []uuid.UUID{uuid.New(), uuid.New()}
	seqs := map[uuid.UUID]uint64{}
	walk := func(p uuid.UUID) uint64 {
		lo := uint64(math.MaxUint64)
		for _, bk := range h.buckets {
			for _, s := range bk.series {
				for _, q := range s.seqs {
					if q.p == p {
						lo = min(lo, q.lo)
					}
				}
			}
		}
		return lo
	}
	for i := range 3000 {
		switch n := rng.Intn(20); {
		case n == 0:
			h.clearLocked() // takes mu
		case n < 4:
			h.mu.Lock()
			h.removeSeriesLocked(timeBucket(int64(rng.Intn(3))<<bucketShift), fmt.Sprintf("s%d", rng.Intn(5)))
			h.mu.Unlock()
		default:
			p := ps[rng.Intn(2)]
			seqs[p]++
			h.mu.Lock()
			h.bytes.Add(h.insertLocked(fmt.Sprintf("s%d", rng.Intn(5)), int64(rng.Intn(3))<<bucketShift, []byte{1}, p, seqs[p]))
			h.mu.Unlock()
		}
		for _, p := range ps {
			if got, want := h.minSeq(p), walk(p); got != want {
				t.Fatalf("step %d: minSeq = %d, a walk gives %d", i, got, want)
			}
		}
	}
}

// TestMemHeadBudgetAtOpen: a store reopened after a crash with a smaller
// budget than its replayed logs hold is within it once Open returns,
// every row still read.
func TestMemHeadBudgetAtOpen(t *testing.T) {
	fs := vfs.NewCrashableMem()
	s := openMemStore(t, fs, "b", 0)
	r := createTestReplica(t, s)
	var rows []model.Row
	for i := range 400 {
		rows = append(rows, row(fmt.Sprintf("s%d", i%20), int64(i/20)<<bucketShift, fl("a", float64(i), 1)))
	}
	mustApply(t, r, rows...)
	if n := s.MemoryHeadBytes(); n <= 4<<10 {
		t.Fatalf("setup: %d bytes in memory, want more than 4 KiB", n)
	}
	crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0}) // the rows in records only
	s.Close()
	s = openMemStore(t, crashed, "b", 4<<10)
	if n := s.MemoryHeadBytes(); n > 4<<10 {
		t.Fatalf("%d bytes in memory after Open, over the budget of 4 KiB", n)
	}
	r, _ = s.Replica(r.Info().Placement)
	sortRows(rows)
	if err := sameRows(scanAll(t, r), rows); err != nil {
		t.Fatal(err)
	}
}

// TestMemViewSelection: a view of one series, of a prefix or of a list
// holds exactly the rows of a whole view that the selection names, and a
// view bounded by rows holds whole series up to its end, past which the
// rest of the whole view lies.
func TestMemViewSelection(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	ks := newKeyspace(uuid.New(), uuid.Nil)
	h := newMemHead()
	names := []string{"a", "ab", "abc", "b", "ba", "c", "cpu,host=1", "cpu,host=10", "cpu,host=2"}
	h.mu.Lock()
	for range 600 {
		h.bytes.Add(h.insertLocked(names[rng.Intn(len(names))], int64(rng.Intn(3))<<bucketShift+int64(rng.Intn(30)), []byte{1}, uuid.Nil, 1))
	}
	h.mu.Unlock()
	type key struct {
		b    uint32
		name string
		n    int
	}
	flat := func(v *memView, keep func(string) bool) []key {
		var out []key
		for _, b := range v.buckets {
			for _, s := range b.series {
				if keep(s.name) {
					out = append(out, key{b.b, s.name, len(s.rows)})
				}
			}
		}
		return out
	}
	all := h.view(ks.rowLo, nil, nil)
	for _, sel := range []*memSel{
		{series: "ab"}, {series: "ab", prefix: true}, {series: "cpu,host=1", prefix: true}, {series: "zz"},
		{list: [][]byte{[]byte("a"), []byte("abc"), []byte("c"), []byte("d")}}, {list: [][]byte{}},
	} {
		keep := func(n string) bool {
			switch {
			case sel.series != "" && sel.prefix:
				return strings.HasPrefix(n, sel.series)
			case sel.series != "":
				return n == sel.series
			}
			return slices.ContainsFunc(sel.list, func(b []byte) bool { return string(b) == n })
		}
		v, end := h.viewOf(ks.rowLo, nil, nil, sel, 0)
		got, want := flat(v, func(string) bool { return true }), flat(all, keep)
		if !slices.Equal(got, want) || end != nil {
			t.Fatalf("selection %+v: %v, want %v (end %x)", sel, got, want, end)
		}
	}
	for _, max := range []int{1, 50, 200, 10000} {
		v, end := h.viewOf(ks.rowLo, nil, nil, nil, max)
		got, whole := flat(v, func(string) bool { return true }), flat(all, func(string) bool { return true })
		if len(got) > len(whole) || !slices.Equal(got, whole[:len(got)]) {
			t.Fatalf("bounded by %d rows: %v is not a beginning of %v", max, got, whole)
		}
		if (end == nil) != (len(got) == len(whole)) {
			t.Fatalf("bounded by %d rows: end %x with %d of %d series", max, end, len(got), len(whole))
		}
		if end != nil {
			next := whole[len(got)]
			if want := ks.appendBucketSeriesKey(nil, next.b, next.name); !bytes.Equal(end, want) {
				t.Fatalf("bounded by %d rows: end %x, want %x (the next series)", max, end, want)
			}
			rows := 0
			for _, k := range got {
				rows += k.n
			}
			if rows < max || rows-got[len(got)-1].n >= max {
				t.Fatalf("bounded by %d rows: took %d rows in %d series", max, rows, len(got))
			}
		}
	}
}

// TestMemHeadUnpinsLog: a row of a future bucket written first keeps the
// log of a replica nobody pushes from until its bucket is sealed; once
// the log holds more than maxPinnedChanges changes above it, the row is
// written to pebble's head and the log truncated past it, and every row
// reads the same, after a crash too.
func TestMemHeadUnpinsLog(t *testing.T) {
	defer func(n uint64) { maxPinnedChanges = n }(maxPinnedChanges)
	fs := vfs.NewCrashableMem()
	s := openMemStore(t, fs, "u", 0)
	r := createTestReplica(t, s)
	r.SetLogValues(false)
	now := time.Now().UnixNano()
	rows := []model.Row{row("ahead", now+int64(2*time.Hour), fl("a", 1, 1))}
	mustApply(t, r, rows...)
	for i := range 100 {
		rw := row(fmt.Sprintf("s%d", i%10), int64(i/10)<<bucketShift, fl("a", float64(i), 2))
		mustApply(t, r, rw)
		rows = append(rows, rw)
	}
	present := row("present", now, fl("a", 1, 3)) // sequence 102: left alone
	mustApply(t, r, present)
	rows = append(rows, present)
	sortRows(rows)
	// Seal what has ended, no bound: the future row stays in memory, and
	// the log from its sequence (1) with it.
	maxPinnedChanges = math.MaxUint64
	if _, err := s.Seal(t.Context(), SealPolicy{Before: bucketStart(timeBucket(now))}); err != nil {
		t.Fatal(err)
	}
	if got := r.LogStart(); got != 0 {
		t.Fatalf("log start %d: the future row (sequence 1) does not hold it", got)
	}
	// Past the bound, the next fit writes that row to pebble's head.
	maxPinnedChanges = 50
	if err := s.FitMemoryHeads(); err != nil {
		t.Fatal(err)
	}
	if s.MemoryHeadDrainedRows() != 1 || r.LogStart() < 100 || memRows(r) != 1 {
		t.Fatalf("drained %d rows, log start %d, %d rows in memory: want the future row drained, the log truncated past 100 and the present's row in memory",
			s.MemoryHeadDrainedRows(), r.LogStart(), memRows(r))
	}
	if err := sameRows(scanAll(t, r), rows); err != nil {
		t.Fatal(err)
	}
	crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	s.Close()
	s = openMemStore(t, crashed, "u", 0)
	r, _ = s.Replica(r.Info().Placement)
	if err := sameRows(scanAll(t, r), rows); err != nil {
		t.Fatalf("after a crash: %v", err)
	}
}

// TestMemHeadDrainedAtClose: a clean Close writes the memory heads to
// pebble's head and truncates the logs nobody reads past them, so the
// next Open replays nothing but the log's last change and finds every
// row.
func TestMemHeadDrainedAtClose(t *testing.T) {
	dir := t.TempDir()
	s := openMemStore(t, nil, dir, 0)
	r := createTestReplica(t, s)
	r.SetLogValues(false)
	var rows []model.Row
	for i := range 100 {
		rows = append(rows, row(fmt.Sprintf("s%d", i%10), int64(i/10)<<bucketShift, fl("a", float64(i), 1)))
	}
	mustApply(t, r, rows...)
	sortRows(rows)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openMemStore(t, nil, dir, 0)
	r, _ = s.Replica(r.Info().Placement)
	r.SetLogValues(false)
	if n := memRows(r); n != 1 {
		// The log keeps its last change (TruncateLog), which Open
		// replays: a copy of a row pebble holds, folded with it.
		t.Fatalf("%d rows replayed into memory after a clean close, want 1 (the last change)", n)
	}
	if n := countKeys(t, s.db, r.ks.rowLo, r.ks.rowHi); n != 100 {
		t.Fatalf("%d row keys in pebble after a clean close, want 100", n)
	}
	if got := r.LogStart(); got != 99 {
		t.Fatalf("log start %d after a clean close, want 99 (the last entry stays)", got)
	}
	if err := sameRows(scanAll(t, r), rows); err != nil {
		t.Fatal(err)
	}
}

// TestSealQuietOnlyLeavesBudget: a pass for quiet buckets only
// (SealPolicy.QuietOnly) leaves the memory budget to the regular passes,
// which fit it.
func TestSealQuietOnlyLeavesBudget(t *testing.T) {
	s := openMemStore(t, vfs.NewMem(), "mem", 0)
	r, err := s.CreateReplica(testInfo(uuid.New()))
	if err != nil {
		t.Fatal(err)
	}
	mustApply(t, r, row("a", 1, fl("v", 1, 10)), row("b", 2, fl("v", 2, 10)))
	s.memBudget = 1
	now := time.Now().UnixNano()
	// Ended long ago but just written: not quiet under an hour's Quiet.
	p := SealPolicy{Before: math.MinInt64, Now: now, Quiet: time.Hour, QuietOnly: true}
	if _, err := s.Seal(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	if s.MemoryHeadBytes() == 0 {
		t.Fatal("a quiet-only pass fitted the budget")
	}
	p.QuietOnly = false
	if _, err := s.Seal(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	if n := s.MemoryHeadBytes(); n != 0 {
		t.Fatalf("%d bytes in memory after a regular pass under a budget of 1", n)
	}
	if err := sameRows(scanAll(t, r), []model.Row{row("a", 1, fl("v", 1, 10)), row("b", 2, fl("v", 2, 10))}); err != nil {
		t.Fatal(err)
	}
}

// TestMemSeriesLateInserts adds rows to a series in time order with some
// a few rows late and some far back, as concurrent inserts deliver them:
// the rows stay sorted, an equal time folds into one row, and
// searchLate agrees with a binary search for every time.
func TestMemSeriesLateInserts(t *testing.T) {
	rng := newSeededRand(t)
	s := &memSeries{}
	s.seqs = s.seq0[:0]
	want := map[int64]bool{}
	next := int64(1000)
	for i := 0; i < 3000; i++ {
		ts := next
		switch rng.Intn(4) {
		case 0:
			ts -= int64(1 + rng.Intn(6)) // a tick or a few late
		case 1:
			ts = int64(rng.Intn(int(next))) // far back, or an overwrite
		default:
			next += int64(1 + rng.Intn(3))
		}
		s.add(ts, []byte{1}, &shapeTable{}, nil)
		want[ts] = true
	}
	if len(s.rows) != len(want) {
		t.Fatalf("%d rows, want %d distinct times", len(s.rows), len(want))
	}
	for i := 1; i < len(s.rows); i++ {
		if s.rows[i-1].t >= s.rows[i].t {
			t.Fatalf("rows %d and %d out of order: %d, %d", i-1, i, s.rows[i-1].t, s.rows[i].t)
		}
	}
	for ts := int64(0); ts <= s.rows[len(s.rows)-1].t; ts++ {
		if got, want := s.searchLate(ts), sort.Search(len(s.rows), func(i int) bool { return s.rows[i].t >= ts }); got != want {
			t.Fatalf("searchLate(%d) = %d, want %d", ts, got, want)
		}
	}
}

// TestSealOfMemoryRowsCompactsNothing: a seal of rows that lie only in
// the memory head writes its blocks and no range deletion, and neither
// flushes nor compacts pebble (before, every seal pass compacted the head
// range it sealed, rewriting the files that span it: most of the CPU in
// the seconds after the peer harness's write went to rewriting log
// records about to be truncated). A bucket whose rows lie partly in
// pebble's head (drained there over the budget) still has those deleted
// and compacted away.
func TestSealOfMemoryRowsCompactsNothing(t *testing.T) {
	s := openMemStore(t, nil, t.TempDir(), 0)
	r := createTestReplica(t, s)
	r.SetLogValues(false)
	var rows []model.Row
	for i := range 300 { // 3 buckets that ended in 1970
		rows = append(rows, row(fmt.Sprintf("s%d", i%10), int64(i/100)<<bucketShift+int64(i), fl("a", float64(i), 1)))
	}
	mustApply(t, r, rows...)
	before := s.db.Metrics()
	st, err := s.Seal(t.Context(), SealPolicy{Before: 3 << bucketShift})
	if err != nil {
		t.Fatal(err)
	}
	after := s.db.Metrics()
	if st.Rows != 300 || st.StoredRows != 0 || memRows(r) != 0 {
		t.Fatalf("sealed %d rows (%d stored in pebble's head), %d left in memory; want 300, 0, 0", st.Rows, st.StoredRows, memRows(r))
	}
	if after.Flush.Count != before.Flush.Count || after.Compact.Count != before.Compact.Count {
		t.Fatalf("the seal of memory rows flushed %d times and compacted %d times, want neither",
			after.Flush.Count-before.Flush.Count, after.Compact.Count-before.Compact.Count)
	}
	sortRows(rows)
	if err := sameRows(scanAll(t, r), rows); err != nil {
		t.Fatalf("after the seal: %v", err)
	}

	// The present's bucket, half drained to pebble's head (a budget
	// nothing fits), half in memory, sealed as if it had ended.
	now := time.Now().UnixNano()
	var present []model.Row
	for i := range 100 {
		present = append(present, row(fmt.Sprintf("s%d", i%10), now-int64(i), fl("b", float64(i), 1)))
	}
	mustApply(t, r, present[:50]...)
	s.memBudget = 1
	if err := s.FitMemoryHeads(); err != nil {
		t.Fatal(err)
	}
	s.memBudget = DefaultMemoryHeadBytes
	if n := countKeys(t, s.db, r.ks.rowLo, r.ks.rowHi); n != 50 {
		t.Fatalf("setup: %d rows in pebble's head, want 50", n)
	}
	mustApply(t, r, present[50:]...)
	before = s.db.Metrics()
	st, err = s.Seal(t.Context(), SealPolicy{Before: bucketStart(timeBucket(now) + 1)})
	if err != nil {
		t.Fatal(err)
	}
	after = s.db.Metrics()
	if st.Rows != 100 || st.StoredRows != 50 {
		t.Fatalf("sealed %d rows, %d of them from pebble's head; want 100 and 50", st.Rows, st.StoredRows)
	}
	if n := countKeys(t, s.db, r.ks.rowLo, r.ks.rowHi); n != 0 {
		t.Fatalf("%d rows left in pebble's head after the seal, want 0", n)
	}
	if after.Compact.Count == before.Compact.Count {
		t.Fatal("the seal of rows from pebble's head compacted nothing")
	}
	rows = append(rows, present...)
	sortRows(rows)
	if err := sameRows(scanAll(t, r), rows); err != nil {
		t.Fatalf("after the second seal: %v", err)
	}
}

// TestMemViewMarksOnlyWhatItTakes: a view marks the series it takes, so
// a late insert into one of them changes a copy (the view still reads the
// rows it took), while a late insert into a series of another bucket, or
// one the view's selection left out, changes the rows in place: no copy.
// (With one view count for the whole head, every series copied its rows
// at its first late insert after any view: 20% of the smear load test's
// server CPU.)
func TestMemViewMarksOnlyWhatItTakes(t *testing.T) {
	h := newMemHead()
	rowLo := []byte("sp|r")
	p := uuid.New()
	b0 := int64(4 << bucketShift)
	b1 := int64(5 << bucketShift)
	seq := uint64(0)
	insert := func(series string, tm int64) {
		seq++
		h.mu.Lock()
		h.bytes.Add(h.insertLocked(series, tm, []byte{byte(seq)}, p, seq))
		h.mu.Unlock()
	}
	for _, series := range []string{"a", "b"} {
		// 9 rows in b0 (capacity 16: room for 7 more), 7 in b1 (made
		// with room for the series' rows in b0 and an eighth more: 3).
		for i := int64(0); i < 9; i++ {
			insert(series, b0+10*i)
		}
		for i := int64(0); i < 7; i++ {
			insert(series, b1+10*i)
		}
	}
	series := func(base int64, name string) *memSeries { return h.buckets[timeBucket(base)].series[name] }
	first := func(base int64, name string) *memRow { return &series(base, name).rows[0] }

	// A view of series "a" of b0's bucket only.
	bk := func(tm int64) []byte {
		return binary.BigEndian.AppendUint32(append([]byte(nil), rowLo...), timeBucket(tm))
	}
	v, _ := h.viewOf(rowLo, bk(b0), bk(b1), selFor("a", false, nil), 0)
	if len(v.buckets) != 1 || len(v.buckets[0].series) != 1 || v.buckets[0].series[0].name != "a" {
		t.Fatalf("view = %+v, want series a of one bucket", v.buckets)
	}
	taken := slices.Clone(v.buckets[0].series[0].rows)

	for _, at := range []struct {
		base int64
		name string
	}{{b0, "a"}, {b0, "b"}, {b1, "a"}} {
		if rows := series(at.base, at.name).rows; cap(rows)-len(rows) < 2 {
			// A late insert must fit without growing the rows, or every
			// series would move and the checks below tell nothing.
			t.Fatalf("setup: series %s of bucket %d holds %d rows in a capacity of %d", at.name, timeBucket(at.base), len(rows), cap(rows))
		}
	}
	before := map[string]*memRow{"b0/b": first(b0, "b"), "b1/a": first(b1, "a"), "b0/a": first(b0, "a")}
	insert("a", b0+5) // late: between the first two rows
	insert("b", b0+5)
	insert("a", b1+5)
	if got := first(b0, "b"); got != before["b0/b"] {
		t.Error("a late insert into a series the view did not select copied its rows")
	}
	if got := first(b1, "a"); got != before["b1/a"] {
		t.Error("a late insert into a series of a bucket the view does not cover copied its rows")
	}
	if got := first(b0, "a"); got == before["b0/a"] {
		t.Error("a late insert into a series the view holds changed its rows in place")
	}
	if got := v.buckets[0].series[0].rows; !slices.Equal(got, taken) {
		t.Errorf("the view's rows changed under it: %v, want %v", got, taken)
	}
	if n := len(series(b0, "a").rows); n != 10 {
		t.Errorf("series a holds %d rows, want 10", n)
	}
	// The copy is the writer's own: the next late insert changes it in
	// place.
	mine := first(b0, "a")
	insert("a", b0+15)
	if got := first(b0, "a"); got != mine {
		t.Error("a second late insert copied the rows again with no view since")
	}
}

// TestMemSeriesSizedFromBucketBefore: a series' rows and value arena in a
// bucket are made with room for its rows of the bucket before and an
// eighth more, so that a series taking about as many rows as before (the
// bucket before still taking its last ones when this one starts) grows
// neither under the apply lock.
func TestMemSeriesSizedFromBucketBefore(t *testing.T) {
	h := newMemHead()
	p := uuid.New()
	b0, b1 := int64(4<<bucketShift), int64(5<<bucketShift)
	seq := uint64(0)
	insert := func(tm int64) {
		seq++
		h.mu.Lock()
		h.bytes.Add(h.insertLocked("a", tm, []byte{byte(seq), 1, 2}, p, seq))
		h.mu.Unlock()
	}
	const before = 800
	for i := range int64(before) {
		insert(b0 + i)
	}
	insert(b1)
	s := h.buckets[timeBucket(b1)].series["a"]
	rows, arena := &s.rows[0], &s.arena[0]
	for i := range int64(before + before/10) { // a tenth more rows than before
		insert(b1 + 1 + i)
	}
	if &s.rows[0] != rows || &s.arena[0] != arena {
		t.Errorf("%d rows after %d in the bucket before: rows or arena grew (capacities %d, %d)",
			len(s.rows), before, cap(s.rows), cap(s.arena))
	}
	if got := h.bytes.Load(); got != h.footprintWalk() {
		t.Errorf("bytes = %d, the series' footprints sum to %d", got, h.footprintWalk())
	}
}

// footprintWalk sums the footprint of every series in h.
func (h *memHead) footprintWalk() int64 {
	n := int64(0)
	for _, bk := range h.buckets {
		for _, s := range bk.series {
			n += s.footprint()
		}
	}
	return n
}

// TestOpsBytesBoundsTheBatch checks that the sizes the drains give pebble
// for their batches (opsBytes) hold every operand they write: a batch
// made with that room never grows (a batch grown by doubling copied
// itself again and again, docs/performance.md, "A split parent's drop").
// The rows mix compact ones, whole ones of other layouts (ints, strings,
// bools, tombstones), overwrites folded in memory and rows a drop wrote
// already (memRow.persisted, left out).
func TestOpsBytesBoundsTheBatch(t *testing.T) {
	s := openMemStore(t, vfs.NewMem(), "d", 0)
	r := createSharingReplica(t, s, nil, nil)
	rng := rand.New(rand.NewSource(34))
	var rows []model.Row
	for i := range 3000 {
		ts := int64(rng.Intn(4))<<bucketShift + int64(i%500)
		f := fl("a", rng.Float64()*1e6, int64(i+1))
		switch i % 7 {
		case 1:
			f = model.Field{Name: "b", Value: model.Int(rng.Int63()), Version: model.Version{Wall: int64(i + 1)}}
		case 2:
			f = model.Field{Name: "c", Value: model.String(strings.Repeat("x", rng.Intn(300))), Version: model.Version{Wall: int64(i + 1)}}
		case 3:
			f = model.Field{Name: "d", Value: model.Bool(i%2 == 0), Version: model.Version{Wall: int64(i + 1)}}
		case 4:
			f = model.Field{Name: "a", Value: model.Deleted(), Version: model.Version{Wall: int64(i + 1)}}
		}
		rows = append(rows, row(fmt.Sprintf("s%d", rng.Intn(40)), ts, f, fl("z", float64(i), int64(i+1))))
	}
	for i := 0; i < len(rows); i += 100 {
		mustApply(t, r, rows[i:i+100]...)
	}
	h := r.applyMu.mem
	// Some rows a covered drop wrote already: the second bucket's.
	lo, hi := int64(1)<<bucketShift, int64(2)<<bucketShift
	h.markPersisted(&lo, &hi)

	fits := func(what string, n int, write func(b *pebble.Batch) error) {
		t.Helper()
		b := newOpsBatch(s.db, n)
		defer b.Close()
		room := cap(b.Repr())
		if err := write(b); err != nil {
			t.Fatal(err)
		}
		if got := cap(b.Repr()); got != room {
			t.Fatalf("%s: the batch grew from %d to %d bytes (%d written, %d foreseen)", what, room, got, len(b.Repr()), n)
		}
		if b.Count() == 0 {
			t.Fatalf("%s: nothing written", what)
		}
	}
	fits("every row", h.allOpsBytes(&r.ks), func(b *pebble.Batch) error { return h.drainAllOps(&r.ks, b) })
	bk := timeBucket(0)
	fits("a bucket", h.bucketOpsBytes(&r.ks, bk), func(b *pebble.Batch) error {
		for name := range h.buckets[bk].series {
			if err := h.drainSeriesOps(&r.ks, bk, name, b); err != nil {
				return err
			}
		}
		return nil
	})
	begin, end := int64(1)<<bucketShift+100, int64(3)<<bucketShift+300
	fits("a range", h.rangeOpsBytes(&r.ks, &begin, &end), func(b *pebble.Batch) error {
		_, err := h.persistRangeOps(&r.ks, b, &begin, &end)
		return err
	})
}

// TestInsertMemBatchOfNewAndKnownSeries checks insertMem's lookup ahead
// of its inserts with the batches it must not get wrong: a series new to
// its bucket that the batch writes twice (looked up as absent for both
// rows, made by the first), a batch across two storage buckets, a series
// known in one bucket and new in the next, and a row older than its
// series' last. Every row is in its time's bucket and reads back as
// written.
func TestInsertMemBatchOfNewAndKnownSeries(t *testing.T) {
	s := openMemStore(t, nil, t.TempDir(), 0)
	r := createTestReplica(t, s)
	b0, b1 := bucketStart(timeBucket(0)+3), bucketStart(timeBucket(0)+4)
	mustApply(t, r, row("known", b0+10, fl("v", 1, 1)))
	mustApply(t, r,
		row("known", b0+5, fl("v", 2, 2)), // older than its series' last
		row("known", b0+20, fl("v", 3, 2)),
		row("known", b1+1, fl("v", 4, 2)), // known in b0, new in b1
		row("new", b0+1, fl("v", 5, 2)),
		row("new", b0+2, fl("v", 6, 2)), // new, written twice in the batch
		row("new", b1+2, fl("v", 7, 2)),
	)
	if memRows(r) != 7 {
		t.Fatalf("%d rows in memory, want 7", memRows(r))
	}
	h := r.applyMu.mem
	h.mu.RLock()
	for b, bk := range h.buckets {
		for name, ms := range bk.series {
			for _, mr := range ms.rows {
				if timeBucket(mr.t) != b {
					t.Errorf("series %s: row at %d is in bucket %d, its time's is %d", name, mr.t, b, timeBucket(mr.t))
				}
			}
		}
	}
	h.mu.RUnlock()
	want := []model.Row{
		row("known", b0+5, fl("v", 2, 2)), row("known", b0+10, fl("v", 1, 1)),
		row("known", b0+20, fl("v", 3, 2)), row("known", b1+1, fl("v", 4, 2)),
		row("new", b0+1, fl("v", 5, 2)), row("new", b0+2, fl("v", 6, 2)),
		row("new", b1+2, fl("v", 7, 2)),
	}
	got := scanAll(t, r)
	sortRows(got)
	sortRows(want)
	if err := sameRows(got, want); err != nil {
		t.Fatal(err)
	}
}
