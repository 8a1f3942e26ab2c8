package partition

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/partition/block"
)

// naiveBucket computes floor((t-offset)/step)*step+offset exactly, clamped
// to MinInt64.
func naiveBucket(t, step, origin, offset int64) int64 {
	if step == 0 {
		return origin
	}
	off := big.NewInt(offset)
	q := new(big.Int).Sub(big.NewInt(t), off)
	q.Div(q, big.NewInt(step)) // Euclidean: floor for step > 0
	q.Mul(q, big.NewInt(step))
	q.Add(q, off)
	if q.Cmp(big.NewInt(math.MinInt64)) < 0 {
		return math.MinInt64
	}
	return q.Int64()
}

// naiveAggregate is the reference implementation of Aggregate.
func naiveAggregate(all []model.Row, q model.Query) []model.SeriesAgg {
	type key struct {
		series string
		start  int64
		field  string
	}
	states := map[key]*model.AggState{}
	sq := model.Query{From: q.From, To: q.To, Series: q.Series, Prefix: q.Prefix, Fields: q.Fields,
		Measurement: q.Measurement, Tags: q.Tags}
	rows, _ := naiveScan(all, sq)
	for _, r := range rows {
		for _, f := range r.Fields {
			k := key{r.Series, naiveBucket(r.Time, q.Step, q.Origin, q.Offset), f.Name}
			switch {
			case q.GroupAll:
				k.series = "*"
			case len(q.GroupBy) > 0:
				m, tags := naiveTags(r.Series)
				var keys []string
				for tk := range tags {
					if slices.Contains(q.GroupBy, tk) {
						keys = append(keys, tk)
					}
				}
				slices.Sort(keys)
				k.series = m
				for _, tk := range keys {
					k.series += "," + tk + "=" + tags[tk]
				}
			}
			st := states[k]
			if st == nil {
				st = &model.AggState{}
				states[k] = st
			}
			st.Add(r.Time, r.Series, f.Value)
		}
	}
	var out []model.SeriesAgg
	for k, st := range states {
		i := slices.IndexFunc(out, func(s model.SeriesAgg) bool { return s.Series == k.series })
		if i < 0 {
			out = append(out, model.SeriesAgg{Series: k.series})
			i = len(out) - 1
		}
		sa := &out[i]
		j := slices.IndexFunc(sa.Buckets, func(b model.BucketAgg) bool { return b.Start == k.start })
		if j < 0 {
			sa.Buckets = append(sa.Buckets, model.BucketAgg{Start: k.start})
			j = len(sa.Buckets) - 1
		}
		sa.Buckets[j].Fields = append(sa.Buckets[j].Fields, model.FieldAgg{Name: k.field, State: *st})
	}
	for i := range out {
		for j := range out[i].Buckets {
			slices.SortFunc(out[i].Buckets[j].Fields, func(a, b model.FieldAgg) int { return strings.Compare(a.Name, b.Name) })
		}
		slices.SortFunc(out[i].Buckets, func(a, b model.BucketAgg) int { return cmpInt64(a.Start, b.Start) })
	}
	slices.SortFunc(out, func(a, b model.SeriesAgg) int { return strings.Compare(a.Series, b.Series) })
	return out
}

func randAggQuery(rng *rand.Rand, times []int64) model.Query {
	sq := randScanQuery(rng, times)
	q := model.Query{From: sq.From, To: sq.To, Series: sq.Series, Prefix: sq.Prefix, Fields: sq.Fields,
		Measurement: sq.Measurement, Tags: sq.Tags, GroupAll: rng.Intn(3) == 0}
	if !q.GroupAll && rng.Intn(2) == 0 {
		q.GroupBy = [][]string{{"host"}, {"region"}, {"host", "region"}, {"zone"}}[rng.Intn(4)]
	}
	q.Step = []int64{0, 1, 7, 1e9, 1 << bucketShift, 3600e9, 1 << 62, math.MaxInt64}[rng.Intn(8)]
	if rng.Intn(2) == 0 {
		q.Offset = []int64{1, -1, 3, 5e8, -7e9, 1 << 61, math.MaxInt64, math.MinInt64}[rng.Intn(8)]
	}
	if q.Step == 0 {
		q.Origin = randTimeBound(rng, times)
	}
	return q
}

