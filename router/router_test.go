package router

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/partition"
)

// fixedMeta serves one hand-built METADATA file.
type fixedMeta struct{ file *metadata.File }

func (m fixedMeta) Load(_ context.Context, table string) (metadata.TableConfig, *metadata.File, error) {
	if table != m.file.Table {
		return metadata.TableConfig{}, nil, metadata.ErrTableNotFound
	}
	return metadata.TableConfig{Name: table}, m.file, nil
}

func i64(v int64) *int64 { return &v }

// threePartitions splits the axis at 100 and 200; the last partition lives
// on another server.
func threePartitions(self string) *metadata.File {
	pl := func(s string) []metadata.Placement {
		return []metadata.Placement{{ServerID: s, PlacementID: uuid.New()}}
	}
	return &metadata.File{
		Table: "t", TxnID: metadata.NewTxnID(), TxnSeq: 1,
		Partitions: []metadata.Partition{
			{ID: uuid.New(), Begin: nil, End: i64(100), Servers: pl(self)},
			{ID: uuid.New(), Begin: i64(100), End: i64(200), Servers: pl(self)},
			{ID: uuid.New(), Begin: i64(200), End: nil, Servers: pl("other")},
		},
	}
}

func newTestRouter(t *testing.T, file *metadata.File) (*Router, *partition.Store) {
	t.Helper()
	store, err := partition.Open(partition.Options{Dir: filepath.Join(t.TempDir(), "pebble")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return New(Config{Self: "s1", Meta: fixedMeta{file}, Store: store, Clock: model.NewClock("s1", nil)}), store
}

func row(t int64, series string, v float64) model.Row {
	return model.Row{Time: t, Series: series, Fields: []model.Field{{Name: "v", Value: model.Float(v)}}}
}

func TestRoutesRowsToTheirPartitions(t *testing.T) {
	file := threePartitions("s1")
	r, store := newTestRouter(t, file)
	ctx := context.Background()
	rows := []model.Row{row(150, "a", 1), row(-5, "a", 2), row(99, "b", 3), row(100, "b", 4), row(199, "a", 5)}
	if err := r.Insert(ctx, "t", rows, model.InsertOptions{}); err != nil {
		t.Fatal(err)
	}
	// Each replica holds exactly the rows of its range.
	wantTimes := [][]int64{{-5, 99}, {100, 150, 199}}
	for i, want := range wantTimes {
		rep, ok := store.Replica(file.Partitions[i].Servers[0].PlacementID)
		if !ok {
			t.Fatalf("partition %d has no local replica", i)
		}
		got, _, err := rep.Scan(model.Query{From: math.MinInt64, To: math.MaxInt64})
		if err != nil {
			t.Fatal(err)
		}
		var times []int64
		for _, g := range got {
			times = append(times, g.Time)
		}
		if len(times) != len(want) {
			t.Fatalf("partition %d holds %v, want %v", i, times, want)
		}
		for j := range want {
			if times[j] != want[j] {
				t.Fatalf("partition %d holds %v, want %v", i, times, want)
			}
		}
	}
	// The third partition is another server's: nothing local for it.
	if err := r.Insert(ctx, "t", []model.Row{row(250, "a", 1)}, model.InsertOptions{}); !errors.Is(err, ErrNotLocal) {
		t.Fatalf("insert into a remote partition: %v, want ErrNotLocal", err)
	}
	if _, ok := store.Replica(file.Partitions[2].Servers[0].PlacementID); ok {
		t.Fatal("a replica was created for another server's placement")
	}
	if _, _, err := r.Query(ctx, "nope", model.Query{Limit: 1}); !errors.Is(err, metadata.ErrTableNotFound) {
		t.Fatalf("unknown table: %v", err)
	}
}

// TestQueryAndAggregateAcrossPartitions checks raw answers concatenate in
// (time, series) order with the limit applied across partitions, and that
// aggregates whose buckets straddle a partition boundary equal a naive
// computation over all rows.
func TestQueryAndAggregateAcrossPartitions(t *testing.T) {
	file := threePartitions("s1")
	file.Partitions[2].Servers[0].ServerID = "s1"
	r, _ := newTestRouter(t, file)
	ctx := context.Background()
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	var all []model.Row
	seen := map[[2]int64]bool{}
	for len(all) < 300 {
		ts, s := int64(rng.Intn(400)-50), int64(rng.Intn(3))
		if seen[[2]int64{ts, s}] {
			continue
		}
		seen[[2]int64{ts, s}] = true
		all = append(all, row(ts, string(rune('a'+s)), float64(rng.Intn(1000))))
	}
	in := append([]model.Row(nil), all...)
	if err := r.Insert(ctx, "t", in, model.InsertOptions{}); err != nil {
		t.Fatal(err)
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].Time != all[j].Time {
			return all[i].Time < all[j].Time
		}
		return all[i].Series < all[j].Series
	})
	for _, tc := range []struct {
		from, to int64
		limit    int
	}{
		{math.MinInt64, math.MaxInt64, 1000}, {math.MinInt64, math.MaxInt64, 37}, {90, 210, 1000}, {90, 210, 5}, {100, 200, 1000}, {-10, 99, 3},
	} {
		var want []model.Row
		for _, w := range all {
			if w.Time >= tc.from && w.Time < tc.to {
				want = append(want, w)
			}
		}
		truncWant := len(want) > tc.limit
		if truncWant {
			want = want[:tc.limit]
		}
		got, trunc, err := r.Query(ctx, "t", model.Query{From: tc.from, To: tc.to, Limit: tc.limit})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) || trunc != truncWant {
			t.Fatalf("%+v: %d rows (truncated %v), want %d (%v)", tc, len(got), trunc, len(want), truncWant)
		}
		for i := range want {
			if got[i].Time != want[i].Time || got[i].Series != want[i].Series || got[i].Fields[0].Value.F != want[i].Fields[0].Value.F {
				t.Fatalf("%+v: row %d = %+v, want %+v", tc, i, got[i], want[i])
			}
		}
	}
	// Sum per series with step 30: buckets [90,120) and [180,210) straddle
	// the partition boundaries at 100 and 200.
	const step = 30
	res, err := r.Aggregate(ctx, "t", model.Query{From: -60, To: 390, Step: step})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[int64]float64{}
	for _, w := range all {
		if w.Time < -60 || w.Time >= 390 {
			continue
		}
		b := w.Time - ((w.Time%step)+step)%step
		if want[w.Series] == nil {
			want[w.Series] = map[int64]float64{}
		}
		want[w.Series][b] += w.Fields[0].Value.F
	}
	got := map[string]map[int64]float64{}
	for _, s := range res {
		got[s.Series] = map[int64]float64{}
		for _, b := range s.Buckets {
			v, _ := b.Fields[0].State.Result(model.AggSum)
			got[s.Series][b.Start] = v
		}
	}
	if len(got) != len(want) {
		t.Fatalf("series %v, want %v", got, want)
	}
	for s := range want {
		for b, v := range want[s] {
			if got[s][b] != v {
				t.Fatalf("series %s bucket %d: sum %v, want %v", s, b, got[s][b], v)
			}
		}
		if len(got[s]) != len(want[s]) {
			t.Fatalf("series %s: %d buckets, want %d", s, len(got[s]), len(want[s]))
		}
	}
}

