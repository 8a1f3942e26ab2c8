package node

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tsdb/tsdb/cluster/rpc"
	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/replication"
)

// TestClockOffsetRefusesWrites breaks rule 2 on purpose: s3's clock runs 2 s
// ahead of its peers'. Once pushes have shown it, s3 refuses to coordinate
// writes (its versions would beat newer writes elsewhere), an insert sent
// to it is coordinated by another replica instead, and s1, which sees one
// bad peer of two, keeps coordinating.
func TestClockOffsetRefusesWrites(t *testing.T) {
	c := startCluster(t, 3, func(cfg *Config) {
		if cfg.ID == "s3" {
			cfg.clockSkew = 2 * time.Second
		}
	})
	c.createTable("s1", "cpu", 3)
	// Pushes from s1 and s2 reach s3 (and s3's to them).
	c.insertLP("s1", "cpu", lpBatch("a", 0, 10, 10))
	c.insertLP("s2", "cpu", lpBatch("b", 1_000_000, 10, 10))
	waitFor(t, "s3 seeing both peers' clocks", func() bool {
		return c.nodes["s3"].clocks.check(time.Now().Add(2*time.Second), 2) != nil
	})
	rep := c.replicaStates("s3", "cpu")[0]
	err := c.rpc.Call(context.Background(), c.nodes["s3"].Addr(), api.PathInsert, api.ForwardInsertRequest{
		Table: "cpu", PartitionID: rep.PartitionID, ToPlacement: rep.Placement, TxnSeq: rep.TxnSeq, Count: 1,
		Rows: replication.AppendRows(nil, []model.Row{{Time: 5, Series: "x", Fields: []model.Field{{Name: "v", Value: model.Float(1)}}}}),
	}, nil)
	var se *rpc.StatusError
	if !errors.As(err, &se) || se.Status != 503 || !strings.Contains(se.Message, "clock") {
		t.Fatalf("a write coordinated by the server with the bad clock: %v, want 503 naming the clock", err)
	}
	// Through s3's front end the insert still succeeds: another replica
	// coordinates it, so its version is not s3's.
	c.insertLP("s3", "cpu", lpBatch("c", 2_000_000, 5, 5))
	var stamped []model.Row
	waitFor(t, "the rows on s1", func() bool {
		entries, err := c.nodes["s1"].store.Replicas()[0].ReadLog(0, 0)
		if err != nil {
			t.Fatal(err)
		}
		stamped = stamped[:0]
		for _, e := range entries {
			if strings.HasPrefix(e.Row.Series, "m,s=c-") {
				stamped = append(stamped, e.Row)
			}
		}
		return len(stamped) == 5
	})
	for _, r := range stamped {
		if r.Fields[0].Version.Node == model.NodeID("s3") {
			t.Fatalf("row %v was stamped by s3, whose clock is off", r)
		}
	}
	// s1 sees one bad peer of two: it keeps coordinating.
	if err := c.nodes["s1"].clocks.check(time.Now(), 2); err != nil {
		t.Fatalf("s1 refuses: %v", err)
	}
	c.insertLP("s1", "cpu", lpBatch("d", 3_000_000, 5, 5))
}
