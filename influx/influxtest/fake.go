// Package influxtest holds an in-memory influx.Backend for tests: it
// answers every method by brute force over rows kept in memory, so that
// the executor's answers (and /query's) can be checked against it.
package influxtest

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tsdb/tsdb/errcode"
	"github.com/tsdb/tsdb/model"
)

// Backend answers influx.Backend by brute force over rows in memory: the
// model every executor answer is checked against. It is safe for
// concurrent use.
type Backend struct {
	mu     sync.Mutex
	tables map[string]*fakeTable
	// calls records the methods called, for the push-down checks.
	calls []string
	// lent are the answers Query copied into its callers' arenas: once
	// an arena is Reset, their rows are overwritten (poisoned), as the
	// next query lent the same memory would, so that a caller still
	// reading an answer after it gave its arena back reads garbage.
	lent []lentAnswer
}

type lentAnswer struct {
	arena *model.RowArena
	rows  []model.Row
}

type fakeTable struct {
	cfg  model.TableConfig
	rows []model.Row
}

var errFakeNotFound = errcode.New(errcode.ErrTableNotFound, "fake: table not found")

// New returns an empty backend.
func New() *Backend { return &Backend{tables: map[string]*fakeTable{}} }

// Calls returns the names of the methods called so far, in order.
func (f *Backend) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// Add stores rows (series written as line protocol keys, made canonical
// here) in table db, creating it.
func (f *Backend) Add(db string, rows ...model.Row) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.tables[db]
	if t == nil {
		t = &fakeTable{cfg: model.TableConfig{Name: db, ReplicationFactor: 3}}
		f.tables[db] = t
	}
	for _, r := range rows {
		s, err := model.CanonicalSeries(r.Series)
		if err != nil {
			panic(err)
		}
		r.Series = s
		t.rows = append(t.rows, r)
	}
}

func (f *Backend) record(c string) { f.calls = append(f.calls, c) }

func (f *Backend) table(name string) (*fakeTable, error) {
	t := f.tables[name]
	if t == nil {
		return nil, fmt.Errorf("%w: %s", errFakeNotFound, name)
	}
	return t, nil
}

func (f *Backend) ListTables(ctx context.Context) ([]model.TableConfig, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []model.TableConfig
	for _, t := range f.tables {
		out = append(out, t.cfg)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (f *Backend) CreateTable(ctx context.Context, name string, retention time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("CreateTable")
	if err := model.ValidateTableName(name); err != nil {
		return err
	}
	if f.tables[name] == nil {
		f.tables[name] = &fakeTable{cfg: model.TableConfig{Name: name, Retention: model.Duration(retention), ReplicationFactor: 3}}
	}
	return nil
}

func (f *Backend) SetRetention(ctx context.Context, name string, retention time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("SetRetention")
	t, err := f.table(name)
	if err != nil {
		return err
	}
	t.cfg.Retention = model.Duration(retention)
	return nil
}

func (f *Backend) DropTable(ctx context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("DropTable")
	if _, err := f.table(name); err != nil {
		return err
	}
	delete(f.tables, name)
	return nil
}

// match returns the rows of q's range and series, projected on q.Fields.
func (f *Backend) match(table string, q model.Query) ([]model.Row, error) {
	t, err := f.table(table)
	if err != nil {
		return nil, err
	}
	m, err := q.Matcher()
	if err != nil {
		return nil, err
	}
	var out []model.Row
	for _, r := range t.rows {
		if r.Time < q.From || (r.Time >= q.To && q.To != math.MaxInt64) {
			continue
		}
		if q.Series != "" && (q.Prefix && !strings.HasPrefix(r.Series, q.Series) || !q.Prefix && r.Series != q.Series) {
			continue
		}
		if m != nil && !m.Match(r.Series) {
			continue
		}
		if len(q.Fields) > 0 {
			var fs []model.Field
			for _, fl := range r.Fields {
				if slices.Contains(q.Fields, fl.Name) {
					fs = append(fs, fl)
				}
			}
			if len(fs) == 0 {
				continue
			}
			r.Fields = fs
		}
		out = append(out, r)
	}
	return out, nil
}

func (f *Backend) Query(ctx context.Context, table string, q model.Query) ([]model.Row, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("Query")
	f.poisonReturned()
	rows, err := f.match(table, q)
	if err != nil {
		return nil, false, err
	}
	if q.Arena != nil {
		rows = f.lend(q.Arena, rows)
	}
	// As the router: sorted by (time, series), the first q.Limit rows,
	// truncated as soon as the limit is reached.
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].Time != rows[j].Time {
			return rows[i].Time < rows[j].Time
		}
		return rows[i].Series < rows[j].Series
	})
	if q.Limit > 0 && len(rows) >= q.Limit {
		return rows[:q.Limit], true, nil
	}
	return rows, false, nil
}

// lend copies rows into memory arena lends, as a scan does, and notes
// them for poisonReturned.
func (f *Backend) lend(arena *model.RowArena, rows []model.Row) []model.Row {
	out := arena.Rows(len(rows))
	for _, r := range rows {
		fields := append(arena.Fields(len(r.Fields)), r.Fields...)
		out = append(out, model.Row{Time: r.Time, Series: r.Series, Fields: fields})
	}
	f.lent = append(f.lent, lentAnswer{arena: arena, rows: out})
	return out
}