// TestAggregateBucketCapCountsAllSeries (issue 14 item 7): the bucket cap
// counts buckets summed over every series of the answer, not per series
// (each series here has 20 buckets, far under any per-series limit), and
// over the merged answer of several partitions, not per partition: two
// partitions of 50 buckets each pass a cap of 80 alone, their merge of 100
// does not. A single partition over the cap fails on the replica.
func TestAggregateBucketCapCountsAllSeries(t *testing.T) {
	file := threePartitions("s1")
	file.Partitions[2].Servers[0].ServerID = "s1"
	r, _ := newTestRouter(t, file)
	ctx := context.Background()
	var rows []model.Row
	for s := range 5 {
		for ts := int64(0); ts < 200; ts += 10 {
			rows = append(rows, row(ts, fmt.Sprintf("s%d", s), 1))
		}
	}
	if err := r.Insert(ctx, "t", rows, model.InsertOptions{}); err != nil {
		t.Fatal(err)
	}
	q := model.Query{From: 0, To: 200, Step: 10}
	res, err := r.Aggregate(ctx, "t", q)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, s := range res {
		total += len(s.Buckets)
	}
	if len(res) != 5 || total != 100 {
		t.Fatalf("%d series, %d buckets, want 5 and 100", len(res), total)
	}
	for _, tc := range []struct {
		what     string
		q        model.Query
		max      int
		wantFail bool
	}{
		{"merged answer over the cap, each partition under it", q, 80, true},
		{"one partition over the cap", model.Query{From: 0, To: 100, Step: 10}, 40, true},
		{"under the cap", q, 100, false},
		{"group=none folds the series", model.Query{From: 0, To: 200, Step: 10, GroupAll: true}, 20, false},
	} {
		tc.q.MaxBuckets = tc.max
		_, err := r.Aggregate(ctx, "t", tc.q)
		switch {
		case tc.wantFail && !errors.Is(err, partition.ErrTooManyBuckets):
			t.Fatalf("%s: err %v, want ErrTooManyBuckets", tc.what, err)
		case tc.wantFail && !strings.Contains(err.Error(), fmt.Sprintf("more than %d buckets", tc.max)):
			t.Fatalf("%s: %v does not name the limit %d", tc.what, err, tc.max)
		case !tc.wantFail && err != nil:
			t.Fatalf("%s: %v", tc.what, err)
		}
	}
}
