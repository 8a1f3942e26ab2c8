package model

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"reflect"
	"testing"
	"time"
)

type aggPoint struct {
	t      int64
	series string
	v      Value
}

func randAggPoints(rng *rand.Rand, n int) []aggPoint {
	series := []string{"a", "b", "c"}
	ps := make([]aggPoint, n)
	for i := range ps {
		p := aggPoint{t: int64(rng.Intn(7) - 3), series: series[rng.Intn(len(series))]}
		switch rng.Intn(8) {
		case 0:
			p.v = String("s")
		case 1:
			p.v = Bool(rng.Intn(2) == 1)
		case 2:
			p.v = Int(int64(rng.Intn(21) - 10))
		case 3:
			p.v = Float(math.Copysign(0, -1))
		case 4:
			if rng.Intn(10) == 0 {
				p.v = Float(math.NaN())
			} else {
				p.v = Float(math.Inf(1 - 2*rng.Intn(2)))
			}
		default:
			// Small integers keep Sum exact in any order.
			p.v = Float(float64(rng.Intn(41) - 20))
		}
		ps[i] = p
	}
	return ps
}

// sameFloat treats all NaNs as equal and otherwise compares bit patterns,
// so that -0 and +0 differ.
func sameFloat(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Float64bits(a) == math.Float64bits(b)
}

func sameState(a, b *AggState) bool {
	if a.Count != b.Count || a.N != b.N {
		return false
	}
	if a.N == 0 {
		return true
	}
	return sameFloat(a.Sum, b.Sum) && sameFloat(a.Min, b.Min) && sameFloat(a.Max, b.Max) &&
		a.FirstTime == b.FirstTime && a.FirstSeries == b.FirstSeries && sameFloat(a.First, b.First) &&
		a.LastTime == b.LastTime && a.LastSeries == b.LastSeries && sameFloat(a.Last, b.Last)
}

func onePass(ps []aggPoint) AggState {
	var s AggState
	for _, p := range ps {
		s.Add(p.t, p.series, p.v)
	}
	return s
}

// mergeTree merges states in a random tree shape.
func mergeTree(rng *rand.Rand, states []AggState) AggState {
	for len(states) > 1 {
		i := rng.Intn(len(states) - 1)
		a, b := states[i], states[i+1]
		if rng.Intn(2) == 0 {
			a, b = b, a
		}
		a.Merge(&b)
		states = append(states[:i], append([]AggState{a}, states[i+2:]...)...)
	}
	if len(states) == 0 {
		return AggState{}
	}
	return states[0]
}

func TestAggStateMergeEqualsOnePass(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	for iter := 0; iter < 2000; iter++ {
		ps := randAggPoints(rng, rng.Intn(30))
		want := onePass(ps)

		shuffled := append([]aggPoint(nil), ps...)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		if got := onePass(shuffled); !sameState(&got, &want) {
			t.Fatalf("iter %d: Add order matters:\n got %+v\nwant %+v", iter, got, want)
		}

		k := 1 + rng.Intn(5)
		parts := make([][]aggPoint, k)
		for _, p := range shuffled {
			j := rng.Intn(k)
			parts[j] = append(parts[j], p)
		}
		states := make([]AggState, k)
		for i := range parts {
			states[i] = onePass(parts[i])
		}
		if got := mergeTree(rng, states); !sameState(&got, &want) {
			t.Fatalf("iter %d: merge differs from one pass:\n got %+v\nwant %+v", iter, got, want)
		}
	}
}

func TestAggStateMergeCommutativeAssociative(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	for iter := 0; iter < 2000; iter++ {
		a := onePass(randAggPoints(rng, rng.Intn(6)))
		b := onePass(randAggPoints(rng, rng.Intn(6)))
		c := onePass(randAggPoints(rng, rng.Intn(6)))

		ab, ba := a, b
		ab.Merge(&b)
		ba.Merge(&a)
		if !sameState(&ab, &ba) {
			t.Fatalf("iter %d: not commutative:\n a+b %+v\n b+a %+v", iter, ab, ba)
		}
		left := ab
		left.Merge(&c)
		bc := b
		bc.Merge(&c)
		right := a
		right.Merge(&bc)
		if !sameState(&left, &right) {
			t.Fatalf("iter %d: not associative:\n (a+b)+c %+v\n a+(b+c) %+v", iter, left, right)
		}
	}
}

