package master

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/tsdb/tsdb/metadata"
)

// A wiped disk (DESIGN.md section 5; the server side is in the replica code):
// a server restarted on an empty data directory puts a lost mark in etcd for
// each placement the METADATA still lists for it, and the master removes
// that placement as dead and joins a server again under a new placement.

// repairLost removes from p, as dead, a listed placement its server
// reported lost (it holds no data, so the removal may go below the
// replication factor; the master then joins a server, possibly the same
// one, under a new placement). It reports whether p has a lost placement,
// and changes nothing when every server of p lost its data (an operator's
// decision: FORCE_JOIN after removing them).
func (m *Master) repairLost(ctx context.Context, cfg metadata.TableConfig, p *metadata.Partition, v *clusterView) (bool, error) {
	isLost := func(pl metadata.Placement) bool {
		m, ok := v.lost[pl.PlacementID]
		return ok && m.Server == pl.ServerID
	}
	i := slices.IndexFunc(p.Joining, isLost)
	lost := metadata.Placement{}
	switch {
	case i >= 0:
		lost = p.Joining[i]
	case slices.ContainsFunc(p.Servers, isLost):
		if !slices.ContainsFunc(p.Servers, func(pl metadata.Placement) bool { return !isLost(pl) }) {
			m.log.Error("master: every server of a partition lost its data; not removed (an operator may remove them as dead and FORCE_JOIN)",
				"table", cfg.Name, "partition", p.ID)
			return true, nil
		}
		lost = p.Servers[slices.IndexFunc(p.Servers, isLost)]
	default:
		return false, nil
	}
	_, err := m.cfg.Changes.RequestChange(ctx, cfg.Name, func(c metadata.TableConfig, f *metadata.File) (metadata.Op, error) {
		cur, ok := f.Partition(p.ID)
		is := func(pl metadata.Placement) bool { return pl == lost }
		if !ok || cur.Split != nil || !slices.ContainsFunc(cur.Servers, is) && !slices.ContainsFunc(cur.Joining, is) {
			return metadata.Op{}, errRepairSettled
		}
		return metadata.Op{Type: metadata.OpRemoveServer, RemoveServer: &metadata.RemoveServerOp{
			PartitionID: p.ID, ServerID: lost.ServerID, Dead: true, ReplicationFactor: c.ReplicationFactor,
		}}, nil
	})
	if errors.Is(err, errRepairSettled) {
		return true, nil
	}
	if err != nil {
		return true, fmt.Errorf("remove lost placement %s of %s: %w", lost.PlacementID, lost.ServerID, err)
	}
	m.log.Info("master: server removed from a partition whose data it lost; it is joined again under a new placement",
		"table", cfg.Name, "partition", p.ID, "server", lost.ServerID, "placement", lost.PlacementID)
	return true, nil
}
