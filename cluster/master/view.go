package master

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/cluster/membership"
	"github.com/tsdb/tsdb/cluster/operator"
	"github.com/tsdb/tsdb/metadata"
)

// tableView is one table as the master and the health report see it: its
// config and current METADATA, or the error that kept it from being read.
type tableView struct {
	cfg  metadata.TableConfig
	file *metadata.File
	err  error
}

// clusterView is what the master's duties and the health report are
// computed from: one consistent-enough read of membership, drain marks and
// every table's current METADATA.
type clusterView struct {
	live     []membership.Info
	isLive   map[string]bool
	draining map[string]time.Time
	// lost are the lost-placement marks, by placement (lost.go; the replica code puts the marks).
	lost   map[uuid.UUID]operator.LostMark
	master string
	tables []tableView
}

// readView reads the cluster's state: the live servers, the drain marks,
// the lost-placement marks, the master, and each table's METADATA: with fresh, the current one (read
// from etcd and a metadata server), else the router's (kept current by the
// table watch; the master's changes check the current one when sent).
func (m *Master) readView(ctx context.Context, fresh bool) (*clusterView, error) {
	live, err := m.cfg.Servers.Refresh(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: read the live servers: %w", errUnavailable, err)
	}
	draining, err := m.cfg.Marks.Draining(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errUnavailable, err)
	}
	lost, err := m.cfg.Marks.Lost(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errUnavailable, err)
	}
	master, err := m.cfg.Marks.Leader(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errUnavailable, err)
	}
	cfgs, err := m.cfg.Tables.ListTables(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: list tables: %w", errUnavailable, err)
	}
	v := &clusterView{live: live, isLive: make(map[string]bool, len(live)), draining: draining, lost: lost, master: master}
	for _, s := range live {
		v.isLive[s.ID] = true
	}
	for _, cfg := range cfgs {
		var c metadata.TableConfig
		var f *metadata.File
		var err error
		if fresh {
			c, f, err = m.cfg.Committer.Load(ctx, cfg.Name)
		} else {
			c, f, err = m.cfg.Cache.Table(ctx, cfg.Name)
		}
		if err == nil {
			cfg = c
		}
		v.tables = append(v.tables, tableView{cfg: cfg, file: f, err: err})
	}
	return v, nil
}

// eligible reports whether a server may be given partitions: live and not
// draining.
func (v *clusterView) eligible(id string) bool {
	_, drain := v.draining[id]
	return v.isLive[id] && !drain
}

// eligibleServers are the live servers that are not draining.
func (v *clusterView) eligibleServers() []membership.Info {
	return slices.DeleteFunc(slices.Clone(v.live), func(s membership.Info) bool { return !v.eligible(s.ID) })
}

// placementCounts counts the placements every table's METADATA gives each
// server (servers[], joining[] and split children), and the joining ones.
func (v *clusterView) placementCounts() (total, joining map[string]int) {
	total, joining = map[string]int{}, map[string]int{}
	for _, t := range v.tables {
		if t.file == nil {
			continue
		}
		for _, p := range t.file.Partitions {
			for _, pl := range p.Servers {
				total[pl.ServerID]++
			}
			for _, pl := range p.Joining {
				total[pl.ServerID]++
				joining[pl.ServerID]++
			}
			if p.Split != nil {
				for _, c := range p.Split.Children {
					for _, pl := range c.Servers {
						total[pl.ServerID]++
					}
				}
			}
		}
	}
	return total, joining
}

// balance returns the mean placement count of the eligible servers and
// whether every one of them is within one of it with no join in progress.
func (v *clusterView) balance() (mean float64, balanced bool) {
	total, joining := v.placementCounts()
	elig := v.eligibleServers()
	if len(elig) == 0 {
		return 0, true
	}
	sum := 0
	for _, s := range elig {
		sum += total[s.ID]
	}
	mean = float64(sum) / float64(len(elig))
	balanced = true
	for _, s := range elig {
		if math.Abs(float64(total[s.ID])-mean) > 1 {
			balanced = false
		}
	}
	for _, c := range joining {
		if c > 0 {
			balanced = false
		}
	}
	return mean, balanced
}
