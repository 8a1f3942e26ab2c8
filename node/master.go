package node

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

// The master (DESIGN.md section 9). One server at a time holds the term
// (cluster/election); its duties run under the term's context, which ends
// as soon as its lease may have lapsed. Built so far: failure handling
// (re-replication of partitions listing a dead server). Rebalancing,
// pre-split, retention, SPLIT_ABORT and the operator tools are still to
// come (issue 6).

// errRepairSettled: the partition changed under the planned repair.
var errRepairSettled = errors.New("node: repair no longer needed")

// lead runs while this server is the elected master: the repair loop every
// MasterTick until the term ends.
func (n *Node) lead(ctx context.Context) {
	n.isMaster.Store(true)
	defer n.isMaster.Store(false)
	start := time.Now()
	n.log.Info("master term started", "dead_after", n.cfg.DeadAfter)
	// Absences are timed from this term's start: a new master gives every
	// absent server the full grace period again.
	absent := map[string]time.Time{}
	t := time.NewTicker(n.cfg.MasterTick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			n.log.Info("master term ended", "lasted", time.Since(start).Round(time.Millisecond))
			return
		case <-t.C:
		}
		if err := n.repairTick(ctx, absent, time.Now()); err != nil && ctx.Err() == nil {
			n.log.Warn("master: repair pass failed; retried next tick", "err", err)
		}
	}
}

// IsMaster reports whether this server is the elected master now.
func (n *Node) IsMaster() bool { return n.isMaster.Load() }

// repairTick is one pass of failure handling: a server listed in a
// partition whose membership key has been gone for DeadAfter is dead; for
// each partition listing it the master joins a replacement (the least
// loaded live server not in the partition) and, once enough live servers
// are listed again (the replacement finalized its join), removes the dead
// one. One change per partition per pass; splitting partitions wait for
// their split to settle.
func (n *Node) repairTick(ctx context.Context, absent map[string]time.Time, now time.Time) error {
	live, err := n.dir.refresh(ctx)
	if err != nil {
		return fmt.Errorf("read the live servers: %w", err)
	}
	isLive := make(map[string]bool, len(live))
	for _, s := range live {
		isLive[s.ID] = true
	}
	for id := range absent {
		if isLive[id] {
			delete(absent, id) // back within the grace period
		}
	}
	tables, err := n.meta.ListTables(ctx)
	if err != nil {
		return fmt.Errorf("list tables: %w", err)
	}
	dead := func(id string) bool {
		if isLive[id] {
			return false
		}
		since, ok := absent[id]
		if !ok {
			absent[id] = now
			n.log.Warn("master: server listed in a partition is not live; dead if it stays away", "server", id, "dead_after", n.cfg.DeadAfter)
			return false
		}
		return now.Sub(since) >= n.cfg.DeadAfter
	}
	var errs []error
	for _, cfg := range tables {
		if !n.reg.Valid() {
			return errors.New("lease not valid")
		}
		_, file, err := n.router.Table(ctx, cfg.Name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for i := range file.Partitions {
			p := &file.Partitions[i]
			if p.Split != nil {
				continue
			}
			if err := n.repairPartition(ctx, cfg, p, live, dead); err != nil {
				errs = append(errs, fmt.Errorf("table %q partition %s: %w", cfg.Name, p.ID, err))
			}
		}
	}
	return errors.Join(errs...)
}

// repairPartition makes at most one change to p: drop a dead joiner, join a
// replacement for a dead server, or remove a dead server once the live ones
// are back at the replication factor.
func (n *Node) repairPartition(ctx context.Context, cfg metadata.TableConfig, p *metadata.Partition, live []membership.Info, dead func(string) bool) error {
	var deadServers, deadJoiners []string
	for _, pl := range p.Servers {
		if dead(pl.ServerID) {
			deadServers = append(deadServers, pl.ServerID)
		}
	}
	for _, pl := range p.Joining {
		if dead(pl.ServerID) {
			deadJoiners = append(deadJoiners, pl.ServerID)
		}
	}
	switch {
	case len(deadJoiners) > 0:
		return n.removeDead(ctx, cfg, p.ID, deadJoiners[0])
	case len(deadServers) == 0:
		return nil
	case len(p.Servers)-len(deadServers) >= cfg.ReplicationFactor:
		return n.removeDead(ctx, cfg, p.ID, deadServers[0])
	case len(p.Servers)-len(deadServers)+len(p.Joining) < cfg.ReplicationFactor:
		return n.joinReplacement(ctx, cfg, p, live)
	}
	return nil // a replacement is joining: JOIN_FINALIZE, then the removal
}

// joinReplacement commits JOIN_SERVER of the least-loaded live server not
// in p.
func (n *Node) joinReplacement(ctx context.Context, cfg metadata.TableConfig, p *metadata.Partition, live []membership.Info) error {
	in := func(id string) bool {
		has := func(pl metadata.Placement) bool { return pl.ServerID == id }
		return slices.ContainsFunc(p.Servers, has) || slices.ContainsFunc(p.Joining, has)
	}
	cands := slices.DeleteFunc(slices.Clone(live), func(s membership.Info) bool { return in(s.ID) })
	if len(cands) == 0 {
		// Every live server holds the partition already; retried each
		// tick, so not worth a warning each time.
		n.log.Debug("master: no live server to replace a dead one", "table", cfg.Name, "partition", p.ID)
		return nil
	}
	slices.SortStableFunc(cands, func(a, b membership.Info) int {
		return cmp.Or(cmp.Compare(a.Summary.Partitions, b.Summary.Partitions), cmp.Compare(a.ID, b.ID))
	})
	pl := metadata.Placement{ServerID: cands[0].ID, PlacementID: uuid.New()}
	servers, joining := len(p.Servers), len(p.Joining)
	_, err := n.RequestChange(ctx, cfg.Name, func(_ metadata.TableConfig, f *metadata.File) (metadata.Op, error) {
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
	n.log.Info("master: replacement joining for a dead server", "table", cfg.Name, "partition", p.ID, "server", pl.ServerID)
	return nil
}

// removeDead commits REMOVE_SERVER of a dead server.
func (n *Node) removeDead(ctx context.Context, cfg metadata.TableConfig, pid uuid.UUID, server string) error {
	_, err := n.RequestChange(ctx, cfg.Name, func(c metadata.TableConfig, f *metadata.File) (metadata.Op, error) {
		cur, ok := f.Partition(pid)
		has := func(pl metadata.Placement) bool { return pl.ServerID == server }
		if !ok || cur.Split != nil || !slices.ContainsFunc(cur.Servers, has) && !slices.ContainsFunc(cur.Joining, has) {
			return metadata.Op{}, errRepairSettled
		}
		return metadata.Op{Type: metadata.OpRemoveServer, RemoveServer: &metadata.RemoveServerOp{
			PartitionID: pid, ServerID: server, Dead: true, ReplicationFactor: c.ReplicationFactor,
		}}, nil
	})
	if errors.Is(err, errRepairSettled) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove dead server %s: %w", server, err)
	}
	n.log.Info("master: dead server removed", "table", cfg.Name, "partition", pid, "server", server)
	return nil
}
