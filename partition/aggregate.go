package partition

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/partition/block"
)

// groupAllSeries is the series name of a GroupAll result.
const groupAllSeries = "*"

// Aggregate computes the partial aggregate states of the rows matching q,
// sorted by series, bucket start and field name: q.Step, q.Origin,
// q.Offset, q.GroupBy, q.GroupAll and q.MaxBuckets say how (model.Query),
// q.Measurement and q.Tags select series as in Scan; its raw fields (Limit,
// MaxBytes) are ignored. GroupAll with GroupBy, an empty GroupBy key and a
// malformed q.Tags fail with ErrInvalidQuery. The states hold every aggregate (model.AggState);
// the caller picks one with AggState.Result after merging partitions with
// model.MergeSeriesAggs.
func (r *Replica) Aggregate(q model.Query) ([]model.SeriesAgg, error) {
	if q.Step < 0 {
		return nil, fmt.Errorf("%w: negative step %d", ErrInvalidQuery, q.Step)
	}
	if q.GroupAll && len(q.GroupBy) > 0 {
		return nil, fmt.Errorf("%w: group_all and group_by are exclusive", ErrInvalidQuery)
	}
	for _, k := range q.GroupBy {
		if k == "" {
			return nil, fmt.Errorf("%w: empty tag key in group_by", ErrInvalidQuery)
		}
	}
	sm, err := q.Matcher()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidQuery, err)
	}
	if err := r.enter(); err != nil {
		return nil, err
	}
	defer r.store.gate.Exit()
	w, err := r.newQueryWalker(q, sm)
	if err != nil || w == nil {
		return nil, err
	}
	defer w.close()
	workers := r.store.aggWorkers
	if workers == 0 {
		workers = aggregateWorkers()
	}
	parts, err := w.split(workers)
	if err != nil {
		return nil, fmt.Errorf("partition: replica %s: aggregate: %w", r.info.Placement, err)
	}
	if parts == nil {
		return r.aggregateWalk(w, q)
	}
	r.store.aggSplits.Add(1)
	// The stretches of buckets are walked at once, each into states of its
	// own, merged in time order: a bucket of the answer that two stretches
	// share merges as partitions' parts do (AggState.Merge).
	results := make([][]model.SeriesAgg, len(parts))
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for i := 1; i < len(parts); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = r.aggregateWalk(parts[i], q)
		}()
	}
	results[0], errs[0] = r.aggregateWalk(parts[0], q)
	wg.Wait()
	for _, p := range parts {
		p.close()
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	out := results[0]
	for _, res := range results[1:] {
		out = model.MergeSeriesAggs(out, res)
	}
	if q.MaxBuckets > 0 {
		n := 0
		for _, sa := range out {
			n += len(sa.Buckets)
		}
		if n > q.MaxBuckets {
			return nil, TooManyBuckets(q.MaxBuckets)
		}
	}
	return out, nil
}

// maxAggregateWorkers bounds the goroutines of one Aggregate.
const maxAggregateWorkers = 8

// aggregateWorkers is how many stretches of storage buckets one Aggregate
// walks at once: one per processor Go may use, at most
// maxAggregateWorkers. An aggregate over many series decodes every value
// it reads (a block lies inside one aggregation bucket only when the step
// is wider than a storage bucket), so it is bound by the processor (the
// peer harness's agg_mean_1m in docs/performance.md: 49 to 23 ms).
func aggregateWorkers() int {
	return min(runtime.GOMAXPROCS(0), maxAggregateWorkers)
}

// aggregateWalk folds the rows w visits into the states Aggregate returns.
func (r *Replica) aggregateWalk(w *walker, q model.Query) ([]model.SeriesAgg, error) {
	a := aggregator{q: q, keep: fieldFilter(q.Fields), names: interner{}, series: map[string]*aggSeries{}}
	a.prevSeries, a.thisSeries = takeSeriesList(), takeSeriesList()
	defer func() { putSeriesList(a.prevSeries); putSeriesList(a.thisSeries) }()
	if !r.store.rowAggregates {
		w.visitBlock, w.visitMem = a.visitBlock, a.visitMem
	}
	if err := w.walk(a.visit, a.endBucket); err != nil {
		return nil, err
	}
	r.store.aggSummaries.Add(a.summarized)
	r.store.aggTails.Add(a.tails)
	return a.result(), nil
}

