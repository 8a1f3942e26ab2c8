package node

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/model"
)

// TestSplitMovesDataAndFinalizes covers a split from SPLIT_BEGIN on (the
// trigger is not built yet, so the test commits SPLIT_BEGIN itself): every
// server creates LOAD replicas of the children it is listed for; while the
// children on two servers are cut off, an insert is not acknowledged (a
// quorum of the parent is not enough, a majority of the covering child must
// hold it) and the split does not finalize (rule 7); once they are
// reachable, the parents push each child its range, SPLIT_FINALIZE
// commits, the parent replicas are dropped, and every row is in exactly one
// child, answered once through every server.
func TestSplitMovesDataAndFinalizes(t *testing.T) {
	var blocked atomic.Bool // pushes to the children on s2 and s3 fail while set
	blocked.Store(true)
	c := startCluster(t, 3, func(cfg *Config) {
		cfg.AckTimeout = 2 * time.Second
		cfg.knobs.BlockPush = func(t metadata.Target) bool {
			return blocked.Load() && t.Kind == metadata.TargetSplit && t.ServerID != "s1"
		}
	})
	c.createTable("s1", "cpu", 3)
	c.insertLP("s1", "cpu", lpBatch("pre", 0, 100, 10)) // times 0..99
	_, f, _ := c.nodes["s1"].backendMetadata("cpu", "")
	parent := f.Partitions[0]
	children := splitChildren(2, "s1", "s2", "s3")
	c.beginSplit("s2", "cpu", parent.ID, 50, children)
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
	r := c.client("s1").do("POST", "/write?db=cpu", []byte("blocked v=1 20\n"))
	if code, _ := errorOf(t, r); r.status != 503 || code != api.CodeOutcomeUnknownRows {
		t.Fatalf("insert with the child's majority unreachable: %d %s, want 503 %s", r.status, r.body, api.CodeOutcomeUnknownRows)
	}
	if _, f, _ := c.nodes["s1"].backendMetadata("cpu", ""); len(f.Partitions) != 1 || f.Partitions[0].Split == nil {
		t.Fatal("the split finalized while two of each child's three servers were cut off")
	}
	blocked.Store(false)
	c.insertLP("s3", "cpu", []byte("during v=1 10\n"))
	waitFor(t, "SPLIT_FINALIZE", func() bool {
		_, f, err := c.nodes["s1"].backendMetadata("cpu", "")
		return err == nil && len(f.Partitions) == 2 && f.Partitions[0].ID == children[0].ID && f.Partitions[1].ID == children[1].ID
	})
	for id, n := range c.nodes {
		waitFor(t, id+" dropping the parent and serving both children", func() bool {
			sts := n.ReplicaStatuses()
			serving := 0
			for _, st := range sts {
				if st.PartitionID == parent.ID {
					return false
				}
				if st.Discovery.Status == metadata.StatusServe {
					serving++
				}
			}
			return serving == 2 && len(n.store.Replicas()) == 2
		})
		for ci, want := range []int64{52, 50} { // child 0 also got "blocked" and "during"
			c.waitReplicaRows(children[ci].Servers[slicesIndex(children[ci].Servers, id)], want)
		}
	}
	want := c.queryAll("s1", "cpu")
	var resp api.RawQueryResponse
	if err := json.Unmarshal([]byte(want), &resp); err != nil || len(resp.Rows) != 102 {
		t.Fatalf("%d rows after the split, want 102 (err %v)", len(resp.Rows), err)
	}
	for _, id := range []string{"s2", "s3"} {
		if got := c.queryAll(id, "cpu"); got != want {
			t.Fatalf("query via %s differs after the split", id)
		}
	}
	c.insertLP("s2", "cpu", []byte("after v=1 70\n"))
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

// TestSplitHoldsPushFromOlderView: a coordinator that has not learned of a
// split yet acknowledges an insert on its peers' push confirmations; a
// peer that knows of the split holds its confirmation until the children
// have the rows. With the children cut off, the insert through the
// unaware coordinator is not acknowledged (it would otherwise be in no
// child, and a finalize could hide it).
func TestSplitHoldsPushFromOlderView(t *testing.T) {
	var blind, blocked atomic.Bool // s1 misses table events; split pushes fail
	c := startCluster(t, 3, func(cfg *Config) {
		cfg.AckTimeout = 2 * time.Second
		cfg.SplitCheckInterval = time.Hour
		cfg.knobs.BlockPush = func(t metadata.Target) bool { return blocked.Load() && t.Kind == metadata.TargetSplit }
		if cfg.ID == "s1" {
			cfg.ReconcileInterval = time.Hour
			cfg.knobs.MissEvent = func(metadata.TableEvent) bool { return blind.Load() }
		}
	})
	c.createTable("s1", "cpu", 3)
	c.insertLP("s1", "cpu", lpBatch("pre", 0, 100, 10))
	_, f, _ := c.nodes["s1"].backendMetadata("cpu", "")
	blind.Store(true)
	blocked.Store(true)
	if _, err := c.nodes["s2"].SplitPartition(context.Background(), "cpu", f.Partitions[0].ID, nil); err != nil {
		t.Fatal(err)
	}
	c.waitLearnedSplit("cpu", "s2", "s3")
	if _, f, _ := c.nodes["s1"].router.Cached("cpu"); f.Partitions[0].Split != nil {
		t.Fatal("setup: s1 learned of the split")
	}
	r := c.client("s1").do("POST", "/write?db=cpu", []byte("unaware v=1 30\n"))
	if r.status != 503 {
		t.Fatalf("insert through the unaware s1 with the children cut off: %d %s, want 503", r.status, r.body)
	}
	blocked.Store(false)
	blind.Store(false)
	waitFor(t, "SPLIT_FINALIZE", func() bool {
		_, f, err := c.nodes["s2"].backendMetadata("cpu", "")
		return err == nil && len(f.Partitions) == 2
	})
}

// TestSplitHoldsRelayedPushFromOlderView: an insert coordinated by a
// server that has not learned of a split (s1) is not acknowledged while
// the split's children are cut off, in the two ways its copies can reach
// the other parent replicas without the children:
//
//   - "relayed": s1 stays unaware; s2 holds s1's push and relays the row
//     to s3 before s1's own push reaches s3, which then changes nothing
//     there. s3 must hold its confirmation all the same (confirmSplitPush).
//   - "learns mid-insert": s1 learns of the split from a peer's push while
//     its insert waits, so its later push to s3 carries the newer view and
//     s3 does not hold it; s1 must then wait for the children itself
//     (splitView).
//
// Otherwise s1 counts s3's confirmation while the row is after every mark
// and in no child, and a finalize could hide an acknowledged row.
func TestSplitHoldsRelayedPushFromOlderView(t *testing.T) {
	for _, tc := range []struct {
		name     string
		s1Learns bool
	}{{"relayed", false}, {"learns mid-insert", true}} {
		t.Run(tc.name, func(t *testing.T) { testSplitHoldsRelayed(t, tc.s1Learns) })
	}
}

func testSplitHoldsRelayed(t *testing.T, s1Learns bool) {
	var blind, blocked, holdS3 atomic.Bool
	c := startCluster(t, 3, func(cfg *Config) {
		cfg.AckTimeout = 10 * time.Second
		cfg.SplitCheckInterval = time.Hour
		id := cfg.ID
		cfg.knobs.BlockPush = func(t metadata.Target) bool {
			return blocked.Load() && t.Kind == metadata.TargetSplit ||
				id == "s1" && holdS3.Load() && t.ServerID == "s3" ||
				!s1Learns && id != "s1" && blind.Load() && t.ServerID == "s1" // no newer view reaches s1
		}
		if id == "s1" {
			cfg.ReconcileInterval = time.Hour
			cfg.knobs.MissEvent = func(metadata.TableEvent) bool { return blind.Load() }
		}
	})
	c.createTable("s1", "cpu", 3)
	c.insertLP("s1", "cpu", lpBatch("pre", 0, 100, 10))
	_, f, _ := c.nodes["s1"].backendMetadata("cpu", "")
	blind.Store(true)
	blocked.Store(true)
	if _, err := c.nodes["s2"].SplitPartition(context.Background(), "cpu", f.Partitions[0].ID, nil); err != nil {
		t.Fatal(err)
	}
	c.waitLearnedSplit("cpu", "s2", "s3")
	// s1's push to s3 waits until s2 has relayed the row to s3.
	holdS3.Store(true)
	answer := make(chan int, 1)
	go func() { answer <- c.client("s1").do("POST", "/write?db=cpu", []byte("relayed v=1 30\n")).status }()
	waitFor(t, "s2 relaying the row to s3", func() bool {
		for _, rep := range c.nodes["s3"].store.Replicas() {
			if rows, _, err := rep.Scan(model.Query{From: math.MinInt64, To: math.MaxInt64, Series: "relayed"}); err == nil && len(rows) > 0 {
				return true
			}
		}
		return false
	})
	holdS3.Store(false)
	if status := <-answer; status != 503 {
		t.Fatalf("insert through the unaware s1, relayed to s3 by s2, with the children cut off: %d, want 503", status)
	}
	blocked.Store(false)
	blind.Store(false)
	waitFor(t, "SPLIT_FINALIZE", func() bool {
		_, f, err := c.nodes["s2"].backendMetadata("cpu", "")
		return err == nil && len(f.Partitions) == 2
	})
}

// waitLearnedSplit waits until each of servers has learned of the split of
// table's first partition: its router has the split and its pusher the
// split targets and their marks (the router's cache is updated a moment
// before; a push applied in between is at or below the marks, which the
// finalize covers, so its confirmation does not wait).
func (c *testCluster) waitLearnedSplit(table string, servers ...string) {
	c.t.Helper()
	for _, id := range servers {
		waitFor(c.t, id+" learning of the split", func() bool {
			n := c.nodes[id]
			if _, f, ok := n.router.Cached(table); !ok || f.Partitions[0].Split == nil {
				return false
			}
			for _, st := range n.ReplicaStatuses() {
				if rt := n.replica.Pusher(st.Placement); rt != nil && slices.ContainsFunc(rt.Status(), func(ts wire.TargetStatus) bool {
					return ts.Kind == string(metadata.TargetSplit)
				}) {
					return true
				}
			}
			return false
		})
	}
}
