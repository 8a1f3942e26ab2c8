package node

import (
	"context"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/replica"
)

// What node's tests reach of package replica, under their old names.

// ReplicaStatus is what partition discovery last answered for one local
// replica (replica.Status, under the name the tests use).
type ReplicaStatus = replica.Status

// Planner plans one METADATA change (replica.Planner).
type Planner = replica.Planner

// RequestChange commits one METADATA change (replica.Server.RequestChange).
func (n *Node) RequestChange(ctx context.Context, table string, plan Planner) (*metadata.File, error) {
	return n.replica.RequestChange(ctx, table, plan)
}

// ReplicaStatuses returns the last discovery answer of every local replica
// (replica.Server.Statuses).
func (n *Node) ReplicaStatuses() []ReplicaStatus { return n.replica.Statuses() }

// SplitPartition starts a split by hand (replica.Server.SplitPartition).
func (n *Node) SplitPartition(ctx context.Context, table string, pid uuid.UUID, at *int64) (*metadata.File, error) {
	return n.replica.SplitPartition(ctx, table, pid, at)
}

func (n *Node) syncedSeq(table string) uint64 { return n.replica.SyncedSeq(table) }