// aggregator folds rows into per-series, per-bucket, per-field states.
type aggregator struct {
	q     model.Query
	keep  func([]byte) bool
	names interner
	// prevSeries holds the series met in the last storage bucket walked,
	// in key order, with their names and result series; thisSeries
	// collects the current bucket's. Buckets list mostly the same series
	// in the same order, so setSeries finds each series' name and result
	// by a cursor that moves forward (prevPos), not by hashing: with
	// 100,000 series a map lookup per block missed the caches.
	prevSeries, thisSeries []seriesEntry
	prevPos                int
	// seriesNames holds the names of the series met.
	seriesNames stringSlab
	raw         rawRow
	col         block.Column // visitBlock's
	runs        []memRun     // visitMem's, one per float field met
	shaped      []shapeSel   // visitMem's, selectShape's
	name        []byte       // visitBlock's field name
	summarized  int64        // fields of blocks answered by their summaries
	tails       int64        // fields of blocks whose last bucket's sum came from them (sumsByTail)
	// headSums, while sumsByTail folds a block's head, has floatRuns
	// sum the runs' mantissas only (model.SumRun) into headSum.
	headSums bool
	headSum  int64

	series map[string]*aggSeries
	// buckets counts the buckets made, over all series (model.Query.MaxBuckets).
	buckets int
	// groups caches the GroupBy result series of each series.
	groups map[string]string
	// memoStart and memoEnd are the last bucket bucketStart found, when
	// memoOK.
	memoStart, memoEnd int64
	memoOK             bool
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
	if err := decodeFields(value, a.keep, &a.raw); err != nil {
		return false, fmt.Errorf("row of %s at %d: %w", series, t, err)
	}
	// The bucket is made with the row's first selected live field: none
	// for a row without one.
	var b *aggBucket
	hint := 0
	for i := range a.raw.fields {
		f := &a.raw.fields[i]
		if f.kind == model.KindDeleted {
			continue
		}
		if b == nil {
			a.setSeries(series)
			var err error
			if b, err = a.bucket(t); err != nil {
				return false, err
			}
		}
		b.state(f.name, hint, a.names).Add(t, a.curName, f.aggValue())
		hint++
	}
	return true, nil
}

// visitBlock folds the rows lo to hi-1 of a sealed block that no head row
// overlays (walker.visitBlock), column by column: only the selected
// fields are decoded, and a whole block inside one aggregation bucket
// is answered from its per-field summaries without decoding any value
// when it keeps them (a block of block.SummaryMinRows rows or more).
// The states are those the rows would give (the summaries are built as
// AggState.Add would in time order, and merged with AggState.Merge: equal
// up to float rounding in Sum, Mean and M2, as merges of partitions are).
func (a *aggregator) visitBlock(series []byte, br *block.Reader, bt lazyTimes, lo, hi int) (bool, error) {
	a.setSeries(series)
	// A whole block inside one bucket of the answer is read from its
	// summaries, and its first and last times from its header: its
	// timestamps stay encoded.
	whole := lo == 0 && hi == br.Len() && br.HasSummaries() &&
		a.bucketStart(br.MinTime()) == a.bucketStart(br.MaxTime())
	var times []int64
	if !whole {
		var err error
		if times, err = bt.get(); err != nil {
			return false, err
		}
	}
	for i := range br.NumFields() {
		fi := br.Field(i)
		a.name = append(a.name[:0], fi.Name...)
		if a.keep != nil && !a.keep(a.name) {
			continue
		}
		if whole {
			sum, ok := br.Summary(fi.Name, a.curName)
			if !ok {
				continue // tombstones only: no state, no bucket
			}
			b, err := a.bucket(br.MinTime())
			if err != nil {
				return false, err
			}
			b.state(a.name, i, a.names).Merge(&sum)
			a.summarized++
			continue
		}
		if a.q.SumsOnly && lo == 0 && hi == br.Len() {
			done, err := a.sumsByTail(br, fi.Name, times, i)
			if err != nil {
				return false, fmt.Errorf("%w: block of %s: %w", ErrCorrupt, series, err)
			}
			if done {
				continue
			}
		}
		if _, err := br.ColumnAggregate(fi.Name, &a.col); err != nil {
			return false, fmt.Errorf("%w: block of %s: %w", ErrCorrupt, series, err)
		}
		if a.col.Kind == model.KindFloat {
			if err := a.floatRuns(times, lo, hi, i); err != nil {
				return false, err
			}
			continue
		}
		// The state of the last bucket met: only this field's states
		// are asked for until the loop ends, so the pointer stays valid.
		var (
			last *aggBucket
			st   *model.AggState
		)
		for j, row := range a.col.Rows {
			if int(row) < lo || int(row) >= hi {
				continue
			}
			v := &a.col.Values[j]
			if v.Kind == model.KindDeleted {
				continue
			}
			t := times[row]
			b, err := a.bucket(t)
			if err != nil {
				return false, err
			}
			if b != last {
				last, st = b, b.state(a.name, i, a.names)
			}
			st.Add(t, a.curName, *v)
		}
	}
	return true, nil
}