// TestAggregateRandomAgainstModel compares Aggregate with a naive
// computation: all aggregates (the states hold every one), several steps,
// negative times, GroupAll, Step 0 with an origin, and values of every
// kind. Values are small integers and quarters, so sums are exact in any
// order.
func TestAggregateRandomAgainstModel(t *testing.T) {
	// One walk, and stretches of buckets walked at once (Aggregate's
	// split, whatever the machine's processors).
	for _, workers := range []int{1, 2, 5} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			r, all, rng, times := randomReplica(t)
			r.store.aggWorkers = workers
			// At least 700 queries, more (up to 3,500) until 80 answered
			// something: the tag filters make many answers empty for some
			// seeds.
			nonEmpty := 0
			for n := 0; n < 700 || (n < 3500 && nonEmpty < 80); n++ {
				q := randAggQuery(rng, times)
				got, err := r.Aggregate(q)
				if err != nil {
					t.Fatalf("query %+v: %v", q, err)
				}
				want := naiveAggregate(all, q)
				if len(got) == 0 && len(want) == 0 {
					continue
				}
				nonEmpty++
				if !sameAggs(got, want) {
					t.Fatalf("query %+v:\n got %+v\nwant %+v", q, got, want)
				}
				checkResults(t, got)
				// Without the variance: the same answer but for M2.
				q.NoVariance = true
				noVar, err := r.Aggregate(q)
				if err != nil {
					t.Fatalf("query %+v: %v", q, err)
				}
				if !sameAggs(withoutM2(noVar), withoutM2(want)) {
					t.Fatalf("query %+v:\n got %+v\nwant %+v", q, noVar, want)
				}
			}
			if nonEmpty < 80 {
				t.Fatalf("random queries too weak: %d non-empty", nonEmpty)
			}
			t.Logf("%d queries walked in stretches", r.store.aggSplits.Load())
			if n := r.store.aggSplits.Load(); workers > 1 && n < 5 {
				t.Fatalf("only %d queries walked in stretches", n)
			}
		})
	}
}

// TestAggregateMaxBuckets: an answer of n buckets (summed over its
// series) is refused with ErrTooManyBuckets under a cap of n-1 and given
// under n, walked at once or in stretches (whose parts each stay under
// the cap when the buckets spread over them).
func TestAggregateMaxBuckets(t *testing.T) {
	for _, workers := range []int{1, 2, 5} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			r, all, _, _ := randomReplica(t)
			r.store.aggWorkers = workers
			// The random times of randomReplica: 20 storage buckets around 0.
			q := model.Query{From: -10 << bucketShift, To: 10 << bucketShift, Step: 1e9}
			n := 0
			for _, sa := range naiveAggregate(all, q) {
				n += len(sa.Buckets)
			}
			if n < 4 {
				t.Fatalf("%d buckets: too few to test", n)
			}
			q.MaxBuckets = n - 1
			if _, err := r.Aggregate(q); !errors.Is(err, ErrTooManyBuckets) {
				t.Fatalf("cap %d of %d buckets: %v, want ErrTooManyBuckets", n-1, n, err)
			}
			q.MaxBuckets = n
			if got, err := r.Aggregate(q); err != nil || !sameAggs(got, naiveAggregate(all, q)) {
				t.Fatalf("cap %d of %d buckets: %v", n, n, err)
			}
		})
	}
}

