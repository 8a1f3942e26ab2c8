package partition

import (
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/tsdb/tsdb/model"
)

// kindedRows returns random rows whose fields keep one kind per name (a:
// float, b: int, c: bool, d: string), so overwrites never leave a stale
// field kind in the index.
func kindedRows(rng *rand.Rand, n int, series []string, times []int64) []model.Row {
	rows := randRows(rng, n, series, times)
	for i := range rows {
		for j := range rows[i].Fields {
			f := &rows[i].Fields[j]
			v := int64(rng.Intn(100))
			switch f.Name {
			case "a":
				f.Value = model.Float(float64(v) / 4)
			case "b":
				f.Value = model.Int(v)
			case "c":
				f.Value = model.Bool(v%2 == 0)
			default:
				f.Value = model.String(fmt.Sprint(v))
			}
		}
	}
	return rows
}

// indexSeries are series with tags, escapes, no tags and one that does not
// parse, over three measurements.
var indexSeries = []string{
	"cpu", "cpu,host=a", "cpu,host=b", "cpu,host=b,region=eu", "cpu,host=c,region=us",
	`cpu\ x,host=a`, "disk,host=a", "disk,host=a,path=/", "mem", "bad,notag",
}

// naiveFieldKeys returns the field keys of rows, sorted.
func naiveFieldKeys(rows []model.Row, measurement string) []model.FieldKey {
	set := map[model.FieldKey]bool{}
	for _, r := range rows {
		m, _ := splitMeasurement(r.Series)
		if measurement != "" && m != measurement {
			continue
		}
		for _, f := range r.Fields {
			set[model.FieldKey{Measurement: m, Name: f.Name, Kind: f.Value.Kind}] = true
		}
	}
	var out []model.FieldKey
	for k := range set {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b model.FieldKey) int {
		if c := strings.Compare(a.Measurement, b.Measurement); c != 0 {
			return c
		}
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return int(a.Kind) - int(b.Kind)
	})
	return out
}

