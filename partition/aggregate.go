package partition

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/tsdb/tsdb/model"
)

// groupAllSeries is the series name of a GroupAll result.
const groupAllSeries = "*"

// Aggregate computes the partial aggregate states of the rows matching q,
// sorted by series, bucket start and field name: q.Step, q.Origin,
// q.GroupAll and q.MaxBuckets say how (model.Query); its raw fields (Limit,
// MaxBytes) are ignored. The states hold every aggregate (model.AggState);
// the caller picks one with AggState.Result after merging partitions with
// model.MergeSeriesAggs.
func (r *Replica) Aggregate(q model.Query) ([]model.SeriesAgg, error) {
	if q.Step < 0 {
		return nil, fmt.Errorf("%w: negative step %d", ErrInvalidQuery, q.Step)
	}
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.store.gate.Exit()
	w, err := r.newWalker(q.From, q.To, q.Series, q.Prefix)
	if err != nil || w == nil {
		return nil, err
	}
	defer w.close()
	a := aggregator{q: q, keep: fieldFilter(q.Fields), names: interner{},
		seriesNames: interner{}, series: map[string]*aggSeries{}}
	if err := w.walk(a.visit, func() bool { return true }); err != nil {
		return nil, err
	}
	return a.result(), nil
}

// aggregator folds rows into per-series, per-bucket, per-field states.
type aggregator struct {
	q           model.Query
	keep        func([]byte) bool
	names       interner
	seriesNames interner
	raw         rawRow

	series map[string]*aggSeries
	// buckets counts the buckets made, over all series (model.Query.MaxBuckets).
	buckets int
	// cur and curName cache the state of the last row's series: inside a
	// storage bucket rows come series by series.
	cur     *aggSeries
	curName string
}

// aggSeries holds one result series.
type aggSeries struct {
	buckets map[int64]*aggBucket
	// cur caches the last row's bucket.
	cur *aggBucket
}

// aggBucket holds the field states of one bucket of one result series.
// Rows usually carry the same fields in the same (sorted) order, so the
// state of a row's i-th field is first looked for at position i.
type aggBucket struct {
	start  int64
	fields []model.FieldAgg
	// index maps names to positions once there are many fields.
	index map[string]int
}

// aggIndexAbove is the field count past which a bucket indexes its fields.
const aggIndexAbove = 16

// state returns the state of field name, adding it if missing. The pointer
// is valid until the next call.
func (b *aggBucket) state(name []byte, hint int, names interner) *model.AggState {
	if hint < len(b.fields) && b.fields[hint].Name == string(name) {
		return &b.fields[hint].State
	}
	if b.index != nil {
		if i, ok := b.index[string(name)]; ok {
			return &b.fields[i].State
		}
	} else {
		for i := range b.fields {
			if b.fields[i].Name == string(name) {
				return &b.fields[i].State
			}
		}
	}
	b.fields = append(b.fields, model.FieldAgg{Name: names.get(name)})
	i := len(b.fields) - 1
	switch {
	case b.index != nil:
		b.index[b.fields[i].Name] = i
	case len(b.fields) > aggIndexAbove:
		b.index = make(map[string]int, len(b.fields))
		for j := range b.fields {
			b.index[b.fields[j].Name] = j
		}
	}
	return &b.fields[i].State
}

func (a *aggregator) visit(series []byte, t int64, value []byte) (bool, error) {
	if err := decodeRaw(value, &a.raw); err != nil {
		return false, fmt.Errorf("row of %s at %d: %w", series, t, err)
	}
	if !hasLiveField(&a.raw, a.keep) {
		return true, nil // no bucket for a row without a selected live field
	}
	if a.cur == nil || a.curName != string(series) {
		a.curName = a.seriesNames.get(series)
		key := a.curName
		if a.q.GroupAll {
			key = groupAllSeries
		}
		s, ok := a.series[key]
		if !ok {
			s = &aggSeries{buckets: map[int64]*aggBucket{}}
			a.series[key] = s
		}
		a.cur = s
	}
	b, made := a.cur.bucket(bucketOf(t, a.q.Step, a.q.Origin))
	if made {
		// Stop as soon as the answer is over the cap, before the walk
		// builds the rest of it.
		if a.buckets++; a.q.MaxBuckets > 0 && a.buckets > a.q.MaxBuckets {
			return false, TooManyBuckets(a.q.MaxBuckets)
		}
	}
	hint := 0
	for i := range a.raw.fields {
		f := &a.raw.fields[i]
		if (a.keep != nil && !a.keep(f.name)) || f.kind == model.KindDeleted {
			continue
		}
		b.state(f.name, hint, a.names).Add(t, a.curName, f.aggValue())
		hint++
	}
	return true, nil
}

// bucket returns the bucket starting at start, and whether it was made now.
func (s *aggSeries) bucket(start int64) (*aggBucket, bool) {
	if s.cur != nil && s.cur.start == start {
		return s.cur, false
	}
	b, ok := s.buckets[start]
	if !ok {
		b = &aggBucket{start: start}
		s.buckets[start] = b
	}
	s.cur = b
	return b, !ok
}

// bucketOf returns the start of the aggregation bucket holding t.
func bucketOf(t, step, origin int64) int64 {
	if step == 0 {
		return origin
	}
	q := t / step
	if t%step != 0 && t < 0 {
		q-- // floor, not truncation
	}
	if q < math.MinInt64/step {
		return math.MinInt64 // floor(t/step)*step is below the int64 range
	}
	return q * step
}

// result returns the states sorted by series, bucket start and field.
func (a *aggregator) result() []model.SeriesAgg {
	out := make([]model.SeriesAgg, 0, len(a.series))
	for name, s := range a.series {
		sa := model.SeriesAgg{Series: name, Buckets: make([]model.BucketAgg, 0, len(s.buckets))}
		for start, b := range s.buckets {
			ba := model.BucketAgg{Start: start, Fields: b.fields}
			slices.SortFunc(ba.Fields, func(x, y model.FieldAgg) int { return strings.Compare(x.Name, y.Name) })
			sa.Buckets = append(sa.Buckets, ba)
		}
		slices.SortFunc(sa.Buckets, func(x, y model.BucketAgg) int { return cmpInt64(x.Start, y.Start) })
		out = append(out, sa)
	}
	slices.SortFunc(out, func(x, y model.SeriesAgg) int { return strings.Compare(x.Series, y.Series) })
	return out
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