// sameAggs compares aggregate answers exactly, but Mean and M2 (whose
// rounding depends on the order of Add and Merge) to a relative 1e-9.
func sameAggs(a, b []model.SeriesAgg) bool {
	return sameAggShape(a, b, func(fa, fb model.FieldAgg) bool {
		if !closeTo(fa.State.Mean, fb.State.Mean) || !closeTo(fa.State.M2, fb.State.M2) {
			return false
		}
		fa.State.Mean, fa.State.M2 = fb.State.Mean, fb.State.M2
		return reflect.DeepEqual(fa, fb)
	})
}

// sameAggShape reports whether a and b have the same series, buckets and
// field counts, in order, and same holds for each pair of fields.
func sameAggShape(a, b []model.SeriesAgg, same func(fa, fb model.FieldAgg) bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Series != b[i].Series || len(a[i].Buckets) != len(b[i].Buckets) {
			return false
		}
		for j := range a[i].Buckets {
			ba, bb := a[i].Buckets[j], b[i].Buckets[j]
			if ba.Start != bb.Start || len(ba.Fields) != len(bb.Fields) {
				return false
			}
			for k := range ba.Fields {
				if !same(ba.Fields[k], bb.Fields[k]) {
					return false
				}
			}
		}
	}
	return true
}

// withoutM2 returns a copy of sas with every state's M2 at 0.
func withoutM2(sas []model.SeriesAgg) []model.SeriesAgg {
	out := make([]model.SeriesAgg, len(sas))
	for i, sa := range sas {
		out[i] = model.SeriesAgg{Series: sa.Series, Buckets: make([]model.BucketAgg, len(sa.Buckets))}
		for j, b := range sa.Buckets {
			out[i].Buckets[j] = model.BucketAgg{Start: b.Start, Fields: slices.Clone(b.Fields)}
			for k := range out[i].Buckets[j].Fields {
				out[i].Buckets[j].Fields[k].State.M2 = 0
			}
		}
	}
	return out
}

func closeTo(x, y float64) bool {
	return x == y || math.Abs(x-y) <= 1e-9*math.Max(1, math.Max(math.Abs(x), math.Abs(y)))
}

// checkResults calls Result for every aggregate (it must not panic and
// must agree with the state's counts).
func checkResults(t *testing.T, sas []model.SeriesAgg) {
	t.Helper()
	for _, sa := range sas {
		for _, b := range sa.Buckets {
			for _, f := range b.Fields {
				for a := model.AggCount; a <= model.AggStddev; a++ {
					_, ok := f.State.Result(a)
					want := f.State.N > 0 || (a == model.AggCount && f.State.Count > 0)
					if a == model.AggStddev {
						want = f.State.N > 1
					}
					if ok != want {
						t.Fatalf("%s/%d/%s: %s reported %v with count %d, n %d", sa.Series, b.Start, f.Name, a, ok, f.State.Count, f.State.N)
					}
				}
			}
		}
	}
}

// TestAggregateMergesAcrossReplicas splits data between two replicas by
// time, as a partition split does, and checks that merging their partial
// states equals aggregating everything in one.
func TestAggregateMergesAcrossReplicas(t *testing.T) {
	s := openTestStore(t, "")
	whole, left, right := createTestReplica(t, s), createTestReplica(t, s), createTestReplica(t, s)
	rng := newSeededRand(t)
	times := testTimes(rng, 40)
	split := int64(12345)
	for i := 0; i < 5; i++ {
		batch := randRows(rng, 80, testSeries, times)
		mustApply(t, whole, batch...)
		var l, rr []model.Row
		for _, row := range batch {
			if row.Time < split {
				l = append(l, row)
			} else {
				rr = append(rr, row)
			}
		}
		mustApply(t, left, l...)
		mustApply(t, right, rr...)
	}
	for _, q := range []model.Query{
		{From: minTime, To: maxTime, Step: 1e9},
		{From: minTime, To: maxTime, Step: 0, Origin: -5},
		{From: -1 << 40, To: 1 << 40, Step: 3600e9, GroupAll: true},
		{From: minTime, To: maxTime, Step: 1 << 62, Series: "cpu", Prefix: true, Fields: []string{"a", "c"}},
	} {
		want, err := whole.Aggregate(q)
		if err != nil {
			t.Fatal(err)
		}
		lq, rq := q, q
		lq.To, rq.From = split, split
		lp, err := left.Aggregate(lq)
		if err != nil {
			t.Fatal(err)
		}
		rp, err := right.Aggregate(rq)
		if err != nil {
			t.Fatal(err)
		}
		if got := model.MergeSeriesAggs(lp, rp); !sameAggs(got, want) {
			t.Fatalf("query %+v: merged partials differ:\n got %+v\nwant %+v", q, got, want)
		}
	}
}

