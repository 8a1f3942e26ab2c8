package model

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// ErrInvalidAgg is returned by ParseAgg for a name that is not an aggregate.
// It lives here rather than in errors.go because this file was added
// separately from the rest of the package.
var ErrInvalidAgg = errors.New("model: invalid aggregate")

// Agg is an aggregate function of a query (DESIGN.md section 10).
type Agg uint8

// The aggregate functions. The zero Agg is invalid.
const (
	AggCount Agg = iota + 1
	AggSum
	AggMin
	AggMax
	AggAvg
	AggFirst
	AggLast
	// AggSpread is max - min (InfluxQL's spread).
	AggSpread
	// AggStddev is the sample standard deviation (InfluxQL's stddev):
	// no value for fewer than two numeric values.
	AggStddev
)

var aggNames = [...]string{
	AggCount:  "count",
	AggSum:    "sum",
	AggMin:    "min",
	AggMax:    "max",
	AggAvg:    "avg",
	AggFirst:  "first",
	AggLast:   "last",
	AggSpread: "spread",
	AggStddev: "stddev",
}

// ParseAgg parses an aggregate name as used in the query API: count, sum,
// min, max, avg, first, last, spread or stddev.
func ParseAgg(s string) (Agg, error) {
	for a := AggCount; a <= AggStddev; a++ {
		if aggNames[a] == s {
			return a, nil
		}
	}
	return 0, fmt.Errorf("%w: %q (want one of %s)", ErrInvalidAgg, s, strings.Join(aggNames[AggCount:], ", "))
}

// String returns the aggregate's name as ParseAgg accepts it.
func (a Agg) String() string {
	if a >= AggCount && a <= AggStddev {
		return aggNames[a]
	}
	return fmt.Sprintf("agg(%d)", uint8(a))
}

// AggState is the mergeable partial state of the aggregates of one field in
// one bucket. Partitions compute it over their rows and the front end merges
// the states of all partitions with Merge; any order of Add and Merge calls
// over the same values yields the same state (Sum up to float rounding).
//
// Count counts values of every kind; the numeric aggregates (sum, min, max,
// avg, first, last) see only numeric values: floats, ints, and bools as 0
// and 1. Min and Max propagate NaN (math.Min/math.Max), which keeps them
// order-independent.
type AggState struct {
	// Count is the number of values of any kind.
	Count int64
	// N is the number of numeric values; strings count in Count only.
	N int64
	// Sum, Min and Max are over the numeric values; meaningful when N > 0.
	Sum, Min, Max float64
	// FirstTime, FirstSeries and First are the time, series and value of the
	// earliest numeric value; ties on time go to the smaller series (and, for
	// the same series and time, to the smaller value in IEEE total order).
	FirstTime   int64
	FirstSeries string
	First       float64
	// LastTime, LastSeries and Last are the latest numeric value; ties on
	// time go to the larger series (then the larger value).
	LastTime   int64
	LastSeries string
	Last       float64
	// Mean and M2 are the running mean of the numeric values and the sum
	// of their squared deviations from it (Welford's algorithm; Chan et
	// al.'s formula merges them): the variance is M2/(N-1).
	Mean, M2 float64
}

// Add adds one value seen at time t in series.
func (s *AggState) Add(t int64, series string, v Value) {
	s.Count++
	f, ok := v.Numeric()
	if !ok {
		return
	}
	if s.N == 0 {
		s.N = 1
		s.Sum, s.Min, s.Max = f, f, f
		s.FirstTime, s.FirstSeries, s.First = t, series, f
		s.LastTime, s.LastSeries, s.Last = t, series, f
		s.Mean, s.M2 = f, 0
		return
	}
	s.N++
	d := f - s.Mean
	s.Mean += d / float64(s.N)
	s.M2 += d * (f - s.Mean)
	s.Sum += f
	s.Min = math.Min(s.Min, f)
	s.Max = math.Max(s.Max, f)
	if pointLess(t, series, f, s.FirstTime, s.FirstSeries, s.First) {
		s.FirstTime, s.FirstSeries, s.First = t, series, f
	}
	if pointLess(s.LastTime, s.LastSeries, s.Last, t, series, f) {
		s.LastTime, s.LastSeries, s.Last = t, series, f
	}
}

