package frontend

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/cluster/membership"
	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/metadata"
)

// The cluster's and the operator's calls.

// Cluster describes the live servers: their load as they publish it, the
// master and the drain marks.
func (fe *Frontend) Cluster(ctx context.Context) (api.ClusterResponse, error) {
	live, err := fe.servers.Refresh(ctx)
	if err != nil {
		return api.ClusterResponse{}, fmt.Errorf("%w: read the live servers: %w", errUnavailable, err)
	}
	master, err := fe.marks.Leader(ctx)
	if err != nil {
		return api.ClusterResponse{}, fmt.Errorf("%w: %w", errUnavailable, err)
	}
	draining, err := fe.marks.Draining(ctx)
	if err != nil {
		return api.ClusterResponse{}, fmt.Errorf("%w: %w", errUnavailable, err)
	}
	resp := api.ClusterResponse{Servers: make([]api.ServerInfo, 0, len(live))}
	for _, i := range live {
		_, drain := draining[i.ID]
		resp.Servers = append(resp.Servers, api.ServerInfo{ID: i.ID, Addr: i.Addr, StartedAt: i.StartedAt,
			Replicas: i.Summary.Partitions, Bytes: i.Summary.Bytes, InsertRowsPerSec: i.Summary.InsertRowsPerSec,
			Master: i.ID == master, Draining: drain,
			SmearQueueRows: i.Summary.SmearQueueRows, SmearQueueBytes: i.Summary.SmearQueueBytes})
	}
	return resp, nil
}

// The operator's API (tsdb admin offline, online, drain, undrain,
// rebalance, stale): each call records the operator's request where the
// master and the health report see it until it is undone.

// SetOffline commits SET_OFFLINE of a current partition.
func (fe *Frontend) SetOffline(ctx context.Context, table string, pid uuid.UUID, offline bool) (*metadata.File, error) {
	f, err := fe.changes.RequestChange(ctx, table, func(metadata.TableConfig, *metadata.File) (metadata.Op, error) {
		return metadata.Op{Type: metadata.OpSetOffline, SetOffline: &metadata.SetOfflineOp{PartitionID: pid, Offline: offline}}, nil
	})
	if err == nil {
		fe.log.Warn("operator: partition offline state changed", "table", table, "partition", pid, "offline", offline, "txnseq", f.TxnSeq)
	}
	return f, err
}

// Drain marks a server draining, or clears the mark. Only a server that is
// live or listed in some METADATA may be marked; any mark may be cleared.
func (fe *Frontend) Drain(ctx context.Context, server string, on bool) (api.DrainResponse, error) {
	if on {
		h, err := fe.health.Health(ctx)
		if err != nil {
			return api.DrainResponse{}, err
		}
		if !slices.ContainsFunc(h.Servers, func(s api.ServerHealth) bool { return s.ID == server }) {
			return api.DrainResponse{}, fmt.Errorf("%w: %q is neither live nor listed in any partition", errServerNotFound, server)
		}
	}
	since, err := fe.marks.SetDraining(ctx, server, on, time.Now())
	if err != nil {
		return api.DrainResponse{}, fmt.Errorf("%w: %w", errUnavailable, err)
	}
	fe.log.Warn("operator: drain mark changed", "server", server, "draining", on)
	return api.DrainResponse{Server: server, Draining: on, Since: since}, nil
}

// Rebalance records a rebalance request; the master acts on it.
func (fe *Frontend) Rebalance(ctx context.Context) (api.RebalanceResponse, error) {
	now := time.Now().UTC()
	if err := fe.marks.RequestRebalance(ctx, now); err != nil {
		return api.RebalanceResponse{}, fmt.Errorf("%w: %w", errUnavailable, err)
	}
	return api.RebalanceResponse{RequestedAt: now}, nil
}

// Health reports the cluster's servers and problems.
func (fe *Frontend) Health(ctx context.Context) (api.HealthResponse, error) {
	return fe.health.Health(ctx)
}

