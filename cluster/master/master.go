package master

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/cluster/membership"
	"github.com/tsdb/tsdb/metadata"
)

// errRepairSettled: the partition changed under the planned repair.
var errRepairSettled = errors.New("master: repair no longer needed")

// masterState is what a master term remembers between ticks.
type masterState struct {
	// absent is when each server listed somewhere was first seen absent
	// in this term: a new master gives every absent server the full grace
	// period again.
	absent map[string]time.Time
	// noMajority is when each splitting partition was first seen with a
	// child lacking a live majority.
	noMajority map[uuid.UUID]time.Time
	// balancing is set while a rebalance runs: at the term's start, when a
	// server joins, and on an operator's request, until balanced.
	balancing bool
	// rebalanceRev is the etcd revision of the last rebalance request seen.
	rebalanceRev int64
	// lastLive are the servers live at the previous tick.
	lastLive map[string]bool
	// presplitAt is when pre-split last ran.
	presplitAt time.Time
	// sizes is the largest size measured in this term of each partition
	// of the tables (presplit.go, partitionSizes).
	sizes map[uuid.UUID]uint64
}

// Lead runs while this server is the elected master: the master's duties
// every Tick until ctx (the term) ends. It is election.Run's callback.
func (m *Master) Lead(ctx context.Context) {
	m.isMaster.Store(true)
	defer m.isMaster.Store(false)
	start := time.Now()
	m.log.Info("master term started", "dead_after", m.cfg.DeadAfter)
	st := &masterState{absent: map[string]time.Time{}, noMajority: map[uuid.UUID]time.Time{}, balancing: true}
	if rev, err := m.cfg.Marks.RebalanceRequest(ctx); err == nil {
		st.rebalanceRev = rev
	}
	t := time.NewTicker(m.cfg.Tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			m.log.Info("master term ended", "lasted", time.Since(start).Round(time.Millisecond))
			return
		case <-t.C:
		}
		if err := m.tick(ctx, st, time.Now()); err != nil && ctx.Err() == nil {
			m.log.Warn("master: pass failed; retried next tick", "err", err)
		}
	}
}

// IsMaster reports whether this server is the elected master now.
func (m *Master) IsMaster() bool { return m.isMaster.Load() }

// tick is one pass of the master's duties over a fresh read of the
// cluster. Nothing is assigned while fewer than MinServers are live.
func (m *Master) tick(ctx context.Context, st *masterState, now time.Time) error {
	// The operator's rebalance request is read before the view: a request
	// this pass acts on is then weighed against a view at least as new as
	// it, so a change made just before it (an undrain) is seen. Read after
	// the view, the request could be used up on the older view.
	pt := newPassTimer() // from the wall clock: now may be a test's
	defer pt.report(m)
	reqRev, reqErr := m.cfg.Marks.RebalanceRequest(ctx)
	v, err := m.readView(ctx, false)
	if err != nil {
		return err
	}
	pt.lap(&pt.view)
	// A server that joined, or an operator's request, starts a rebalance.
	rebalance := false
	for _, s := range v.live {
		if st.lastLive != nil && !st.lastLive[s.ID] {
			rebalance = true
		}
	}
	st.lastLive = v.isLive
	for id := range st.absent {
		if v.isLive[id] {
			delete(st.absent, id) // back within the grace period
		}
	}
	if reqErr == nil && reqRev != st.rebalanceRev {
		st.rebalanceRev, rebalance = reqRev, true
		m.log.Info("master: rebalance requested by an operator")
	}
	if rebalance && !st.balancing {
		st.balancing = true
		m.log.Info("master: rebalance started")
	}
	if len(v.live) < m.cfg.MinServers {
		m.log.Debug("master: fewer live servers than --min-servers; nothing assigned", "live", len(v.live), "min", m.cfg.MinServers)
		return nil
	}
	dead := func(id string) bool {
		if v.isLive[id] {
			return false
		}
		since, ok := st.absent[id]
		if !ok {
			st.absent[id] = now
			m.log.Warn("master: server listed in a partition is not live; dead if it stays away", "server", id, "dead_after", m.cfg.DeadAfter)
			return false
		}
		return now.Sub(since) >= m.cfg.DeadAfter
	}
	var errs []error
	for _, t := range v.tables {
		if !m.cfg.Lease.Valid() {
			return errors.New("lease not valid")
		}
		if t.err != nil {
			errs = append(errs, t.err)
			continue
		}
		errs = append(errs, m.keepMetadataServers(ctx, v, t, dead))
		for i := range t.file.Partitions {
			p := &t.file.Partitions[i]
			var err error
			if p.Split != nil {
				err = m.maybeAbortSplit(ctx, st, v, t, p, now)
			} else {
				err = m.repairPartition(ctx, t.cfg, p, v, dead)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("table %q partition %s: %w", t.cfg.Name, p.ID, err))
			}
		}
	}
	pt.lap(&pt.partitions)
	errs = append(errs, m.retentionPass(ctx, v, now))
	if st.balancing && !m.cfg.NoRebalance {
		done, err := m.rebalanceStep(ctx, v)
		errs = append(errs, err)
		if done {
			st.balancing = false
			m.log.Info("master: partitions balanced")
		}
	}
	if !m.cfg.NoPresplit && now.Sub(st.presplitAt) >= m.cfg.PresplitInterval {
		st.presplitAt = now
		pt.lap(&pt.other)
		errs = append(errs, m.presplitPass(ctx, st, v, &pt))
	}
	return errors.Join(errs...)
}

