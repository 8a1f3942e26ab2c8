package replica

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/cluster/membership"
	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/metadata"
)

// errSplitSettled: the split was finalized or aborted meanwhile.
var errSplitSettled = errors.New("node: split already settled")

// tryFinalizeSplit commits SPLIT_FINALIZE for a splitting partition this
// server serves, once rule 7 holds: a majority of the parent's replicas
// report that everything they held when they learned of the split (their
// mark per child target) is confirmed by a majority of each child's
// servers. A child's servers that every one of those replicas has past its
// mark go into the child's servers[]; the others join later. Any SERVE
// parent replica may commit it (the CAS makes one win); the first listed
// live one tries first, so the others only take over when it is gone.
func (s *Server) tryFinalizeSplit(ctx context.Context, st Status, p *metadata.Partition) error {
	if !s.leadsSplit(p) {
		return nil
	}
	reports := s.splitReports(ctx, st.Table, p)
	var ok []map[uuid.UUID]map[string]bool
	for _, r := range reports {
		if splitReportOK(r, p.Split) {
			ok = append(ok, r)
		}
	}
	if len(ok) < len(p.Servers)/2+1 {
		return nil
	}
	confirmed := make(map[uuid.UUID][]string, len(p.Split.Children))
	for _, c := range p.Split.Children {
		for _, pl := range c.Servers {
			if !slices.ContainsFunc(ok, func(r map[uuid.UUID]map[string]bool) bool { return !r[c.ID][pl.ServerID] }) {
				confirmed[c.ID] = append(confirmed[c.ID], pl.ServerID)
			}
		}
		if len(confirmed[c.ID]) < len(c.Servers)/2+1 {
			return nil // the replicas disagree on who has everything yet
		}
	}
	children := childIDs(p.Split)
	_, err := s.RequestChange(ctx, st.Table, func(_ metadata.TableConfig, f *metadata.File) (metadata.Op, error) {
		cur, ok := f.Partition(p.ID)
		if !ok || cur.Split == nil || !slices.Equal(childIDs(cur.Split), children) {
			return metadata.Op{}, errSplitSettled
		}
		return metadata.Op{Type: metadata.OpSplitFinalize, SplitFinalize: &metadata.SplitFinalizeOp{
			PartitionID: p.ID, Confirmed: confirmed,
		}}, nil
	})
	if errors.Is(err, errSplitSettled) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("finalize the split of partition %s: %w", p.ID, err)
	}
	s.metrics.SplitsFinalized.Inc()
	s.log.Info("split finalized", "table", st.Table, "partition", p.ID, "confirmed", confirmed)
	return nil
}

// leadsSplit reports whether this server is the first live server of p.
func (s *Server) leadsSplit(p *metadata.Partition) bool {
	live := s.dir.Live()
	for _, pl := range p.Servers {
		if slices.ContainsFunc(live, func(i membership.Info) bool { return i.ID == pl.ServerID }) {
			return pl.ServerID == s.cfg.Self
		}
	}
	return false
}

// splitReports asks every server of p for its parent replica's split
// targets: per child, the child servers past this replica's mark. A server
// that does not answer, or has not learned of the split, gives no report.
func (s *Server) splitReports(ctx context.Context, table string, p *metadata.Partition) []map[uuid.UUID]map[string]bool {
	var out []map[uuid.UUID]map[string]bool
	for _, pl := range p.Servers {
		resp, err := s.ReplicasOn(ctx, pl.ServerID, wire.ReplicasRequest{Table: table, Placement: pl.PlacementID, NoBytes: true})
		if err != nil {
			continue
		}
		for _, r := range resp.Replicas {
			if r.Placement != pl.PlacementID {
				continue
			}
			report := map[uuid.UUID]map[string]bool{}
			for _, t := range r.Targets {
				if t.Kind != string(metadata.TargetSplit) {
					continue
				}
				if report[t.PartitionID] == nil {
					report[t.PartitionID] = map[string]bool{}
				}
				report[t.PartitionID][t.Server] = t.MarkReached
			}
			out = append(out, report)
		}
	}
	return out
}

// splitReportOK reports whether one parent replica has every child's
// majority past its mark.
func splitReportOK(r map[uuid.UUID]map[string]bool, split *metadata.Split) bool {
	for _, c := range split.Children {
		have := 0
		for _, s := range c.Servers {
			if r[c.ID][s.ServerID] {
				have++
			}
		}
		if have < len(c.Servers)/2+1 {
			return false
		}
	}
	return true
}

// childIDs lists a split's children's ids.
func childIDs(s *metadata.Split) []uuid.UUID {
	ids := make([]uuid.UUID, 0, len(s.Children))
	for _, c := range s.Children {
		ids = append(ids, c.ID)
	}
	return ids
}