func TestAggregateKnownValues(t *testing.T) {
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	b := func(v bool) model.Field { return model.Field{Name: "up", Value: model.Bool(v), Version: ver(1)} }
	str := model.Field{Name: "msg", Value: model.String("hi"), Version: ver(1)}
	mustApply(t, r,
		row("a", -15, fl("v", 1, 1), b(true)),
		row("a", -5, fl("v", 3, 1), str),
		row("a", 5, fl("v", 10, 1), b(false)),
		row("b", -5, fl("v", 7, 1)),
	)
	got, err := r.Aggregate(model.Query{From: minTime, To: maxTime, Step: 10})
	if err != nil {
		t.Fatal(err)
	}
	type cell struct {
		series string
		start  int64
		field  string
		agg    model.Agg
		want   float64
	}
	cells := []cell{
		{"a", -20, "v", model.AggSum, 1},
		{"a", -20, "up", model.AggAvg, 1},
		{"a", -10, "v", model.AggFirst, 3},
		{"a", -10, "msg", model.AggCount, 1},
		{"a", 0, "up", model.AggMax, 0},
		{"b", -10, "v", model.AggLast, 7},
	}
	for _, c := range cells {
		v, ok := lookupAgg(got, c.series, c.start, c.field, c.agg)
		if !ok || v != c.want {
			t.Errorf("%s bucket %d %s %s = %v, %v; want %v", c.series, c.start, c.field, c.agg, v, ok, c.want)
		}
	}
	if _, ok := lookupAgg(got, "a", -10, "msg", model.AggSum); ok {
		t.Error("sum over a string field reported a value")
	}

	all, err := r.Aggregate(model.Query{From: -10, To: 10, GroupAll: true, Origin: 42, Fields: []string{"v"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 || all[0].Series != "*" || len(all[0].Buckets) != 1 || all[0].Buckets[0].Start != 42 {
		t.Fatalf("GroupAll with Step 0: %+v", all)
	}
	st := all[0].Buckets[0].Fields[0].State
	// First at t=-5 is a tie between a (3) and b (7): the smaller series wins;
	// last at t=5 is a's 10.
	if st.Count != 3 || st.First != 3 || st.FirstSeries != "a" || st.Last != 10 || st.Sum != 20 {
		t.Fatalf("GroupAll state %+v", st)
	}
	if _, err := r.Aggregate(model.Query{From: minTime, To: maxTime, Step: -1}); !errors.Is(err, ErrInvalidQuery) {
		t.Fatalf("negative step: %v", err)
	}
}

func lookupAgg(sas []model.SeriesAgg, series string, start int64, field string, a model.Agg) (float64, bool) {
	for _, sa := range sas {
		if sa.Series != series {
			continue
		}
		for _, b := range sa.Buckets {
			if b.Start != start {
				continue
			}
			for _, f := range b.Fields {
				if f.Name == field {
					return f.State.Result(a)
				}
			}
		}
	}
	return 0, false
}

func TestBucketOf(t *testing.T) {
	tests := []struct{ t, step, origin, want int64 }{
		{0, 10, 0, 0}, {9, 10, 0, 0}, {10, 10, 0, 10}, {-1, 10, 0, -10}, {-10, 10, 0, -10}, {-11, 10, 0, -20},
		{math.MinInt64, 3, 0, math.MinInt64}, {math.MinInt64, 1, 0, math.MinInt64}, {math.MaxInt64, 10, 0, math.MaxInt64 - 7},
		{123, 0, -7, -7}, {math.MinInt64 + 1, math.MaxInt64, 0, -math.MaxInt64},
	}
	for _, tt := range tests {
		if got := bucketOf(tt.t, tt.step, tt.origin, 0); got != tt.want {
			t.Errorf("bucketOf(%d, %d, %d) = %d, want %d", tt.t, tt.step, tt.origin, got, tt.want)
		}
		if got := naiveBucket(tt.t, tt.step, tt.origin, 0); got != tt.want {
			t.Errorf("naiveBucket(%d, %d, %d) = %d, want %d", tt.t, tt.step, tt.origin, got, tt.want)
		}
	}
}

// TestBucketOfOffset checks offsets against the exact big-integer model,
// around the int64 extremes too.
func TestBucketOfOffset(t *testing.T) {
	known := []struct{ t, step, offset, want int64 }{
		{0, 10, 3, -7}, {3, 10, 3, 3}, {12, 10, 3, 3}, {13, 10, 3, 13}, {-8, 10, 3, -17},
		{0, 10, -3, -3}, {7, 10, 13, 3}, {math.MinInt64, 10, 9, math.MinInt64},
	}
	for _, tt := range known {
		if got := bucketOf(tt.t, tt.step, 0, tt.offset); got != tt.want {
			t.Errorf("bucketOf(%d, %d, offset %d) = %d, want %d", tt.t, tt.step, tt.offset, got, tt.want)
		}
	}
	rng := newSeededRand(t)
	edges := []int64{math.MinInt64, math.MinInt64 + 1, math.MinInt64 + 7, -1, 0, 1, math.MaxInt64 - 1, math.MaxInt64}
	pick := func() int64 {
		if rng.Intn(2) == 0 {
			return edges[rng.Intn(len(edges))] + int64(rng.Intn(21)-10)*int64(rng.Intn(2))
		}
		return rng.Int63() - rng.Int63()
	}
	for i := 0; i < 200000; i++ {
		tm, offset := pick(), pick()
		step := []int64{1, 3, 10, 1e9, 1 << 40, math.MaxInt64, math.MaxInt64 - 1, 1<<62 + 3}[rng.Intn(8)]
		if rng.Intn(3) == 0 {
			step = 1 + rng.Int63n(math.MaxInt64)
		}
		if got, want := bucketOf(tm, step, 0, offset), naiveBucket(tm, step, 0, offset); got != want {
			t.Fatalf("bucketOf(%d, %d, offset %d) = %d, want %d", tm, step, offset, got, want)
		}
	}
}

func TestAggBucketManyFields(t *testing.T) {
	rng := newSeededRand(t)
	var b aggBucket
	want := map[string]int64{}
	names := interner{}
	for i := 0; i < 2000; i++ {
		name := []byte{byte('a' + rng.Intn(26)), byte('a' + rng.Intn(3))}
		b.state(name, rng.Intn(80), names).Add(int64(i), "s", model.Int(1))
		want[string(name)]++
	}
	if len(b.fields) != len(want) || b.index == nil {
		t.Fatalf("%d fields (indexed %v), want %d", len(b.fields), b.index != nil, len(want))
	}
	for _, f := range b.fields {
		if f.State.Count != want[f.Name] {
			t.Fatalf("field %s count %d, want %d", f.Name, f.State.Count, want[f.Name])
		}
	}
}

// TestAggregateNoVariance: a column of floats, in the memory head and then
// sealed into blocks, aggregated with and without the variance: the
// answers agree but for M2, which NoVariance leaves short (the runs skip
// its pass).
func TestAggregateNoVariance(t *testing.T) {
	r := createTestReplica(t, openTestStore(t, ""))
	var rows []model.Row
	for i := range 600 {
		for _, s := range []string{"cpu,host=a", "cpu,host=b"} {
			rows = append(rows, row(s, int64(i)*1e9, fl("v", float64(i%7)+0.25, 1)))
		}
	}
	mustApply(t, r, rows...)
	q := model.Query{From: 0, To: 600e9, Step: 60e9, Fields: []string{"v"}}
	check := func(stage string) {
		t.Helper()
		full, err := r.Aggregate(q)
		if err != nil {
			t.Fatal(err)
		}
		nq := q
		nq.NoVariance = true
		noVar, err := r.Aggregate(nq)
		if err != nil {
			t.Fatal(err)
		}
		if !sameAggs(withoutM2(full), withoutM2(noVar)) {
			t.Fatalf("%s: without the variance\n got %+v\nwant %+v", stage, noVar, full)
		}
		// M2 without the variance keeps only what merges of runs add
		// (Chan's term for their means apart): less than the whole.
		less := 0
		for i, sa := range full {
			for j, b := range sa.Buckets {
				m2, whole := noVar[i].Buckets[j].Fields[0].State.M2, b.Fields[0].State.M2
				if whole <= 0 || m2 > whole {
					t.Fatalf("%s: %s bucket %d: M2 %v without the variance, %v with it", stage, sa.Series, b.Start, m2, whole)
				}
				if m2 < whole {
					less++
				}
			}
		}
		// Runs of floats are folded from a memory head's rows and from
		// blocks; head rows in pebble (TSDB_TEST_MEMHEAD=0) are added one
		// by one, M2 included.
		if less == 0 && (stage == "sealed" || memHeadTests) {
			t.Fatalf("%s: every M2 computed without the variance", stage)
		}
	}
	check("head")
	if st, err := r.Seal(t.Context(), math.MaxInt64); err != nil || st.Rows != len(rows) {
		t.Fatalf("seal: %+v, %v", st, err)
	}
	check("sealed")
}

// TestAggregateSumsOnly: sealed blocks of decimal floats (a value in
// every row, as the harness writes them), and a field some rows lack,
// aggregated with and without SumsOnly at steps that cut the blocks
// anywhere, over the whole range and random ranges, with a late row over
// a sealed block: the counts, sums and means are those of the whole
// states bit for bit (the last bucket of a cut block summed up from its
// summary gives what its decoded rows give) and those of a naive
// computation; and some blocks were summed up so. A third field, 100 − v,
// is stored predicted from v (block/predict.go) in some blocks, and reads
// the same.
func TestAggregateSumsOnly(t *testing.T) {
	rng := newSeededRand(t)
	r := createTestReplica(t, openTestStore(t, ""))
	const n, every = 1500, 250e6 // 6 min 15 s: five or six storage buckets
	series := []string{"cpu,host=a", "cpu,host=b", "cpu,host=c"}
	var all []model.Row
	for k, s := range series {
		v := 50.0
		for i := range n {
			v += float64(rng.Intn(201)-100) / 100
			vr := math.Round(v*100) / 100
			fs := []model.Field{fl("v", vr, 1), fl("w", float64(rng.Intn(1e6))/1e4, 1), fl("x", math.Round((100-vr)*100)/100, 1)}
			if k == 2 && rng.Intn(3) == 0 {
				fs = fs[:1] // w and x missing: their columns are read whole
			}
			all = append(all, row(s, int64(i)*every+int64(k), fs...))
		}
	}
	mustApply(t, r, all...)
	if st, err := r.Seal(t.Context(), math.MaxInt64); err != nil || st.Rows != len(all) {
		t.Fatalf("seal: %+v, %v", st, err)
	}
	if got := predictedBlockFields(t, r); got == 0 {
		t.Fatal("no sealed block predicts a field")
	}
	end := int64(n) * every
	check := func(q model.Query) {
		t.Helper()
		want, err := r.Aggregate(q)
		if err != nil {
			t.Fatal(err)
		}
		sq := q
		sq.SumsOnly, sq.NoVariance = true, true
		got, err := r.Aggregate(sq)
		if err != nil {
			t.Fatal(err)
		}
		if !sameSums(got, want, true) || !sameSums(got, naiveAggregate(all, q), false) {
			t.Fatalf("query %+v with SumsOnly:\n got %+v\nwant %+v", q, got, want)
		}
	}
	for range 200 {
		q := model.Query{From: 0, To: end, GroupAll: rng.Intn(2) == 0}
		q.Step = []int64{60e9, 10e9, 7e9 + 3, 1 << 34, 1 << bucketShift, 3 << bucketShift}[rng.Intn(6)]
		q.Offset = rng.Int63n(q.Step)
		if rng.Intn(3) == 0 {
			q.From, q.To = rng.Int63n(end), rng.Int63n(end)
			if q.From > q.To {
				q.From, q.To = q.To, q.From
			}
		}
		switch rng.Intn(3) {
		case 0:
			q.Fields = []string{"v"}
		case 1:
			q.Fields = []string{"x"}
		}
		check(q)
	}
	if r.store.aggTails.Load() == 0 {
		t.Fatal("no block's last bucket was summed up from its summary")
	}
	// A late row over a sealed block: that block is read with the head.
	late := row(series[0], 100*every+7, fl("v", 1.25, 2))
	mustApply(t, r, late)
	all = append(all, late)
	check(model.Query{From: 0, To: end, Step: 60e9, GroupAll: true})
}

// predictedBlockFields counts the predicted fields of r's sealed blocks.
func predictedBlockFields(t *testing.T, r *Replica) int {
	t.Helper()
	it, err := r.store.db.NewIter(&pebble.IterOptions{LowerBound: r.ks.blkLo, UpperBound: r.ks.blkHi})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		rd, err := block.Open(it.Value())
		if err != nil {
			t.Fatalf("block %x: %v", it.Key(), err)
		}
		for i := range rd.NumFields() {
			if rd.Predicted(i) {
				n++
			}
		}
	}
	return n
}

// sameSums compares the counts, sums and means of aggregate answers:
// exactly but for Mean (to a relative 1e-9), and Sum to a relative 1e-9
// too unless exact (a naive sum of decimals in floats rounds otherwise).
func sameSums(a, b []model.SeriesAgg, exact bool) bool {
	return sameAggShape(a, b, func(fa, fb model.FieldAgg) bool {
		sa, sb := fa.State, fb.State
		return fa.Name == fb.Name && sa.Count == sb.Count && sa.N == sb.N &&
			closeTo(sa.Mean, sb.Mean) && closeTo(sa.Sum, sb.Sum) &&
			(!exact || math.Float64bits(sa.Sum) == math.Float64bits(sb.Sum))
	})
}

// TestSeriesListsZeroPastLength walks storage buckets of 5, 5, 1 and 1
// series through an aggregator and checks, after each, that no entry of
// its series lists past their length holds a series: putSeriesList clears
// only the length, so a stale entry there would keep an answer's series
// alive in the pool.
func TestSeriesListsZeroPastLength(t *testing.T) {
	a := aggregator{series: map[string]*aggSeries{}}
	for b, n := range []int{5, 5, 1, 1} {
		for i := range n {
			a.setSeries(fmt.Appendf(nil, "s%02d", i))
		}
		a.endBucket()
		for _, l := range [][]seriesEntry{a.prevSeries, a.thisSeries} {
			for i, e := range l[len(l):cap(l)] {
				if e != (seriesEntry{}) {
					t.Fatalf("after bucket %d: entry %d past the length %d holds %q", b, len(l)+i, len(l), e.name)
				}
			}
		}
	}
	if len(a.series) != 5 {
		t.Fatalf("%d series, want 5", len(a.series))
	}
}
