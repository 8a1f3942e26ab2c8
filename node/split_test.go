package node

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/partition"
)

// TestSplitBeginMovesData covers the data movement of a split in progress
// (groundwork for issue 5: nothing commits SPLIT_BEGIN on its own yet):
// every server creates the LOAD replicas of the children it is listed for,
// the parent replicas push each child the rows of its range, the split
// marks are reached, and an insert acknowledged during the split is already
// on a majority of its child's servers.
func TestSplitBeginMovesData(t *testing.T) {
	var blocked atomic.Bool // pushes to the children on s2 and s3 fail while set
	c := startCluster(t, 3, func(cfg *Config) {
		cfg.AckTimeout = 2 * time.Second
		cfg.blockPush = func(t metadata.Target) bool {
			return blocked.Load() && t.Kind == metadata.TargetSplit && t.ServerID != "s1"
		}
	})
	c.createTable("s1", "cpu", 3)
	c.insertLP("s1", "cpu", lpBatch("pre", 0, 100, 10)) // times 0..99
	_, f, _ := c.nodes["s1"].backendMetadata("cpu", "")
	parent := f.Partitions[0]
	children := []metadata.SplitChild{{ID: uuid.New()}, {ID: uuid.New()}}
	for i := range children {
		for _, s := range []string{"s1", "s2", "s3"} {
			children[i].Servers = append(children[i].Servers, metadata.Placement{ServerID: s, PlacementID: uuid.New()})
		}
	}
	_, err := c.nodes["s2"].RequestChange(context.Background(), "cpu", func(metadata.TableConfig, *metadata.File) (metadata.Op, error) {
		return metadata.Op{Type: metadata.OpSplitBegin, SplitBegin: &metadata.SplitBeginOp{
			PartitionID: parent.ID, Points: []int64{50}, Children: children,
		}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Each server holds the parent (SERVE) and both children (LOAD).
	for id, n := range c.nodes {
		waitFor(t, id+" holding both children as LOAD", func() bool {
			load := 0
			for _, st := range n.ReplicaStatuses() {
				if st.Discovery.Status == metadata.StatusLoad {
					load++
				}
			}
			return load == 2
		})
	}
	// An insert during the split is acknowledged only once a majority of
	// its child's servers hold it: with the children on s2 and s3 cut off,
	// a quorum of the parent is not enough.
	blocked.Store(true)
	r := c.client("s1").do("POST", "/write?db=cpu", []byte("blocked v=1 20\n"))
	if r.status != 503 || !strings.Contains(string(r.body), api.CodeOutcomeUnknownRows) {
		t.Fatalf("insert with the child's majority unreachable: %d %s, want 503 %s", r.status, r.body, api.CodeOutcomeUnknownRows)
	}
	blocked.Store(false)
	c.insertLP("s3", "cpu", []byte("during v=1 10\n"))
	holding := 0
	for _, n := range c.nodes {
		if rep, ok := n.store.Replica(children[0].Servers[slicesIndex(children[0].Servers, n.ID())].PlacementID); ok {
			rows, _, err := rep.Scan(partition.ScanQuery{From: 10, To: 11, Series: "during", Limit: 1})
			if err == nil && len(rows) == 1 {
				holding++
			}
		}
	}
	if holding < 2 {
		t.Fatalf("an insert acknowledged during the split is on %d of 3 servers of its child, want a majority", holding)
	}
	// Every child replica ends with exactly the rows of its range, and the
	// parent replicas report their marks reached.
	for _, n := range c.nodes {
		for ci, want := range []int64{52, 50} { // child 0 also got "blocked" and "during"
			pl := children[ci].Servers[slicesIndex(children[ci].Servers, n.ID())].PlacementID
			waitFor(t, fmt.Sprintf("%s's replica of child %d", n.ID(), ci), func() bool {
				rep, ok := n.store.Replica(pl)
				if !ok {
					return false
				}
				sum, err := rep.Checksum()
				return err == nil && sum.Rows == want
			})
		}
		rep, _ := n.store.Replica(parent.Servers[slicesIndex(parent.Servers, n.ID())].PlacementID)
		lo, hi := int64(math.MinInt64), int64(50)
		inParent, err := rep.ChecksumRange(lo, hi)
		if err != nil {
			t.Fatal(err)
		}
		child, _ := n.store.Replica(children[0].Servers[slicesIndex(children[0].Servers, n.ID())].PlacementID)
		inChild, _ := child.Checksum()
		if inParent != inChild {
			t.Fatalf("%s: child 0 holds %+v, the parent's range %+v", n.ID(), inChild, inParent)
		}
		waitFor(t, n.ID()+"'s split marks reached", func() bool {
			resp, err := internal{n}.Replicas(context.Background(), api.ReplicasRequest{Table: "cpu"})
			if err != nil {
				return false
			}
			reached := 0
			for _, r := range resp.Replicas {
				for _, tg := range r.Targets {
					if tg.Kind == metadata.TargetSplit && tg.MarkReached {
						reached++
					}
				}
			}
			// 2 children × 3 servers: this server's own child replicas are
			// targets too (other placements than the parent's).
			return reached == 6
		})
	}
}

// slicesIndex is the index of server's placement in ps.
func slicesIndex(ps []metadata.Placement, server string) int {
	for i, p := range ps {
		if p.ServerID == server {
			return i
		}
	}
	return -1
}