func TestAggStateResult(t *testing.T) {
	var s AggState
	s.Add(20, "b", Float(4))
	s.Add(10, "b", Int(1))
	s.Add(10, "a", Bool(true))
	s.Add(30, "a", String("x"))
	s.Add(20, "c", Float(-2))
	tests := []struct {
		agg  Agg
		want float64
	}{
		{AggCount, 5}, {AggSum, 4}, {AggMin, -2}, {AggMax, 4}, {AggAvg, 1},
		{AggFirst, 1}, // t=10: series "a" (true = 1) wins the tie over "b"
		{AggLast, -2}, // t=20: series "c" wins the tie over "b"
	}
	for _, tt := range tests {
		got, ok := s.Result(tt.agg)
		if !ok || got != tt.want {
			t.Errorf("%s = %v, %v; want %v", tt.agg, got, ok, tt.want)
		}
	}
	if s.FirstSeries != "a" || s.LastSeries != "c" {
		t.Errorf("first series %q, last series %q; want a, c", s.FirstSeries, s.LastSeries)
	}

	var strs AggState
	strs.Add(1, "a", String("x"))
	if got, ok := strs.Result(AggCount); !ok || got != 1 {
		t.Errorf("count over strings = %v, %v; want 1", got, ok)
	}
	for _, a := range []Agg{AggSum, AggMin, AggMax, AggAvg, AggFirst, AggLast} {
		if _, ok := strs.Result(a); ok {
			t.Errorf("%s over strings only reported a value", a)
		}
	}
	var empty AggState
	if _, ok := empty.Result(AggCount); ok {
		t.Error("count over nothing reported a value")
	}
}

