package influx

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/influxdata/influxql"

	"github.com/tsdb/tsdb/model"
)

// selectPlan is a SELECT statement checked and translated.
type selectPlan struct {
	db, meas string
	w        where
	// step and offset are GROUP BY time(step, offset) in ns; step 0: no
	// GROUP BY time.
	step, offset int64
	// groupTags are the tags of GROUP BY; groupAll is GROUP BY *.
	groupTags []string
	groupAll  bool
	fill      influxql.FillOption
	fillValue any
	// calls are the functions of an aggregate SELECT; refs the columns of a
	// raw one (wildcard: every field and tag).
	calls    []call
	refs     []*influxql.VarRef
	wildcard bool
	columns  []string
	desc     bool
	limit    int
	offsetN  int
	slimit   int
	soffset  int
}

// call is one function of an aggregate SELECT.
type call struct {
	name  string
	field string
	n     float64 // percentile's N
}

// pushedDown reports whether the function is answered from the partial
// states of Backend.Aggregate.
func (c call) pushedDown() bool {
	switch c.name {
	case "count", "sum", "mean", "min", "max", "first", "last", "spread", "stddev":
		// stddev: AggState's mergeable variance (Welford, merged with
		// Chan's formula).
		return true
	}
	return false
}

// supportedFuncs are the functions a SELECT may call.
const supportedFuncs = "count, sum, mean, median, min, max, first, last, spread, stddev, percentile"

func (e *Executor) selectStmt(ctx context.Context, s *influxql.SelectStatement, db string, now time.Time, div int64) ([]*Series, error) {
	p, err := planSelect(s, db, now)
	if err != nil {
		return nil, err
	}
	if p.w.hasFrom && p.w.hasTo && p.w.from >= p.w.to {
		return nil, nil
	}
	if p.w.hasFrom {
		if err := p.checkBuckets(nil, 1, e.cfg.MaxBuckets); err != nil {
			return nil, err
		}
	}
	var groups []*group
	if p.calls != nil {
		groups, err = e.aggregate(ctx, p)
	} else {
		groups, err = e.raw(ctx, p)
	}
	if err != nil {
		return nil, backendErr(p.db, err)
	}
	if err := p.checkBuckets(groups, len(groups), e.cfg.MaxBuckets); err != nil {
		return nil, err
	}
	return p.answer(groups, div), nil
}

// planSelect checks a SELECT and translates it.
func planSelect(s *influxql.SelectStatement, db string, now time.Time) (*selectPlan, error) {
	if s.Target != nil {
		return nil, fmt.Errorf("SELECT INTO is not supported")
	}
	if s.Location != nil {
		return nil, fmt.Errorf("tz() is not supported: times are UTC")
	}
	if len(s.Sources) != 1 {
		return nil, fmt.Errorf("a SELECT reads exactly one measurement, this one names %d", len(s.Sources))
	}
	m, ok := s.Sources[0].(*influxql.Measurement)
	if !ok {
		return nil, fmt.Errorf("subqueries are not supported")
	}
	if m.Regex != nil {
		return nil, fmt.Errorf("a regular expression as measurement is not supported: %s", m.Regex)
	}
	if err := checkRP(m.RetentionPolicy); err != nil {
		return nil, err
	}
	p := &selectPlan{db: pick(m.Database, db), meas: m.Name, fill: s.Fill, fillValue: s.FillValue,
		desc: !s.TimeAscending(), limit: s.Limit, offsetN: s.Offset, slimit: s.SLimit, soffset: s.SOffset}
	if p.db == "" {
		return nil, errDBRequired
	}
	for _, f := range s.SortFields {
		if f.Name != "time" && f.Name != "" {
			return nil, fmt.Errorf("only ORDER BY time supported at this time")
		}
	}
	var err error
	if p.w, err = splitWhere(s.Condition, now); err != nil {
		return nil, err
	}
	if err := p.dimensions(s); err != nil {
		return nil, err
	}
	if err := p.fields(s); err != nil {
		return nil, err
	}
	if p.step > 0 && !p.w.hasTo {
		// InfluxDB: GROUP BY time without an upper bound ends at now().
		p.w.to, p.w.hasTo = now.UnixNano()+1, true
	}
	return p, nil
}

