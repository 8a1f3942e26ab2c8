package master

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/metadata"
)

// Health reads the cluster and reports it.
func (m *Master) Health(ctx context.Context) (api.HealthResponse, error) {
	v, err := m.readView(ctx, true)
	if err != nil {
		return api.HealthResponse{}, err
	}
	return v.health(), nil
}

// health builds the health report of the view: every server with its
// placement counts, and every problem (DESIGN.md section 9; tsdb admin
// stale).
func (v *clusterView) health() api.HealthResponse {
	total, joining := v.placementCounts()
	servers := map[string]*api.ServerHealth{}
	server := func(id string) *api.ServerHealth {
		s, ok := servers[id]
		if !ok {
			s = &api.ServerHealth{ID: id}
			servers[id] = s
		}
		return s
	}
	for _, s := range v.live {
		h := server(s.ID)
		h.Addr, h.Live = s.Addr, true
	}
	for id := range total {
		server(id)
	}
	for id := range v.draining {
		server(id)
	}
	var probs []api.Problem
	add := func(p api.Problem) { probs = append(probs, p) }
	for id, s := range servers {
		s.Partitions, s.Joining = total[id], joining[id]
		s.Master = id == v.master
		if since, ok := v.draining[id]; ok {
			s.Draining = true
			msg := fmt.Sprintf("draining since %s: %d partition replicas left", since.Format(time.RFC3339), s.Partitions)
			if s.Partitions == 0 {
				msg = fmt.Sprintf("drained (since %s): holds no partition replicas; 'tsdb admin undrain %s' clears the mark", since.Format(time.RFC3339), id)
			}
			add(api.Problem{Kind: api.ProblemDraining, Server: id, Message: msg})
		}
		if !s.Live && s.Partitions > 0 {
			add(api.Problem{Kind: api.ProblemLeaseExpired, Server: id,
				Message: fmt.Sprintf("listed in %d partition placements but its membership lease is not renewed", s.Partitions)})
		}
	}
	if v.master == "" {
		add(api.Problem{Kind: api.ProblemNoMaster, Message: "no server holds the master election"})
	}
	for _, t := range v.tables {
		probs = append(probs, v.tableProblems(t)...)
	}
	resp := api.HealthResponse{Servers: make([]api.ServerHealth, 0, len(servers)), Problems: probs}
	for _, s := range servers {
		resp.Servers = append(resp.Servers, *s)
	}
	slices.SortFunc(resp.Servers, func(a, b api.ServerHealth) int { return strings.Compare(a.ID, b.ID) })
	slices.SortStableFunc(resp.Problems, func(a, b api.Problem) int {
		pa, pb := "", ""
		if a.Partition != nil {
			pa = a.Partition.String()
		}
		if b.Partition != nil {
			pb = b.Partition.String()
		}
		return cmp.Or(strings.Compare(a.Kind, b.Kind), strings.Compare(a.Table, b.Table), strings.Compare(pa, pb), strings.Compare(a.Server, b.Server))
	})
	if resp.Problems == nil {
		resp.Problems = []api.Problem{}
	}
	resp.Mean, resp.Balanced = v.balance()
	return resp
}

// tableProblems are the problems of one table: an unreadable or invalid
// map, too few live metadata servers, and per partition too few live
// servers (a server that lost its copy does not count), more servers than
// the factor, or offline.
func (v *clusterView) tableProblems(t tableView) []api.Problem {
	var probs []api.Problem
	name := t.cfg.Name
	if t.err != nil || t.file == nil {
		return []api.Problem{{Kind: api.ProblemMissingRange, Table: name, Message: fmt.Sprintf("METADATA unreadable: %v", t.err)}}
	}
	if err := t.file.Validate(); err != nil {
		probs = append(probs, api.Problem{Kind: api.ProblemMissingRange, Table: name, Message: fmt.Sprintf("partition map invalid: %v", err)})
	}
	liveMeta := 0
	for _, id := range t.cfg.MetadataServers {
		if v.isLive[id] {
			liveMeta++
		}
	}
	if want := metadataServersWanted(t.cfg, len(v.live)); liveMeta < want || liveMeta < len(t.cfg.MetadataServers) {
		probs = append(probs, api.Problem{Kind: api.ProblemMetadataServers, Table: name,
			Message: fmt.Sprintf("%d of metadata servers %v live (want %d)", liveMeta, t.cfg.MetadataServers, want)})
	}
	rf := t.cfg.ReplicationFactor
	for i := range t.file.Partitions {
		p := &t.file.Partitions[i]
		id := p.ID
		live := 0
		var down, lost []string
		for _, pl := range p.Servers {
			if m, ok := v.lost[pl.PlacementID]; ok && m.Server == pl.ServerID {
				lost = append(lost, pl.ServerID) // live, but its copy is gone (lost.go; the replica code puts the marks)
			} else if v.isLive[pl.ServerID] {
				live++
			} else {
				down = append(down, pl.ServerID)
			}
		}
		if live < rf {
			msg := fmt.Sprintf("%d of %d servers live (replication factor %d)", live, len(p.Servers), rf)
			if len(down) > 0 {
				msg += fmt.Sprintf("; not live: %s", strings.Join(down, ", "))
			}
			if len(lost) > 0 {
				msg += fmt.Sprintf("; lost their data (a wiped disk): %s", strings.Join(lost, ", "))
			}
			if len(p.Joining) > 0 {
				msg += fmt.Sprintf("; joining: %d", len(p.Joining))
			}
			probs = append(probs, api.Problem{Kind: api.ProblemUnderReplicated, Table: name, Partition: &id, Message: msg})
		}
		if len(p.Servers) > rf && len(p.Joining) == 0 && p.Split == nil {
			probs = append(probs, api.Problem{Kind: api.ProblemOverReplicated, Table: name, Partition: &id,
				Message: fmt.Sprintf("%d servers for replication factor %d (a move or join left halfway?)", len(p.Servers), rf)})
		}
		if p.Offline {
			probs = append(probs, api.Problem{Kind: api.ProblemOffline, Table: name, Partition: &id,
				Message: fmt.Sprintf("taken offline by an operator; 'tsdb admin online %s %s' brings it back", name, id)})
		}
	}
	return probs
}

// metadataServersWanted is how many metadata servers a table should have:
// its replication factor (as at creation), at least one, at most the live
// servers.
func metadataServersWanted(cfg metadata.TableConfig, live int) int {
	return max(1, min(cfg.ReplicationFactor, live))
}