// repairPartition makes at most one change to p: remove a placement its
// server lost the data of (lost.go), drop a dead or draining joiner,
// join a replacement for a dead or draining server, or remove a dead
// server once the live ones are back at the replication factor, or a
// draining one once the eligible ones are (join new, then remove old, so a
// partition never drops below its factor), or join a server to a partition
// below its factor.
func (m *Master) repairPartition(ctx context.Context, cfg metadata.TableConfig, p *metadata.Partition, v *clusterView, dead func(string) bool) error {
	if had, err := m.repairLost(ctx, cfg, p, v); had || err != nil {
		return err
	}
	rf := cfg.ReplicationFactor
	var deadServers, drainServers []string
	live, eligible := 0, 0
	for _, pl := range p.Servers {
		switch {
		case dead(pl.ServerID):
			deadServers = append(deadServers, pl.ServerID)
		case !v.isLive[pl.ServerID]:
		case !v.eligible(pl.ServerID):
			live++
			drainServers = append(drainServers, pl.ServerID)
		default:
			live++
			eligible++
		}
	}
	joining := 0
	for _, pl := range p.Joining {
		if dead(pl.ServerID) {
			return m.removeServer(ctx, cfg, p.ID, pl.ServerID, true)
		}
		if v.isLive[pl.ServerID] && !v.eligible(pl.ServerID) {
			return m.removeServer(ctx, cfg, p.ID, pl.ServerID, false) // a draining joiner
		}
		joining++
	}
	switch {
	case len(deadServers) > 0 && live >= rf:
		return m.removeServer(ctx, cfg, p.ID, deadServers[0], true)
	case len(drainServers) > 0 && eligible >= rf && joining == 0:
		return m.removeServer(ctx, cfg, p.ID, drainServers[0], false)
	case len(deadServers)+len(drainServers) > 0 && eligible+joining < rf:
		return m.joinReplacement(ctx, cfg, p, v)
	case len(p.Servers)+len(p.Joining) < rf:
		// Below the factor with nobody dead or draining: a placement
		// removed as lost (lost.go), or an operator's dead removal.
		return m.joinReplacement(ctx, cfg, p, v)
	}
	return nil // a replacement is joining: JOIN_FINALIZE, then the removal
}

// joinReplacement commits JOIN_SERVER of the least-loaded live server not
// in p.
func (m *Master) joinReplacement(ctx context.Context, cfg metadata.TableConfig, p *metadata.Partition, v *clusterView) error {
	counts, _ := v.placementCounts()
	cands := slices.DeleteFunc(v.eligibleServers(), func(s membership.Info) bool { return listed(p, s.ID) })
	if len(cands) == 0 {
		// Every live server holds the partition already; retried each
		// tick, so not worth a warning each time.
		m.log.Debug("master: no eligible server to replace a dead or draining one", "table", cfg.Name, "partition", p.ID)
		return nil
	}
	slices.SortStableFunc(cands, func(a, b membership.Info) int {
		return cmp.Or(cmp.Compare(counts[a.ID], counts[b.ID]), cmp.Compare(a.ID, b.ID))
	})
	pl := metadata.Placement{ServerID: cands[0].ID, PlacementID: uuid.New()}
	servers, joining := len(p.Servers), len(p.Joining)
	_, err := m.cfg.Changes.RequestChange(ctx, cfg.Name, func(_ metadata.TableConfig, f *metadata.File) (metadata.Op, error) {
		cur, ok := f.Partition(p.ID)
		if !ok || cur.Split != nil || len(cur.Servers) != servers || len(cur.Joining) != joining {
			return metadata.Op{}, errRepairSettled
		}
		return metadata.Op{Type: metadata.OpJoinServer, JoinServer: &metadata.JoinServerOp{PartitionID: p.ID, Placement: pl}}, nil
	})
	if errors.Is(err, errRepairSettled) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("join replacement %s: %w", pl.ServerID, err)
	}
	m.log.Info("master: replacement joining for a dead, draining or lost server", "table", cfg.Name, "partition", p.ID, "server", pl.ServerID)
	return nil
}

// listed reports whether server is in p's servers or joining.
func listed(p *metadata.Partition, server string) bool {
	has := func(pl metadata.Placement) bool { return pl.ServerID == server }
	return slices.ContainsFunc(p.Servers, has) || slices.ContainsFunc(p.Joining, has)
}

// removeServer commits REMOVE_SERVER of a server from a partition: as dead
// (its data is gone, so the op may go below the factor), or as a live
// server leaving (the op then keeps the factor).
func (m *Master) removeServer(ctx context.Context, cfg metadata.TableConfig, pid uuid.UUID, server string, dead bool) error {
	_, err := m.cfg.Changes.RequestChange(ctx, cfg.Name, func(c metadata.TableConfig, f *metadata.File) (metadata.Op, error) {
		cur, ok := f.Partition(pid)
		if !ok || cur.Split != nil || !listed(cur, server) {
			return metadata.Op{}, errRepairSettled
		}
		return metadata.Op{Type: metadata.OpRemoveServer, RemoveServer: &metadata.RemoveServerOp{
			PartitionID: pid, ServerID: server, Dead: dead, ReplicationFactor: c.ReplicationFactor,
		}}, nil
	})
	if errors.Is(err, errRepairSettled) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove server %s (dead %t): %w", server, dead, err)
	}
	m.log.Info("master: server removed from a partition", "table", cfg.Name, "partition", pid, "server", server, "dead", dead)
	return nil
}
