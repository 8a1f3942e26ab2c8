package master

import (
	"context"
	"errors"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tsdb/tsdb/cluster/membership"
	"github.com/tsdb/tsdb/cluster/operator"
	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/metadata"
)

// fakeCluster is every dependency of the master in memory: one table whose
// METADATA the planned changes are recorded against (not applied).
type fakeCluster struct {
	live []membership.Info
	cfg  metadata.TableConfig
	file *metadata.File
	ops  []metadata.Op
	// draining and rebalanceRev are the operator's marks; afterDraining,
	// when set, runs once after a read of the drain marks (an operator
	// acting in the middle of a master's pass).
	draining      map[string]time.Time
	rebalanceRev  int64
	afterDraining func()

	// replicas are what ReplicasOn answers per server (a missing server
	// fails); sizeReqs records the requests. The master asks servers
	// concurrently, hence mu.
	mu       sync.Mutex
	replicas map[string][]wire.ReplicaStatus
	sizeReqs []wire.ReplicasRequest
}

func (f *fakeCluster) RequestChange(_ context.Context, _ string, plan Planner) (*metadata.File, error) {
	op, err := plan(f.cfg, f.file)
	if err != nil {
		return nil, err
	}
	f.ops = append(f.ops, op)
	return f.file, nil
}

func (f *fakeCluster) Refresh(context.Context) ([]membership.Info, error) { return f.live, nil }
func (f *fakeCluster) Addr(_ context.Context, id string) (string, error)  { return id, nil }
func (f *fakeCluster) ReplicasOn(_ context.Context, server string, req wire.ReplicasRequest) (wire.ReplicasResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sizeReqs = append(f.sizeReqs, req)
	if f.replicas == nil {
		return wire.ReplicasResponse{}, nil
	}
	reps, ok := f.replicas[server]
	if !ok {
		return wire.ReplicasResponse{}, errors.New("server unavailable")
	}
	return wire.ReplicasResponse{Server: server, Replicas: reps}, nil
}
func (f *fakeCluster) Leader(context.Context) (string, error) { return "a", nil }
func (f *fakeCluster) Draining(context.Context) (map[string]time.Time, error) {
	marks := maps.Clone(f.draining)
	if marks == nil {
		marks = map[string]time.Time{}
	}
	if act := f.afterDraining; act != nil {
		f.afterDraining = nil
		act()
	}
	return marks, nil
}
func (f *fakeCluster) Lost(context.Context) (map[uuid.UUID]operator.LostMark, error) {
	return map[uuid.UUID]operator.LostMark{}, nil
}
func (f *fakeCluster) RebalanceRequest(context.Context) (int64, error) { return f.rebalanceRev, nil }
func (f *fakeCluster) ListTables(context.Context) ([]metadata.TableConfig, error) {
	return []metadata.TableConfig{f.cfg}, nil
}
func (f *fakeCluster) Table(context.Context, string) (metadata.TableConfig, *metadata.File, error) {
	return f.cfg, f.file, nil
}
func (f *fakeCluster) Load(context.Context, string) (metadata.TableConfig, *metadata.File, error) {
	return f.cfg, f.file, nil
}
func (f *fakeCluster) JoinMetadataServer(context.Context, string) (metadata.TableConfig, error) {
	return f.cfg, nil
}
func (f *fakeCluster) RemoveMetadataServer(context.Context, string, string) (metadata.TableConfig, error) {
	return f.cfg, nil
}
func (f *fakeCluster) Call(context.Context, string, string, any, any) error { return nil }
func (f *fakeCluster) Valid() bool                                          { return true }

func newFake(t *testing.T, live []string, servers ...string) (*Master, *fakeCluster) {
	f := &fakeCluster{cfg: metadata.TableConfig{Name: "t", ReplicationFactor: len(servers), MetadataServers: live[:1]}}
	for _, id := range live {
		f.live = append(f.live, membership.Info{ID: id})
	}
	f.file = &metadata.File{Table: "t", TxnID: strings.Repeat("a", 40), TxnSeq: 1,
		Partitions: []metadata.Partition{{ID: uuid.New(), Servers: placements(servers...)}}}
	m, err := New(Config{Self: "a", DeadAfter: time.Minute, Tick: time.Second, MinServers: 1, RebalanceMoves: 2,
		NoPresplit: true, NoRebalance: true,
		PickChildServers: func([]membership.Info, int, int, func(int) int) [][]membership.Info { return nil },
		Changes:          f, Servers: f, Replicas: f, Marks: f, Tables: f, Cache: f, Committer: f, RPC: f, Lease: f,
		Metrics: Metrics{SplitsAborted: prometheus.NewCounter(prometheus.CounterOpts{Name: "a"}),
			Presplits: prometheus.NewCounter(prometheus.CounterOpts{Name: "p"})}})
	if err != nil {
		t.Fatal(err)
	}
	return m, f
}