// FloatRun returns the state of values, the float values of one series at
// strictly ascending times from firstTime to lastTime (one value per
// time), as Add would build it one value at a time, up to float rounding
// in Mean and M2 (computed in two passes instead of Welford's one). It is
// the fast path of an aggregate over a column of floats: no per-value
// comparison of series or times. values must not be empty.
func FloatRun(values []float64, firstTime, lastTime int64, series string) AggState {
	return floatRun(values, firstTime, lastTime, series, true)
}

// FloatRunNoVariance is FloatRun without M2 (left 0): one pass over values
// instead of two, for an aggregate whose answer needs no variance
// (Query.NoVariance).
func FloatRunNoVariance(values []float64, firstTime, lastTime int64, series string) AggState {
	return floatRun(values, firstTime, lastTime, series, false)
}

// DecimalRun is FloatRun of the values float64(mant[i]) / 10^exp (p is
// 10^exp as a float64, exactly; a float column's decimal form,
// colcodec.DecodeDecimals), folded as integers: no division per value.
// Min, Max, First and Last are the values FloatRun gives bit for bit (the
// division by p keeps the order of the mantissas); Sum is the exact sum of
// the mantissas divided by p once, equal to FloatRun's up to float
// rounding, as Mean and M2 are. A sum that could overflow int64 is taken
// in floats instead. M2 is left 0 without the variance.
func DecimalRun(mant []int64, p float64, firstTime, lastTime int64, series string, variance bool) AggState {
	n := len(mant)
	s := AggState{Count: int64(n), N: int64(n),
		FirstTime: firstTime, FirstSeries: series, First: float64(mant[0]) / p,
		LastTime: lastTime, LastSeries: series, Last: float64(mant[n-1]) / p}
	sum, lo, hi := lanes(mant)
	s.Min, s.Max = float64(lo)/p, float64(hi)/p
	// No lane can have overflowed when n times the largest magnitude fits
	// in an int64 (the harness's mantissas are below 10^5; a corrupt
	// block's may be anything).
	if bound := max(uint64(abs64(lo)), uint64(abs64(hi))); lo != math.MinInt64 && bound <= math.MaxInt64/uint64(n) {
		s.Sum = float64(sum) / p
	} else {
		for _, m := range mant {
			s.Sum += float64(m) / p
		}
	}
	s.Mean = s.Sum / float64(n)
	if variance && n > 1 {
		// Two passes, as FloatRun's, in units of the mantissa.
		s.M2 = squaredDeviations(mant, s.Mean*p) / (p * p)
	}
	return s
}

// SumRun is the state of n > 0 float values of one series at times
// firstTime to lastTime known by their sum only, the sum of their decimal
// mantissas mantSum at scale p (10^exp), for an aggregate that reads
// counts and sums only (Query.SumsOnly): Count, N, Sum and Mean are those
// DecimalRun gives for such mantissas when their sum cannot overflow (the
// same bit for bit); Min, Max, First and Last are NaN, unknown, and M2 is
// 0.
func SumRun(mantSum int64, n int, p float64, firstTime, lastTime int64, series string) AggState {
	nan := math.NaN()
	s := AggState{Count: int64(n), N: int64(n), Sum: float64(mantSum) / p, Min: nan, Max: nan,
		FirstTime: firstTime, FirstSeries: series, First: nan,
		LastTime: lastTime, LastSeries: series, Last: nan}
	s.Mean = s.Sum / float64(n)
	return s
}

// SumMantissas is the sum of mant, wrapping past the int64 range (a
// caller that uses it with SumRun knows it cannot).
func SumMantissas(mant []int64) int64 {
	var sums [4]int64
	full := len(mant) &^ 3
	for i := 0; i < full; i += 4 {
		sums[0] += mant[i]
		sums[1] += mant[i+1]
		sums[2] += mant[i+2]
		sums[3] += mant[i+3]
	}
	for _, m := range mant[full:] {
		sums[0] += m
	}
	return (sums[0] + sums[1]) + (sums[2] + sums[3])
}

// abs64 is |x| (math.MinInt64 for itself).
func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

