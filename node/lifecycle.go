package node

import (
	"context"
	"errors"
	"slices"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/partition"
	"github.com/tsdb/tsdb/replication"
)

// replicaRuntime is the replication machinery of one local replica: its
// pusher and the goroutine running it.
type replicaRuntime struct {
	pusher *replication.Pusher
	cancel context.CancelFunc
	done   chan struct{}
}

// runtime returns the replication runtime of a local replica, nil if none.
func (n *Node) runtime(placement uuid.UUID) *replicaRuntime {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.mu.runtimes[placement]
}

// applyDiscovery acts on a replica's discovery answer (DESIGN.md section 5):
// SERVE pushes to its targets; LOAD receives and pushes nothing; UNLOAD
// refuses writes and pushes from now on, pushes what its targets lack, and
// is dropped by the lifecycle tick once they all confirmed (rule 3).
func (n *Node) applyDiscovery(rep *partition.Replica, st ReplicaStatus) {
	rt := n.ensureRuntime(rep)
	switch st.Discovery.Status {
	case metadata.StatusUnload:
		rep.Unload()
		rt.pusher.SetView(st.TxnSeq, st.Discovery)
	case metadata.StatusServe:
		if rep.Unloading() {
			rep.Resume()
		}
		rt.pusher.SetView(st.TxnSeq, st.Discovery)
	case metadata.StatusLoad:
		// A LOAD replica only receives: every row it holds came from
		// replicas that push it to the others themselves. It must accept
		// pushes, even after an UNLOAD from an older METADATA (a replica
		// created by a newer file's install, discovered first by a
		// concurrent install of the older file that does not list it).
		if rep.Unloading() {
			rep.Resume()
		}
		rt.pusher.SetView(st.TxnSeq, metadata.Discovery{Status: st.Discovery.Status, Begin: st.Discovery.Begin, End: st.Discovery.End, Targets: []metadata.Target{}})
	}
}

// catchUpBatchRows is the rows per catch-up push (split backfill, join
// catch-up); see docs/performance.md.
var catchUpBatchRows = 2048

// ensureRuntime starts the pusher of a local replica if it has none.
func (n *Node) ensureRuntime(rep *partition.Replica) *replicaRuntime {
	info := rep.Info()
	n.mu.Lock()
	defer n.mu.Unlock()
	if rt := n.mu.runtimes[info.Placement]; rt != nil {
		return rt
	}
	p := replication.NewPusher(replication.Config{
		Table:     info.Table,
		Placement: info.Placement,
		Self:      n.cfg.ID,
		Log:       replication.ReplicaLog(rep),
		Sender:    pushSender{n},
		Logger:    n.log.With("placement", info.Placement),
		OnStale:   func(metadata.Target) { n.requestResync(info.Table) },
		// Split backfills and join catch-ups share a few slots per server.
		CatchUpSlots:     n.catchUpSlots,
		CatchUpBatchRows: catchUpBatchRows,
		// An eighth of the body limit the receivers apply; under a write
		// limit, a quarter second of it, so a push (and the insert
		// waiting for its confirmation) is not held up for seconds.
		MaxBatchBytes: n.pushBatchBytes(),
		BatchRows:     8192, // measured: 2048 → 58k rows/s, 8192 → 83k rows/s at RF 3 (docs/performance.md)
	})
	ctx, cancel := context.WithCancel(n.bg)
	rt := &replicaRuntime{pusher: p, cancel: cancel, done: make(chan struct{})}
	n.mu.runtimes[info.Placement] = rt
	n.goAttach(func() {
		defer close(rt.done)
		p.Run(ctx)
	})
	return rt
}

// requestResync re-syncs a table in the background (a target answered
// "stale placement": this server's view may be old).
func (n *Node) requestResync(table string) {
	select {
	case n.resync <- table:
	default: // one is pending already; the reconciliation covers the rest
	}
}

