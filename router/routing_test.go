package router

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/model"
)

// swapMeta serves a file that a test can replace (a change committed
// elsewhere), counting the loads.
type swapMeta struct {
	mu    sync.Mutex
	file  *metadata.File
	loads int
}

func (m *swapMeta) Load(_ context.Context, table string) (metadata.TableConfig, *metadata.File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.loads++
	return metadata.TableConfig{Name: table}, m.file, nil
}

// scriptedReplicas answers per server: an error, or success (recording the
// rows it took).
type scriptedReplicas struct {
	mu     sync.Mutex
	errs   map[string]error
	took   map[string]int
	onCall func(server string)
}

func (s *scriptedReplicas) Insert(_ context.Context, t Target, rows []model.Row, _ model.InsertOptions) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.onCall != nil {
		s.onCall(t.Server)
	}
	if err := s.errs[t.Server]; err != nil {
		return err
	}
	s.took[t.Server] += len(rows)
	return nil
}

func (s *scriptedReplicas) Scan(_ context.Context, t Target, _ model.Query) ([]model.Row, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.errs[t.Server]; err != nil {
		return nil, false, err
	}
	return []model.Row{row(1, "from-"+t.Server, 1)}, false, nil
}

func (s *scriptedReplicas) Aggregate(context.Context, Target, model.Query) ([]model.SeriesAgg, error) {
	return nil, nil
}

func (s *scriptedReplicas) SeriesKeys(_ context.Context, t Target, _ model.Query, _ int) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.errs[t.Server]; err != nil {
		return nil, err
	}
	return []string{"from-" + t.Server}, nil
}

func (s *scriptedReplicas) FieldKeys(_ context.Context, t Target, _ model.Query) ([]model.FieldKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.errs[t.Server]; err != nil {
		return nil, err
	}
	return []model.FieldKey{{Measurement: "from-" + t.Server, Name: "v", Kind: model.KindFloat}}, nil
}

func onePartition(servers ...string) *metadata.File {
	p := metadata.Partition{ID: uuid.New()}
	for _, s := range servers {
		p.Servers = append(p.Servers, metadata.Placement{ServerID: s, PlacementID: uuid.New()})
	}
	return &metadata.File{Table: "t", TxnID: metadata.NewTxnID(), TxnSeq: 1, Partitions: []metadata.Partition{p}}
}

// TestInsertFailsOverToAnotherReplica: an unavailable replica is skipped,
// the next one takes the rows, and the front end's own replica goes first.
func TestInsertFailsOverToAnotherReplica(t *testing.T) {
	reps := &scriptedReplicas{errs: map[string]error{"s1": ErrUnavailable}, took: map[string]int{}}
	var order []string
	reps.onCall = func(s string) { order = append(order, s) }
	r := New(Config{Self: "s1", Meta: &swapMeta{file: onePartition("s2", "s1", "s3")}, Replicas: reps})
	if err := r.Insert(context.Background(), "t", []model.Row{row(1, "a", 1)}, model.InsertOptions{}); err != nil {
		t.Fatal(err)
	}
	if order[0] != "s1" || len(order) != 2 || reps.took[order[1]] != 1 {
		t.Fatalf("tried %v, took %v: want s1 first, then one other taking the row", order, reps.took)
	}
	// Every replica unavailable: a clear ErrUnavailable naming each.
	reps.errs = map[string]error{"s1": ErrUnavailable, "s2": ErrUnavailable, "s3": ErrUnavailable}
	err := r.Insert(context.Background(), "t", []model.Row{row(1, "a", 1)}, model.InsertOptions{})
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("all down: %v", err)
	}
	// Any other error is the answer: no second replica is tried.
	order = nil
	reps.errs = map[string]error{"s1": errors.New("bad rows")}
	if err := r.Insert(context.Background(), "t", []model.Row{row(1, "a", 1)}, model.InsertOptions{}); err == nil || len(order) != 1 {
		t.Fatalf("err %v after %v, want the first replica's answer", err, order)
	}
}

// TestInsertRefreshesOnMoved: a replica answering "moved" makes the router
// load the current METADATA and route again, invisibly to the caller.
func TestInsertRefreshesOnMoved(t *testing.T) {
	old := onePartition("s2")
	meta := &swapMeta{file: old}
	reps := &scriptedReplicas{errs: map[string]error{"s2": ErrMoved}, took: map[string]int{}}
	r := New(Config{Self: "s1", Meta: meta, Replicas: reps})
	if _, _, err := r.Table(context.Background(), "t"); err != nil {
		t.Fatal(err)
	}
	// The partition moved to s3 in a commit this front end has not seen.
	moved := onePartition("s3")
	moved.TxnSeq = 2
	meta.mu.Lock()
	meta.file = moved
	meta.mu.Unlock()
	if err := r.Insert(context.Background(), "t", []model.Row{row(1, "a", 1), row(2, "b", 1)}, model.InsertOptions{}); err != nil {
		t.Fatal(err)
	}
	if reps.took["s3"] != 2 || meta.loads != 2 {
		t.Fatalf("took %v after %d loads: want both rows on s3 after one refresh", reps.took, meta.loads)
	}
	// A replica that keeps answering "moved" ends with an error, not a
	// loop; the caller sees "unavailable", never "moved".
	reps.errs["s3"] = ErrMoved
	if err := r.Insert(context.Background(), "t", []model.Row{row(1, "a", 1)}, model.InsertOptions{}); !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrMoved) {
		t.Fatalf("always moved: %v, want unavailable", err)
	}
	if _, _, err := r.Query(context.Background(), "t", model.Query{From: 0, To: 10, Limit: 10}); !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrMoved) {
		t.Fatalf("query, always moved: %v, want unavailable", err)
	}
}