// visitMem folds the rows lo to hi-1 of a memory head's series that no
// other row overlays (walker.visitMem). Each row's selected fields are
// decoded as visit decodes them, but a float field's values in one
// aggregation bucket are gathered and summed up by model.FloatRun, then
// merged, as a block's column is (floatRuns): no bucket lookup, series
// comparison or Welford step per value. The states are those visit would
// give (equal up to float rounding in Sum, Mean and M2).
func (a *aggregator) visitMem(series []byte, s *memViewSeries, lo, hi int) (bool, error) {
	a.setSeries(series)
	var start, end int64
	exact, in := false, false // in: start and end hold the rows' bucket
	// The selected fields of the series' shape: a shaped row's payloads
	// are read where the shape says, without decoding its value.
	var shaped []shapeSel
	payLen := uint32(0)
	if s.shape != nil {
		shaped, payLen = a.selectShape(s.shape), uint32(s.shape.payLen)
	}
	for j := lo; j < hi; j++ {
		t := s.rows[j].t
		if !in || exact && t >= end || !exact && a.bucketStart(t) != start {
			if err := a.flushRuns(); err != nil {
				return false, err
			}
			// The bucket's end as floatRuns finds it.
			start, in = a.bucketStart(t), true
			end, exact = int64(math.MaxInt64), a.q.Step == 0
			if a.q.Step > 0 && start != math.MinInt64 && start <= math.MaxInt64-a.q.Step {
				end, exact = start+a.q.Step, true
			}
		}
		if r := s.rows[j]; r.shaped() {
			end := r.off + r.len()
			pays := s.arena[end-payLen : end]
			for k := range shaped {
				f := &shaped[k]
				if f.kind == model.KindFloat {
					a.runs[f.run].add(t, f.float(pays))
					continue
				}
				b, err := a.bucket(t)
				if err != nil {
					return false, err
				}
				b.state(f.name, f.hint, a.names).Add(t, a.curName, f.payload(pays))
			}
			continue
		}
		if err := decodeFields(s.stored(j), a.keep, &a.raw); err != nil { // the selected fields only (not shaped: stored whole)
			return false, fmt.Errorf("row of %s at %d: %w", series, t, err)
		}
		hint := 0
		for i := range a.raw.fields {
			f := &a.raw.fields[i]
			if f.kind == model.KindDeleted {
				continue
			}
			if f.kind == model.KindFloat {
				a.runFor(f.name, hint).add(t, math.Float64frombits(f.num))
			} else {
				b, err := a.bucket(t)
				if err != nil {
					return false, err
				}
				b.state(f.name, hint, a.names).Add(t, a.curName, f.aggValue())
			}
			hint++
		}
	}
	return true, a.flushRuns()
}

// memRun gathers one float field's values of the current series in one
// aggregation bucket for visitMem.
type memRun struct {
	name        []byte
	vals        []float64
	first, last int64 // the times of vals[0] and of the last value
}

func (r *memRun) add(t int64, v float64) {
	if len(r.vals) == 0 {
		r.first = t
	}
	r.vals = append(r.vals, v)
	r.last = t
}

// runFor returns the run of field name, the hint-th selected field of its
// row (rows mostly carry the same fields, so its run is first looked for
// there), adding it if missing.
func (a *aggregator) runFor(name []byte, hint int) *memRun {
	return &a.runs[a.runIndex(name, hint)]
}

