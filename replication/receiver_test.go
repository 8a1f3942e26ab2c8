package replication

import (
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/partition"
)

// countingApplier records ApplyPush calls and fails with err.
type countingApplier struct {
	calls     int
	origin    uuid.UUID
	originSeq uint64
	rows      []model.Row
	own       []bool
	err       error
}

func (a *countingApplier) ApplyPush(rows []model.Row, p partition.Push) (partition.ApplyResult, error) {
	a.calls++
	a.origin, a.originSeq = p.Origin, p.OriginSeq
	a.rows = append(a.rows, rows...)
	a.own = append(a.own, p.Own...)
	return partition.ApplyResult{Changed: len(rows)}, a.err
}

func TestReceive(t *testing.T) {
	rows := []model.Row{row("s1", "cpu", 1, 1, "v", 1), row("s2", "cpu", 2, 1, "v", 2)}
	enc := AppendRows(nil, rows)
	errApply := errors.New("disk full")
	from := uuid.New()
	tests := []struct {
		name      string
		req       wire.PushRequest
		applyErr  error
		wantN     int
		wantCalls int
		wantErr   error
	}{
		{"rows", wire.PushRequest{Rows: enc, Count: 2, FromPlacement: from}, nil, 2, 1, nil},
		{"empty complete signal", wire.PushRequest{Count: 0, Complete: true}, nil, 0, 0, nil},
		{"encoded zero rows", wire.PushRequest{Rows: AppendRows(nil, nil)}, nil, 0, 0, nil},
		{"count too high", wire.PushRequest{Rows: enc, Count: 3}, nil, 0, 0, ErrCorrupt},
		{"count without rows", wire.PushRequest{Count: 1}, nil, 0, 0, ErrCorrupt},
		{"garbage", wire.PushRequest{Rows: []byte("{json?}"), Count: 1}, nil, 0, 0, ErrCorrupt},
		{"truncated", wire.PushRequest{Rows: enc[:len(enc)-1], Count: 2}, nil, 0, 0, ErrCorrupt},
		{"apply fails", wire.PushRequest{Rows: enc, Count: 2}, errApply, 0, 1, errApply},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &countingApplier{err: tt.applyErr}
			n, err := Receive(a, tt.req)
			if n != tt.wantN || a.calls != tt.wantCalls || !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("Receive = %d, %v with %d Apply calls; want %d, %v, %d", n, err, a.calls, tt.wantN, tt.wantErr, tt.wantCalls)
			}
			if a.calls > 0 && a.origin != tt.req.FromPlacement {
				t.Fatalf("applied with origin %s, want the sender's placement %s", a.origin, tt.req.FromPlacement)
			}
		})
	}
}

func TestReceiveIntoReplica(t *testing.T) {
	dst := newReplica(t, uuid.New())
	rows := []model.Row{row("s1", "cpu", 1, 5, "v", 1), row("s1", "mem", 1, 5, "v", 2)}
	req := wire.PushRequest{Rows: AppendRows(nil, rows), Count: len(rows), FromPlacement: uuid.New()}
	for range 2 { // a replayed push is harmless
		if n, err := Receive(dst, req); n != 2 || err != nil {
			t.Fatalf("Receive = %d, %v", n, err)
		}
	}
	entries, err := dst.ReadLog(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Origin != req.FromPlacement {
			t.Fatalf("row %s logged with origin %s, want the sender's placement %s", e.Row.Series, e.Origin, req.FromPlacement)
		}
	}
	if err := sameRows(scanAll(t, dst), rows); err != nil {
		t.Fatal(err)
	}
	if dst.SyncedSeq() != 2 {
		t.Fatalf("synced seq %d after a replay; want 2 (ties store nothing)", dst.SyncedSeq())
	}
	// A row the store refuses (zero version) fails the whole push.
	bad := []model.Row{row("s1", "cpu", 9, 0, "v", 1)}
	bad[0].Fields[0].Version = model.Version{}
	_, err = Receive(dst, wire.PushRequest{Rows: AppendRows(nil, bad), Count: 1})
	if !errors.Is(err, partition.ErrInvalidRow) {
		t.Fatalf("Receive of a zero-version row: %v, want partition.ErrInvalidRow", err)
	}
}

func TestJoinProgress(t *testing.T) {
	var j JoinProgress
	a, b := uuid.New(), uuid.New()
	if got := j.Complete(a); len(got) != 0 {
		t.Fatalf("zero value: Complete = %v", got)
	}
	j.Record(a, "s3", false)
	j.Record(a, "s2", true)
	j.Record(a, "s1", true)
	j.Record(a, "s1", true)
	j.Record(b, "s1", true)
	j.Record(a, "s2", false) // a restarted sender before its new mark: still complete
	if got := j.Complete(a); !slices.Equal(got, []string{"s1", "s2"}) {
		t.Fatalf("Complete(a) = %v, want [s1 s2]", got)
	}
	j.Forget(a)
	if got := j.Complete(a); len(got) != 0 {
		t.Fatalf("after Forget: %v", got)
	}
	if got := j.Complete(b); !slices.Equal(got, []string{"s1"}) {
		t.Fatalf("Forget(a) changed b: %v", got)
	}

	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			j.Record(a, string(rune('a'+i)), true)
			_ = j.Complete(a)
		})
	}
	wg.Wait()
	if got := j.Complete(a); len(got) != 8 {
		t.Fatalf("after concurrent records: %v", got)
	}
}

// TestReceiveTombstones: a push carries tombstones (model.KindDeleted)
// from one replica's log to another, where they hide the older values the
// target holds, and a value older than a tombstone pushed later stays
// hidden: both replicas end with the same rows and checksum.
func TestReceiveTombstones(t *testing.T) {
	s := openStore(t)
	pid := uuid.New()
	src, dst := addReplica(t, s, pid), addReplica(t, s, pid)
	old := []model.Row{row("s1", "cpu", 1, 5, "v", 1), row("s1", "cpu", 2, 5, "v", 2), row("s1", "mem", 1, 5, "v", 3)}
	mustApply(t, src, old...)
	mustApply(t, dst, old[0], old[2]) // dst misses cpu@2: it arrives late
	del := func(series string, ts int64) model.Row {
		return model.Row{Time: ts, Series: series, Fields: []model.Field{
			{Name: "v", Value: model.Deleted(), Version: model.Version{Wall: 6, Node: model.NodeID("s2")}}}}
	}
	mustApply(t, src, del("cpu", 1), del("cpu", 2))
	entries, err := src.ReadLog(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var rows []model.Row
	for _, e := range entries {
		rows = append(rows, e.Row)
	}
	if _, err := Receive(dst, wire.PushRequest{Rows: AppendRows(nil, rows), Count: len(rows), FromPlacement: src.placement()}); err != nil {
		t.Fatalf("Receive of tombstones: %v", err)
	}
	mustApply(t, dst, old[1]) // the older value arriving after the tombstone
	want := []model.Row{old[2]}
	for name, r := range map[string]*replicaLog{"source": src, "target": dst} {
		if err := sameRows(scanAll(t, r), want); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	cs, err1 := src.Checksum()
	cd, err2 := dst.Checksum()
	if err1 != nil || err2 != nil || cs != cd {
		t.Errorf("checksums %v (%v) and %v (%v) differ", cs, err1, cd, err2)
	}
}
