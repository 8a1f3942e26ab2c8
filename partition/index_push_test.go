package partition_test

import (
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/partition"
	"github.com/tsdb/tsdb/replication"
)

// push sends the rows of src's log with time in [from, to) to dst through
// replication.Receive, as a push (to) or a split backfill (from, to) does.
func push(t *testing.T, src, dst *partition.Replica, from, to int64) {
	t.Helper()
	entries, err := src.ReadLog(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var rows []model.Row
	for _, e := range entries {
		if e.Row.Time >= from && e.Row.Time < to {
			rows = append(rows, e.Row)
		}
	}
	req := wire.PushRequest{Table: "metrics", FromServer: "s1", FromPlacement: src.Info().Placement,
		ToPlacement: dst.Info().Placement, Rows: replication.AppendRows(nil, rows), Count: len(rows)}
	if _, err := replication.Receive(dst, req); err != nil {
		t.Fatal(err)
	}
}

// TestIndexFollowsPushes checks that a replica filled only by pushes (a
// peer) and one filled by a split backfill (a time range of the rows) hold
// the index their rows need.
func TestIndexFollowsPushes(t *testing.T) {
	s, err := partition.Open(partition.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mk := func() *partition.Replica {
		r, err := s.CreateReplica(partition.ReplicaInfo{Placement: uuid.New(), Table: "metrics", PartitionID: uuid.New()})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	src, peer, child := mk(), mk(), mk()
	v := model.Version{Wall: 1, Node: 1}
	var rows []model.Row
	for i, series := range []string{"cpu,host=a", "cpu,host=b,region=eu", "mem", "disk,path=/x"} {
		rows = append(rows,
			model.Row{Series: series, Time: int64(i), Fields: []model.Field{{Name: "v", Value: model.Float(1), Version: v}}},
			model.Row{Series: series, Time: 100 + int64(i), Fields: []model.Field{{Name: "n", Value: model.Int(1), Version: v}}})
	}
	rows = append(rows, model.Row{Series: "late,host=z", Time: 200, Fields: []model.Field{{Name: "s", Value: model.String("x"), Version: v}}})
	if _, err := src.Apply(rows); err != nil {
		t.Fatal(err)
	}
	push(t, src, peer, -1<<63, 1<<63-1)
	push(t, src, child, 100, 1<<63-1)
	for name, r := range map[string]*partition.Replica{"peer": peer, "child": child} {
		rep, err := r.CheckIndex(false)
		if err != nil || !rep.OK() {
			t.Fatalf("%s: %+v, %v", name, rep, err)
		}
	}
	got, err := child.SeriesKeys(model.Query{Measurement: "cpu"}, 0)
	if err != nil || !slices.Equal(got, []string{"cpu,host=a", "cpu,host=b,region=eu"}) {
		t.Fatalf("child SeriesKeys(cpu) = %q, %v", got, err)
	}
	fk, err := child.FieldKeys("cpu")
	if err != nil || !slices.Equal(fk, []model.FieldKey{{Measurement: "cpu", Name: "n", Kind: model.KindInt}}) {
		t.Fatalf("child FieldKeys(cpu) = %v, %v (the backfill holds only the n rows)", fk, err)
	}
	want, _ := src.SeriesKeys(model.Query{}, 0)
	if got, _ := peer.SeriesKeys(model.Query{}, 0); !slices.Equal(got, want) {
		t.Fatalf("peer SeriesKeys = %q, want %q", got, want)
	}
}