// runIndex is runFor's index in a.runs (which only grows).
func (a *aggregator) runIndex(name []byte, hint int) int {
	if hint < len(a.runs) && string(a.runs[hint].name) == string(name) {
		return hint
	}
	for i := range a.runs {
		if string(a.runs[i].name) == string(name) {
			return i
		}
	}
	a.runs = append(a.runs, memRun{name: append([]byte(nil), name...)})
	return len(a.runs) - 1
}

// shapeSel is a field of a memory series' shape that a query selects:
// where visitMem finds its payload, and its run (a float's) or its hint
// (the state's position, as visitMem's decoded rows give it).
type shapeSel struct {
	*rowShapeField
	run, hint int
}

// selectShape returns the live fields of sh that the query selects, in
// the value's order, as visitMem folds a decoded row's.
func (a *aggregator) selectShape(sh *rowShape) []shapeSel {
	a.shaped = a.shaped[:0]
	hint := 0
	for i := range sh.fields {
		f := &sh.fields[i]
		if f.kind == model.KindDeleted || a.keep != nil && !a.keep(f.name) {
			continue
		}
		sel := shapeSel{rowShapeField: f, hint: hint}
		if f.kind == model.KindFloat {
			sel.run = a.runIndex(f.name, hint)
		}
		a.shaped = append(a.shaped, sel)
		hint++
	}
	return a.shaped
}

// flushRuns merges the gathered runs into their bucket's states and
// empties them; the runs (and their names) stay for the next bucket.
func (a *aggregator) flushRuns() error {
	for i := range a.runs {
		r := &a.runs[i]
		if len(r.vals) == 0 {
			continue
		}
		b, err := a.bucket(r.first)
		if err != nil {
			return err
		}
		run := a.floatRun(r.vals, r.first, r.last)
		b.state(r.name, i, a.names).Merge(&run)
		r.vals = r.vals[:0]
	}
	return nil
}

// floatRuns folds a.col, a column of floats only (field a.name, the i-th
// of the block), for the rows lo to hi-1: each run of rows in one
// aggregation bucket is summed up by model.FloatRun, or model.DecimalRun
// for a column read as decimal mantissas (no division per value), and
// merged.
func (a *aggregator) floatRuns(times []int64, lo, hi, i int) error {
	rows, vals := a.col.Rows, a.col.Floats
	j := sort.Search(len(rows), func(k int) bool { return int(rows[k]) >= lo })
	stop := j + sort.Search(len(rows)-j, func(k int) bool { return int(rows[j+k]) >= hi })
	for j < stop {
		t := times[rows[j]]
		start := a.bucketStart(t)
		// The run ends at the first row at or past the bucket's end;
		// times ascend. The end is known but for step 0 (one bucket)
		// and a start clamped to MinInt64 or an end past MaxInt64, where
		// each row's bucket is asked for.
		end, exact := int64(math.MaxInt64), a.q.Step == 0
		if a.q.Step > 0 && start != math.MinInt64 && start <= math.MaxInt64-a.q.Step {
			end, exact = start+a.q.Step, true
		}
		// The rows of the run, before stop (hi) and, when the bucket's
		// end is known, before it, found by a binary search (a run is a
		// minute of rows, say: a comparison per row was 8% of an
		// aggregate's CPU); else each row's bucket is asked for.
		k := j + 1
		if exact {
			k += sort.Search(stop-k, func(x int) bool { return times[rows[k+x]] >= end })
		} else {
			for k < stop && a.bucketStart(times[rows[k]]) == start {
				k++
			}
		}
		b, err := a.bucket(t)
		if err != nil {
			return err
		}
		var run model.AggState
		if a.col.Decimal && a.headSums {
			sum := model.SumMantissas(a.col.Mantissas[j:k])
			a.headSum += sum
			run = model.SumRun(sum, k-j, a.col.Scale, t, times[rows[k-1]], a.curName)
		} else if a.col.Decimal {
			run = model.DecimalRun(a.col.Mantissas[j:k], a.col.Scale, t, times[rows[k-1]], a.curName, !a.q.NoVariance)
		} else {
			run = a.floatRun(vals[j:k], t, times[rows[k-1]])
		}
		b.state(a.name, i, a.names).Merge(&run)
		j = k
	}
	return nil
}

