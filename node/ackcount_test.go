package node

import (
	"context"
	"testing"
	"time"

	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/metadata"
)

// TestQuorumCountsReplicationFactor (issue 14 item 3): W comes from the
// table's replication factor, not from how many servers the partition
// lists now. A RF 3 partition down to one listed server (the two others
// removed as dead) cannot acknowledge a quorum insert with that one copy,
// nor answer a quorum read from it alone; consistency one still works.
func TestQuorumCountsReplicationFactor(t *testing.T) {
	c := startCluster(t, 3, func(cfg *Config) { cfg.AckTimeout = time.Second })
	c.createTable("s1", "rf", 3)
	c.insertLP("s1", "rf", lpBatch("before", 0, 10, 10))
	waitFor(t, "first convergence", func() bool { return c.converged("rf", 10, "s1", "s2", "s3") })

	// s2 and s3 are removed as if dead (they stay up: the table's
	// metadata servers keep their majority).
	p := c.currentFile("s1", "rf").Partitions[0]
	for _, id := range []string{"s2", "s3"} {
		_, err := c.nodes["s1"].RequestChange(context.Background(), "rf", func(metadata.TableConfig, *metadata.File) (metadata.Op, error) {
			return metadata.Op{Type: metadata.OpRemoveServer, RemoveServer: &metadata.RemoveServerOp{
				PartitionID: p.ID, ServerID: id, Dead: true, ReplicationFactor: 3}}, nil
		})
		if err != nil {
			t.Fatalf("remove %s: %v", id, err)
		}
	}
	waitFor(t, "s1's METADATA listing only s1", func() bool {
		f := c.currentFile("s1", "rf")
		return len(f.Partitions) == 1 && len(f.Partitions[0].Servers) == 1 && f.Partitions[0].Servers[0].ServerID == "s1"
	})
	cl := c.client("s1")

	r := cl.do("POST", "/write?db=rf", lpBatch("quorum", 1_000_000, 5, 5))
	if r.status != 503 {
		t.Errorf("quorum insert into a RF 3 partition with one server: %d %s, want 503 (W=2 of RF 3, one copy)", r.status, r.body)
	}
	r = cl.do("POST", "/write?db=rf", lpBatch("one", 2_000_000, 5, 5), api.HeaderConsistency, api.ConsistencyOne)
	if r.status != 204 {
		t.Errorf("consistency one insert: %d %s, want 204", r.status, r.body)
	}
	r = cl.do("GET", "/api/v1/tables/rf/query?limit=1000", nil, api.HeaderConsistency, api.ConsistencyQuorum)
	if r.status == 200 {
		t.Errorf("quorum read of a RF 3 partition answered by its one server alone: %d %s", r.status, r.body)
	}
	r = cl.do("GET", "/api/v1/tables/rf/query?limit=1000", nil)
	if r.status != 200 {
		t.Errorf("default read: %d %s, want 200", r.status, r.body)
	}
}
