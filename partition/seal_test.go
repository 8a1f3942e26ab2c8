package partition

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/partition/block"
)

// TestSealMatchesHead is the differential test of sealing: random batches
// (colliding keys, ties, tombstones, every kind, late writes into sealed
// buckets) applied to a replica that seals at random points and to one
// that never does read the same after every batch, through flushes,
// compactions and reopens: scans of random ranges, aggregates, row
// snapshots, checksums, the tag index; and every Apply stores the same
// number of changes on both (a lookup sees a sealed row as it saw the
// head row: a relayed tie is not stored).
//
// Sparse: 25 times over 20 storage buckets, blocks of a few rows (no
// summaries); dense: 200 times in two buckets, blocks of more than
// block.SummaryMinRows rows, whose summaries answer some aggregates.
func TestSealMatchesHead(t *testing.T) {
	t.Run("sparse", func(t *testing.T) { testSealMatchesHead(t, false) })
	t.Run("dense", func(t *testing.T) { testSealMatchesHead(t, true) })
}

func testSealMatchesHead(t *testing.T, dense bool) {
	rng := newSeededRand(t)
	dirA, dirB := t.TempDir(), t.TempDir()
	stores, info, reps := twinReplicas(t, dirA, dirB)
	sa, sb, a, b := stores[0], stores[1], reps[0], reps[1]
	times, perRound := testTimes(rng, 25), 80
	if dense {
		times, perRound = []int64{minTime, -1, 0, maxTime}, 250
		for len(times) < 204 {
			times = append(times, rng.Int63n(2<<bucketShift))
		}
	}
	var sealed SealStats
	for round := 0; round < 60; round++ {
		rows := randRows(rng, 1+rng.Intn(perRound), testSeries, times)
		for i := range rows {
			for j := range rows[i].Fields {
				if rng.Intn(8) == 0 { // deletes too
					rows[i].Fields[j].Value = model.Deleted()
				}
			}
		}
		var (
			resA, resB ApplyResult
			err        error
		)
		if rng.Intn(3) == 0 {
			origin := uuid.New()
			resA, err = a.ApplyFrom(rows, origin, 0)
			if err == nil {
				resB, err = b.ApplyFrom(rows, origin, 0)
			}
		} else {
			resA, err = a.Apply(rows)
			if err == nil {
				resB, err = b.Apply(rows)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		if resA.Changed != resB.Changed {
			t.Fatalf("round %d: sealing replica stored %d changes, the other %d", round, resA.Changed, resB.Changed)
		}
		switch what := rng.Intn(10); what {
		case 0, 1, 2, 3:
			before := times[rng.Intn(len(times))]
			if rng.Intn(4) == 0 {
				before = math.MaxInt64
			}
			st, err := a.Seal(t.Context(), before)
			if err != nil {
				t.Fatalf("round %d: seal before %d: %v", round, before, err)
			}
			sealed.Add(st)
		case 4, 5, 6:
			stores := churn(t, churnFlush+what-4, []*Store{sa, sb}, []string{dirA, dirB})
			sa, sb = stores[0], stores[1]
			a, _ = sa.Replica(info.Placement)
			b, _ = sb.Replica(info.Placement)
		}
		if err := sameReads(t, a, b, rng, times); err != nil {
			t.Fatalf("round %d: sealed and head replicas differ: %v", round, err)
		}
	}
	if sealed.Series == 0 || sealed.Rows == 0 {
		t.Fatalf("nothing was sealed: %+v", sealed)
	}
	if dense {
		// Everything sealed and the whole range asked: each block lies
		// inside one bucket of these steps, no head row over it, and its
		// summaries answer.
		st, err := a.Seal(t.Context(), math.MaxInt64)
		if err != nil {
			t.Fatal(err)
		}
		sealed.Add(st)
		for _, step := range []int64{1 << 40, 0} {
			q := model.Query{From: minTime, To: maxTime, Step: step, Origin: minTime, GroupAll: step == 0}
			ga, errA := a.Aggregate(q)
			gb, errB := b.Aggregate(q)
			if errA != nil || errB != nil || !sameAggs(ga, gb) {
				t.Fatalf("aggregate %+v of everything sealed: %v, %v\n%v\n%v", q, errA, errB, ga, gb)
			}
		}
	}
	repA, errA := a.CheckIndex(false)
	repB, errB := b.CheckIndex(false)
	if errA != nil || errB != nil || repA.Missing != 0 || repA.Extra != repB.Extra || repA.Series != repB.Series || repA.FieldKeys != repB.FieldKeys {
		t.Fatalf("sealing replica's index: %+v, %v; the other's: %+v, %v", repA, errA, repB, errB)
	}
	t.Logf("sealed %+v; %d fields of blocks answered by summaries", sealed, sa.aggSummaries.Load())
	if dense && sa.aggSummaries.Load() == 0 {
		t.Fatal("no aggregate was answered by a block's summaries")
	}
}

// sameReads compares what a and b answer to a scan of everything, scans
// and aggregates of random ranges, a row snapshot and checksums.
func sameReads(t *testing.T, a, b *Replica, rng interface{ Intn(int) int }, times []int64) error {
	t.Helper()
	if err := sameRows(scanAll(t, a), scanAll(t, b)); err != nil {
		return fmt.Errorf("scan of everything: %w", err)
	}
	for range 4 {
		from, to := times[rng.Intn(len(times))], times[rng.Intn(len(times))]
		if from > to {
			from, to = to, from
		}
		q := model.Query{From: from, To: to}
		switch rng.Intn(3) {
		case 0:
			q.Series = testSeries[rng.Intn(len(testSeries))]
		case 1:
			q.Series, q.Prefix = "cpu", true
		}
		sq := q
		if rng.Intn(3) == 0 {
			sq.Fields = []string{"b", "d"}
		}
		if rng.Intn(3) == 0 {
			sq.Limit = 1 + rng.Intn(20)
		}
		ra, ta, errA := a.Scan(sq)
		rb, tb, errB := b.Scan(sq)
		if errA != nil || errB != nil {
			return fmt.Errorf("scan %+v: %v, %v", sq, errA, errB)
		}
		if ta != tb || !slices.EqualFunc(ra, rb, func(x, y model.Row) bool { return sameRow(x, y) == nil }) {
			return fmt.Errorf("scan %+v: truncated %v, %v:\n%v\n%v", sq, ta, tb, ra, rb)
		}
		// Without the versions (what the HTTP API asks): the same rows
		// and values, the versions zero or as before.
		sq.NoVersions = true
		for _, r := range []*Replica{a, b} {
			rn, tn, err := r.Scan(sq)
			if err != nil || tn != ta || !slices.EqualFunc(rn, ra, sameRowButVersions) {
				return fmt.Errorf("scan %+v without versions: %v, truncated %v:\n%v\nwith them:\n%v", sq, err, tn, rn, ra)
			}
		}
		// Steps that cut storage buckets (blocks read by columns), hold
		// several (blocks answered by their summaries) or hold the whole
		// range; all series apart or together, all fields or two.
		q.Step = []int64{1 << 34, 1 << 40, 0}[rng.Intn(3)]
		q.Origin = from
		q.GroupAll = rng.Intn(2) == 0
		if rng.Intn(2) == 0 {
			q.Fields = []string{"a", "c"}
		}
		ga, errA := a.Aggregate(q)
		gb, errB := b.Aggregate(q)
		if errA != nil || errB != nil {
			return fmt.Errorf("aggregate %+v: %v, %v", q, errA, errB)
		}
		if !sameAggs(ga, gb) { // Mean and M2 to a relative 1e-9: summaries merge
			return fmt.Errorf("aggregate %+v:\n%v\n%v", q, ga, gb)
		}
		// Without the variance (runs of floats skip its pass): the same
		// answers but for M2.
		q.NoVariance = true
		na, errA := a.Aggregate(q)
		nb, errB := b.Aggregate(q)
		if errA != nil || errB != nil {
			return fmt.Errorf("aggregate %+v: %v, %v", q, errA, errB)
		}
		if !sameAggs(withoutM2(na), withoutM2(ga)) || !sameAggs(withoutM2(nb), withoutM2(gb)) {
			return fmt.Errorf("aggregate %+v without the variance:\n%v\n%v\nwith it:\n%v\n%v", q, na, nb, ga, gb)
		}
		q.NoVariance = false
		ca, errA := a.ChecksumRange(from, to)
		cb, errB := b.ChecksumRange(from, to)
		if errA != nil || errB != nil || ca != cb {
			return fmt.Errorf("checksum [%d, %d): %v %v, %v %v", from, to, ca, errA, cb, errB)
		}
	}
	snapRows := func(r *Replica) ([]model.Row, error) {
		ls, err := r.SnapshotLog()
		if err != nil {
			return nil, err
		}
		defer ls.Close()
		return ls.ReadRows(nil, RowRange{}, 0)
	}
	ra, errA := snapRows(a)
	rb, errB := snapRows(b)
	if errA != nil || errB != nil {
		return fmt.Errorf("row snapshot: %v, %v", errA, errB)
	}
	if err := sameRows(ra, rb); err != nil {
		return fmt.Errorf("row snapshot: %w", err)
	}
	if !slices.EqualFunc(ra, rb, func(x, y model.Row) bool { return sameRow(x, y) == nil }) {
		return fmt.Errorf("row snapshot: not in the same order")
	}
	return nil
}

// sameRowButVersions reports whether x (read without versions) is y but
// for versions that x may leave zero.
func sameRowButVersions(x, y model.Row) bool {
	if x.Series != y.Series || x.Time != y.Time || len(x.Fields) != len(y.Fields) {
		return false
	}
	for i, f := range x.Fields {
		g := y.Fields[i]
		if f.Name != g.Name || !f.Value.Equal(g.Value) || f.Version != g.Version && f.Version != (model.Version{}) {
			return false
		}
	}
	return true
}

// TestSealLeavesOversizedSeries: a series whose rows in one storage bucket
// exceed a block's limits (here more field names than block.MaxFields)
// stays in the head, between sealed series on both sides of it, and every
// read answers as before.
func TestSealLeavesOversizedSeries(t *testing.T) {
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	var rows []model.Row
	for i := 0; i <= block.MaxFields; i++ {
		rows = append(rows, row("b", int64(i+1), fl(fmt.Sprintf("f%04d", i), float64(i), 1)))
	}
	for _, series := range []string{"a", "c"} {
		for i := int64(1); i <= 10; i++ {
			rows = append(rows, row(series, i, fl("x", float64(i), 1)))
		}
	}
	mustApply(t, r, rows...)
	before := scanAll(t, r)
	st, err := r.Seal(t.Context(), maxTime)
	if err != nil {
		t.Fatal(err)
	}
	if st.Series != 2 || st.Rows != 20 || st.Skipped != 1 {
		t.Fatalf("seal: %+v; want series a and c sealed (20 rows), b skipped", st)
	}
	if err := sameRows(scanAll(t, r), before); err != nil {
		t.Fatalf("after the seal: %v", err)
	}
	if n := countHeadRows(t, r); n != block.MaxFields+1 {
		t.Fatalf("%d head rows left; want b's %d", n, block.MaxFields+1)
	}
	// Sealing again changes nothing and keeps b where it is: the bucket
	// is passed over (it is settled: not written since).
	if st, err := r.Seal(t.Context(), maxTime); err != nil || st.Buckets != 0 || st.Series != 0 || st.Skipped != 0 {
		t.Fatalf("second seal: %+v, %v; want the bucket passed over", st, err)
	}
	// A write into the bucket makes the next seal take it again: a's new
	// row is sealed, b is passed over unread (known too large).
	mustApply(t, r, row("a", 11, fl("x", 11, 1)))
	before = scanAll(t, r)
	if st, err := r.Seal(t.Context(), maxTime); err != nil || st.Buckets != 1 || st.Series != 1 || st.Rows != 11 || st.Skipped != 0 {
		t.Fatalf("seal after a write: %+v, %v; want a sealed again with its 11 rows", st, err)
	}
	if n := countHeadRows(t, r); n != block.MaxFields+1 {
		t.Fatalf("%d head rows left after the second seal; want b's %d", n, block.MaxFields+1)
	}
	if err := sameRows(scanAll(t, r), before); err != nil {
		t.Fatalf("after the second seal: %v", err)
	}
}

// TestSealBucketByBucket is a seal as the node runs it: one bucket more at
// every pass, with one series only, so that the series of the sealed
// buckets before the head's first is the head's first series too. Reads,
// deletes and snapshots answer as if nothing was sealed. (A seal that
// started reading at an earlier bucket's blocks folded them into the next
// bucket's block: rows doubled under keys of the wrong bucket.)
func TestSealBucketByBucket(t *testing.T) {
	rng := newSeededRand(t)
	_, _, reps := twinReplicas(t, "", "")
	a, b := reps[0], reps[1]
	var times []int64
	for bk := int64(0); bk < 8; bk++ {
		for range 3 {
			times = append(times, bk<<bucketShift+rng.Int63n(1<<bucketShift))
		}
	}
	slices.Sort(times)
	times = slices.Compact(times)
	for i, ts := range times {
		rows := []model.Row{row("x", ts, fl("a", float64(i), 1))}
		if i > 3 && rng.Intn(3) == 0 {
			// A late delete of an earlier row, often in a sealed bucket.
			old := times[rng.Intn(i)]
			rows = append(rows, model.Row{Series: "x", Time: old, Fields: []model.Field{{Name: "a", Value: model.Deleted(), Version: ver(2)}}})
		}
		for _, r := range []*Replica{a, b} {
			if _, err := r.Apply(rows); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := a.Seal(t.Context(), ts&^(1<<bucketShift-1)); err != nil {
			t.Fatal(err)
		}
		if err := sameReads(t, a, b, rng, times); err != nil {
			t.Fatalf("after row %d: %v", i, err)
		}
	}
}

// TestSealQuietBuckets: an ended bucket is sealed before SealPolicy.Before
// reaches it once it has taken no write for Quiet, a bucket written within
// Quiet or not ended is not, and a write into a sealed bucket makes it
// wait Quiet again before the re-seal.
func TestSealQuietBuckets(t *testing.T) {
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	old := int64(5) << bucketShift                      // ended in 1970
	future := time.Now().Add(24 * time.Hour).UnixNano() // not ended at any Now below
	mustApply(t, r, row("cpu", old, fl("a", 1, 1)), row("cpu", future, fl("a", 1, 1)))
	heads := func() int { return countHeadRows(t, r) }
	now := time.Now().UnixNano()
	p := SealPolicy{Before: math.MinInt64, Now: now, Quiet: time.Hour}
	if st, err := r.SealWith(t.Context(), p); err != nil || st.Rows != 0 || heads() != 2 {
		t.Fatalf("written just now: %+v, %v, %d head rows; want nothing sealed", st, err, heads())
	}
	p.Now = now + int64(2*time.Hour) // an hour and more without a write
	if st, err := r.SealWith(t.Context(), p); err != nil || st.Rows != 1 || heads() != 1 {
		t.Fatalf("quiet: %+v, %v, %d head rows; want the old bucket sealed, the future one not (not ended)", st, err, heads())
	}
	// A late write into the sealed bucket waits Quiet again.
	mustApply(t, r, row("cpu", old+1, fl("a", 2, 1)))
	p.Now = time.Now().UnixNano()
	if st, err := r.SealWith(t.Context(), p); err != nil || st.Rows != 0 || heads() != 2 {
		t.Fatalf("just written again: %+v, %v, %d head rows; want nothing sealed", st, err, heads())
	}
	p.Now += int64(2 * time.Hour)
	if st, err := r.SealWith(t.Context(), p); err != nil || st.Rows != 2 || heads() != 1 {
		t.Fatalf("quiet again: %+v, %v, %d head rows; want the bucket sealed again with both rows", st, err, heads())
	}
	if err := sameRows(scanAll(t, r), []model.Row{row("cpu", old, fl("a", 1, 1)), row("cpu", old+1, fl("a", 2, 1)), row("cpu", future, fl("a", 1, 1))}); err != nil {
		t.Fatal(err)
	}
}

// TestSealIdleSpace: with SealPolicy.Idle, an ended bucket is sealed
// before Quiet once its whole data space has taken no write for Idle, not
// while the space still takes writes elsewhere (into a bucket not ended),
// nor with Idle off; the seal forgets the notes it made quiet, so
// NextQuietSeal does not wake the sealer for them again.
func TestSealIdleSpace(t *testing.T) {
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	old := int64(5) << bucketShift                      // ended in 1970
	future := time.Now().Add(24 * time.Hour).UnixNano() // not ended at any Now below
	mustApply(t, r, row("cpu", old, fl("a", 1, 1)))
	notes := func() (oldLast, spaceLast int64) {
		r.applyMu.Lock()
		defer r.applyMu.Unlock()
		return r.applyMu.lastWrite[timeBucket(old)], r.applyMu.lastAny
	}
	oldLast, _ := notes()
	for time.Now().UnixNano() <= oldLast+int64(time.Millisecond) {
		time.Sleep(time.Millisecond) // the space's next write strictly later
	}
	mustApply(t, r, row("cpu", future, fl("a", 1, 1)))
	oldLast, spaceLast := notes()
	if spaceLast <= oldLast {
		t.Fatalf("space's last write %d, old bucket's %d; want the space's later", spaceLast, oldLast)
	}
	heads := func() int { return countHeadRows(t, r) }
	idle := time.Duration(spaceLast-oldLast) / 2 // the old bucket quiet for Idle, the space not
	p := SealPolicy{Before: math.MinInt64, Now: spaceLast + int64(idle) - 1, Quiet: time.Hour, Idle: idle}
	if st, err := r.SealWith(t.Context(), p); err != nil || st.Rows != 0 || heads() != 2 {
		t.Fatalf("space written within Idle: %+v, %v, %d head rows; want nothing sealed", st, err, heads())
	}
	if at, ok := s.NextQuietSeal(p); !ok || at != spaceLast+int64(idle) {
		t.Fatalf("next quiet seal at %d, %v; want %d (the space's last write plus Idle)", at, ok, spaceLast+int64(idle))
	}
	p.Now++
	off := p
	off.Idle = 0
	if st, err := r.SealWith(t.Context(), off); err != nil || st.Rows != 0 || heads() != 2 {
		t.Fatalf("Idle off: %+v, %v, %d head rows; want nothing sealed before Quiet", st, err, heads())
	}
	if st, err := r.SealWith(t.Context(), p); err != nil || st.Rows != 1 || heads() != 1 {
		t.Fatalf("space idle: %+v, %v, %d head rows; want the old bucket sealed, the future one not (not ended)", st, err, heads())
	}
	if at, ok := s.NextQuietSeal(p); ok {
		t.Fatalf("next quiet seal at %d after the seal; want none (the notes made quiet forgotten)", at)
	}
	if err := sameRows(scanAll(t, r), []model.Row{row("cpu", old, fl("a", 1, 1)), row("cpu", future, fl("a", 1, 1))}); err != nil {
		t.Fatal(err)
	}
}

// TestSealStopsReadingOversizedSeries: a series with more rows in one
// bucket than a block holds is left in the head as soon as the seal has
// read one row too many, and the series after it are sealed.
func TestSealStopsReadingOversizedSeries(t *testing.T) {
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	rows := make([]model.Row, 0, block.MaxRows+4)
	for i := 0; i <= block.MaxRows; i++ {
		rows = append(rows, row("big", int64(i+1), fl("x", 1, 1)))
	}
	rows = append(rows, row("c", 1, fl("x", 1, 1)), row("c", 2, fl("x", 2, 1)), row("a", 5, fl("x", 5, 1)))
	mustApply(t, r, rows...)
	st, err := r.Seal(t.Context(), maxTime)
	if err != nil || st.Series != 2 || st.Rows != 3 || st.Skipped != 1 {
		t.Fatalf("seal: %+v, %v; want a and c sealed, big skipped", st, err)
	}
	if n := countHeadRows(t, r); n != block.MaxRows+1 {
		t.Fatalf("%d head rows; want big's %d", n, block.MaxRows+1)
	}
	if got := scanAll(t, r); len(got) != len(rows) {
		t.Fatalf("%d rows read; want %d", len(got), len(rows))
	}
}

// TestSealOutsideTheLock: a seal reads and encodes a batch outside the
// apply lock and commits it only if nothing changed the data space's rows
// meanwhile. A write into the bucket being sealed, or a drain of the
// memory head, between the read and the commit makes it seal the batch
// again under the lock, and the write is kept (committed blind, the
// seal's range deletion and removal from memory would drop it); a write
// into another bucket does not.
func TestSealOutsideTheLock(t *testing.T) {
	old := int64(5) << bucketShift // ended in 1970
	future := time.Now().Add(24 * time.Hour).UnixNano()
	cases := []struct {
		name    string
		during  func(t *testing.T, r *Replica)
		retries int64
		want    []model.Row
		// heads: rows left in the head (a write into a bucket not
		// ended); memHead: the case needs a memory head.
		heads   int
		memHead bool
	}{
		{"write into the bucket", func(t *testing.T, r *Replica) {
			mustApply(t, r, row("cpu,host=b", old+7, fl("a", 9, 2)))
		}, 1, []model.Row{
			row("cpu,host=a", old, fl("a", 1, 1)), row("cpu,host=a", old+1, fl("a", 2, 1)),
			row("cpu,host=b", old, fl("a", 3, 1)), row("cpu,host=b", old+7, fl("a", 9, 2)),
			row("cpu,host=c", old, fl("a", 4, 1)),
		}, 0, false},
		{"overwrite in the bucket", func(t *testing.T, r *Replica) {
			mustApply(t, r, row("cpu,host=a", old+1, fl("a", 8, 2)))
		}, 1, []model.Row{
			row("cpu,host=a", old, fl("a", 1, 1)), row("cpu,host=a", old+1, fl("a", 8, 2)),
			row("cpu,host=b", old, fl("a", 3, 1)), row("cpu,host=c", old, fl("a", 4, 1)),
		}, 0, false},
		{"drain of the memory head", func(t *testing.T, r *Replica) {
			if err := r.drainMem(); err != nil {
				t.Fatal(err)
			}
		}, 1, nil, 0, true},
		{"write into another bucket", func(t *testing.T, r *Replica) {
			mustApply(t, r, row("cpu,host=a", future, fl("a", 5, 2)))
		}, 0, []model.Row{
			row("cpu,host=a", old, fl("a", 1, 1)), row("cpu,host=a", old+1, fl("a", 2, 1)),
			row("cpu,host=b", old, fl("a", 3, 1)), row("cpu,host=c", old, fl("a", 4, 1)),
			row("cpu,host=a", future, fl("a", 5, 2)),
		}, 1, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := openTestStore(t, "")
			r := createTestReplica(t, s)
			base := []model.Row{
				row("cpu,host=a", old, fl("a", 1, 1)), row("cpu,host=a", old+1, fl("a", 2, 1)),
				row("cpu,host=b", old, fl("a", 3, 1)), row("cpu,host=c", old, fl("a", 4, 1)),
			}
			mustApply(t, r, base...)
			if c.memHead && r.applyMu.mem == nil {
				t.Skip("no memory head to drain (TSDB_TEST_MEMHEAD=0)")
			}
			ran := false
			r.hookSealOutside = func() {
				if !ran {
					ran = true
					c.during(t, r)
				}
			}
			st, err := r.Seal(t.Context(), old+1<<bucketShift)
			if err != nil {
				t.Fatal(err)
			}
			if !ran {
				t.Fatal("the seal never ran outside the lock")
			}
			if st.Series != 3 {
				t.Fatalf("sealed %d series, want 3 (%+v)", st.Series, st)
			}
			want := c.want
			if want == nil {
				want = base
			}
			got := scanAll(t, r)
			byKey := func(a, b model.Row) int {
				if a.Series != b.Series {
					return cmp.Compare(a.Series, b.Series)
				}
				return cmp.Compare(a.Time, b.Time)
			}
			slices.SortFunc(got, byKey)
			want = slices.Clone(want)
			slices.SortFunc(want, byKey)
			if err := sameRows(got, want); err != nil {
				t.Fatal(err)
			}
			// Everything in the sealed bucket is sealed; only a write into
			// another (not ended) bucket stays in the head.
			if n := countHeadRows(t, r); n != c.heads {
				t.Fatalf("%d head rows left, want %d", n, c.heads)
			}
			if got := s.SealRetries(); got != c.retries {
				t.Fatalf("%d seal batches read again under the lock, want %d", got, c.retries)
			}
		})
	}
}

// TestSealOutsideTheLockUnderWrites seals again and again while a writer
// adds rows to the buckets being sealed and to later ones: every row
// written is read back once, with its value, whichever of a seal's read
// and commit it fell between (run it with -race).
func TestSealOutsideTheLockUnderWrites(t *testing.T) {
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	const n = 3000
	done := make(chan error, 1)
	go func() {
		for i := range n {
			bk := int64(5 + i%3) // three ended buckets, written in turn
			ts := bk<<bucketShift + int64(i)
			series := fmt.Sprintf("cpu,host=%d", i%17)
			if _, err := r.Apply([]model.Row{row(series, ts, fl("a", float64(i), 1))}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	sealed := int64(0)
	for writing := true; writing; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			writing = false
		default:
		}
		st, err := r.Seal(t.Context(), 8<<bucketShift)
		if err != nil {
			t.Fatal(err)
		}
		sealed += int64(st.Rows)
	}
	if _, err := r.Seal(t.Context(), 8<<bucketShift); err != nil {
		t.Fatal(err)
	}
	got := scanAll(t, r)
	if len(got) != n {
		t.Fatalf("%d rows read back, want %d", len(got), n)
	}
	for _, g := range got {
		i := g.Time & (1<<bucketShift - 1)
		if want := fmt.Sprintf("cpu,host=%d", i%17); g.Series != want || g.Fields[0].Value.F != float64(i) {
			t.Fatalf("row %s@%d = %v, want %s with a=%d", g.Series, g.Time, g.Fields, want, i)
		}
	}
	if n := countHeadRows(t, r); n != 0 {
		t.Fatalf("%d head rows left after the last seal", n)
	}
	t.Logf("%d rows sealed while writing, %d seal batches read again under the lock", sealed, s.SealRetries())
}

// TestTooManyNames counts a series' field names across schemas that
// repeat, alternate and come back, on both sides of block.MaxFields.
func TestTooManyNames(t *testing.T) {
	fields := func(names ...string) []model.Field {
		fs := make([]model.Field, len(names))
		for i, n := range names {
			fs[i] = fl(n, 1, 1)
		}
		return fs
	}
	many := func(n, from int) []string {
		names := make([]string, n)
		for i := range names {
			names[i] = fmt.Sprintf("f%05d", from+i)
		}
		return names
	}
	rowsOf := func(schemas ...[]string) ([]model.Row, int) {
		var rows []model.Row
		values := 0
		for i, names := range schemas {
			rows = append(rows, model.Row{Series: "s", Time: int64(i), Fields: fields(names...)})
			values += len(names)
		}
		return rows, values
	}
	same := make([][]string, 2000)
	for i := range same {
		same[i] = []string{"a", "b", "c"}
	}
	half, otherHalf := many(block.MaxFields/2+1, 0), many(block.MaxFields/2, block.MaxFields)
	for _, tc := range []struct {
		name    string
		schemas [][]string
		want    bool
	}{
		{"one schema, many values", same, false},
		{"a name per row", func() [][]string {
			var s [][]string
			for _, n := range many(block.MaxFields+1, 0) {
				s = append(s, []string{n})
			}
			return s
		}(), true},
		{"exactly the limit", [][]string{many(block.MaxFields, 0), many(block.MaxFields, 0)}, false},
		{"two halves alternating", [][]string{half, otherHalf, half, otherHalf}, true},
		{"a schema that comes back", [][]string{half, {"a"}, half, {"a"}, half}, false},
		{"the new name in the last row only", append(append([][]string{}, same...), many(block.MaxFields-2, 10)), true},
	} {
		rows, values := rowsOf(tc.schemas...)
		if got := tooManyNames(rows, values); got != tc.want {
			t.Errorf("%s: tooManyNames = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestSealColumnsThenRows: a series whose rows in memory are compact rows
// of one shape is sealed from columns; one whose later row has another
// shape (a field more, an int, a string, a tombstone) goes on as rows
// from there; both blocks read back the rows written, and rows
// written after the seal merge with the block as before.
func TestSealColumnsThenRows(t *testing.T) {
	s := openTestStore(t, t.TempDir())
	if !s.memoryHead {
		t.Skip("no memory head (TSDB_TEST_MEMHEAD=0)")
	}
	r := createTestReplica(t, s)
	b0 := bucketStart(timeBucket(0) + 1)
	var want []model.Row
	for i := range int64(100) {
		want = append(want, row("cols", b0+i, fl("a", float64(i)/4, 10), fl("b", 100-float64(i)/4, 10)))
	}
	for i := range int64(100) {
		want = append(want, row("mixed", b0+i, fl("a", float64(i), 10), fl("b", 1, 10)))
	}
	other := []model.Row{
		row("mixed", b0+100, fl("a", 1, 11), fl("b", 2, 11), fl("c", 3, 11)),
		{Series: "mixed", Time: b0 + 101, Fields: []model.Field{{Name: "a", Value: model.Int(-7), Version: ver(12)}}},
		{Series: "mixed", Time: b0 + 102, Fields: []model.Field{{Name: "s", Value: model.String("x"), Version: ver(12)}}},
		row("mixed", b0+103, fl("a", 5, 13), fl("b", 6, 13)),
	}
	want = append(want, other...)
	mustApply(t, r, want...)
	st, err := r.Seal(t.Context(), bucketStart(timeBucket(b0)+1))
	if err != nil {
		t.Fatal(err)
	}
	if st.Series != 2 || st.Rows != len(want) {
		t.Fatalf("sealed %d series, %d rows; want 2, %d", st.Series, st.Rows, len(want))
	}
	if n := countHeadRows(t, r); n != 0 {
		t.Fatalf("%d head rows after the seal, want 0", n)
	}
	got := scanAll(t, r)
	sortRows(want)
	if err := sameRows(got, want); err != nil {
		t.Fatalf("rows read back from the blocks: %v", err)
	}
	// A tombstone and a newer value over the sealed columns.
	late := []model.Row{
		{Series: "cols", Time: b0 + 3, Fields: []model.Field{{Name: "a", Value: model.Deleted(), Version: ver(20)}}},
		row("cols", b0+4, fl("b", -1, 20)),
	}
	mustApply(t, r, late...)
	for i := range want {
		switch {
		case want[i].Series == "cols" && want[i].Time == b0+3:
			want[i].Fields = want[i].Fields[1:] // a deleted
		case want[i].Series == "cols" && want[i].Time == b0+4:
			want[i].Fields = []model.Field{want[i].Fields[0], fl("b", -1, 20)}
		}
	}
	if err := sameRows(scanAll(t, r), want); err != nil {
		t.Fatalf("rows after late writes over the blocks: %v", err)
	}
}