// sumsByTail folds field (a.name, the i-th of the block) of a whole block
// that bucket starts cut, for a query of counts and sums only
// (Query.SumsOnly): the rows before the start of its last bucket are
// decoded and folded by floatRuns as sums, and the last bucket's rows
// are summed up from the block's summary less those, never decoded
// (block.Reader.DecimalHead, model.SumRun). The last bucket holds half a
// block on average, so half the values of such blocks are not decoded
// (the harness's agg_mean_1m cuts nearly every 68.7 s block at a minute).
// It reports false, nothing folded, when the column cannot be read so:
// the caller reads it whole.
func (a *aggregator) sumsByTail(br *block.Reader, field string, times []int64, i int) (bool, error) {
	n := len(times)
	last := a.bucketStart(times[n-1])
	// A row is in the last bucket or past it when its time is (last is a
	// bucket's start, and bucketOf is monotone and at most t).
	j := sort.Search(n, func(x int) bool { return times[x] >= last })
	total, ok, err := br.DecimalHead(field, j, &a.col)
	if err != nil || !ok {
		return false, err
	}
	// The head's runs as their sums only: no sum of the column's
	// mantissas leaves the int64 range (DecimalHead), so SumRun's are
	// exact, and the total less the head's is the tail's exact sum.
	a.headSums, a.headSum = true, 0
	err = a.floatRuns(times, 0, j, i)
	a.headSums = false
	if err != nil {
		return false, err
	}
	b, err := a.bucket(times[j])
	if err != nil {
		return false, err
	}
	run := model.SumRun(total-a.headSum, n-j, a.col.Scale, times[j], times[n-1], a.curName)
	b.state(a.name, i, a.names).Merge(&run)
	a.tails++
	return true, nil
}

// floatRun is the state of a run of the current series' float values
// (model.FloatRun), without its variance when the query needs none.
func (a *aggregator) floatRun(values []float64, firstTime, lastTime int64) model.AggState {
	if a.q.NoVariance {
		return model.FloatRunNoVariance(values, firstTime, lastTime, a.curName)
	}
	return model.FloatRun(values, firstTime, lastTime, a.curName)
}

// setSeries makes series the current one (a.cur, a.curName).
func (a *aggregator) setSeries(series []byte) {
	if a.cur != nil && a.curName == string(series) {
		if n := len(a.thisSeries); n == 0 || a.thisSeries[n-1].name != a.curName {
			// The last series of the bucket before begins this one.
			a.thisSeries = append(a.thisSeries, seriesEntry{name: a.curName, result: a.cur})
		}
		return
	}
	for a.prevPos < len(a.prevSeries) && a.prevSeries[a.prevPos].name < string(series) {
		a.prevPos++
	}
	if a.prevPos < len(a.prevSeries) && a.prevSeries[a.prevPos].name == string(series) {
		e := &a.prevSeries[a.prevPos]
		a.curName, a.cur = e.name, e.result
	} else {
		a.curName = a.seriesNames.make(series)
		key := a.curName
		switch {
		case a.q.GroupAll:
			key = groupAllSeries
		case len(a.q.GroupBy) > 0:
			key = a.groupKey(a.curName)
		}
		s, ok := a.series[key]
		if !ok {
			s = &aggSeries{buckets: map[int64]*aggBucket{}}
			a.series[key] = s
		}
		a.cur = s
	}
	a.thisSeries = append(a.thisSeries, seriesEntry{name: a.curName, result: a.cur})
}

// endBucket ends a storage bucket of the walk: its series are the ones
// setSeries looks for first in the next.
func (a *aggregator) endBucket() bool {
	// The entries dropped are cleared here, where they were used, so that
	// a list's entries past its length are always zero and putSeriesList
	// clears only its length: a one-series aggregate after one over
	// 100,000 series cleared the pooled lists' whole capacity, more than
	// half of its time (the peer harness's series_count, 0.2 to 0.45 ms).
	clear(a.prevSeries)
	a.prevSeries, a.thisSeries = a.thisSeries, a.prevSeries[:0]
	a.prevPos = 0
	return true
}

// seriesEntry is a series met in a storage bucket: its name and its
// result series.
type seriesEntry struct {
	name   string
	result *aggSeries
}

// seriesLists keeps the aggregators' series lists between queries: an
// aggregate over 100,000 series grew two of them entry by entry in
// every stretch it walked, most of its allocated bytes.
var seriesLists sync.Pool

// takeSeriesList returns an empty series list, of a capacity kept from an
// earlier query when there is one.
func takeSeriesList() []seriesEntry {
	if l, ok := seriesLists.Get().(*[]seriesEntry); ok {
		return (*l)[:0]
	}
	return nil
}

