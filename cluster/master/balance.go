package master

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/metadata"
)

// Rebalancing (DESIGN.md section 9): when a server joins, at a master
// term's start, or on `tsdb admin rebalance`, the master moves partition
// replicas from the most loaded eligible servers (live, not draining) to
// the least loaded until every one holds within one of the mean. A move is
// a JOIN_SERVER of the new server and, once its JOIN_FINALIZE has put it in
// servers[], a REMOVE_SERVER of the most loaded of the partition's servers:
// a partition never has fewer than its replication factor. At most
// RebalanceMoves partitions have a join in flight at once. The state of a
// move is the METADATA itself (a partition with more servers than its
// factor and nothing joining is a move to finish), so a new master
// finishes what the old one started.

// plannedMove is one partition replica to move.
type plannedMove struct {
	table    string
	pid      uuid.UUID
	from, to string
}

// rebalanceStep finishes the moves whose join finalized, starts new ones
// within the budget, and reports whether the cluster is balanced with
// nothing left in flight.
func (m *Master) rebalanceStep(ctx context.Context, v *clusterView) (bool, error) {
	counts, _ := v.placementCounts()
	inflight := 0
	var errs []error
	for _, t := range v.tables {
		if t.file == nil {
			continue
		}
		for i := range t.file.Partitions {
			p := &t.file.Partitions[i]
			if p.Split != nil {
				continue
			}
			if len(p.Joining) > 0 {
				inflight++
				continue
			}
			if len(p.Servers) <= t.cfg.ReplicationFactor || !v.allEligible(p.Servers) {
				continue
			}
			victim := mostLoaded(p.Servers, counts)
			if err := m.removeServer(ctx, t.cfg, p.ID, victim, false); err != nil {
				errs = append(errs, err)
				continue
			}
			counts[victim]--
			inflight++
		}
	}
	moves := planMoves(v, counts, m.cfg.RebalanceMoves-inflight)
	for _, mv := range moves {
		if err := m.startMove(ctx, mv); err != nil {
			errs = append(errs, err)
		}
	}
	_, balanced := v.balance()
	return balanced && inflight == 0 && len(moves) == 0, errors.Join(errs...)
}

// allEligible reports whether every placement's server is live and not
// draining.
func (v *clusterView) allEligible(pls []metadata.Placement) bool {
	return !slices.ContainsFunc(pls, func(pl metadata.Placement) bool { return !v.eligible(pl.ServerID) })
}

// mostLoaded is the server of pls with the most placements (the greater id
// on a tie, so the choice is deterministic).
func mostLoaded(pls []metadata.Placement, counts map[string]int) string {
	best := pls[0].ServerID
	for _, pl := range pls[1:] {
		if c := cmp.Compare(counts[pl.ServerID], counts[best]); c > 0 || c == 0 && pl.ServerID > best {
			best = pl.ServerID
		}
	}
	return best
}

// planMoves plans up to budget moves, each from a most loaded eligible
// server to a least loaded one that lacks the partition, while some
// eligible server's count is more than one away from the mean and a pair
// two or more apart has a partition to move. A movable partition is not
// splitting, not offline, has nothing joining, exactly its factor's worth
// of servers or fewer, all eligible. counts is updated as moves are
// planned. It is pure: the master's tests call it directly.
func planMoves(v *clusterView, counts map[string]int, budget int) []plannedMove {
	elig := v.eligibleServers()
	if len(elig) < 2 || budget <= 0 {
		return nil
	}
	ids := make([]string, len(elig))
	sum := 0
	for i, s := range elig {
		ids[i] = s.ID
		sum += counts[s.ID]
	}
	mean := float64(sum) / float64(len(ids))
	used := map[uuid.UUID]bool{}
	var out []plannedMove
	for len(out) < budget {
		slices.SortFunc(ids, func(a, b string) int { return cmp.Or(cmp.Compare(counts[a], counts[b]), cmp.Compare(a, b)) })
		lo, hi := ids[0], ids[len(ids)-1]
		if float64(counts[hi])-mean <= 1 && mean-float64(counts[lo]) <= 1 {
			break
		}
		m, ok := v.findMove(ids, counts, used)
		if !ok {
			break
		}
		out = append(out, m)
		used[m.pid] = true
		counts[m.from]--
		counts[m.to]++
	}
	return out
}

// findMove finds the first movable partition for the pairs of ids (sorted
// by count) two or more apart, the most loaded source and the least loaded
// destination first.
func (v *clusterView) findMove(ids []string, counts map[string]int, used map[uuid.UUID]bool) (plannedMove, bool) {
	for i := len(ids) - 1; i > 0; i-- {
		from := ids[i]
		for _, to := range ids[:i] {
			if counts[from]-counts[to] < 2 {
				break
			}
			for _, t := range v.tables {
				if t.file == nil {
					continue
				}
				for j := range t.file.Partitions {
					p := &t.file.Partitions[j]
					if used[p.ID] || !v.movable(t.cfg, p) || listed(p, to) ||
						!slices.ContainsFunc(p.Servers, func(pl metadata.Placement) bool { return pl.ServerID == from }) {
						continue
					}
					return plannedMove{table: t.cfg.Name, pid: p.ID, from: from, to: to}, true
				}
			}
		}
	}
	return plannedMove{}, false
}

// movable reports whether a rebalance may move a replica of p.
func (v *clusterView) movable(cfg metadata.TableConfig, p *metadata.Partition) bool {
	return p.Split == nil && !p.Offline && len(p.Joining) == 0 && len(p.Servers) <= cfg.ReplicationFactor && v.allEligible(p.Servers)
}

// startMove commits the JOIN_SERVER of a move; the removal follows once
// the join finalized (rebalanceStep).
func (m *Master) startMove(ctx context.Context, mv plannedMove) error {
	pl := metadata.Placement{ServerID: mv.to, PlacementID: uuid.New()}
	_, err := m.cfg.Changes.RequestChange(ctx, mv.table, func(_ metadata.TableConfig, f *metadata.File) (metadata.Op, error) {
		cur, ok := f.Partition(mv.pid)
		if !ok || cur.Split != nil || cur.Offline || len(cur.Joining) > 0 || listed(cur, mv.to) {
			return metadata.Op{}, errRepairSettled
		}
		return metadata.Op{Type: metadata.OpJoinServer, JoinServer: &metadata.JoinServerOp{PartitionID: mv.pid, Placement: pl}}, nil
	})
	if errors.Is(err, errRepairSettled) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("move partition %s of %q from %s to %s: %w", mv.pid, mv.table, mv.from, mv.to, err)
	}
	m.log.Info("master: moving a partition replica", "table", mv.table, "partition", mv.pid, "from", mv.from, "to", mv.to)
	return nil
}