// checkRP accepts the one retention policy a tsdb database has.
func checkRP(rp string) error {
	if rp != "" && rp != "autogen" {
		return fmt.Errorf("retention policy not found: %s", rp)
	}
	return nil
}

func (p *selectPlan) dimensions(s *influxql.SelectStatement) error {
	for _, d := range s.Dimensions {
		switch x := d.Expr.(type) {
		case *influxql.Call:
			if x.Name != "time" {
				return fmt.Errorf("only time() calls allowed in dimensions")
			}
		case *influxql.VarRef:
			p.groupTags = append(p.groupTags, x.Val)
		case *influxql.Wildcard:
			p.groupAll = true
		default:
			return fmt.Errorf("GROUP BY %s is not supported (time(), tags and * are)", d.Expr)
		}
	}
	iv, err := s.GroupByInterval()
	if err != nil {
		return err
	}
	if iv <= 0 && hasTimeDimension(s) {
		return fmt.Errorf("GROUP BY time(%s): the interval must be positive", iv)
	}
	off, err := s.GroupByOffset()
	if err != nil {
		return err
	}
	p.step, p.offset = int64(iv), int64(off)
	if p.groupAll {
		p.groupTags = nil
	}
	slices.Sort(p.groupTags)
	p.groupTags = slices.Compact(p.groupTags)
	return nil
}

func hasTimeDimension(s *influxql.SelectStatement) bool {
	for _, d := range s.Dimensions {
		if c, ok := d.Expr.(*influxql.Call); ok && c.Name == "time" {
			return true
		}
	}
	return false
}

func (p *selectPlan) fields(s *influxql.SelectStatement) error {
	nCalls := 0
	for _, f := range s.Fields {
		switch x := f.Expr.(type) {
		case *influxql.Call:
			c, err := parseCall(x)
			if err != nil {
				return err
			}
			p.calls = append(p.calls, c)
			nCalls++
		case *influxql.VarRef:
			if x.Val == "time" {
				continue
			}
			p.refs = append(p.refs, x)
		case *influxql.Wildcard:
			p.wildcard = true
		default:
			return fmt.Errorf("unsupported expression in SELECT: %s (fields, tags, * and the functions %s are)", f.Expr, supportedFuncs)
		}
	}
	if nCalls > 0 && (len(p.refs) > 0 || p.wildcard) {
		return fmt.Errorf("mixing aggregate and non-aggregate queries is not supported")
	}
	if nCalls == 0 {
		if p.step > 0 {
			return fmt.Errorf("GROUP BY requires at least one aggregate function")
		}
		if len(p.refs) == 0 && !p.wildcard {
			return fmt.Errorf("at least 1 non-time field must be queried")
		}
		return nil
	}
	p.columns = s.ColumnNames()
	return nil
}

// parseCall checks one function of a SELECT.
func parseCall(x *influxql.Call) (call, error) {
	c := call{name: x.Name}
	switch x.Name {
	case "count", "sum", "mean", "median", "min", "max", "first", "last", "spread", "stddev":
		if len(x.Args) != 1 {
			return c, fmt.Errorf("invalid number of arguments for %s, expected 1, got %d", x.Name, len(x.Args))
		}
	case "percentile":
		if len(x.Args) != 2 {
			return c, fmt.Errorf("invalid number of arguments for percentile, expected 2, got %d", len(x.Args))
		}
		switch n := x.Args[1].(type) {
		case *influxql.IntegerLiteral:
			c.n = float64(n.Val)
		case *influxql.NumberLiteral:
			c.n = n.Val
		default:
			return c, fmt.Errorf("expected float argument in percentile()")
		}
	default:
		return c, fmt.Errorf("function %s() is not supported (supported: %s)", x.Name, supportedFuncs)
	}
	ref, ok := x.Args[0].(*influxql.VarRef)
	if !ok {
		return c, fmt.Errorf("%s(): the argument must be a field name, got %s", x.Name, x.Args[0])
	}
	if ref.Type == influxql.Tag {
		return c, fmt.Errorf("%s(): %s is a tag, functions apply to fields", x.Name, ref.Val)
	}
	c.field = ref.Val
	return c, nil
}

