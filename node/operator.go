package node

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

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
		h, err := n.master.Health(ctx)
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
	return b.n.master.Health(ctx)
}