func TestParseAgg(t *testing.T) {
	for a := AggCount; a <= AggLast; a++ {
		got, err := ParseAgg(a.String())
		if err != nil || got != a {
			t.Errorf("ParseAgg(%q) = %v, %v", a.String(), got, err)
		}
	}
	for _, bad := range []string{"", "COUNT", "median", "avg "} {
		_, err := ParseAgg(bad)
		if !errors.Is(err, ErrInvalidAgg) {
			t.Errorf("ParseAgg(%q) error = %v; want ErrInvalidAgg", bad, err)
		}
	}
	if _, err := ParseAgg("median"); err == nil || !contains(err.Error(), `"median"`) {
		t.Errorf("error %v does not name the bad value", err)
	}
	if Agg(0).String() != "agg(0)" {
		t.Errorf("Agg(0).String() = %q", Agg(0).String())
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func st(vals ...float64) AggState {
	var s AggState
	for i, v := range vals {
		s.Add(int64(i), "x", Float(v))
	}
	return s
}

func TestMergeSeriesAggs(t *testing.T) {
	dst := []SeriesAgg{
		{Series: "b", Buckets: []BucketAgg{{Start: 10, Fields: []FieldAgg{{Name: "f", State: st(1)}}}}},
		{Series: "a", Buckets: []BucketAgg{{Start: 0, Fields: []FieldAgg{{Name: "f", State: st(2)}}}}},
	}
	src := []SeriesAgg{
		{Series: "b", Buckets: []BucketAgg{
			{Start: 10, Fields: []FieldAgg{{Name: "g", State: st(5)}, {Name: "f", State: st(3)}}},
			{Start: 0, Fields: []FieldAgg{{Name: "f", State: st(7)}}},
		}},
		{Series: "c", Buckets: []BucketAgg{{Start: 0, Fields: []FieldAgg{{Name: "f", State: st(9)}}}}},
	}
	srcCopy := cloneSeriesAggs(src)
	got := MergeSeriesAggs(dst, src)

	fb := st(1)
	fb3 := st(3)
	fb.Merge(&fb3)
	want := []SeriesAgg{
		{Series: "a", Buckets: []BucketAgg{{Start: 0, Fields: []FieldAgg{{Name: "f", State: st(2)}}}}},
		{Series: "b", Buckets: []BucketAgg{
			{Start: 0, Fields: []FieldAgg{{Name: "f", State: st(7)}}},
			{Start: 10, Fields: []FieldAgg{{Name: "f", State: fb}, {Name: "g", State: st(5)}}},
		}},
		{Series: "c", Buckets: []BucketAgg{{Start: 0, Fields: []FieldAgg{{Name: "f", State: st(9)}}}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("MergeSeriesAggs:\n got %+v\nwant %+v", got, want)
	}
	if !reflect.DeepEqual(src, srcCopy) {
		t.Fatal("MergeSeriesAggs modified src")
	}
	if got := MergeSeriesAggs(nil, nil); len(got) != 0 {
		t.Fatalf("merge of nothing = %+v", got)
	}
}

func cloneSeriesAggs(in []SeriesAgg) []SeriesAgg {
	out := make([]SeriesAgg, len(in))
	for i, s := range in {
		out[i] = SeriesAgg{Series: s.Series, Buckets: cloneBuckets(s.Buckets)}
	}
	return out
}

// TestFloatRunOverflow: sums that overflow end as Add's in-order sum does
// (lanes summed apart would give +Inf + -Inf = NaN).
func TestFloatRunOverflow(t *testing.T) {
	vals := []float64{1e308, 1e308, -1e308, -1e308, 1e308, 1e308, -1e308, -1e308}
	var want AggState
	for i, v := range vals {
		want.Add(int64(i), "s", Float(v))
	}
	if got := FloatRun(vals, 0, int64(len(vals)-1), "s"); got.Sum != want.Sum {
		t.Fatalf("sum %v, want %v", got.Sum, want.Sum)
	}
}

// TestFloatRunSignedZeros: a run's Min and Max keep the sign of zero as
// math.Min and math.Max do (min(+0, -0) is -0, max is +0), whatever the
// order and the lane each zero falls in.
func TestFloatRunSignedZeros(t *testing.T) {
	negZero := math.Copysign(0, -1)
	for _, vals := range [][]float64{
		{0, negZero}, {negZero, 0}, {1, 0, negZero, 2, 3}, {negZero, 1, 2, 3, 0, 5, 6, 7, 8},
		{0, 0, 0, 0, 0, 0, 0, negZero, 0}, {-1, 0, negZero}, {1, negZero, 0, 0, 0},
	} {
		var want AggState
		for i, v := range vals {
			want.Add(int64(i), "s", Float(v))
		}
		got := FloatRun(vals, 0, int64(len(vals)-1), "s")
		if math.Float64bits(got.Min) != math.Float64bits(want.Min) || math.Float64bits(got.Max) != math.Float64bits(want.Max) {
			t.Errorf("%v: min %v max %v, want %v and %v", vals, got.Min, got.Max, want.Min, want.Max)
		}
	}
}

// TestFloatRun: the state of a run of floats equals the one Add builds a
// value at a time (Mean and M2 to a relative 1e-9: Welford and two passes round apart), for runs of one and
// of many values, NaN and infinities included.
func TestFloatRun(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, n := range []int{1, 2, 3, 17, 1000} {
		for _, special := range []float64{0, math.NaN(), math.Inf(1), math.Inf(-1)} {
			vals := make([]float64, n)
			for i := range vals {
				vals[i] = rng.NormFloat64()*100 + 1e6
			}
			if special != 0 {
				vals[n/2] = special
			}
			var want AggState
			for i, v := range vals {
				want.Add(int64(10+i), "s", Float(v))
			}
			got := FloatRun(vals, 10, int64(10+n-1), "s")
			near := func(x, y float64) bool {
				return x == y || (math.IsNaN(x) && math.IsNaN(y)) || math.Abs(x-y) <= 1e-9*math.Max(math.Abs(x), math.Abs(y))
			}
			if special != 0 {
				// Welford's running mean turns NaN after an infinity
				// (Inf - Inf); the two-pass one stays Inf. Neither is
				// read: avg is Sum/N, and stddev is NaN either way.
				gs, _ := got.Stddev()
				ws, _ := want.Stddev()
				if !near(gs, ws) {
					t.Fatalf("n=%d special=%v: stddev %v, want %v", n, special, gs, ws)
				}
				got.Mean, want.Mean = 0, 0
			}
			if !near(got.Mean, want.Mean) || !near(got.M2, want.M2) || !near(got.Sum, want.Sum) {
				t.Fatalf("n=%d special=%v: mean %v, %v; m2 %v, %v; sum %v, %v", n, special, got.Mean, want.Mean, got.M2, want.M2, got.Sum, want.Sum)
			}
			got.Mean, got.M2, got.Sum = want.Mean, want.M2, want.Sum
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("n=%d special=%v:\n%+v\n%+v", n, special, got, want)
			}
		}
	}
}

// TestFloatRunNoVariance: without the variance a run's state is
// FloatRun's bit for bit but for M2, which is 0.
func TestFloatRunNoVariance(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for _, n := range []int{1, 2, 3, 17, 1000} {
		vals := make([]float64, n)
		for i := range vals {
			vals[i] = rng.NormFloat64()*100 + 1e6
		}
		want := FloatRun(vals, 10, int64(10+n-1), "s")
		got := FloatRunNoVariance(vals, 10, int64(10+n-1), "s")
		if got.M2 != 0 {
			t.Fatalf("n=%d: M2 %v without the variance", n, got.M2)
		}
		if n > 1 && want.M2 == 0 {
			t.Fatalf("n=%d: FloatRun's M2 is 0: the test proves nothing", n)
		}
		want.M2 = 0
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("n=%d:\n%+v\n%+v", n, got, want)
		}
	}
}

// TestDecimalRun: the state of a run of decimal mantissas equals FloatRun's
// of the values they stand for (Min, Max, First and Last bit for bit, Sum,
// Mean and M2 to a relative 1e-12), with and without the variance, also
// for mantissas whose sum overflows int64 (summed in floats then).
func TestDecimalRun(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	near := func(x, y float64) bool { return x == y || math.Abs(x-y) <= 1e-12*math.Max(math.Abs(x), math.Abs(y)) }
	for _, tc := range []struct {
		n     int
		scale float64
		span  int64
	}{{1, 100, 1e4}, {2, 100, 1e4}, {7, 1, 1e6}, {229, 100, 1e5}, {1000, 1e15, 1 << 52}, {300, 1, math.MaxInt64 / 4}} {
		mant := make([]int64, tc.n)
		vals := make([]float64, tc.n)
		for i := range mant {
			mant[i] = rng.Int63n(tc.span) - tc.span/2
			vals[i] = float64(mant[i]) / tc.scale
		}
		for _, variance := range []bool{true, false} {
			want := FloatRun(vals, 5, int64(5+tc.n-1), "s")
			if !variance {
				want = FloatRunNoVariance(vals, 5, int64(5+tc.n-1), "s")
			}
			got := DecimalRun(mant, tc.scale, 5, int64(5+tc.n-1), "s", variance)
			if !near(got.Sum, want.Sum) || !near(got.Mean, want.Mean) || !near(got.M2, want.M2) {
				t.Fatalf("%+v variance %v: sum %v mean %v m2 %v, want %v %v %v", tc, variance, got.Sum, got.Mean, got.M2, want.Sum, want.Mean, want.M2)
			}
			got.Sum, got.Mean, got.M2 = want.Sum, want.Mean, want.M2
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("%+v variance %v:\n%+v\n%+v", tc, variance, got, want)
			}
		}
	}
}

// TestSumRun: the state of a run known by its mantissas' sum has the
// count, sum and mean DecimalRun gives for the mantissas, bit for bit,
// and nothing else known; SumMantissas sums them.
func TestSumRun(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for _, n := range []int{1, 2, 7, 229, 1000} {
		mant := make([]int64, n)
		var sum int64
		for i := range mant {
			mant[i] = rng.Int63n(2e6) - 1e6
			sum += mant[i]
		}
		if got := SumMantissas(mant); got != sum {
			t.Fatalf("n=%d: SumMantissas %d, want %d", n, got, sum)
		}
		for _, p := range []float64{1, 100, 1e4} {
			want := DecimalRun(mant, p, 10, 20, "s", false)
			got := SumRun(sum, n, p, 10, 20, "s")
			if got.Count != want.Count || got.N != want.N || math.Float64bits(got.Sum) != math.Float64bits(want.Sum) ||
				math.Float64bits(got.Mean) != math.Float64bits(want.Mean) {
				t.Fatalf("n=%d p=%v: %+v, want the count, sum and mean of %+v", n, p, got, want)
			}
			if !math.IsNaN(got.Min) || !math.IsNaN(got.Max) || !math.IsNaN(got.First) || !math.IsNaN(got.Last) || got.M2 != 0 {
				t.Fatalf("n=%d p=%v: %+v: an unknown member is set", n, p, got)
			}
		}
	}
}