// TestQueryFailsOverAndRefreshes: reads fail over to another replica and
// reload METADATA on "moved".
func TestQueryFailsOverAndRefreshes(t *testing.T) {
	reps := &scriptedReplicas{errs: map[string]error{"s1": errors.New("disk on fire")}, took: map[string]int{}}
	r := New(Config{Self: "s1", Meta: &swapMeta{file: onePartition("s1", "s2")}, Replicas: reps})
	rows, _, err := r.Query(context.Background(), "t", model.Query{From: 0, To: 10, Limit: 10})
	if err != nil || len(rows) != 1 || rows[0].Series != "from-s2" {
		t.Fatalf("rows %v, err %v: want s2's answer", rows, err)
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
	rows, _, err = r.Query(context.Background(), "t", model.Query{From: 0, To: 10, Limit: 10})
	if err != nil || len(rows) != 1 || rows[0].Series != "from-s3" {
		t.Fatalf("rows %v, err %v: want s3's answer after the refresh", rows, err)
	}
}

// rangeReplicas records which server was asked for which range and
// answers one row named after the server; a server in moved answers
// "moved" once.
type rangeReplicas struct {
	scriptedReplicas
	calls []string
	moved map[string]bool
}

func (s *rangeReplicas) Scan(_ context.Context, t Target, q model.Query) ([]model.Row, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, fmt.Sprintf("%s[%d,%d)", t.Server, q.From, q.To))
	if s.moved[t.Server] {
		delete(s.moved, t.Server)
		return nil, false, ErrMoved
	}
	return []model.Row{row(q.From, "from-"+t.Server, 1)}, false, nil
}

func (s *rangeReplicas) Aggregate(_ context.Context, t Target, q model.Query) ([]model.SeriesAgg, error) {
	rows, _, err := s.Scan(context.Background(), t, model.Query{From: q.From, To: q.To})
	if err != nil {
		return nil, err
	}
	return []model.SeriesAgg{{Series: rows[0].Series}}, nil
}

// TestQueryResumesAfterMoved: a partition answering "moved" in the middle
// of a query (it split) makes the router reload the METADATA and read only
// the range not yet answered, from the children: the partition before it
// is not read again and no range is read twice.
func TestQueryResumesAfterMoved(t *testing.T) {
	bound := func(v int64) *int64 { return &v }
	part := func(begin, end *int64, server string) metadata.Partition {
		return metadata.Partition{ID: uuid.New(), Begin: begin, End: end,
			Servers: []metadata.Placement{{ServerID: server, PlacementID: uuid.New()}}}
	}
	a := part(nil, bound(100), "s1")
	before := &metadata.File{Table: "t", TxnID: metadata.NewTxnID(), TxnSeq: 1,
		Partitions: []metadata.Partition{a, part(bound(100), nil, "s2")}}
	after := &metadata.File{Table: "t", TxnID: metadata.NewTxnID(), TxnSeq: 2,
		Partitions: []metadata.Partition{a, part(bound(100), bound(200), "s3"), part(bound(200), nil, "s4")}}
	for _, agg := range []bool{false, true} {
		meta := &swapMeta{file: before}
		reps := &rangeReplicas{moved: map[string]bool{"s2": true}}
		r := New(Config{Self: "s9", Meta: meta, Replicas: reps})
		if _, _, err := r.Table(context.Background(), "t"); err != nil {
			t.Fatal(err)
		}
		meta.mu.Lock()
		meta.file = after
		meta.mu.Unlock()
		var got []string
		if agg {
			out, err := r.Aggregate(context.Background(), "t", model.Query{From: 50, To: 300})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range out {
				got = append(got, s.Series)
			}
		} else {
			rows, _, err := r.Query(context.Background(), "t", model.Query{From: 50, To: 300, Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rows {
				got = append(got, r.Series)
			}
		}
		wantCalls := []string{"s1[50,100)", "s2[100,300)", "s3[100,200)", "s4[200,300)"}
		if !slices.Equal(reps.calls, wantCalls) || !slices.Equal(got, []string{"from-s1", "from-s3", "from-s4"}) {
			t.Fatalf("agg=%v: calls %v, answer %v; want calls %v and one answer per range", agg, reps.calls, got, wantCalls)
		}
	}
}