func floatRun(values []float64, firstTime, lastTime int64, series string, variance bool) AggState {
	s := AggState{Count: int64(len(values)), N: int64(len(values)),
		FirstTime: firstTime, FirstSeries: series, First: values[0],
		LastTime: lastTime, LastSeries: series, Last: values[len(values)-1]}
	s.Sum, s.Min, s.Max = lanes(values)
	if math.IsNaN(s.Sum) || math.IsInf(s.Sum, 0) {
		// Lanes that overflowed apart (+Inf and -Inf make NaN) or a NaN
		// or infinity among the values: the sum in order, as Add makes it.
		s.Sum = 0
		for _, f := range values {
			s.Sum += f
		}
	}
	s.Mean = s.Sum / float64(len(values))
	if variance && len(values) > 1 {
		s.M2 = squaredDeviations(values, s.Mean)
	}
	return s
}

// lanes returns the sum, the least and the greatest of vals (not empty),
// folded in four lanes so that the additions do not wait on each other
// (the order of the sum changes a float sum's rounding only; an int64 sum
// wraps, for the caller to check). Go's min and max builtins agree with
// math.Min and math.Max on NaN and on the sign of zero and need no branch.
func lanes[T int64 | float64](vals []T) (sum, lo, hi T) {
	var sums [4]T
	mn, mx := [4]T{vals[0], vals[0], vals[0], vals[0]}, [4]T{vals[0], vals[0], vals[0], vals[0]}
	full := len(vals) &^ 3
	for i := 0; i < full; i += 4 {
		for l := range 4 {
			v := vals[i+l]
			sums[l] += v
			mn[l] = min(mn[l], v)
			mx[l] = max(mx[l], v)
		}
	}
	for _, v := range vals[full:] {
		sums[0] += v
		mn[0] = min(mn[0], v)
		mx[0] = max(mx[0], v)
	}
	return (sums[0] + sums[1]) + (sums[2] + sums[3]), min(mn[0], mn[1], mn[2], mn[3]), max(mx[0], mx[1], mx[2], mx[3])
}

// squaredDeviations returns the sum of (v − mean)² over vals, in four
// lanes: the second pass of a run's M2.
func squaredDeviations[T int64 | float64](vals []T, mean float64) float64 {
	var m2 [4]float64
	full := len(vals) &^ 3
	for i := 0; i < full; i += 4 {
		for l := range 4 {
			d := float64(vals[i+l]) - mean
			m2[l] += d * d
		}
	}
	for _, v := range vals[full:] {
		d := float64(v) - mean
		m2[0] += d * d
	}
	return (m2[0] + m2[1]) + (m2[2] + m2[3])
}

// Merge folds the partial state o into s.
func (s *AggState) Merge(o *AggState) {
	s.Count += o.Count
	if o.N == 0 {
		return
	}
	if s.N == 0 {
		count := s.Count
		*s = *o
		s.Count = count
		return
	}
	// Chan et al.: the two parts are weighted symmetrically, so the
	// result does not depend on which side is s (up to rounding).
	na, nb := float64(s.N), float64(o.N)
	n := na + nb
	d := o.Mean - s.Mean
	s.Mean = (na*s.Mean + nb*o.Mean) / n
	s.M2 += o.M2 + d*d*na*nb/n
	s.N += o.N
	s.Sum += o.Sum
	s.Min = math.Min(s.Min, o.Min)
	s.Max = math.Max(s.Max, o.Max)
	if pointLess(o.FirstTime, o.FirstSeries, o.First, s.FirstTime, s.FirstSeries, s.First) {
		s.FirstTime, s.FirstSeries, s.First = o.FirstTime, o.FirstSeries, o.First
	}
	if pointLess(s.LastTime, s.LastSeries, s.Last, o.LastTime, o.LastSeries, o.Last) {
		s.LastTime, s.LastSeries, s.Last = o.LastTime, o.LastSeries, o.Last
	}
}

// Result returns the value of aggregate a. It reports false when there is no
// value: no values at all for count, no numeric values for the others. avg
// is Sum/N.
func (s *AggState) Result(a Agg) (float64, bool) {
	if a == AggCount {
		return float64(s.Count), s.Count > 0
	}
	if s.N == 0 {
		return 0, false
	}
	switch a {
	case AggSum:
		return s.Sum, true
	case AggMin:
		return s.Min, true
	case AggMax:
		return s.Max, true
	case AggAvg:
		return s.Sum / float64(s.N), true
	case AggFirst:
		return s.First, true
	case AggLast:
		return s.Last, true
	case AggSpread:
		return s.Max - s.Min, true
	case AggStddev:
		return s.Stddev()
	}
	return 0, false
}

