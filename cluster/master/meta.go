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
	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/metadata"
)

// The master's care of METADATA itself: each table's metadata servers kept
// at N live (add, then remove; DESIGN.md sections 4 and 9), and SPLIT_ABORT
// of a split whose child has had no live majority for DeadAfter (section
// 6).

// keepMetadataServers makes at most one change to a table's metadata
// servers: when fewer than metadataServersWanted are live and not
// draining, the least-loaded eligible server not listed joins (it fetches
// the current file before it is added); once enough are, one dead or
// draining server is removed (the removal first stores the current file on
// a majority of the rest).
func (m *Master) keepMetadataServers(ctx context.Context, v *clusterView, t tableView, dead func(string) bool) error {
	cfg := t.cfg
	var good, gone []string
	for _, id := range cfg.MetadataServers {
		switch {
		case v.eligible(id):
			good = append(good, id)
		case v.isLive[id] || dead(id): // draining, or dead
			gone = append(gone, id)
		}
	}
	want := metadataServersWanted(cfg, len(v.eligibleServers()))
	if len(good) < want {
		counts, _ := v.placementCounts()
		cands := slices.DeleteFunc(v.eligibleServers(), func(s membership.Info) bool { return slices.Contains(cfg.MetadataServers, s.ID) })
		if len(cands) == 0 {
			return nil
		}
		slices.SortFunc(cands, func(a, b membership.Info) int {
			return cmp.Or(cmp.Compare(counts[a.ID], counts[b.ID]), cmp.Compare(a.ID, b.ID))
		})
		return m.joinMetadataServer(ctx, cfg.Name, cands[0].ID)
	}
	if len(gone) == 0 {
		return nil
	}
	if _, err := m.cfg.Committer.RemoveMetadataServer(ctx, cfg.Name, gone[0]); err != nil {
		return fmt.Errorf("table %q: remove metadata server %s: %w", cfg.Name, gone[0], err)
	}
	m.log.Info("master: metadata server removed", "table", cfg.Name, "server", gone[0])
	return nil
}

// joinMetadataServer asks server to join a table's metadata servers (it
// fetches the current file, then CASes itself into the list).
func (m *Master) joinMetadataServer(ctx context.Context, table, server string) error {
	var err error
	req := wire.JoinMetadataRequest{Table: table}
	if server == m.cfg.Self {
		_, err = m.cfg.Committer.JoinMetadataServer(ctx, table)
	} else {
		var addr string
		if addr, err = m.cfg.Servers.Addr(ctx, server); err == nil {
			var resp wire.JoinMetadataResponse
			err = m.cfg.RPC.Call(ctx, addr, wire.PathMetadataJoin, req, &resp)
		}
	}
	if err != nil {
		return fmt.Errorf("table %q: join %s as a metadata server: %w", table, server, err)
	}
	m.log.Info("master: metadata server joined", "table", table, "server", server)
	return nil
}

// maybeAbortSplit commits SPLIT_ABORT of a splitting partition one of
// whose children has had no live majority for DeadAfter: the split cannot
// finalize (rule 7), and inserts into that child's range wait for it.
// After the abort the parent serves on alone, and the children's partial
// copies, now UNLOAD, push the parent's servers what they hold and drop.
func (m *Master) maybeAbortSplit(ctx context.Context, st *masterState, v *clusterView, t tableView, p *metadata.Partition, now time.Time) error {
	stuck := false
	for _, c := range p.Split.Children {
		live := 0
		for _, pl := range c.Servers {
			if v.isLive[pl.ServerID] {
				live++
			}
		}
		if live < len(c.Servers)/2+1 {
			stuck = true
		}
	}
	if !stuck {
		delete(st.noMajority, p.ID)
		return nil
	}
	since, ok := st.noMajority[p.ID]
	if !ok {
		st.noMajority[p.ID] = now
		m.log.Warn("master: a split child has no live majority; the split is aborted if it stays so", "table", t.cfg.Name, "partition", p.ID, "after", m.cfg.DeadAfter)
		return nil
	}
	if now.Sub(since) < m.cfg.DeadAfter {
		return nil
	}
	split := p.Split
	_, err := m.cfg.Changes.RequestChange(ctx, t.cfg.Name, func(_ metadata.TableConfig, f *metadata.File) (metadata.Op, error) {
		cur, ok := f.Partition(p.ID)
		if !ok || cur.Split == nil || !slices.EqualFunc(cur.Split.Children, split.Children, func(a, b metadata.Child) bool { return a.ID == b.ID }) {
			return metadata.Op{}, errRepairSettled
		}
		return metadata.Op{Type: metadata.OpSplitAbort, SplitAbort: &metadata.SplitAbortOp{PartitionID: p.ID}}, nil
	})
	if errors.Is(err, errRepairSettled) {
		delete(st.noMajority, p.ID)
		return nil
	}
	if err != nil {
		return fmt.Errorf("abort the split: %w", err)
	}
	delete(st.noMajority, p.ID)
	m.cfg.Metrics.SplitsAborted.Inc()
	m.log.Warn("master: split aborted: a child had no live majority", "table", t.cfg.Name, "partition", p.ID, "children", childIDs(split))
	return nil
}

// childIDs lists a split's children's ids.
func childIDs(s *metadata.Split) []uuid.UUID {
	ids := make([]uuid.UUID, 0, len(s.Children))
	for _, c := range s.Children {
		ids = append(ids, c.ID)
	}
	return ids
}