// TestDeadServerReplaced: a server listed in a partition but absent is
// given DeadAfter (from when this term first saw it absent); after that a
// live server not in the partition joins, and once the partition is back
// at its factor the dead one is removed as dead.
func TestDeadServerReplaced(t *testing.T) {
	m, f := newFake(t, []string{"a", "b", "d"}, "a", "b", "c")
	st := &masterState{absent: map[string]time.Time{}, noMajority: map[uuid.UUID]time.Time{}}
	t0 := time.Unix(1000, 0)
	for _, now := range []time.Time{t0, t0.Add(time.Minute - time.Second)} {
		if err := m.tick(context.Background(), st, now); err != nil {
			t.Fatal(err)
		}
		if len(f.ops) != 0 {
			t.Fatalf("within the grace period: %+v", f.ops)
		}
	}
	if err := m.tick(context.Background(), st, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if len(f.ops) != 1 || f.ops[0].Type != metadata.OpJoinServer || f.ops[0].JoinServer.Placement.ServerID != "d" {
		t.Fatalf("after the grace period: %+v, want JOIN_SERVER of d", f.ops)
	}
	// d finalized its join: c is removed, as dead.
	p := &f.file.Partitions[0]
	p.Servers = append(p.Servers, f.ops[0].JoinServer.Placement)
	f.ops = nil
	if err := m.tick(context.Background(), st, t0.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if len(f.ops) != 1 || f.ops[0].Type != metadata.OpRemoveServer || f.ops[0].RemoveServer.ServerID != "c" || !f.ops[0].RemoveServer.Dead {
		t.Fatalf("with d joined: %+v, want REMOVE_SERVER of c as dead", f.ops)
	}
}

// TestBelowMinServers: nothing is assigned while fewer than MinServers are
// live.
func TestBelowMinServers(t *testing.T) {
	m, f := newFake(t, []string{"a", "b"}, "a", "b", "c")
	m.cfg.MinServers = 3
	st := &masterState{absent: map[string]time.Time{"c": time.Unix(0, 0)}, noMajority: map[uuid.UUID]time.Time{}}
	if err := m.tick(context.Background(), st, time.Unix(1000, 0)); err != nil || len(f.ops) != 0 {
		t.Fatalf("ops %+v, err %v; want none", f.ops, err)
	}
}

// TestRebalanceRequestSeesTheUndrain: an operator who undrains a server
// and then asks for a rebalance while a master pass is reading the cluster
// gets a rebalance that uses the undrained server. The request is read
// before the view, so a request the pass sees is weighed against a view at
// least as new; read after it, the request was used up on a view in which
// the server still drained, and nothing moved to it (node's
// TestDrainOfflineAndStale timed out that way).
func TestRebalanceRequestSeesTheUndrain(t *testing.T) {
	m, f := newFake(t, []string{"a", "b", "c", "d"}, "a", "b", "c")
	m.cfg.NoRebalance = false
	for range 3 {
		f.file.Partitions = append(f.file.Partitions, metadata.Partition{ID: uuid.New(), Servers: placements("a", "b", "c")})
	}
	f.draining = map[string]time.Time{"d": time.Unix(900, 0)}
	f.afterDraining = func() { f.draining, f.rebalanceRev = nil, 7 }
	st := &masterState{absent: map[string]time.Time{}, noMajority: map[uuid.UUID]time.Time{}, lastLive: map[string]bool{"a": true, "b": true, "c": true, "d": true}}
	for i, now := range []time.Time{time.Unix(1000, 0), time.Unix(1001, 0)} {
		if err := m.tick(context.Background(), st, now); err != nil {
			t.Fatalf("pass %d: %v", i, err)
		}
	}
	joins := 0
	for _, op := range f.ops {
		if op.Type == metadata.OpJoinServer && op.JoinServer.Placement.ServerID == "d" {
			joins++
		}
	}
	if joins == 0 {
		t.Fatalf("no partition moved to the undrained server d after the rebalance request: ops %+v", f.ops)
	}
}