// lifecycleTick runs the periodic duties of the local replicas: drop the
// UNLOAD replicas whose targets all confirmed everything, finalize the
// joins whose initial replication is complete, finalize the splits
// whose children have the parent's rows (rule 7), and report the lost
// placements to the master (node/lost.go).
func (n *Node) lifecycleTick(ctx context.Context) error {
	errs := []error{n.reportLost(ctx)}
	for _, st := range n.ReplicaStatuses() {
		switch st.Discovery.Status {
		case metadata.StatusUnload:
			if err := n.tryDrop(st); err != nil {
				errs = append(errs, err)
			}
		case metadata.StatusLoad:
			if err := n.tryFinalizeJoin(ctx, st); err != nil {
				errs = append(errs, err)
			}
		case metadata.StatusServe:
			if _, file, ok := n.router.Cached(st.Table); ok {
				if p, ok := file.Partition(st.PartitionID); ok && p.Split != nil {
					if err := n.tryFinalizeSplit(ctx, st, p); err != nil {
						errs = append(errs, err)
					}
				}
			}
		}
	}
	return errors.Join(errs...)
}

// tryDrop drops an UNLOAD replica when it has a target and every target
// confirmed everything it holds; the check runs under the replica's apply
// lock, atomically with the drop (rule 3).
func (n *Node) tryDrop(st ReplicaStatus) error {
	rt := n.runtime(st.Placement)
	if rt == nil {
		return nil
	}
	dropped, err := n.store.DropReplicaIf(st.Placement, rt.pusher.DropReady)
	if err != nil || !dropped {
		return err
	}
	rt.cancel()
	<-rt.done
	n.mu.Lock()
	delete(n.mu.runtimes, st.Placement)
	delete(n.mu.replicas, st.Placement)
	delete(n.mu.unsplittable, st.Placement)
	n.mu.Unlock()
	n.joins.Forget(st.Placement)
	n.log.Info("replica dropped: every target confirmed everything", "table", st.Table, "partition", st.PartitionID, "placement", st.Placement)
	return nil
}

// tryFinalizeJoin commits JOIN_FINALIZE for a joining replica once a
// majority of the partition's servers said it holds everything they had
// when they first saw the join.
func (n *Node) tryFinalizeJoin(ctx context.Context, st ReplicaStatus) error {
	_, file, ok := n.router.Cached(st.Table)
	if !ok {
		return nil
	}
	p, ok := file.Partition(st.PartitionID)
	if !ok || !joiningAs(p, n.cfg.ID, st.Placement) {
		return nil
	}
	complete := n.joins.Complete(st.Placement)
	have := 0
	for _, s := range p.Servers {
		if slices.Contains(complete, s.ServerID) {
			have++
		}
	}
	if have < len(p.Servers)/2+1 {
		return nil
	}
	_, err := n.RequestChange(ctx, st.Table, func(_ metadata.TableConfig, f *metadata.File) (metadata.Op, error) {
		if p, ok := f.Partition(st.PartitionID); !ok || !joiningAs(p, n.cfg.ID, st.Placement) {
			return metadata.Op{}, errJoinSettled
		}
		return metadata.Op{Type: metadata.OpJoinFinalize, JoinFinalize: &metadata.JoinFinalizeOp{PartitionID: st.PartitionID, ServerID: n.cfg.ID}}, nil
	})
	if errors.Is(err, errJoinSettled) {
		return nil
	}
	if err != nil {
		return err
	}
	n.log.Info("join finalized: initial replication complete", "table", st.Table, "partition", st.PartitionID,
		"from", complete)
	return nil
}

// errJoinSettled: the join was finalized or undone meanwhile.
var errJoinSettled = errors.New("node: join already settled")

// joiningAs reports whether p lists (server, placement) in joining.
func joiningAs(p *metadata.Partition, server string, placement uuid.UUID) bool {
	return slices.ContainsFunc(p.Joining, func(pl metadata.Placement) bool {
		return pl.ServerID == server && pl.PlacementID == placement
	})
}

// retryPushers ends the backoff of every local replica's failing targets.
func (n *Node) retryPushers() {
	n.mu.Lock()
	rts := make([]*replicaRuntime, 0, len(n.mu.runtimes))
	for _, rt := range n.mu.runtimes {
		rts = append(rts, rt)
	}
	n.mu.Unlock()
	for _, rt := range rts {
		rt.pusher.RetryNow()
	}
}

// pushBatchBytes bounds the encoded rows of one push: an eighth of the
// body limit the receivers apply, and under a write limit a quarter of a
// second's worth of it (at least 64 KiB).
func (n *Node) pushBatchBytes() int {
	b := n.cfg.MaxBodyBytes / 8
	if n.cfg.WriteLimit > 0 {
		b = min(b, int(max(n.cfg.WriteLimit/4, 64<<10)))
	}
	return b
}
