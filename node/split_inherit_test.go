package node

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/metadata"
)

// TestSplitChildAfterParentDropCopiesNothing (issue 16, item 3): RF 3 on
// 3 servers, a split whose children are on the parents' servers. Each
// child shares its local parent's rows, so its siblings need nothing from
// it but its own writes: they hold the parent's rows from the parents'
// pushes. The children's pushers are held back (HoldInherited) until
// every parent replica was dropped, the order a loaded cluster usually
// sees (a parent drops once its targets confirmed everything, before its
// children serve). The dropped parents' records must still answer that
// the siblings hold the rows: no row snapshot is started, and every row
// is in the children once, written before and after the split.
func TestSplitChildAfterParentDropCopiesNothing(t *testing.T) {
	var hold atomic.Bool
	hold.Store(true)
	logs := newLogRecorder()
	c := startCluster(t, 3, func(cfg *Config) {
		cfg.knobs.HoldInherited = func(uuid.UUID) bool { return hold.Load() }
		cfg.Logger = slog.New(logs).With("test_node", cfg.ID)
	})
	c.createTable("s1", "cpu", 3)
	c.insertLP("s1", "cpu", lpBatch("pre", 0, 100, 10)) // times 0..99
	parent := c.currentFile("s1", "cpu").Partitions[0]
	children := splitChildren(2, "s1", "s2", "s3")
	c.beginSplit("s2", "cpu", parent.ID, 50, children)
	for id, n := range c.nodes {
		waitFor(t, id+" dropping the parent and serving both children", func() bool {
			serving := 0
			for _, st := range n.ReplicaStatuses() {
				if st.PartitionID == parent.ID {
					return false
				}
				if st.Discovery.Status == metadata.StatusServe {
					serving++
				}
			}
			return serving == 2 && len(n.store.Replicas()) == 2
		})
	}
	hold.Store(false)
	c.insertLP("s3", "cpu", []byte("after v=1 10\nafter v=1 70\n"))
	for _, ch := range children {
		for _, pl := range ch.Servers {
			c.waitReplicaRows(pl, 51)
		}
	}
	// Each child's siblings confirmed the inherited rows without a push.
	for _, ch := range children {
		for _, pl := range ch.Servers {
			waitFor(t, pl.ServerID+"'s child confirmed by its siblings", func() bool {
				rep, _ := c.nodes[pl.ServerID].store.Replica(pl.PlacementID)
				for _, sib := range ch.Servers {
					if sib != pl && rep.Confirmed(sib.PlacementID) < 1 {
						return false
					}
				}
				return true
			})
		}
	}
	if n := rowSnapshotRows(logs); n != 0 {
		t.Fatalf("row snapshots moved %d rows: a child did not count its dropped parent's deliveries", n)
	}
	c.checkRowsEverywhere("cpu", 102)
}