// Stddev returns the sample standard deviation of the numeric values,
// sqrt(M2/(N-1)), and false with fewer than two of them (InfluxDB 1.8's
// stddev gives no value for a single point).
func (s *AggState) Stddev() (float64, bool) {
	if s.N < 2 {
		return 0, false
	}
	v := s.M2 / float64(s.N-1)
	if v < 0 {
		v = 0 // rounding
	}
	return math.Sqrt(v), true
}

// pointLess orders (time, series, value) triples; values compare in IEEE
// total order so that every tie is broken the same way in any merge order.
func pointLess(t1 int64, s1 string, f1 float64, t2 int64, s2 string, f2 float64) bool {
	if t1 != t2 {
		return t1 < t2
	}
	if s1 != s2 {
		return s1 < s2
	}
	return totalOrderKey(f1) < totalOrderKey(f2)
}

// totalOrderKey maps a float64 to a uint64 whose order is the IEEE 754
// total order (-NaN < -Inf < ... < -0 < +0 < ... < +Inf < +NaN).
func totalOrderKey(f float64) uint64 {
	b := math.Float64bits(f)
	if b>>63 != 0 {
		return ^b
	}
	return b | 1<<63
}

// FieldAgg is the partial state of one field in one bucket.
type FieldAgg struct {
	Name  string
	State AggState
}

// BucketAgg holds the partial states of one time bucket.
type BucketAgg struct {
	// Start is the bucket's start time in nanoseconds.
	Start int64
	// Fields are sorted by name.
	Fields []FieldAgg
}

// SeriesAgg holds the partial states of one series ("*" when all series
// are grouped together).
type SeriesAgg struct {
	Series string
	// Buckets are sorted by Start.
	Buckets []BucketAgg
}

// MergeSeriesAggs merges two lists of partial results: states of the same
// series, bucket start and field are merged with AggState.Merge. The result
// is sorted by series, its buckets by start and their fields by name. The
// inputs need not be sorted. dst's storage may be reused; src is not
// modified and shares no memory with the result.
func MergeSeriesAggs(dst, src []SeriesAgg) []SeriesAgg {
	all := dst
	for _, s := range src {
		all = append(all, SeriesAgg{Series: s.Series, Buckets: cloneBuckets(s.Buckets)})
	}
	slices.SortStableFunc(all, func(a, b SeriesAgg) int { return strings.Compare(a.Series, b.Series) })
	out := all[:0]
	for i := 0; i < len(all); {
		j := i + 1
		buckets := all[i].Buckets
		for ; j < len(all) && all[j].Series == all[i].Series; j++ {
			buckets = append(buckets, all[j].Buckets...)
		}
		out = append(out, SeriesAgg{Series: all[i].Series, Buckets: mergeBuckets(buckets)})
		i = j
	}
	clear(all[len(out):])
	return out
}

func cloneBuckets(bs []BucketAgg) []BucketAgg {
	out := make([]BucketAgg, len(bs))
	for i, b := range bs {
		out[i] = BucketAgg{Start: b.Start, Fields: slices.Clone(b.Fields)}
	}
	return out
}

// mergeBuckets sorts buckets by start and merges those with equal starts.
func mergeBuckets(bs []BucketAgg) []BucketAgg {
	slices.SortStableFunc(bs, func(a, b BucketAgg) int {
		switch {
		case a.Start < b.Start:
			return -1
		case a.Start > b.Start:
			return 1
		}
		return 0
	})
	out := bs[:0]
	for i := 0; i < len(bs); {
		j := i + 1
		fields := bs[i].Fields
		for ; j < len(bs) && bs[j].Start == bs[i].Start; j++ {
			fields = append(fields, bs[j].Fields...)
		}
		out = append(out, BucketAgg{Start: bs[i].Start, Fields: mergeFields(fields)})
		i = j
	}
	return out
}

// mergeFields sorts field states by name and merges those with equal names.
func mergeFields(fs []FieldAgg) []FieldAgg {
	slices.SortStableFunc(fs, func(a, b FieldAgg) int { return strings.Compare(a.Name, b.Name) })
	out := fs[:0]
	for i := 0; i < len(fs); {
		st := fs[i].State
		j := i + 1
		for ; j < len(fs) && fs[j].Name == fs[i].Name; j++ {
			st.Merge(&fs[j].State)
		}
		out = append(out, FieldAgg{Name: fs[i].Name, State: st})
		i = j
	}
	return out
}