// Replicas gathers the replica states of every partition of a table from
// the servers holding them.
func (fe *Frontend) Replicas(ctx context.Context, table string) ([]wire.PartitionReplicas, error) {
	_, file, err := fe.committer.Load(ctx, table)
	if err != nil {
		return nil, err
	}
	servers := map[string]bool{}
	for _, p := range file.Partitions {
		for _, pl := range slices.Concat(p.Servers, p.Joining) {
			servers[pl.ServerID] = true
		}
	}
	byPlacement := map[uuid.UUID]wire.ReplicaStatus{}
	for id := range servers {
		resp, err := fe.replicas.ReplicasOn(ctx, id, wire.ReplicasRequest{Table: table, Counts: true})
		if err != nil {
			fe.log.Warn("replica states of a server unavailable", "server", id, "table", table, "err", err)
			continue
		}
		for _, r := range resp.Replicas {
			byPlacement[r.Placement] = r
		}
	}
	out := make([]wire.PartitionReplicas, 0, len(file.Partitions))
	for _, p := range file.Partitions {
		pr := wire.PartitionReplicas{Partition: p, Replicas: []wire.ReplicaStatus{}}
		for _, pl := range slices.Concat(p.Servers, p.Joining) {
			if r, ok := byPlacement[pl.PlacementID]; ok {
				pr.Replicas = append(pr.Replicas, r)
			} else {
				pr.Replicas = append(pr.Replicas, wire.ReplicaStatus{Server: pl.ServerID, Table: table, PartitionID: p.ID,
					Placement: pl.PlacementID, Begin: p.Begin, End: p.End, Rows: -1, Targets: []wire.TargetStatus{}})
			}
		}
		out = append(out, pr)
	}
	return out, nil
}

// JoinServer commits JOIN_SERVER (or FORCE_JOIN) of a live server to a
// partition, under a fresh placement id.
func (fe *Frontend) JoinServer(ctx context.Context, table string, partitionID uuid.UUID, req api.ServerChangeRequest) (*metadata.File, error) {
	if !fe.isLive(ctx, req.Server) {
		return nil, fmt.Errorf("%w: server %q is not live", metadata.ErrInvalidOp, req.Server)
	}
	pl := metadata.Placement{ServerID: req.Server, PlacementID: uuid.New()}
	return fe.changes.RequestChange(ctx, table, func(metadata.TableConfig, *metadata.File) (metadata.Op, error) {
		if req.Force {
			return metadata.Op{Type: metadata.OpForceJoin, ForceJoin: &metadata.ForceJoinOp{PartitionID: partitionID, Placement: pl}}, nil
		}
		return metadata.Op{Type: metadata.OpJoinServer, JoinServer: &metadata.JoinServerOp{PartitionID: partitionID, Placement: pl}}, nil
	})
}

// SplitPartition starts a split of a partition by hand (the replica
// code's SplitPartition).
func (fe *Frontend) SplitPartition(ctx context.Context, table string, partitionID uuid.UUID, at *int64) (*metadata.File, error) {
	return fe.changes.SplitPartition(ctx, table, partitionID, at)
}

// RemoveServer commits REMOVE_SERVER; a server that is not live counts as
// dead (which lets the op go below the replication factor).
func (fe *Frontend) RemoveServer(ctx context.Context, table string, partitionID uuid.UUID, req api.ServerChangeRequest) (*metadata.File, error) {
	dead := !fe.isLive(ctx, req.Server)
	return fe.changes.RequestChange(ctx, table, func(cfg metadata.TableConfig, _ *metadata.File) (metadata.Op, error) {
		return metadata.Op{Type: metadata.OpRemoveServer, RemoveServer: &metadata.RemoveServerOp{
			PartitionID: partitionID, ServerID: req.Server, Dead: dead, ReplicationFactor: cfg.ReplicationFactor,
		}}, nil
	})
}

// isLive reports whether a server is in the membership list now.
func (fe *Frontend) isLive(ctx context.Context, id string) bool {
	live, err := fe.servers.Refresh(ctx)
	if err != nil {
		live = fe.servers.Live()
	}
	return slices.ContainsFunc(live, func(i membership.Info) bool { return i.ID == id })
}