// group is one series of the answer: its tags and its rows by time.
type group struct {
	key  string
	tags map[string]string
	// buckets of an aggregate, by start time.
	buckets map[int64]*bucket
	// rows of a raw SELECT: time then the columns.
	rows [][]any
	// times of rows (kept apart for sorting), and their series for ties.
	times  []int64
	series []string
}

// bucket holds one time bucket of a group: the partial states of the
// pushed-down functions and the values the others need, by field.
type bucket struct {
	states map[string]*model.AggState
	values map[string][]float64
}

// grouper assigns series keys to groups. Raw rows repeat their series
// key, so each key is parsed once: bySeries remembers its group and tags.
type grouper struct {
	p        *selectPlan
	groups   map[string]*group
	bySeries map[string]seriesGroup
}

// seriesGroup is what a grouper knows of one series key.
type seriesGroup struct {
	group *group
	tags  []model.Tag // as model.SplitSeries gives them; nil for "*"
}

func newGrouper(p *selectPlan) *grouper {
	return &grouper{p: p, groups: map[string]*group{}, bySeries: map[string]seriesGroup{}}
}

// of returns the group of a series key (as a partition names it, or "*"
// for every series together).
func (g *grouper) of(series string) (*group, error) {
	sg, err := g.lookup(series)
	return sg.group, err
}

// lookup returns the group and tags of a series key, parsing it the first
// time only.
func (g *grouper) lookup(series string) (seriesGroup, error) {
	if sg, ok := g.bySeries[series]; ok {
		return sg, nil
	}
	var st []model.Tag
	if series != "*" {
		var err error
		if _, st, err = model.SplitSeries(series); err != nil {
			return seriesGroup{}, err
		}
	}
	sg := seriesGroup{group: g.groupOf(series, st), tags: st}
	g.bySeries[series] = sg
	return sg, nil
}

// groupOf returns the group of a series key whose tags are st.
func (g *grouper) groupOf(series string, st []model.Tag) *group {
	var tags map[string]string
	key := ""
	switch {
	case series == "*" || (!g.p.groupAll && len(g.p.groupTags) == 0):
	default:
		tags = map[string]string{}
		if g.p.groupAll {
			for _, t := range st {
				tags[t.Key] = t.Value
			}
			key = series
		} else {
			var b strings.Builder
			for _, k := range g.p.groupTags {
				v := ""
				for _, t := range st {
					if t.Key == k {
						v = t.Value
					}
				}
				tags[k] = v
				fmt.Fprintf(&b, "%q=%q,", k, v)
			}
			key = b.String()
		}
	}
	gr := g.groups[key]
	if gr == nil {
		gr = &group{key: key, tags: tags, buckets: map[int64]*bucket{}}
		g.groups[key] = gr
	}
	return gr
}

