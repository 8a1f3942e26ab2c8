package node

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tsdb/tsdb/cluster/election"
	"github.com/tsdb/tsdb/cluster/master"
	"github.com/tsdb/tsdb/cluster/operator"
	"github.com/tsdb/tsdb/frontend"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/replica"
)

// How node hands its parts to the consumers' interfaces (cluster/master,
// frontend), with the few adapters that takes.

// etcdMarks reads and writes the operators' and servers' marks in etcd
// (cluster/operator) and the election's leader.
type etcdMarks struct {
	cli    *clientv3.Client
	prefix string
}

func (e etcdMarks) Leader(ctx context.Context) (string, error) {
	return election.Leader(ctx, e.cli, e.prefix)
}

func (e etcdMarks) Draining(ctx context.Context) (map[string]time.Time, error) {
	return operator.Draining(ctx, e.cli, e.prefix)
}

func (e etcdMarks) Lost(ctx context.Context) (map[uuid.UUID]operator.LostMark, error) {
	return operator.Lost(ctx, e.cli, e.prefix)
}

func (e etcdMarks) RebalanceRequest(ctx context.Context) (int64, error) {
	return operator.RebalanceRequest(ctx, e.cli, e.prefix)
}

func (e etcdMarks) SetDraining(ctx context.Context, server string, on bool, now time.Time) (time.Time, error) {
	return operator.SetDraining(ctx, e.cli, e.prefix, server, on, now)
}

func (e etcdMarks) RequestRebalance(ctx context.Context, now time.Time) error {
	return operator.RequestRebalance(ctx, e.cli, e.prefix, now)
}

// changes hands the replica machinery's METADATA changes to the master
// and the front end, whose planners are plain funcs (replica.Planner is a
// named type).
type changes struct{ *replica.Server }

func (c changes) RequestChange(ctx context.Context, table string, plan func(metadata.TableConfig, *metadata.File) (metadata.Op, error)) (*metadata.File, error) {
	return c.Server.RequestChange(ctx, table, plan)
}

// masterMetrics counts the master's split transactions (the replicas'
// split counters are replica.Metrics).
type masterMetrics struct {
	aborted, presplits prometheus.Counter
}

func newMasterMetrics() *masterMetrics {
	c := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	return &masterMetrics{
		aborted:   c("tsdb_splits_aborted_total", "SPLIT_ABORT transactions this server committed as master (a child without a live majority)."),
		presplits: c("tsdb_presplits_total", "Pre-split SPLIT_BEGIN transactions this server committed as master."),
	}
}

func (m *masterMetrics) register(reg prometheus.Registerer) {
	reg.MustRegister(m.aborted, m.presplits)
}

// newMaster builds the master duties of this server.
func (n *Node) newMaster() (*master.Master, error) {
	cfg := n.cfg
	return master.New(master.Config{
		Self:             cfg.ID,
		DeadAfter:        cfg.DeadAfter,
		Tick:             cfg.MasterTick,
		MinServers:       cfg.MinServers,
		RebalanceMoves:   cfg.RebalanceMoves,
		NoPresplit:       cfg.NoPresplit,
		NoRebalance:      cfg.NoRebalance,
		PresplitInterval: cfg.PresplitInterval,
		Presplit:         cfg.Presplit,
		PickChildServers: replica.PickChildServers,
		Logger:           n.log,
		Changes:          changes{n.replica},
		Servers:          n.dir,
		Replicas:         n.replica,
		Marks:            etcdMarks{n.etcd, cfg.EtcdPrefix},
		Tables:           n.meta,
		Cache:            n.router,
		Committer:        n.committer,
		RPC:              n.rpc,
		Lease:            n.reg,
		Metrics:          master.Metrics{SplitsAborted: n.mmetrics.aborted, Presplits: n.mmetrics.presplits},
	})
}

// newFrontend builds the public API's backend of this server.
func (n *Node) newFrontend() (*frontend.Frontend, error) {
	var queue frontend.Queue
	if n.smearQ != nil {
		queue = n.smearQ
	}
	return frontend.New(frontend.Config{
		Self:       n.cfg.ID,
		MinServers: n.cfg.MinServers,
		NoSmear:    n.cfg.NoSmear,
		SmearDelay: n.cfg.smearDelay,
		Logger:     n.log,
		Router:     n.router,
		Committer:  n.committer,
		Tables:     n.meta,
		Servers:    n.dir,
		Peers:      replica.Peers{Dir: n.dir, RPC: n.rpc},
		Changes:    changes{n.replica},
		Replicas:   n.replica,
		Installer:  n.replica,
		ClockCheck: n.replica,
		Clock:      n.clock,
		Marks:      etcdMarks{n.etcd, n.cfg.EtcdPrefix},
		Health:     n.master,
		Queue:      queue,
	})
}