// poisonReturned overwrites the answers lent by arenas Reset since.
func (f *Backend) poisonReturned() {
	f.lent = slices.DeleteFunc(f.lent, func(a lentAnswer) bool {
		if a.arena.Lent() > 0 {
			return false
		}
		for i := range a.rows {
			a.rows[i].Time = math.MinInt64
			for j := range a.rows[i].Fields {
				a.rows[i].Fields[j] = model.Field{Name: "poisoned", Value: model.String("poisoned")}
			}
		}
		return true
	})
}

func (f *Backend) Aggregate(ctx context.Context, table string, q model.Query) ([]model.SeriesAgg, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("Aggregate")
	if len(q.GroupBy) > 0 && q.GroupAll {
		return nil, fmt.Errorf("%w: GroupBy and GroupAll", errcode.ErrInvalidQuery)
	}
	rows, err := f.match(table, q)
	if err != nil {
		return nil, err
	}
	type key struct {
		series string
		start  int64
		field  string
	}
	states := map[key]*model.AggState{}
	for _, r := range rows {
		name := r.Series
		switch {
		case q.GroupAll:
			name = "*"
		case len(q.GroupBy) > 0:
			meas, tags, _ := model.SplitSeries(r.Series)
			var keep []model.Tag
			for _, t := range tags {
				if slices.Contains(q.GroupBy, t.Key) {
					keep = append(keep, t)
				}
			}
			name, _ = model.BuildSeries(meas, keep)
		}
		start := q.Origin
		if q.Step > 0 {
			d := r.Time - q.Offset
			n := d / q.Step
			if d%q.Step != 0 && d < 0 {
				n--
			}
			start = n*q.Step + q.Offset
		}
		for _, fl := range r.Fields {
			k := key{name, start, fl.Name}
			if states[k] == nil {
				states[k] = new(model.AggState)
			}
			states[k].Add(r.Time, r.Series, fl.Value)
		}
	}
	var parts []model.SeriesAgg
	for k, st := range states {
		if q.NoVariance || q.SumsOnly {
			st.M2 = 0 // as a replica that skips the variance's pass
		}
		if q.SumsOnly {
			// As a replica that sums blocks up from their summaries:
			// what such a state leaves unknown.
			nan := math.NaN()
			st.Min, st.Max, st.First, st.Last = nan, nan, nan, nan
		}
		parts = append(parts, model.SeriesAgg{Series: k.series, Buckets: []model.BucketAgg{{Start: k.start,
			Fields: []model.FieldAgg{{Name: k.field, State: *st}}}}})
	}
	out := model.MergeSeriesAggs(nil, parts)
	n := 0
	for _, s := range out {
		n += len(s.Buckets)
	}
	if q.MaxBuckets > 0 && n > q.MaxBuckets {
		return nil, fmt.Errorf("%w: %d buckets", errcode.ErrTooManyBuckets, n)
	}
	return out, nil
}

func (f *Backend) SeriesKeys(ctx context.Context, table string, q model.Query, limit int) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("SeriesKeys")
	q.From, q.To = math.MinInt64, math.MaxInt64
	rows, err := f.match(table, q)
	if err != nil {
		return nil, err
	}
	set := map[string]bool{}
	for _, r := range rows {
		set[r.Series] = true
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if limit > 0 && len(keys) > limit {
		keys = keys[:limit]
	}
	return keys, nil
}

func (f *Backend) FieldKeys(ctx context.Context, table, measurement string) ([]model.FieldKey, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("FieldKeys")
	t, err := f.table(table)
	if err != nil {
		return nil, err
	}
	set := map[model.FieldKey]bool{}
	for _, r := range t.rows {
		m, _ := model.Measurement(r.Series)
		if measurement != "" && m != measurement {
			continue
		}
		for _, fl := range r.Fields {
			set[model.FieldKey{Measurement: m, Name: fl.Name, Kind: fl.Value.Kind}] = true
		}
	}
	var out []model.FieldKey
	for k := range set {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Measurement != out[j].Measurement {
			return out[i].Measurement < out[j].Measurement
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

func (f *Backend) Delete(ctx context.Context, table string, q model.Query) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("Delete")
	t, err := f.table(table)
	if err != nil {
		return err
	}
	m, err := q.Matcher()
	if err != nil {
		return err
	}
	kept := t.rows[:0]
	for _, r := range t.rows {
		in := r.Time >= q.From && (r.Time < q.To || q.To == math.MaxInt64) && (m == nil || m.Match(r.Series))
		if !in {
			kept = append(kept, r)
		}
	}
	t.rows = kept
	return nil
}

// Row builds a row from name, value pairs (float64, int, bool or string).
func Row(series string, t int64, kv ...any) model.Row {
	r := model.Row{Series: series, Time: t}
	for i := 0; i < len(kv); i += 2 {
		var v model.Value
		switch x := kv[i+1].(type) {
		case float64:
			v = model.Float(x)
		case int:
			v = model.Int(int64(x))
		case bool:
			v = model.Bool(x)
		case string:
			v = model.String(x)
		}
		r.Fields = append(r.Fields, model.Field{Name: kv[i].(string), Value: v})
	}
	r.Normalize()
	return r
}