// naiveSeriesKeys returns the distinct series of rows that q selects.
func naiveSeriesKeys(rows []model.Row, q model.Query) []string {
	sm, err := q.Matcher()
	if err != nil {
		panic(err)
	}
	var out []string
	for _, r := range rows {
		if naiveSeriesMatch(r.Series, q.Series, q.Prefix) && (sm == nil || sm.Match(r.Series)) {
			out = append(out, r.Series)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func mustCheckIndex(t *testing.T, r *Replica) {
	t.Helper()
	rep, err := r.CheckIndex(false)
	if err != nil {
		t.Fatalf("CheckIndex: %v", err)
	}
	if !rep.OK() {
		t.Fatalf("index differs from the rows: %+v", rep)
	}
}

// TestIndexMatchesData writes random batches (new series, overwrites,
// out-of-order times) and checks after each that the index holds exactly
// what the rows need and that SeriesKeys and FieldKeys answer as the naive
// model does.
func TestIndexMatchesData(t *testing.T) {
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	rng := newSeededRand(t)
	times := testTimes(rng, 40)
	m := naiveModel{}
	for i := 0; i < 8; i++ {
		batch := kindedRows(rng, 60, indexSeries[:3+i], times)
		m.apply(batch)
		mustApply(t, r, batch...)
		mustCheckIndex(t, r)
	}
	all := m.rows()
	for _, meas := range []string{"", "cpu", "cpu x", "disk", "nope"} {
		got, err := r.FieldKeys(meas)
		if err != nil {
			t.Fatal(err)
		}
		if want := naiveFieldKeys(all, meas); !slices.Equal(got, want) {
			t.Fatalf("FieldKeys(%q) = %v, want %v", meas, got, want)
		}
	}
	for i := 0; i < 300; i++ {
		q := randScanQuery(rng, times)
		if rng.Intn(4) == 0 {
			q.Measurement = []string{"cpu x", "bad,notag"}[rng.Intn(2)]
		}
		limit := []int{0, 0, 1, 2}[rng.Intn(4)]
		got, err := r.SeriesKeys(q, limit)
		if err != nil {
			t.Fatalf("SeriesKeys(%+v): %v", q, err)
		}
		want := naiveSeriesKeys(all, q)
		if limit > 0 && len(want) > limit {
			want = want[:limit]
		}
		if !slices.Equal(got, want) {
			t.Fatalf("SeriesKeys(%+v, %d) = %q, want %q", q, limit, got, want)
		}
	}
}

// TestIndexCheckRepairs deletes an index entry and adds a stray one behind
// the replica's back: CheckIndex reports both and repairs them, and the
// Apply state reloads (a later new series is still indexed).
func TestIndexCheckRepairs(t *testing.T) {
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	mustApply(t, r, row("cpu,host=a", 1, fl("v", 1, 1)), row("cpu,host=b", 2, fl("v", 1, 1)), row("mem", 3, fl("w", 1, 1)))
	mustCheckIndex(t, r)
	gone := r.ks.appendTagIndexKey(nil, "cpu", model.Tag{Key: "host", Value: "b"}, "cpu,host=b")
	stray := r.ks.appendSeriesIndexKey(nil, "ghost", "ghost,x=y")
	if err := s.DB().Delete(gone, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := s.DB().Set(stray, nil, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	rep, err := r.CheckIndex(false)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Missing != 1 || rep.Extra != 1 || rep.Repaired || rep.Series != 3 || rep.FieldKeys != 2 {
		t.Fatalf("report %+v, want 1 missing, 1 extra, 3 series, 2 field keys", rep)
	}
	got, err := r.SeriesKeys(model.Query{Measurement: "cpu", Tags: &model.TagExpr{Op: model.TagEq, Key: "host", Value: "b"}}, 0)
	if err != nil || len(got) != 0 {
		t.Fatalf("before repair: %q, %v (the deleted entry should hide the series)", got, err)
	}
	rep, err = r.CheckIndex(true)
	if err != nil || !rep.Repaired || rep.Missing != 1 || rep.Extra != 1 {
		t.Fatalf("repair: %+v, %v", rep, err)
	}
	mustCheckIndex(t, r)
	got, err = r.SeriesKeys(model.Query{Measurement: "cpu", Tags: &model.TagExpr{Op: model.TagEq, Key: "host", Value: "b"}}, 0)
	if err != nil || !slices.Equal(got, []string{"cpu,host=b"}) {
		t.Fatalf("after repair: %q, %v", got, err)
	}
	mustApply(t, r, row("cpu,host=c", 4, fl("v", 1, 1), fl("s", 2, 1)))
	mustCheckIndex(t, r)
}

// TestIndexDropRemovesKeys checks that a drop leaves no index key.
func TestIndexDropRemovesKeys(t *testing.T) {
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	mustApply(t, r, row("cpu,host=a", 1, fl("v", 1, 1)), row("mem", 3, fl("w", 1, 1)))
	if err := s.DropReplica(r.info.Placement); err != nil {
		t.Fatal(err)
	}
	it, err := s.DB().NewIter(&pebble.IterOptions{LowerBound: r.ks.prefix, UpperBound: r.ks.dataEnd})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	if it.First() {
		t.Fatalf("key %q left after the drop", it.Key())
	}
	if _, err := r.SeriesKeys(model.Query{}, 0); !errors.Is(err, ErrDropped) {
		t.Fatalf("SeriesKeys after drop: %v", err)
	}
}

// TestIndexUpgradeAtOpen makes a store look written before the index
// (no index keys, no marker): Open rebuilds the index.
func TestIndexUpgradeAtOpen(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{MemoryHead: memHeadTests, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	r := createTestReplica(t, s)
	p := r.info.Placement
	mustApply(t, r, row("cpu,host=a", 1, fl("v", 1, 1)), row("cpu,host=b", 2, fl("v", 1, 1)), row("mem", 3, fl("w", 1, 1)))
	for _, k := range []byte{kindField, kindTag, kindSeriesIx} {
		lo, hi := r.ks.kindRange(k, nil)
		if err := s.DB().DeleteRange(lo, hi, pebble.Sync); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DB().Delete(indexedKey, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if got, _ := r.SeriesKeys(model.Query{}, 0); len(got) != 0 {
		t.Fatalf("index not removed: %q", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTestStore(t, dir)
	r, ok := s.Replica(p)
	if !ok {
		t.Fatal("replica gone")
	}
	mustCheckIndex(t, r)
	got, err := r.SeriesKeys(model.Query{}, 0)
	if err != nil || !slices.Equal(got, []string{"cpu,host=a", "cpu,host=b", "mem"}) {
		t.Fatalf("SeriesKeys after upgrade: %q, %v", got, err)
	}
	if _, closer, err := s.DB().Get(indexedKey); err != nil {
		t.Fatalf("marker not written: %v", err)
	} else {
		_ = closer.Close()
	}
}

// TestScanManySeriesSeeks selects one series of many, so Scan and
// Aggregate seek to it through the index (indexSeekRatio), and compares
// with the naive model.
func TestScanManySeriesSeeks(t *testing.T) {
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	rng := newSeededRand(t)
	var series []string
	for i := 0; i < 40; i++ {
		series = append(series, fmt.Sprintf("cpu,host=h%02d", i), fmt.Sprintf("cpu,host=h%02d,region=r%d", i, i%3))
	}
	times := testTimes(rng, 30)
	m := naiveModel{}
	for i := 0; i < 5; i++ {
		batch := kindedRows(rng, 400, series, times)
		m.apply(batch)
		mustApply(t, r, batch...)
	}
	all := m.rows()
	for _, e := range []model.TagExpr{
		{Op: model.TagEq, Key: "host", Value: "h07"},
		{Op: model.TagAnd, Args: []model.TagExpr{{Op: model.TagEq, Key: "host", Value: "h07"}, {Op: model.TagEq, Key: "region", Value: "r1"}}},
		{Op: model.TagMatch, Key: "host", Value: "h1[0-3]"},
		{Op: model.TagNeq, Key: "region", Value: ""},
	} {
		q := model.Query{From: minTime, To: maxTime, Measurement: "cpu", Tags: &e}
		got, _, err := r.Scan(q)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := naiveScan(all, q)
		if err := sameRows(got, want); err != nil {
			t.Fatalf("%+v: %v", e, err)
		}
		aq := q
		aq.Step, aq.GroupBy = 1e9, []string{"region"}
		gotA, err := r.Aggregate(aq)
		if err != nil {
			t.Fatal(err)
		}
		if wantA := naiveAggregate(all, aq); !sameAggs(gotA, wantA) {
			t.Fatalf("%+v: aggregate\n got %+v\nwant %+v", e, gotA, wantA)
		}
	}
}

func TestAggregateRefusesGroupAllWithGroupBy(t *testing.T) {
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	_, err := r.Aggregate(model.Query{From: minTime, To: maxTime, GroupAll: true, GroupBy: []string{"host"}})
	if !errors.Is(err, ErrInvalidQuery) {
		t.Fatalf("GroupAll with GroupBy: %v", err)
	}
	_, _, err = r.Scan(model.Query{From: minTime, To: maxTime, Tags: &model.TagExpr{Op: model.TagMatch, Key: "h", Value: "("}})
	if !errors.Is(err, ErrInvalidQuery) {
		t.Fatalf("bad regexp: %v", err)
	}
}

// TestIndexCheckAtOpen: with the marker present, Open leaves a damaged
// index alone unless Options.CheckIndex asks it to compare and repair.
func TestIndexCheckAtOpen(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{MemoryHead: memHeadTests, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	r := createTestReplica(t, s)
	p := r.info.Placement
	mustApply(t, r, row("cpu,host=a", 1, fl("v", 1, 1)), row("cpu,host=b", 2, fl("v", 1, 1)))
	lo, hi := r.ks.kindRange(kindSeriesIx, nil)
	if err := s.DB().DeleteRange(lo, hi, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	seriesAfterOpen := func(check bool) []string {
		s, err := Open(Options{MemoryHead: memHeadTests, Dir: dir, CheckIndex: check})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = s.Close() }()
		r, ok := s.Replica(p)
		if !ok {
			t.Fatal("replica gone")
		}
		got, err := r.SeriesKeys(model.Query{}, 0)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := seriesAfterOpen(false); len(got) != 0 {
		t.Fatalf("without CheckIndex the damaged index was rebuilt: %q", got)
	}
	if got := seriesAfterOpen(true); !slices.Equal(got, []string{"cpu,host=a", "cpu,host=b"}) {
		t.Fatalf("SeriesKeys after Open with CheckIndex: %q", got)
	}
}

// TestIndexFieldShapes writes rows whose fields share names but not
// kinds, or add a field, or whose measurement changes, in one batch and
// across batches (a batch's rows are applied in series order):
// Apply skips the field lookups of a row shaped like the last one it
// checked (indexBuilder.sameShape), and must still index every new kind
// and name.
func TestIndexFieldShapes(t *testing.T) {
	s := openTestStore(t, "")
	r := createTestReplica(t, s)
	v := model.Version{Wall: 1, Node: 1}
	row := func(series string, ts int64, fs ...model.Field) model.Row {
		for i := range fs {
			fs[i].Version = v
		}
		return model.Row{Series: series, Time: ts, Fields: fs}
	}
	f := func(name string, val model.Value) model.Field { return model.Field{Name: name, Value: val} }
	batches := [][]model.Row{
		{
			row("cpu,host=a", 1, f("x", model.Float(1))),
			row("cpu,host=b", 1, f("x", model.Float(2))),
			row("cpu,host=c", 1, f("x", model.Int(3))),
			row("cpu,host=0", 1, f("x", model.Float(4)), f("y", model.Bool(true))),
			row("cpu,host=d", 1, f("x", model.Float(4))),
			row("mem,host=a", 1, f("x", model.Float(5))),
			row("mem,host=b", 1, f("x", model.String("s"))),
		},
		{
			row("cpu,host=a", 2, f("x", model.Float(1))),
			row("cpu,host=b", 2, f("x", model.Bool(false))),
			row("cpu,host=c", 2, f("z", model.Float(3))),
		},
	}
	var all []model.Row
	for _, b := range batches {
		all = append(all, b...)
		mustApply(t, r, b...)
		mustCheckIndex(t, r)
	}
	got, err := r.FieldKeys("")
	if err != nil {
		t.Fatal(err)
	}
	if want := naiveFieldKeys(all, ""); !slices.Equal(got, want) {
		t.Fatalf("FieldKeys = %v, want %v", got, want)
	}
}
