package operator

import (
	"context"
	"time"

	"github.com/google/uuid"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tsdb/tsdb/cluster/election"
)

// Marks reads and writes the marks this package stores in etcd under
// Prefix, and reads the elected leader (cluster/election): the master's
// and the front end's view of etcd (their Marks interfaces).
type Marks struct {
	Client *clientv3.Client
	Prefix string
}

// Leader returns the elected master's server id (election.Leader).
func (m Marks) Leader(ctx context.Context) (string, error) {
	return election.Leader(ctx, m.Client, m.Prefix)
}

// Draining returns the drain marks (Draining).
func (m Marks) Draining(ctx context.Context) (map[string]time.Time, error) {
	return Draining(ctx, m.Client, m.Prefix)
}

// Lost returns the lost-placement marks (Lost).
func (m Marks) Lost(ctx context.Context) (map[uuid.UUID]LostMark, error) {
	return Lost(ctx, m.Client, m.Prefix)
}

// RebalanceRequest returns the last rebalance request's revision
// (RebalanceRequest).
func (m Marks) RebalanceRequest(ctx context.Context) (int64, error) {
	return RebalanceRequest(ctx, m.Client, m.Prefix)
}

// SetDraining sets or clears server's drain mark (SetDraining).
func (m Marks) SetDraining(ctx context.Context, server string, on bool, now time.Time) (time.Time, error) {
	return SetDraining(ctx, m.Client, m.Prefix, server, on, now)
}

// RequestRebalance records a rebalance request (RequestRebalance).
func (m Marks) RequestRebalance(ctx context.Context, now time.Time) error {
	return RequestRebalance(ctx, m.Client, m.Prefix, now)
}
