package node

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tsdb/tsdb/metadata"
)

// TestReplicationQuotaSkipsFailingCopy: with the replication quota on, a
// copy whose pushes fail is not waited for, so no coordinator refuses an
// insert for it (one waiting for it would, once half the ack timeout
// passed, and the front end would go on to another coordinator), and the
// copy gets every row once it is reachable again.
func TestReplicationQuotaSkipsFailingCopy(t *testing.T) {
	var blocked atomic.Bool
	c := startCluster(t, 3, func(cfg *Config) {
		cfg.ReplicationQuota = 100
		cfg.AckTimeout = 4 * time.Second
		cfg.knobs.BlockPush = func(tg metadata.Target) bool { return tg.ServerID == "s3" && blocked.Load() }
	})
	c.createTable("s1", "cpu", 3)
	c.insertLP("s1", "cpu", lpBatch("a", 0, 500, 50))
	waitFor(t, "every replica holding the first batch", func() bool { return c.converged("cpu", 500, "s1", "s2", "s3") })

	blocked.Store(true)
	for i := 1; i <= 4; i++ {
		c.insertLP("s1", "cpu", lpBatch("a", int64(i*500), 500, 50)) // fails the test unless 204
	}
	blocked.Store(false)
	waitFor(t, "s3 catching up", func() bool { return c.converged("cpu", 2500, "s1", "s2", "s3") })
	for id, n := range c.nodes {
		if got := testutil.ToFloat64(n.rmetrics.QuotaRefusals); got != 0 {
			t.Errorf("%s refused %v inserts waiting for the replication quota", id, got)
		}
	}
}
