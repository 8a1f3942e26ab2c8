package node

import (
	"cmp"
	"context"
	"slices"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tsdb/tsdb/cluster/membership"
	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/replica"
)

// What the node's remaining duties (the public API's backend, the master)
// and its tests reach of package replica, under their old names. The
// backend and the master move to their own packages (issue 15), which
// consume replica.Server through interfaces of their own; these shims go
// with them.

// ReplicaStatus is what partition discovery last answered for one local
// replica.
//
// Deprecated: alias until issue 15's node split lands; use replica.Status.
type ReplicaStatus = replica.Status

// Planner plans one METADATA change.
//
// Deprecated: alias until issue 15's node split lands; use replica.Planner.
type Planner = replica.Planner

// DefaultMaxClockOffset is Config.MaxClockOffset's default.
//
// Deprecated: alias until issue 15's node split lands.
const DefaultMaxClockOffset = replica.DefaultMaxClockOffset

// DefaultMaxSubQueryBytes is Config.MaxSubQueryBytes's default.
//
// Deprecated: alias until issue 15's node split lands.
const DefaultMaxSubQueryBytes = replica.DefaultMaxSubQueryBytes

// RequestChange commits one METADATA change (replica.Server.RequestChange).
func (n *Node) RequestChange(ctx context.Context, table string, plan Planner) (*metadata.File, error) {
	return n.replica.RequestChange(ctx, table, plan)
}

// ReplicaStatuses returns the last discovery answer of every local replica
// (replica.Server.Statuses).
func (n *Node) ReplicaStatuses() []ReplicaStatus { return n.replica.Statuses() }

// SplitPartition starts a split by hand (replica.Server.SplitPartition).
func (n *Node) SplitPartition(ctx context.Context, table string, pid uuid.UUID, at *int64) (*metadata.File, error) {
	return n.replica.SplitPartition(ctx, table, pid, at)
}

func (n *Node) install(cfg metadata.TableConfig, file *metadata.File) error {
	return n.replica.Install(cfg, file)
}

func (n *Node) replicasOn(ctx context.Context, server string, req wire.ReplicasRequest) (wire.ReplicasResponse, error) {
	return n.replica.ReplicasOn(ctx, server, req)
}

func (n *Node) checkClock() error { return n.replica.CheckClock() }

func (n *Node) syncedSeq(table string) uint64 { return n.replica.SyncedSeq(table) }

// directory is the membership directory under the node's old method names
// (the master's and the backend's code calls them).
type directory struct{ *membership.Directory }

func (d directory) addr(ctx context.Context, id string) (string, error) { return d.Addr(ctx, id) }
func (d directory) refresh(ctx context.Context) ([]membership.Info, error) {
	return d.Refresh(ctx)
}
func (d directory) live() []membership.Info { return d.Live() }

// splitMetrics counts the master's split transactions (the replicas'
// split counters are replica.Metrics).
type splitMetrics struct {
	aborted, presplits prometheus.Counter
}

func newSplitMetrics() *splitMetrics {
	c := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	return &splitMetrics{
		aborted:   c("tsdb_splits_aborted_total", "SPLIT_ABORT transactions this server committed as master (a child without a live majority)."),
		presplits: c("tsdb_presplits_total", "Pre-split SPLIT_BEGIN transactions this server committed as master."),
	}
}

func (m *splitMetrics) register(reg prometheus.Registerer) {
	reg.MustRegister(m.aborted, m.presplits)
}

// childIDs lists a split's children's ids (the master's SPLIT_ABORT).
func childIDs(s *metadata.Split) []uuid.UUID {
	ids := make([]uuid.UUID, 0, len(s.Children))
	for _, c := range s.Children {
		ids = append(ids, c.ID)
	}
	return ids
}

// pickServers chooses k servers among live for a new partition: the least
// loaded by partition count, ties broken at random so that tables created
// together spread out (CreateTable).
func pickServers(live []membership.Info, k int, rnd func(int) int) []membership.Info {
	c := slices.Clone(live)
	for i := len(c) - 1; i > 0; i-- { // shuffle, then a stable sort by load
		j := rnd(i + 1)
		c[i], c[j] = c[j], c[i]
	}
	slices.SortStableFunc(c, func(a, b membership.Info) int {
		return cmp.Compare(a.Summary.Partitions, b.Summary.Partitions)
	})
	return c[:min(k, len(c))]
}

// pickChildServers is replica.PickChildServers (the master's pre-split).
func pickChildServers(live []membership.Info, children, k int, rnd func(int) int) [][]membership.Info {
	return replica.PickChildServers(live, children, k, rnd)
}
