package node

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/cluster/election"
	"github.com/tsdb/tsdb/cluster/membership"
	"github.com/tsdb/tsdb/cluster/operator"
	tsdbhttp "github.com/tsdb/tsdb/http"
	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/metadata"
)

// The operator's API (tsdb admin offline, online, drain, undrain,
// rebalance, stale): each call records the operator's request where the
// master and the health report see it until it is undone.

// SetOffline commits SET_OFFLINE of a current partition.
func (b backend) SetOffline(ctx context.Context, table string, pid uuid.UUID, offline bool) (*metadata.File, error) {
	f, err := b.n.RequestChange(ctx, table, func(metadata.TableConfig, *metadata.File) (metadata.Op, error) {
		return metadata.Op{Type: metadata.OpSetOffline, SetOffline: &metadata.SetOfflineOp{PartitionID: pid, Offline: offline}}, nil
	})
	if err == nil {
		b.n.log.Warn("operator: partition offline state changed", "table", table, "partition", pid, "offline", offline, "txnseq", f.TxnSeq)
	}
	return f, err
}

// Drain marks a server draining, or clears the mark. Only a server that is
// live or listed in some METADATA may be marked; any mark may be cleared.
func (b backend) Drain(ctx context.Context, server string, on bool) (api.DrainResponse, error) {
	n := b.n
	if on {
		h, err := n.health(ctx)
		if err != nil {
			return api.DrainResponse{}, err
		}
		if !slices.ContainsFunc(h.Servers, func(s api.ServerHealth) bool { return s.ID == server }) {
			return api.DrainResponse{}, fmt.Errorf("%w: %q is neither live nor listed in any partition", tsdbhttp.ErrServerNotFound, server)
		}
	}
	since, err := operator.SetDraining(ctx, n.etcd, n.cfg.EtcdPrefix, server, on, time.Now())
	if err != nil {
		return api.DrainResponse{}, fmt.Errorf("%w: %w", tsdbhttp.ErrUnavailable, err)
	}
	n.log.Warn("operator: drain mark changed", "server", server, "draining", on)
	return api.DrainResponse{Server: server, Draining: on, Since: since}, nil
}

// Rebalance records a rebalance request; the master acts on it.
func (b backend) Rebalance(ctx context.Context) (api.RebalanceResponse, error) {
	now := time.Now().UTC()
	if err := operator.RequestRebalance(ctx, b.n.etcd, b.n.cfg.EtcdPrefix, now); err != nil {
		return api.RebalanceResponse{}, fmt.Errorf("%w: %w", tsdbhttp.ErrUnavailable, err)
	}
	return api.RebalanceResponse{RequestedAt: now}, nil
}

// Health reports the cluster's servers and problems.
func (b backend) Health(ctx context.Context) (api.HealthResponse, error) {
	return b.n.health(ctx)
}

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
	// lost are the lost-placement marks, by placement (node/lost.go).
	lost   map[uuid.UUID]operator.LostMark
	master string
	tables []tableView
}

// readView reads the cluster's state: the live servers, the drain marks,
// the lost-placement marks, the master, and each table's METADATA: with fresh, the current one (read
// from etcd and a metadata server), else the router's (kept current by the
// table watch; the master's changes check the current one when sent).
func (n *Node) readView(ctx context.Context, fresh bool) (*clusterView, error) {
	live, err := n.dir.refresh(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: read the live servers: %w", tsdbhttp.ErrUnavailable, err)
	}
	draining, err := operator.Draining(ctx, n.etcd, n.cfg.EtcdPrefix)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", tsdbhttp.ErrUnavailable, err)
	}
	lost, err := operator.Lost(ctx, n.etcd, n.cfg.EtcdPrefix)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", tsdbhttp.ErrUnavailable, err)
	}
	master, err := election.Leader(ctx, n.etcd, n.cfg.EtcdPrefix)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", tsdbhttp.ErrUnavailable, err)
	}
	cfgs, err := n.meta.ListTables(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: list tables: %w", tsdbhttp.ErrUnavailable, err)
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
			c, f, err = n.committer.Load(ctx, cfg.Name)
		} else {
			c, f, err = n.router.Table(ctx, cfg.Name)
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

// health reads the cluster and reports it.
func (n *Node) health(ctx context.Context) (api.HealthResponse, error) {
	v, err := n.readView(ctx, true)
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
				lost = append(lost, pl.ServerID) // live, but its copy is gone (node/lost.go)
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
