package node

import (
	"github.com/tsdb/tsdb/cluster/master"
	"github.com/tsdb/tsdb/cluster/operator"
	"github.com/tsdb/tsdb/frontend"
	"github.com/tsdb/tsdb/presplit"
	"github.com/tsdb/tsdb/replica"
)

// How node hands its parts to the consumers' interfaces (cluster/master,
// frontend): every part satisfies them as it is, no adapter.

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
		Changes:          n.replica,
		Servers:          n.dir,
		Replicas:         n.replica,
		Marks:            operator.Marks{Client: n.etcd, Prefix: cfg.EtcdPrefix},
		Tables:           n.meta,
		Cache:            n.router,
		Committer:        n.committer,
		RPC:              n.rpc,
		Lease:            n.reg,
		Metrics:          n.mmetrics,
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
		SmearDelay: n.cfg.knobs.smearDelay,
		Logger:     n.log,
		Presplit:   n.bornSplit(),
		Router:     n.router,
		Committer:  n.committer,
		Tables:     n.meta,
		Servers:    n.dir,
		Peers:      replica.Peers{Dir: n.dir, RPC: n.rpc},
		Changes:    n.replica,
		Replicas:   n.replica,
		Installer:  n.replica,
		ClockCheck: n.replica,
		Clock:      n.clock,
		Marks:      operator.Marks{Client: n.etcd, Prefix: n.cfg.EtcdPrefix},
		Health:     n.master,
		Queue:      queue,
	})
}

// bornSplit is the pre-split a new table is born with (frontend.Config's
// Presplit): the master's pre-split settings, nil when pre-split is off.
func (n *Node) bornSplit() *presplit.Config {
	if n.cfg.NoPresplit {
		return nil
	}
	c := n.cfg.Presplit
	return &c
}
