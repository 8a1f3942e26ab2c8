package partition

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/model"
)

// TestSealMatchesHead is the differential test of sealing: random batches
// (colliding keys, ties, tombstones, every kind, late writes into sealed
// buckets) applied to a replica that seals at random points and to one
// that never does read the same after every batch, through flushes,
// compactions and reopens: scans of random ranges, aggregates, row
// snapshots, checksums, the tag index; and every Apply stores the same
// number of changes on both (a lookup sees a sealed row as it saw the
// head row: a relayed tie is not stored).
func TestSealMatchesHead(t *testing.T) {
	rng := newSeededRand(t)
	dirA, dirB := t.TempDir(), t.TempDir()
	sa, sb := openTestStore(t, dirA), openTestStore(t, dirB)
	info := testInfo(uuid.New())
	a, err := sa.CreateReplica(info)
	if err != nil {
		t.Fatal(err)
	}
	b, err := sb.CreateReplica(info)
	if err != nil {
		t.Fatal(err)
	}
	times := testTimes(rng, 25)
	var sealed SealStats
	for round := 0; round < 60; round++ {
		rows := randRows(rng, 1+rng.Intn(80), testSeries, times)
		var resA, resB ApplyResult
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
		switch rng.Intn(10) {
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
		case 4:
			for _, s := range []*Store{sa, sb} {
				if err := s.DB().Flush(); err != nil {
					t.Fatal(err)
				}
			}
		case 5:
			for _, s := range []*Store{sa, sb} {
				if err := s.DB().Compact(t.Context(), []byte{0}, []byte{0xff}, true); err != nil {
					t.Fatal(err)
				}
			}
		case 6:
			for _, s := range []*Store{sa, sb} {
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			}
			sa, sb = openTestStore(t, dirA), openTestStore(t, dirB)
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
	repA, errA := a.CheckIndex(false)
	repB, errB := b.CheckIndex(false)
	if errA != nil || errB != nil || repA.Missing != 0 || repA.Extra != repB.Extra || repA.Series != repB.Series || repA.FieldKeys != repB.FieldKeys {
		t.Fatalf("sealing replica's index: %+v, %v; the other's: %+v, %v", repA, errA, repB, errB)
	}
	t.Logf("sealed %+v", sealed)
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
		ra, _, errA := a.Scan(q)
		rb, _, errB := b.Scan(q)
		if errA != nil || errB != nil {
			return fmt.Errorf("scan %+v: %v, %v", q, errA, errB)
		}
		if err := sameRows(ra, rb); err != nil {
			return fmt.Errorf("scan %+v: %w", q, err)
		}
		q.Step = 1 << 34
		ga, errA := a.Aggregate(q)
		gb, errB := b.Aggregate(q)
		if errA != nil || errB != nil {
			return fmt.Errorf("aggregate %+v: %v, %v", q, errA, errB)
		}
		if fa, fb := fmt.Sprint(ga), fmt.Sprint(gb); fa != fb {
			return fmt.Errorf("aggregate %+v:\n%s\n%s", q, fa, fb)
		}
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
