package replica

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
func (s *Server) runtime(placement uuid.UUID) *replicaRuntime {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.runtimes[placement]
}

// applyDiscovery acts on a replica's discovery answer (DESIGN.md section 5):
// SERVE pushes to its targets; LOAD receives and pushes nothing; UNLOAD
// refuses writes and pushes from now on, pushes what its targets lack, and
// is dropped by the lifecycle tick once they all confirmed (rule 3); DROP
// (retention deleted the replica's whole range) refuses writes and pushes
// nothing, and the lifecycle tick drops it without pushing.
func (s *Server) applyDiscovery(rep *partition.Replica, st Status) {
	rt := s.ensureRuntime(rep)
	if rt == nil {
		return // dropped meanwhile
	}
	switch st.Discovery.Status {
	case metadata.StatusDrop:
		rep.Unload()
		rt.pusher.SetView(st.TxnSeq, metadata.Discovery{Status: st.Discovery.Status, Begin: st.Discovery.Begin, End: st.Discovery.End, Targets: []metadata.Target{}})
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

// inherited is replication.Config.Inherited for rep: whether the local
// replicas whose rows rep shares, whose ranges cover its own and which
// were created before it (its parent after a local split, its UNLOAD
// predecessor) deliver to target
// the rows rep held when it was created. Each of them that has target in
// its view pushes it everything it holds before it may be dropped (rule
// 3), rows written into the shared space by others are pushed by their
// own writers, and a LOAD replica pushes nothing, so rep's only missing
// log entry (its truncation point 1) needs no row snapshot towards a
// target they serve: it waits until they all confirmed their whole log
// (InheritPending), then counts as held (InheritHeld). InheritNone when
// none of them serves target (a joiner added after the parent's drop):
// the target gets a row snapshot.
func (s *Server) inherited(rep *partition.Replica, target uuid.UUID) replication.Inheritance {
	if hold := s.cfg.Knobs.HoldInherited; hold != nil && hold(rep.Info().Placement) {
		return replication.InheritPending
	}
	created := rep.Info().CreatedAt
	out := replication.InheritNone
	for _, m := range rep.CoveringSharers() {
		// Only the replicas created before rep can have held its
		// inherited rows; two of one range never wait on each other.
		mr, ok := s.store.Replica(m)
		if !ok || !mr.Info().CreatedAt.Before(created) {
			continue
		}
		rt := s.runtime(m)
		if rt == nil {
			continue
		}
		switch served, all := rt.pusher.Delivered(target); {
		case !served:
		case !all:
			return replication.InheritPending
		default:
			out = replication.InheritHeld
		}
	}
	// The ones dropped already (the usual case under load: a parent
	// drops as soon as its targets confirmed everything, before its
	// children serve).
	return s.departed.inherited(rep.Info(), rep.DataSpace(), target, out)
}

// catchUpBatchRows is the rows per catch-up push (split backfill, join
// catch-up); see docs/performance.md.
var catchUpBatchRows = 2048

// ensureRuntime starts the pusher of a local replica if it has none, and
// returns it; nil for a replica dropped meanwhile.
func (s *Server) ensureRuntime(rep *partition.Replica) *replicaRuntime {
	info := rep.Info()
	s.mu.Lock()
	defer s.mu.Unlock()
	if rt := s.mu.runtimes[info.Placement]; rt != nil {
		return rt
	}
	if rep.Dropped() {
		// Its drop has forgotten its runtime, or will (forgetDropped
		// runs after the flag is set): a new one would push from a
		// replica that is gone, for ever.
		return nil
	}
	p := replication.NewPusher(replication.Config{
		Table:     info.Table,
		Placement: info.Placement,
		Self:      s.cfg.Self,
		Log:       replication.ReplicaLog(rep),
		Sender:    pushSender{s},
		Logger:    s.log.With("placement", info.Placement),
		OnStale:   func(metadata.Target) { s.requestResync(info.Table) },
		// A target of a split child (or re-added placement) sharing its
		// parent's rows gets them from the parent, not a row snapshot.
		Inherited: func(target uuid.UUID) replication.Inheritance { return s.inherited(rep, target) },
		// Row snapshots counted in tsdb_snapshots_total and _seconds.
		OnSnapshotEnd: s.metrics.snapshotEnded,
		// Split backfills and join catch-ups share a few slots per server.
		CatchUpSlots:     s.catchUpSlots,
		CatchUpBatchRows: catchUpBatchRows,
		// An eighth of the body limit the receivers apply; under a write
		// limit, a quarter second of it, so a push (and the insert
		// waiting for its confirmation) is not held up for seconds.
		MaxBatchBytes: s.pushBatchBytes(),
		BatchRows:     8192, // measured: 2048 → 58k rows/s, 8192 → 83k rows/s at RF 3 (docs/performance.md)
		// Log truncation past a target that is down: the replication
		// defaults (a minute of failures, a million entries behind)
		// unless a test sets them.
		LaggardAfter: s.cfg.Knobs.LaggardAfter,
		MaxLogLag:    s.cfg.Knobs.MaxLogLag,
		TruncateMin:  s.cfg.Knobs.TruncateMin,
		// Inserts wait for the slowest copy that keeps up once it is
		// this far behind (awaitQuota).
		Quota: uint64(s.cfg.ReplicationQuota),
	})
	ctx, cancel := context.WithCancel(s.bg)
	rt := &replicaRuntime{pusher: p, cancel: cancel, done: make(chan struct{})}
	s.mu.runtimes[info.Placement] = rt
	s.goAttach(func() {
		defer close(rt.done)
		p.Run(ctx)
	})
	return rt
}

// requestResync re-syncs a table in the background (a target answered
// "stale placement": this server's view may be old).
func (s *Server) requestResync(table string) {
	select {
	case s.resync <- table:
	default: // one is pending already; the reconciliation covers the rest
	}
}

// LifecycleTick runs the periodic duties of the local replicas: drop the
// UNLOAD replicas whose targets all confirmed everything, finalize the
// joins whose initial replication is complete, finalize the splits
// whose children have the parent's rows (rule 7), and report the lost
// placements to the master (lost.go).
func (s *Server) LifecycleTick(ctx context.Context) error {
	errs := []error{s.reportLost(ctx)}
	for _, st := range s.Statuses() {
		switch st.Discovery.Status {
		case metadata.StatusUnload:
			if err := s.tryDrop(st); err != nil {
				errs = append(errs, err)
			}
		case metadata.StatusDrop:
			if err := s.dropExpired(st); err != nil {
				errs = append(errs, err)
			}
		case metadata.StatusLoad:
			if err := s.tryFinalizeJoin(ctx, st); err != nil {
				errs = append(errs, err)
			}
		case metadata.StatusServe:
			if _, file, ok := s.router.Cached(st.Table); ok {
				if p, ok := file.Partition(st.PartitionID); ok && p.Split != nil {
					if err := s.tryFinalizeSplit(ctx, st, p); err != nil {
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
func (s *Server) tryDrop(st Status) error {
	rt := s.runtime(st.Placement)
	if rt == nil {
		return nil
	}
	// Read before the drop (the predicate runs under the store's lock): a
	// member joining in between is only missing from the record.
	var covered []uuid.UUID
	if rep, ok := s.store.Replica(st.Placement); ok {
		covered = rep.CoveredSharers()
	}
	dropped, err := s.store.DropReplicaIf(st.Placement, func(r *partition.Replica) bool {
		if !rt.pusher.DropReady(r) {
			return false
		}
		// Noted before the drop, so no child's pusher finds neither
		// the replica nor its record; the replica writes nothing more
		// either way (UNLOAD, no apply in flight, under its apply lock).
		s.departed.note(r.Info(), r.DataSpace(), rt.pusher.Deliveries(), covered, s.cfg.Now())
		return true
	})
	if err != nil || !dropped {
		return err
	}
	s.forgetDropped(rt, st)
	s.log.Info("replica dropped: every target confirmed everything", "table", st.Table, "partition", st.PartitionID, "placement", st.Placement)
	return nil
}

// dropExpired drops a DROP replica: retention deleted its whole range
// (it ends at or before the METADATA's DroppedBefore), so its rows are
// expired and go nowhere (rule 3, retention form). The replica is dropped
// with a tombstone like any other (rule 4), and an Apply in flight fails
// with partition.ErrDropped.
func (s *Server) dropExpired(st Status) error {
	rt := s.runtime(st.Placement)
	if rt == nil {
		return nil
	}
	dropped, err := s.store.DropReplicaIf(st.Placement, func(r *partition.Replica) bool { return r.Unloading() })
	if err != nil || !dropped {
		return err
	}
	s.forgetDropped(rt, st)
	s.log.Info("replica dropped: retention expired its whole range", "table", st.Table, "partition", st.PartitionID, "placement", st.Placement)
	return nil
}

// forgetDropped stops a dropped replica's pusher and forgets its state.
func (s *Server) forgetDropped(rt *replicaRuntime, st Status) {
	rt.cancel()
	<-rt.done
	s.mu.Lock()
	delete(s.mu.runtimes, st.Placement)
	delete(s.mu.replicas, st.Placement)
	delete(s.mu.unsplittable, st.Placement)
	s.mu.Unlock()
	s.joins.Forget(st.Placement)
	s.applied.Forget(st.Placement)
}

// tryFinalizeJoin commits JOIN_FINALIZE for a joining replica once a
// majority of the partition's servers said it holds everything they had
// when they first saw the join.
func (s *Server) tryFinalizeJoin(ctx context.Context, st Status) error {
	_, file, ok := s.router.Cached(st.Table)
	if !ok {
		return nil
	}
	p, ok := file.Partition(st.PartitionID)
	if !ok || !joiningAs(p, s.cfg.Self, st.Placement) {
		return nil
	}
	complete := s.joins.Complete(st.Placement)
	have := 0
	for _, pl := range p.Servers {
		if slices.Contains(complete, pl.ServerID) {
			have++
		}
	}
	if have < len(p.Servers)/2+1 {
		return nil
	}
	_, err := s.RequestChange(ctx, st.Table, func(_ metadata.TableConfig, f *metadata.File) (metadata.Op, error) {
		if p, ok := f.Partition(st.PartitionID); !ok || !joiningAs(p, s.cfg.Self, st.Placement) {
			return metadata.Op{}, errJoinSettled
		}
		return metadata.Op{Type: metadata.OpJoinFinalize, JoinFinalize: &metadata.JoinFinalizeOp{PartitionID: st.PartitionID, ServerID: s.cfg.Self}}, nil
	})
	if errors.Is(err, errJoinSettled) {
		return nil
	}
	if err != nil {
		return err
	}
	s.log.Info("join finalized: initial replication complete", "table", st.Table, "partition", st.PartitionID,
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

// RetryPushers ends the backoff of every local replica's failing targets
// (the membership watch calls it: a server that came back gets its pushes
// now, not after a backoff).
func (s *Server) RetryPushers() {
	for _, rt := range s.runtimes() {
		rt.pusher.RetryNow()
	}
}

// runtimes returns the replication runtimes of the local replicas.
func (s *Server) runtimes() []*replicaRuntime {
	s.mu.Lock()
	defer s.mu.Unlock()
	rts := make([]*replicaRuntime, 0, len(s.mu.runtimes))
	for _, rt := range s.mu.runtimes {
		rts = append(rts, rt)
	}
	return rts
}

// pushBatchBytes bounds the encoded rows of one push: an eighth of the
// body limit the receivers apply, and under a write limit a quarter of a
// second's worth of it (at least 64 KiB).
func (s *Server) pushBatchBytes() int {
	b := s.cfg.MaxBodyBytes / 8
	if s.cfg.WriteLimit > 0 {
		b = min(b, int(max(s.cfg.WriteLimit/4, 64<<10)))
	}
	return b
}