// putSeriesList keeps l's array for a later query, its entries cleared
// (they hold the answer's series). Only l's length is cleared: the
// aggregator clears the entries it drops (endBucket), so none past the
// length holds anything.
func putSeriesList(l []seriesEntry) {
	if cap(l) == 0 || cap(l) > maxPooledSeriesList {
		return
	}
	clear(l)
	l = l[:0]
	seriesLists.Put(&l)
}

// maxPooledSeriesList bounds the lists kept (24 bytes an entry): a query
// over more series grows its own.
const maxPooledSeriesList = 1 << 20

// bucketStart returns the start of the query's bucket holding t
// (bucketOf), remembering the last one found: a block's rows, and the
// blocks of one storage bucket, mostly fall in the bucket before, and
// bucketOf divides three times (4% of an aggregate's CPU at 100,000
// series, BenchmarkAggregateSparse).
func (a *aggregator) bucketStart(t int64) int64 {
	if a.memoOK && t >= a.memoStart && t < a.memoEnd {
		return a.memoStart
	}
	start := bucketOf(t, a.q.Step, a.q.Origin, a.q.Offset)
	// Only a bucket that is [start, start+step) is remembered: not step 0
	// (one bucket), nor a start clamped to MinInt64 or an end past MaxInt64.
	a.memoOK = a.q.Step > 0 && start != math.MinInt64 && start <= math.MaxInt64-a.q.Step
	if a.memoOK {
		a.memoStart, a.memoEnd = start, start+a.q.Step
	}
	return start
}

// bucket returns the current series' bucket holding t, made if missing;
// past q.MaxBuckets buckets it fails (before the walk builds the rest of
// an answer over the cap).
func (a *aggregator) bucket(t int64) (*aggBucket, error) {
	b, made := a.cur.bucket(a.bucketStart(t))
	if made {
		if a.buckets++; a.q.MaxBuckets > 0 && a.buckets > a.q.MaxBuckets {
			return nil, TooManyBuckets(a.q.MaxBuckets)
		}
	}
	return b, nil
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

// groupKey returns the result series of a series under GroupBy: the
// canonical key of its measurement and the grouped tags it has. A series
// whose key does not parse is a group of its own.
func (a *aggregator) groupKey(series string) string {
	if k, ok := a.groups[series]; ok {
		return k
	}
	meas, tags, err := model.SplitSeries(series)
	key := series
	if err == nil {
		var kept []model.Tag
		for _, t := range tags {
			if slices.Contains(a.q.GroupBy, t.Key) {
				kept = append(kept, t)
			}
		}
		if k, err := model.BuildSeries(meas, kept); err == nil {
			key = k
		}
	}
	if a.groups == nil {
		a.groups = map[string]string{}
	}
	a.groups[series] = key
	return key
}

// bucketOf returns the start of the aggregation bucket holding t: origin
// when step is 0, else floor((t-offset)/step)*step + offset, clamped to
// math.MinInt64 when that start is below the int64 range.
func bucketOf(t, step, origin, offset int64) int64 {
	if step == 0 {
		return origin
	}
	off := offset % step
	if off < 0 {
		off += step
	}
	// Only offset mod step matters. q = floor((t-off)/step), computed
	// without forming t-off (which may overflow).
	q, rem := t/step, t%step
	if rem < 0 {
		q--
		rem += step
	}
	if rem < off {
		q--
	}
	if q >= math.MinInt64/step {
		return q*step + off // q*step >= MinInt64 and the start is <= t
	}
	// q*step is below the range; the start q*step+off may still be in it.
	// Here q = MinInt64/step - 1 or - 2.
	if q+1 < math.MinInt64/step {
		return math.MinInt64
	}
	hi := (q + 1) * step                    // representable
	if orderedTime(hi) < uint64(step-off) { // orderedTime(hi) is hi - MinInt64
		return math.MinInt64
	}
	return hi - (step - off)
}

// result returns the states sorted by series, bucket start and field.
func (a *aggregator) result() []model.SeriesAgg {
	out := make([]model.SeriesAgg, 0, len(a.series))
	for name, s := range a.series {
		if len(s.buckets) == 0 {
			continue // a block's series with no selected value (visitBlock)
		}
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
