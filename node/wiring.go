package node

import (
	"context"
	"time"

	"github.com/google/uuid"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tsdb/tsdb/cluster/election"
	"github.com/tsdb/tsdb/cluster/master"
	"github.com/tsdb/tsdb/cluster/membership"
	"github.com/tsdb/tsdb/cluster/operator"
	"github.com/tsdb/tsdb/frontend"
	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/metadata"
)

// The adapters through which node hands its parts to the consumers'
// interfaces (cluster/master, frontend).

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

// replicaOps exposes the node's replica machinery to the master and the
// front end.
//
// Deprecated: adapter until issue 15's replica package exports these.
type replicaOps struct{ n *Node }

func (r replicaOps) RequestChange(ctx context.Context, table string, plan func(metadata.TableConfig, *metadata.File) (metadata.Op, error)) (*metadata.File, error) {
	return r.n.RequestChange(ctx, table, plan)
}

func (r replicaOps) ReplicasOn(ctx context.Context, server string, req api.ReplicasRequest) (api.ReplicasResponse, error) {
	return r.n.replicasOn(ctx, server, req)
}

func (r replicaOps) SplitPartition(ctx context.Context, table string, pid uuid.UUID, at *int64) (*metadata.File, error) {
	return r.n.SplitPartition(ctx, table, pid, at)
}

func (r replicaOps) Install(cfg metadata.TableConfig, file *metadata.File) error {
	return r.n.install(cfg, file)
}

func (r replicaOps) CheckClock() error { return r.n.checkClock() }

func (r replicaOps) FetchFile(ctx context.Context, server, table, txnID string) ([]byte, error) {
	return peers{dir: r.n.dir, rpc: r.n.rpc}.FetchFile(ctx, server, table, txnID)
}

// liveServers exposes the live-server directory.
//
// Deprecated: adapter until issue 15's membership.Directory lands.
type liveServers struct{ d *directory }

func (s liveServers) Refresh(ctx context.Context) ([]membership.Info, error) { return s.d.refresh(ctx) }
func (s liveServers) Addr(ctx context.Context, id string) (string, error)    { return s.d.addr(ctx, id) }
func (s liveServers) Live() []membership.Info                                { return s.d.live() }

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
		PickChildServers: pickChildServers,
		Logger:           n.log,
		Changes:          replicaOps{n},
		Servers:          liveServers{n.dir},
		Replicas:         replicaOps{n},
		Marks:            etcdMarks{n.etcd, cfg.EtcdPrefix},
		Tables:           n.meta,
		Cache:            n.router,
		Committer:        n.committer,
		RPC:              n.rpc,
		Lease:            n.reg,
		Metrics:          master.Metrics{SplitsAborted: n.smetrics.aborted, Presplits: n.smetrics.presplits},
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
		Servers:    liveServers{n.dir},
		Peers:      replicaOps{n},
		Changes:    replicaOps{n},
		Replicas:   replicaOps{n},
		Installer:  replicaOps{n},
		ClockCheck: replicaOps{n},
		Clock:      n.clock,
		Marks:      etcdMarks{n.etcd, n.cfg.EtcdPrefix},
		Health:     n.master,
		Queue:      queue,
	})
}
