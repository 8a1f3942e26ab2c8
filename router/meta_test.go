package router

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/model"
)

// tagRow is a row of series key s at t with the given fields.
func tagRow(t int64, s string, fields ...model.Field) model.Row {
	return model.Row{Time: t, Series: s, Fields: fields}
}

// TestSeriesAndFieldKeysAcrossPartitions: the series keys and field keys
// of a table are the union over its partitions (each partition holding
// only some of them), deduplicated and sorted, filtered by Measurement,
// Tags and Series/Prefix, and cut at the limit after the merge.
func TestSeriesAndFieldKeysAcrossPartitions(t *testing.T) {
	file := threePartitions("s1")
	file.Partitions[2].Servers[0].ServerID = "s1"
	r, _ := newTestRouter(t, file)
	ctx := context.Background()
	f := func(name string, v model.Value) model.Field { return model.Field{Name: name, Value: v} }
	rows := []model.Row{
		tagRow(10, "cpu,host=a,region=eu", f("usage", model.Float(1))),
		tagRow(150, "cpu,host=a,region=eu", f("usage", model.Float(2))), // same series, another partition
		tagRow(160, "cpu,host=b,region=us", f("usage", model.Float(3)), f("idle", model.Int(4))),
		tagRow(250, "cpu,host=c", f("usage", model.Float(5))),
		tagRow(20, "mem,host=a", f("free", model.Int(6))),
		tagRow(260, "mem,host=b", f("free", model.Int(7)), f("ok", model.Bool(true))),
		tagRow(270, "disk", f("path", model.String("/"))),
	}
	if err := r.Insert(ctx, "t", rows, model.InsertOptions{}); err != nil {
		t.Fatal(err)
	}
	eq := func(k, v string) *model.TagExpr { return &model.TagExpr{Op: model.TagEq, Key: k, Value: v} }
	for _, tc := range []struct {
		name  string
		q     model.Query
		limit int
		want  []string
	}{
		{"all", model.Query{}, 0, []string{"cpu,host=a,region=eu", "cpu,host=b,region=us", "cpu,host=c", "disk", "mem,host=a", "mem,host=b"}},
		{"limit", model.Query{}, 4, []string{"cpu,host=a,region=eu", "cpu,host=b,region=us", "cpu,host=c", "disk"}},
		{"measurement", model.Query{Measurement: "mem"}, 0, []string{"mem,host=a", "mem,host=b"}},
		{"tag", model.Query{Tags: eq("host", "a")}, 0, []string{"cpu,host=a,region=eu", "mem,host=a"}},
		{"missing tag is empty", model.Query{Measurement: "cpu", Tags: eq("region", "")}, 0, []string{"cpu,host=c"}},
		{"or and regex", model.Query{Measurement: "cpu", Tags: &model.TagExpr{Op: model.TagOr, Args: []model.TagExpr{
			*eq("region", "us"), {Op: model.TagMatch, Key: "host", Value: "^[ac]$"}}}}, 0,
			[]string{"cpu,host=a,region=eu", "cpu,host=b,region=us", "cpu,host=c"}},
		{"prefix", model.Query{Series: "mem", Prefix: true}, 1, []string{"mem,host=a"}},
		{"time range ignored", model.Query{From: 0, To: 1, Measurement: "disk"}, 0, []string{"disk"}},
	} {
		got, err := r.SeriesKeys(ctx, "t", tc.q, tc.limit)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
	if _, err := r.SeriesKeys(ctx, "t", model.Query{Tags: &model.TagExpr{Op: model.TagMatch, Key: "h", Value: "("}}, 0); !errors.Is(err, model.ErrInvalidTagExpr) {
		t.Errorf("a bad regular expression: %v, want ErrInvalidTagExpr", err)
	}
	if _, err := r.SeriesKeys(ctx, "nope", model.Query{}, 0); !errors.Is(err, metadata.ErrTableNotFound) {
		t.Errorf("unknown table: %v", err)
	}

	fk := func(m, n string, k model.Kind) model.FieldKey {
		return model.FieldKey{Measurement: m, Name: n, Kind: k}
	}
	got, err := r.FieldKeys(ctx, "t", "", "")
	want := []model.FieldKey{fk("cpu", "idle", model.KindInt), fk("cpu", "usage", model.KindFloat),
		fk("disk", "path", model.KindString), fk("mem", "free", model.KindInt), fk("mem", "ok", model.KindBool)}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("field keys %v, %v; want %v", got, err, want)
	}
	got, err = r.FieldKeys(ctx, "t", "mem", "")
	if err != nil || !slices.Equal(got, want[3:]) {
		t.Errorf("field keys of mem %v, %v; want %v", got, err, want[3:])
	}
}

