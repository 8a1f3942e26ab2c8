package node

import (
	"context"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/cluster/membership"
	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/metadata"
)

// Replicas gathers the replica states of every partition of a table from
// the servers holding them.
func (b backend) Replicas(ctx context.Context, table string) ([]wire.PartitionReplicas, error) {
	n := b.n
	_, file, err := n.committer.Load(ctx, table)
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
		resp, err := n.replicasOn(ctx, id, wire.ReplicasRequest{Table: table, Counts: true})
		if err != nil {
			n.log.Warn("replica states of a server unavailable", "server", id, "table", table, "err", err)
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
func (b backend) JoinServer(ctx context.Context, table string, partitionID uuid.UUID, req api.ServerChangeRequest) (*metadata.File, error) {
	if !b.n.isLive(ctx, req.Server) {
		return nil, fmt.Errorf("%w: server %q is not live", metadata.ErrInvalidOp, req.Server)
	}
	pl := metadata.Placement{ServerID: req.Server, PlacementID: uuid.New()}
	return b.n.RequestChange(ctx, table, func(metadata.TableConfig, *metadata.File) (metadata.Op, error) {
		if req.Force {
			return metadata.Op{Type: metadata.OpForceJoin, ForceJoin: &metadata.ForceJoinOp{PartitionID: partitionID, Placement: pl}}, nil
		}
		return metadata.Op{Type: metadata.OpJoinServer, JoinServer: &metadata.JoinServerOp{PartitionID: partitionID, Placement: pl}}, nil
	})
}

// SplitPartition starts a split of a partition by hand (Node.SplitPartition).
func (b backend) SplitPartition(ctx context.Context, table string, partitionID uuid.UUID, at *int64) (*metadata.File, error) {
	return b.n.SplitPartition(ctx, table, partitionID, at)
}

// RemoveServer commits REMOVE_SERVER; a server that is not live counts as
// dead (which lets the op go below the replication factor).
func (b backend) RemoveServer(ctx context.Context, table string, partitionID uuid.UUID, req api.ServerChangeRequest) (*metadata.File, error) {
	dead := !b.n.isLive(ctx, req.Server)
	return b.n.RequestChange(ctx, table, func(cfg metadata.TableConfig, _ *metadata.File) (metadata.Op, error) {
		return metadata.Op{Type: metadata.OpRemoveServer, RemoveServer: &metadata.RemoveServerOp{
			PartitionID: partitionID, ServerID: req.Server, Dead: dead, ReplicationFactor: cfg.ReplicationFactor,
		}}, nil
	})
}

// isLive reports whether a server is in the membership list now.
func (n *Node) isLive(ctx context.Context, id string) bool {
	live, err := n.dir.refresh(ctx)
	if err != nil {
		live = n.dir.live()
	}
	return slices.ContainsFunc(live, func(i membership.Info) bool { return i.ID == id })
}