func (g *grouper) sorted() []*group {
	out := make([]*group, 0, len(g.groups))
	for _, gr := range g.groups {
		out = append(out, gr)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}

func (gr *group) bucket(start int64) *bucket {
	b := gr.buckets[start]
	if b == nil {
		b = &bucket{states: map[string]*model.AggState{}, values: map[string][]float64{}}
		gr.buckets[start] = b
	}
	return b
}

// bucketStart is the start of the bucket of time t (model.Query's rule).
func (p *selectPlan) bucketStart(t int64) int64 {
	if p.step == 0 {
		return p.w.from
	}
	d := t - p.offset
	q := d / p.step
	if d%p.step != 0 && d < 0 {
		q--
	}
	return q*p.step + p.offset
}

// baseQuery is the part of the backend query every SELECT sends.
func (p *selectPlan) baseQuery() model.Query {
	return model.Query{From: p.w.from, To: p.w.to, Measurement: p.meas, Tags: p.w.tags}
}

// aggregate reads the partial states and values of an aggregate SELECT.
func (e *Executor) aggregate(ctx context.Context, p *selectPlan) ([]*group, error) {
	var aggFields, rawFields []string
	for _, c := range p.calls {
		if c.pushedDown() {
			aggFields = append(aggFields, c.field)
		} else {
			rawFields = append(rawFields, c.field)
		}
	}
	g := newGrouper(p)
	if len(aggFields) > 0 {
		q := p.baseQuery()
		q.Fields = uniq(aggFields)
		q.Step, q.Offset, q.Origin = p.step, p.offset, p.w.from
		q.GroupBy = p.groupTags
		q.GroupAll = !p.groupAll && len(p.groupTags) == 0
		q.MaxBuckets = e.cfg.MaxBuckets
		q.NoVariance = !slices.ContainsFunc(p.calls, func(c call) bool { return c.pushedDown() && c.name == "stddev" })
		q.SumsOnly = !slices.ContainsFunc(p.calls, func(c call) bool {
			return c.pushedDown() && c.name != "count" && c.name != "sum" && c.name != "mean"
		})
		aggs, err := e.be.Aggregate(ctx, p.db, q)
		if err != nil {
			return nil, err
		}
		for _, sa := range aggs {
			gr, err := g.of(sa.Series)
			if err != nil {
				return nil, err
			}
			for _, ba := range sa.Buckets {
				b := gr.bucket(ba.Start)
				for _, fa := range ba.Fields {
					st := b.states[fa.Name]
					if st == nil {
						st = new(model.AggState)
						b.states[fa.Name] = st
					}
					st.Merge(&fa.State)
				}
			}
		}
	}
	if len(rawFields) > 0 {
		q := p.baseQuery()
		q.Fields = uniq(rawFields)
		rows, err := e.readRaw(ctx, p.db, q)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			gr, err := g.of(r.Series)
			if err != nil {
				return nil, err
			}
			b := gr.bucket(p.bucketStart(r.Time))
			for _, f := range r.Fields {
				if v, ok := f.Value.Numeric(); ok {
					b.values[f.Name] = append(b.values[f.Name], v)
				}
			}
		}
	}
	return g.sorted(), nil
}

// readRaw reads rows with Backend.Query, refusing more than MaxRawRows.
func (e *Executor) readRaw(ctx context.Context, db string, q model.Query) ([]model.Row, error) {
	q.Limit = e.cfg.MaxRawRows
	rows, truncated, err := e.be.Query(ctx, db, q)
	if err != nil {
		return nil, err
	}
	if truncated || len(rows) > e.cfg.MaxRawRows {
		return nil, fmt.Errorf("the statement reads %d rows or more (the limit of rows read per statement); narrow its time range or tags, or give a LIMIT", e.cfg.MaxRawRows)
	}
	return rows, nil
}