// TestMetaFailsOverAndRefreshes: metadata sub-queries fail over to another
// replica and reload METADATA on "moved", as raw queries do.
func TestMetaFailsOverAndRefreshes(t *testing.T) {
	reps := &scriptedReplicas{errs: map[string]error{"s1": errors.New("disk on fire")}, took: map[string]int{}}
	r := New(Config{Self: "s1", Meta: &swapMeta{file: onePartition("s1", "s2")}, Replicas: reps})
	keys, err := r.SeriesKeys(context.Background(), "t", model.Query{}, 0)
	if err != nil || !slices.Equal(keys, []string{"from-s2"}) {
		t.Fatalf("keys %v, err %v: want s2's answer", keys, err)
	}
	meta := &swapMeta{file: onePartition("s2")}
	reps = &scriptedReplicas{errs: map[string]error{"s2": ErrMoved}, took: map[string]int{}}
	r = New(Config{Self: "s1", Meta: meta, Replicas: reps})
	r.Table(context.Background(), "t")
	next := onePartition("s3")
	next.TxnSeq = 2
	meta.mu.Lock()
	meta.file = next
	meta.mu.Unlock()
	fks, err := r.FieldKeys(context.Background(), "t", "", "")
	if err != nil || len(fks) != 1 || fks[0].Measurement != "from-s3" {
		t.Fatalf("field keys %v, err %v: want s3's answer after the refresh", fks, err)
	}
	// All replicas down: unavailable.
	reps.errs["s3"] = ErrUnavailable
	if _, err := r.SeriesKeys(context.Background(), "t", model.Query{}, 0); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("all down: %v, want unavailable", err)
	}
}

// TestMergeSorted: union of sorted lists without duplicates, cut at the limit.
func TestMergeSorted(t *testing.T) {
	for _, tc := range []struct {
		a, b  []string
		limit int
		want  []string
	}{
		{nil, nil, 0, []string{}},
		{[]string{"a", "c"}, nil, 0, []string{"a", "c"}},
		{nil, []string{"b"}, 0, []string{"b"}},
		{[]string{"a", "c", "e"}, []string{"b", "c", "d", "f"}, 0, []string{"a", "b", "c", "d", "e", "f"}},
		{[]string{"a", "c", "e"}, []string{"b", "c", "d", "f"}, 4, []string{"a", "b", "c", "d"}},
		{[]string{"a", "a", "b"}, []string{"a", "b", "b"}, 0, []string{"a", "b"}},
	} {
		if got := MergeSorted(tc.a, tc.b, tc.limit); !slices.Equal(got, tc.want) {
			t.Errorf("MergeSorted(%q, %q, %d) = %q, want %q", tc.a, tc.b, tc.limit, got, tc.want)
		}
	}
}

// groupReplicas answers each partition's aggregate with the partial
// states a replica computes under GroupBy: one result series per group,
// named by the group's key, whatever series of the group the partition
// holds. It records the queries it was sent.
type groupReplicas struct {
	scriptedReplicas
	byBegin map[int64][]model.SeriesAgg
	queries []model.Query
}

func (g *groupReplicas) Aggregate(_ context.Context, t Target, q model.Query) ([]model.SeriesAgg, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.queries = append(g.queries, q)
	begin := int64(math.MinInt64)
	if t.Partition.Begin != nil {
		begin = *t.Partition.Begin
	}
	return g.byBegin[begin], nil
}

