package frontend

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/model"
)

// memRouter is a Router over one table held in memory, merging writes
// field by field by version like a replica. Its Query filters by time and
// Series/Prefix only (as a replica that does not filter tags would), skips
// tombstones, and with stale set answers from the rows as they were
// before any tombstone (a replica the tombstones have not reached).
type memRouter struct {
	mu      sync.Mutex
	rows    map[string]model.Row // by series and time
	stale   map[string]model.Row // the rows before the first tombstone
	useOld  bool
	queries []model.Query
	inserts []model.InsertOptions
}

func newMemRouter(rows []model.Row) *memRouter {
	r := &memRouter{rows: map[string]model.Row{}}
	for _, row := range rows {
		r.rows[rowKey(row)] = row
	}
	return r
}

func rowKey(r model.Row) string { return fmt.Sprintf("%s@%d", r.Series, r.Time) }

func (m *memRouter) Table(context.Context, string) (metadata.TableConfig, *metadata.File, error) {
	panic("not used")
}

func (m *memRouter) Aggregate(context.Context, string, model.Query) ([]model.SeriesAgg, error) {
	panic("not used")
}

func (m *memRouter) Insert(_ context.Context, _ string, rows []model.Row, opts model.InsertOptions) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stale == nil {
		m.stale = map[string]model.Row{}
		for k, r := range m.rows {
			m.stale[k] = r
		}
	}
	m.inserts = append(m.inserts, opts)
	for _, in := range rows {
		k := rowKey(in)
		old := m.rows[k]
		fields := slices.Clone(old.Fields)
		for _, f := range in.Fields {
			i := slices.IndexFunc(fields, func(g model.Field) bool { return g.Name == f.Name })
			switch {
			case i < 0:
				fields = append(fields, f)
			case fields[i].Version.Less(f.Version):
				fields[i] = f
			}
		}
		m.rows[k] = model.Row{Time: in.Time, Series: in.Series, Fields: fields}
	}
	return nil
}

func (m *memRouter) Query(_ context.Context, _ string, q model.Query) ([]model.Row, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.queries = append(m.queries, q)
	src := m.rows
	if m.useOld && m.stale != nil {
		src = m.stale
	}
	var out []model.Row
	for _, r := range src {
		if r.Time < q.From || r.Time >= q.To && q.To != math.MaxInt64 {
			continue
		}
		if q.Series != "" && !(q.Prefix && strings.HasPrefix(r.Series, q.Series) || r.Series == q.Series) {
			continue
		}
		live := model.Row{Time: r.Time, Series: r.Series}
		for _, f := range r.Fields {
			if !f.Value.IsDeleted() {
				live.Fields = append(live.Fields, f)
			}
		}
		if len(live.Fields) > 0 {
			out = append(out, live)
		}
	}
	slices.SortFunc(out, func(a, b model.Row) int {
		return cmp.Or(cmp.Compare(a.Time, b.Time), strings.Compare(a.Series, b.Series))
	})
	if q.Limit > 0 && len(out) > q.Limit {
		return out[:q.Limit], true, nil
	}
	return out, false, nil
}

// live returns the keys of the rows holding a live field.
func (m *memRouter) live() map[string]bool {
	rows, _, _ := m.Query(context.Background(), "", model.Query{From: math.MinInt64, To: math.MaxInt64})
	out := map[string]bool{}
	for _, r := range rows {
		out[rowKey(r)] = true
	}
	return out
}

type okClock struct{}

func (okClock) CheckClock() error { return nil }

// TestDeleteRows: a delete tombstones every field of the rows its query
// selects and no other (the tag filter applied at the front end too),
// with versions newer than the values it deletes (even one stamped ahead
// of this server's clock), reading and writing at quorum; its pages end
// whether or not the reads see the tombstones already, also when more
// rows than a page share one time.
func TestDeleteRows(t *testing.T) {
	for _, stale := range []bool{false, true} {
		t.Run(fmt.Sprintf("stale=%v", stale), func(t *testing.T) {
			const wall = 1_000_000
			clock := model.NewClock("s1", func() int64 { return wall })
			var rows []model.Row
			add := func(series string, ts, ver int64, fields ...string) {
				r := model.Row{Time: ts, Series: series}
				for _, f := range fields {
					r.Fields = append(r.Fields, model.Field{Name: f, Value: model.Float(1), Version: model.Version{Wall: ver, Node: 9}})
				}
				rows = append(rows, r)
			}
			n := deleteBatchRows*2 + 500 // more rows at one time than two pages
			for i := range n {
				add(fmt.Sprintf("cpu,host=h%05d", i), 50, wall-10, "a")
				add(fmt.Sprintf("mem,host=h%05d", i), 50, wall-10, "a")
			}
			for ts := int64(0); ts < 3000; ts++ {
				add("cpu,host=a", ts, wall-10, "a", "b")
				add("cpu,host=b", ts, wall-10, "a")
			}
			add("cpu,host=a", 100, wall+500, "c") // stamped ahead of this clock
			m := newMemRouter(rows)
			m.useOld = stale
			fe := &Frontend{router: m, clock: clock, clockCheck: okClock{}}
			q := model.Query{From: 40, To: 2000, Measurement: "cpu",
				Tags: &model.TagExpr{Op: model.TagNeq, Key: "host", Value: "b"}}
			if err := fe.deleteRows(context.Background(), "t", q); err != nil {
				t.Fatal(err)
			}
			m.useOld = false
			queries := slices.Clone(m.queries)
			live := m.live()
			for _, r := range rows {
				k := rowKey(r)
				gone := r.Time >= 40 && r.Time < 2000 && strings.HasPrefix(r.Series, "cpu,") && r.Series != "cpu,host=b"
				if live[k] == gone {
					t.Fatalf("row %s live %v after the delete, want deleted %v", k, live[k], gone)
				}
			}
			for _, r := range rows {
				for _, f := range m.rows[rowKey(r)].Fields {
					if f.Value.IsDeleted() && !r.Fields[0].Version.Less(f.Version) {
						t.Fatalf("tombstone of %s %s at version %+v, not after the value it deletes (%+v)",
							rowKey(r), f.Name, f.Version, r.Fields[0].Version)
					}
				}
			}
			for _, q := range queries {
				if q.Consistency != api.ConsistencyQuorum || q.Limit <= 0 {
					t.Fatalf("delete read with %+v, want quorum and a limit", q)
				}
			}
			for _, o := range m.inserts {
				if o.Consistency != api.ConsistencyQuorum || !o.Versioned {
					t.Fatalf("tombstones written with %+v, want quorum, versioned", o)
				}
			}
		})
	}
}

// TestDeleteRowsRefuses: a bad tag predicate is an invalid query, and an
// empty range deletes nothing without reading.
func TestDeleteRowsRefuses(t *testing.T) {
	m := newMemRouter(nil)
	fe := &Frontend{router: m, clock: model.NewClock("s1", nil), clockCheck: okClock{}}
	err := fe.DeleteRows(context.Background(), "t", model.Query{From: 0, To: 10, Tags: &model.TagExpr{Op: model.TagMatch, Key: "h", Value: "("}})
	if err == nil || !strings.Contains(err.Error(), "invalid query") {
		t.Errorf("bad predicate: %v, want an invalid query", err)
	}
	if err := fe.DeleteRows(context.Background(), "t", model.Query{From: 10, To: 10}); err != nil || len(m.queries) != 0 {
		t.Errorf("empty range: %v after %d reads", err, len(m.queries))
	}
}