func uniq(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

// raw reads the rows of a raw SELECT.
func (e *Executor) raw(ctx context.Context, p *selectPlan) ([]*group, error) {
	q := p.baseQuery()
	// The rows are turned into the groups' values here and dropped (the
	// groups keep copies of the values, and the series and names, which
	// the scan allocates apart): an arena lends them.
	arena := model.GetRowArena()
	defer arena.Release()
	q.Arena = arena
	q.NoVersions = true // an InfluxQL answer prints none
	if !p.wildcard {
		for _, r := range p.refs {
			if r.Type != influxql.Tag {
				q.Fields = append(q.Fields, r.Val)
			}
		}
		if len(q.Fields) == 0 {
			return nil, fmt.Errorf("at least 1 non-time field must be queried")
		}
		q.Fields = uniq(q.Fields)
	}
	var rows []model.Row
	var err error
	// OFFSET+LIMIT compared with MaxRawRows without the addition, which
	// could overflow (LIMIT 9223372036854775807 OFFSET 1 made a negative
	// q.Limit: no limit at all).
	fits := p.limit > 0 && p.offsetN >= 0 && p.offsetN <= e.cfg.MaxRawRows && p.limit <= e.cfg.MaxRawRows-p.offsetN
	if fits && !p.desc && !p.groupAll && len(p.groupTags) == 0 {
		// One series in time order: the backend's answer is sorted by
		// (time, series) and truncated after the first q.Limit rows, so
		// OFFSET+LIMIT is all the statement needs.
		q.Limit = p.offsetN + p.limit
		rows, _, err = e.be.Query(ctx, p.db, q)
	} else {
		rows, err = e.readRaw(ctx, p.db, q)
	}
	if err != nil {
		return nil, err
	}
	if p.wildcard {
		p.columns = wildcardColumns(p, rows)
	} else {
		p.columns = []string{"time"}
		for _, r := range p.refs {
			p.columns = append(p.columns, r.Val)
		}
	}
	g := newGrouper(p)
	for _, r := range rows {
		sg, err := g.lookup(r.Series)
		if err != nil {
			return nil, err
		}
		gr := sg.group
		vals := make([]any, len(p.columns))
		for i, c := range p.columns[1:] {
			vals[i+1] = rowValue(r, sg.tags, c, p.wildcard, p.refType(i))
		}
		gr.rows = append(gr.rows, vals)
		gr.times = append(gr.times, r.Time)
		gr.series = append(gr.series, r.Series)
	}
	return g.sorted(), nil
}

// refType is the type hint (::field, ::tag) of the i-th column of a raw
// SELECT without wildcard.
func (p *selectPlan) refType(i int) influxql.DataType {
	if p.wildcard || i >= len(p.refs) {
		return influxql.Unknown
	}
	return p.refs[i].Type
}

// rowValue is the value of column c of a raw row: its field, else (a tag
// may be selected, as in InfluxDB) its tag, else null.
func rowValue(r model.Row, tags []model.Tag, c string, wildcard bool, typ influxql.DataType) any {
	if typ != influxql.Tag {
		for _, f := range r.Fields {
			if f.Name == c {
				return f.Value.Interface()
			}
		}
	}
	if typ == influxql.Unknown || typ == influxql.Tag {
		for _, t := range tags {
			if t.Key == c {
				return t.Value
			}
		}
	}
	return nil
}

// wildcardColumns are the columns of SELECT *: time, then the fields and
// tags of the rows read, sorted, the GROUP BY tags left out.
func wildcardColumns(p *selectPlan, rows []model.Row) []string {
	set := map[string]bool{}
	seen := map[string]bool{} // series whose tags are in set already
	for _, r := range rows {
		for _, f := range r.Fields {
			set[f.Name] = true
		}
		if !p.groupAll && !seen[r.Series] {
			seen[r.Series] = true
			if _, tags, err := model.SplitSeries(r.Series); err == nil {
				for _, t := range tags {
					if !slices.Contains(p.groupTags, t.Key) {
						set[t.Key] = true
					}
				}
			}
		}
	}
	cols := make([]string, 0, len(set)+1)
	for c := range set {
		cols = append(cols, c)
	}
	sort.Strings(cols)
	return append([]string{"time"}, cols...)
}

// answer renders the groups as the statement's series.
func (p *selectPlan) answer(groups []*group, div int64) []*Series {
	var out []*Series
	for _, gr := range groups {
		var times []int64
		var rows [][]any
		if p.calls != nil {
			times, rows = p.aggRows(gr, groups)
		} else {
			times, rows = p.rawRows(gr)
		}
		if p.desc {
			slices.Reverse(times)
			slices.Reverse(rows)
		}
		times, rows = page(times, p.offsetN, p.limit), page(rows, p.offsetN, p.limit)
		if len(rows) == 0 {
			continue
		}
		for i, r := range rows {
			r[0] = formatTime(times[i], div)
			for j := 1; j < len(r); j++ {
				r[j] = finite(r[j])
			}
		}
		s := &Series{Name: p.meas, Columns: p.columns, Values: rows}
		if len(gr.tags) > 0 {
			s.Tags = gr.tags
		}
		out = append(out, s)
	}
	return page(out, p.soffset, p.slimit)
}

// page applies OFFSET and LIMIT (0: none).
func page[T any](s []T, offset, limit int) []T {
	if offset > 0 {
		if offset >= len(s) {
			return nil
		}
		s = s[offset:]
	}
	if limit > 0 && limit < len(s) {
		s = s[:limit]
	}
	return s
}

// rawRows sorts a raw group's rows by time (then series).
func (p *selectPlan) rawRows(gr *group) ([]int64, [][]any) {
	idx := make([]int, len(gr.rows))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		ia, ib := idx[a], idx[b]
		if gr.times[ia] != gr.times[ib] {
			return gr.times[ia] < gr.times[ib]
		}
		return gr.series[ia] < gr.series[ib]
	})
	times := make([]int64, len(idx))
	rows := make([][]any, len(idx))
	for i, j := range idx {
		times[i], rows[i] = gr.times[j], gr.rows[j]
	}
	return times, rows
}