// TestSplitPushAliasedToDroppedParent (issue 16, item 3): RF 3 on 3
// servers, a split whose children are on the parents' servers, and s1's
// pushes to the child on s2 blocked until the parent replicas on s2 and
// s3 were dropped. s1's parent replica then reaches the child on s2 for
// the first time: the parent replica there that shared the child's rows
// is gone, but its rows in the child's range stayed, and the answer to
// the probe still names it (its departed record), so s1 confirms the child
// up to what it confirmed to that replica instead of sending a row
// snapshot of the child's range.
func TestSplitPushAliasedToDroppedParent(t *testing.T) {
	children := splitChildren(2, "s1", "s2", "s3")
	onS2 := map[uuid.UUID]bool{}
	for _, ch := range children {
		onS2[ch.Servers[1].PlacementID] = true
	}
	var blocked atomic.Bool
	blocked.Store(true)
	logs := newLogRecorder()
	c := startCluster(t, 3, func(cfg *Config) {
		if cfg.ID == "s1" {
			// Every push to s2's children, whatever the target's kind
			// (split, then replica once the split finalized).
			cfg.knobs.BlockPush = func(t metadata.Target) bool { return blocked.Load() && onS2[t.PlacementID] }
		}
		// Logs truncated as soon as every target confirmed: a child
		// starting from cursor 0 would take a row snapshot.
		cfg.knobs.TruncateMin = 1
		cfg.Logger = slog.New(logs).With("test_node", cfg.ID)
	})
	c.createTable("s1", "cpu", 3)
	c.insertLP("s1", "cpu", lpBatch("pre", 0, 100, 10)) // times 0..99
	waitFor(t, "the parent's replicas converged", func() bool { return c.converged("cpu", 100, "s1", "s2", "s3") })
	for id := range c.nodes {
		waitFor(t, id+"'s log truncated", func() bool { return c.localReplica(id, "cpu").LogStart() > 1 })
	}
	parent := c.currentFile("s1", "cpu").Partitions[0]
	c.beginSplit("s2", "cpu", parent.ID, 50, children)
	holdsParent := func(id string) bool {
		for _, r := range c.nodes[id].store.Replicas() {
			if r.Info().PartitionID == parent.ID {
				return true
			}
		}
		return false
	}
	for _, id := range []string{"s2", "s3"} {
		waitFor(t, id+" dropping its parent replica", func() bool { return !holdsParent(id) })
	}
	if !holdsParent("s1") {
		t.Fatal("s1 dropped its parent replica with its pushes to s2's children blocked")
	}
	blocked.Store(false)
	waitFor(t, "s1 dropping its parent replica", func() bool { return !holdsParent("s1") })
	for _, ch := range children {
		for _, pl := range ch.Servers {
			c.waitReplicaRows(pl, 50)
		}
	}
	// Every parent's push to a remote child starts as a row snapshot (the
	// parents' logs are truncated), which the first answer naming a
	// sharer passes without a row.
	if n := rowSnapshotRows(logs); n != 0 {
		t.Fatalf("row snapshots moved %d rows: the dropped parent replica on s2 was not named as the child's sharer", n)
	}
	c.insertLP("s3", "cpu", []byte("after v=1 10\nafter v=1 70\n"))
	waitFor(t, "every server answering 102 rows", func() bool {
		for id := range c.nodes {
			if n, err := c.totalRows(id, "cpu"); err != nil || n != 102 {
				return false
			}
		}
		return true
	})
}

// rowSnapshotRows sums the rows the row snapshots logged as ended moved.
func rowSnapshotRows(logs *logRecorder) int {
	logs.mu.Lock()
	defer logs.mu.Unlock()
	n := 0
	for _, l := range *logs.lines {
		switch l.msg {
		case "row snapshot done", "row snapshot passed", "row snapshot stopped":
			rows, err := strconv.Atoi(l.attrs["rows"])
			if err != nil {
				panic(fmt.Sprintf("%s without a row count: %v", l.msg, l.attrs))
			}
			n += rows
		}
	}
	return n
}

// splitChildren returns n split children with a new placement on each of
// servers, in that order.
func splitChildren(n int, servers ...string) []metadata.SplitChild {
	children := make([]metadata.SplitChild, n)
	for i := range children {
		children[i].ID = uuid.New()
		for _, s := range servers {
			children[i].Servers = append(children[i].Servers, metadata.Placement{ServerID: s, PlacementID: uuid.New()})
		}
	}
	return children
}

// beginSplit commits SPLIT_BEGIN of partition pid of table at point, into
// children, through server via.
func (c *testCluster) beginSplit(via, table string, pid uuid.UUID, point int64, children []metadata.SplitChild) {
	c.t.Helper()
	_, err := c.nodes[via].RequestChange(context.Background(), table, func(metadata.TableConfig, *metadata.File) (metadata.Op, error) {
		return metadata.Op{Type: metadata.OpSplitBegin, SplitBegin: &metadata.SplitBeginOp{
			PartitionID: pid, Points: []int64{point}, Children: children,
		}}, nil
	})
	if err != nil {
		c.t.Fatal(err)
	}
}

// waitReplicaRows waits until the replica of placement pl holds want rows.
func (c *testCluster) waitReplicaRows(pl metadata.Placement, want int64) {
	c.t.Helper()
	waitFor(c.t, fmt.Sprintf("%s's replica %s holding %d rows", pl.ServerID, pl.PlacementID, want), func() bool {
		rep, ok := c.nodes[pl.ServerID].store.Replica(pl.PlacementID)
		if !ok {
			return false
		}
		sum, err := rep.Checksum()
		return err == nil && sum.Rows == want
	})
}
