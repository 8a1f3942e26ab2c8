package node

import (
	"context"
	"time"
)

// lead runs while this server is the elected master (DESIGN.md section 9),
// under a context that ends as soon as its lease may have lapsed. The
// master's duties (re-replication, rebalancing, pre-split, retention) come
// with issue 6; today it records the term, which GET /api/v1/cluster and
// tsdb admin servers show through etcd.
func (n *Node) lead(ctx context.Context) {
	n.isMaster.Store(true)
	defer n.isMaster.Store(false)
	start := time.Now()
	n.log.Info("master term started")
	<-ctx.Done()
	n.log.Info("master term ended", "lasted", time.Since(start).Round(time.Millisecond))
}

// IsMaster reports whether this server is the elected master now.
func (n *Node) IsMaster() bool { return n.isMaster.Load() }