// aggRows computes an aggregate group's rows, filled. all are every
// group: without a lower time bound, the buckets start at the first one
// holding data in any group.
func (p *selectPlan) aggRows(gr *group, all []*group) ([]int64, [][]any) {
	var starts []int64
	if p.step == 0 || p.fill == influxql.NoFill {
		for s := range gr.buckets {
			starts = append(starts, s)
		}
		slices.Sort(starts)
	} else {
		first, last := p.fillRange(all)
		for s := first; s <= last; s += p.step {
			starts = append(starts, s)
			if s > math.MaxInt64-p.step {
				break
			}
		}
	}
	times := make([]int64, 0, len(starts))
	rows := make([][]any, 0, len(starts))
	for _, s := range starts {
		row := make([]any, len(p.calls)+1)
		b := gr.buckets[s]
		some := false
		for i, c := range p.calls {
			if b != nil {
				row[i+1] = c.value(b)
			}
			some = some || row[i+1] != nil
		}
		if !some && p.fill == influxql.NoFill {
			continue
		}
		t := s
		if p.step == 0 {
			t = p.singleTime(b)
		}
		times = append(times, t)
		rows = append(rows, row)
	}
	p.fillRows(times, rows)
	return times, rows
}

// fillRange is the first and last bucket start of a filled GROUP BY time:
// those of the time range, or without a lower bound from the first bucket
// holding data in any group.
func (p *selectPlan) fillRange(all []*group) (first, last int64) {
	first = int64(math.MaxInt64)
	if p.w.hasFrom {
		first = p.bucketStart(p.w.from)
	} else {
		for _, g := range all {
			for s := range g.buckets {
				first = min(first, s)
			}
		}
	}
	return first, p.bucketStart(p.w.to - 1)
}

// checkBuckets refuses a filled answer of more than max buckets summed
// over its groups (before any read, with nGroups 1, when the time range
// has a lower bound).
func (p *selectPlan) checkBuckets(groups []*group, nGroups, max int) error {
	if p.calls == nil || p.step == 0 || p.fill == influxql.NoFill || nGroups == 0 {
		return nil
	}
	first, last := p.fillRange(groups)
	if first > last {
		return nil
	}
	n := uint64(last-first)/uint64(p.step) + 1
	if n > uint64(max) || n*uint64(nGroups) > uint64(max) {
		return fmt.Errorf("the answer would hold more than %d buckets (GROUP BY time(%s) over %d series); use a wider interval, a narrower time range or fill(none)",
			max, time.Duration(p.step), nGroups)
	}
	return nil
}

// singleTime is the time of the one row of an aggregate without GROUP BY
// time: the start of the time range (0 without a lower bound), or, for a
// lone first() or last(), the time of the value selected (as InfluxDB).
func (p *selectPlan) singleTime(b *bucket) int64 {
	if len(p.calls) == 1 && b != nil {
		c := p.calls[0]
		if st := b.states[c.field]; st != nil && st.N > 0 {
			switch c.name {
			case "first":
				return st.FirstTime
			case "last":
				return st.LastTime
			}
		}
	}
	if p.w.hasFrom {
		return p.w.from
	}
	return 0
}

// value computes the function over one bucket; nil when it has no value.
func (c call) value(b *bucket) any {
	if c.pushedDown() {
		st := b.states[c.field]
		if st == nil {
			return nil
		}
		var a model.Agg
		switch c.name {
		case "count":
			if st.Count == 0 {
				return nil
			}
			return st.Count
		case "spread":
			if st.N == 0 {
				return nil
			}
			return st.Max - st.Min
		case "stddev":
			if v, ok := st.Stddev(); ok {
				return v
			}
			return nil
		case "sum":
			a = model.AggSum
		case "mean":
			a = model.AggAvg
		case "min":
			a = model.AggMin
		case "max":
			a = model.AggMax
		case "first":
			a = model.AggFirst
		case "last":
			a = model.AggLast
		}
		if v, ok := st.Result(a); ok {
			return v
		}
		return nil
	}
	vals := b.values[c.field]
	var v float64
	var ok bool
	switch c.name {
	case "median":
		v, ok = median(vals)
	case "percentile":
		v, ok = percentile(vals, c.n)
	}
	if !ok {
		return nil
	}
	return v
}
