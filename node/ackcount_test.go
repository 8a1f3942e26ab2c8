package node

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	tsdbhttp "github.com/tsdb/tsdb/http"
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

// TestPlanAcks (issue 14 item 3): W counts the table's replication factor,
// never fewer copies because servers[] lists fewer (joining servers are not
// listed), and a coordinator that servers[] no longer lists under its
// placement does not count its own copy.
func TestPlanAcks(t *testing.T) {
	mine, other := uuid.New(), uuid.New()
	list := func(ids ...string) []metadata.Placement {
		var out []metadata.Placement
		for _, id := range ids {
			pl := metadata.Placement{ServerID: id, PlacementID: uuid.New()}
			if id == "me" {
				pl.PlacementID = mine
			}
			out = append(out, pl)
		}
		return out
	}
	tests := []struct {
		name        string
		consistency string
		rf          int
		servers     []metadata.Placement
		need, peers int // W, and how many of the others must confirm
		others      string
	}{
		{"quorum, full", api.ConsistencyQuorum, 3, list("me", "b", "c"), 2, 1, "[b c]"},
		{"default is quorum", "", 3, list("me", "b", "c"), 2, 1, "[b c]"},
		{"quorum, two listed (one joining)", api.ConsistencyQuorum, 3, list("me", "b"), 2, 1, "[b]"},
		{"quorum, one listed (two joining)", api.ConsistencyQuorum, 3, list("me"), 2, 1, "[]"},
		{"all, one listed", api.ConsistencyAll, 3, list("me"), 3, 2, "[]"},
		{"one, one listed", api.ConsistencyOne, 3, list("me"), 1, 0, "[]"},
		{"quorum, a move lists RF+1", api.ConsistencyQuorum, 3, list("me", "b", "c", "d"), 3, 2, "[b c d]"},
		{"all, a move lists RF+1", api.ConsistencyAll, 3, list("me", "b", "c", "d"), 4, 3, "[b c d]"},
		{"quorum, RF 5", api.ConsistencyQuorum, 5, list("me", "b", "c", "d", "e"), 3, 2, "[b c d e]"},
		{"quorum, RF 1", api.ConsistencyQuorum, 1, list("me"), 1, 0, "[]"},
		{"coordinator not listed", api.ConsistencyQuorum, 3, list("b", "c", "d"), 2, 2, "[b c d]"},
		{"one, coordinator not listed", api.ConsistencyOne, 3, list("b", "c", "d"), 1, 1, "[b c d]"},
		{"coordinator's server listed under another placement", api.ConsistencyQuorum, 3,
			[]metadata.Placement{{ServerID: "me", PlacementID: other}, {ServerID: "b", PlacementID: uuid.New()}, {ServerID: "c", PlacementID: uuid.New()}},
			2, 2, "[b c]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan, err := planAcks(tt.consistency, tt.rf, tt.servers, "me", mine)
			if err != nil {
				t.Fatal(err)
			}
			if plan.need != tt.need || plan.fromOthers() != tt.peers || fmt.Sprint(plan.others) != tt.others {
				t.Fatalf("planAcks = need %d, %d from others %v; want need %d, %d from others %s",
					plan.need, plan.fromOthers(), plan.others, tt.need, tt.peers, tt.others)
			}
		})
	}
	if _, err := planAcks("most", 3, list("me"), "me", mine); !errors.Is(err, tsdbhttp.ErrBadRequest) {
		t.Fatalf("unknown consistency: %v, want ErrBadRequest", err)
	}
}