// TestAggregateGroupByMergesPartitions: with GroupBy, the results of the
// same group from different partitions (same group series name, same
// bucket) merge into one; every partition is sent the query's GroupBy,
// Offset, Measurement and Tags.
func TestAggregateGroupByMergesPartitions(t *testing.T) {
	file := threePartitions("s1")
	st := func(vs ...float64) model.AggState {
		var s model.AggState
		for i, v := range vs {
			s.Add(int64(i), "x", model.Float(v))
		}
		return s
	}
	agg := func(series string, start int64, vs ...float64) model.SeriesAgg {
		return model.SeriesAgg{Series: series, Buckets: []model.BucketAgg{{Start: start,
			Fields: []model.FieldAgg{{Name: "usage", State: st(vs...)}}}}}
	}
	reps := &groupReplicas{byBegin: map[int64][]model.SeriesAgg{
		math.MinInt64: {agg("cpu,region=eu", 90, 1, 2), agg("cpu,region=us", 90, 10)},
		100:           {agg("cpu,region=eu", 90, 3), agg("cpu,region=eu", 120, 4)},
		200:           {agg("cpu", 180, 7), agg("cpu,region=us", 180, 20)},
	}, scriptedReplicas: scriptedReplicas{took: map[string]int{}}}
	r := New(Config{Self: "s1", Meta: fixedMeta{file}, Replicas: reps})
	q := model.Query{From: 0, To: 300, Step: 30, Offset: 0, GroupBy: []string{"region"}, Measurement: "cpu",
		Tags: &model.TagExpr{Op: model.TagNeq, Key: "host", Value: "z"}}
	out, err := r.Aggregate(context.Background(), "t", q)
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		series string
		start  int64
	}
	got := map[key]float64{}
	var names []string
	for _, s := range out {
		names = append(names, s.Series)
		for _, b := range s.Buckets {
			v, _ := b.Fields[0].State.Result(model.AggSum)
			got[key{s.Series, b.Start}] = v
		}
	}
	want := map[key]float64{{"cpu", 180}: 7, {"cpu,region=eu", 90}: 6, {"cpu,region=eu", 120}: 4,
		{"cpu,region=us", 90}: 10, {"cpu,region=us", 180}: 20}
	if !reflect.DeepEqual(got, want) || !slices.Equal(names, []string{"cpu", "cpu,region=eu", "cpu,region=us"}) {
		t.Fatalf("merged %v (series %q), want %v", got, names, want)
	}
	if len(reps.queries) != 3 {
		t.Fatalf("%d sub-queries, want 3", len(reps.queries))
	}
	for _, sq := range reps.queries {
		if !slices.Equal(sq.GroupBy, q.GroupBy) || sq.Measurement != q.Measurement || !reflect.DeepEqual(sq.Tags, q.Tags) || sq.Step != q.Step {
			t.Fatalf("sub-query %+v lost fields of %+v", sq, q)
		}
	}
}

// TestQueryJSONRoundTrip: a sub-query's form on the wire (model.Query's
// JSON) keeps the selection and grouping fields.
func TestQueryJSONRoundTrip(t *testing.T) {
	q := model.Query{From: -5, To: 99, Series: "cpu", Prefix: true, Measurement: "cpu mem", Fields: []string{"usage"},
		Tags: &model.TagExpr{Op: model.TagAnd, Args: []model.TagExpr{
			{Op: model.TagEq, Key: "host", Value: "a"},
			{Op: model.TagOr, Args: []model.TagExpr{{Op: model.TagMatch, Key: "dc", Value: "^e"}, {Op: model.TagNotMatch, Key: "dc", Value: "x"}}},
		}},
		Limit: 7, Step: 30, Origin: -5, Offset: 12, GroupBy: []string{"host", "dc"}, MaxBuckets: 9, Consistency: "quorum"}
	b, err := json.Marshal(q)
	if err != nil {
		t.Fatal(err)
	}
	var back model.Query
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, q) {
		t.Fatalf("round trip of %s:\n got %+v\nwant %+v", b, back, q)
	}
}
