package node

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/metadata"
)

// The master's duties on real servers (real etcd, real pebble, loopback):
// rebalancing when servers join, drain, offline/online, the health report
// behind `tsdb admin stale`, metadata servers kept at N live, and
// SPLIT_ABORT. Pre-split has its own file (presplit_test.go).

// masterOn turns the master's rebalancing back on (startNode turns it off
// for the tests of other features) and shortens its tick.
func masterOn(cfg *Config) {
	cfg.NoRebalance = false
	cfg.MasterTick = 200 * time.Millisecond
	cfg.LifecycleTick = 100 * time.Millisecond
}

// health asks server id for the health report.
func (c *testCluster) health(id string) api.HealthResponse {
	c.t.Helper()
	var h api.HealthResponse
	c.client(id).must(200, c.client(id).do("GET", "/api/v1/cluster/health", nil), &h)
	return h
}

// problemKinds lists the kinds of a report's problems with their servers
// or partitions, for messages and checks.
func problemKinds(h api.HealthResponse) []string {
	var out []string
	for _, p := range h.Problems {
		out = append(out, p.Kind)
	}
	return out
}

// hasProblem reports whether h lists a problem of kind about server (any
// server when empty).
func hasProblem(h api.HealthResponse, kind, server string) bool {
	return slices.ContainsFunc(h.Problems, func(p api.Problem) bool { return p.Kind == kind && (server == "" || p.Server == server) })
}

// splitInto splits table's partitions at base + i·step for i in 1..k-1 by
// hand, each split finalized (and its joins finished) before the next: k-1
// more partitions.
func (c *testCluster) splitInto(id, table string, base, step int64, k int) {
	c.t.Helper()
	n := c.nodes[id]
	for i := 1; i < k; i++ {
		at := base + int64(i)*step
		_, f, err := n.router.Table(context.Background(), table)
		if err != nil {
			c.t.Fatal(err)
		}
		before := len(f.Partitions)
		p, ok := f.Find(at)
		if !ok {
			c.t.Fatalf("no partition covers %d", at)
		}
		if _, err := n.SplitPartition(context.Background(), table, p.ID, &at); err != nil {
			c.t.Fatalf("split at %d: %v", at, err)
		}
		waitFor(c.t, fmt.Sprintf("the split at %d to finalize", at), func() bool {
			if err := n.router.Refresh(context.Background(), table); err != nil {
				return false
			}
			_, f, err := n.router.Table(context.Background(), table)
			return err == nil && len(f.Partitions) == before+1 &&
				!slices.ContainsFunc(f.Partitions, func(p metadata.Partition) bool { return p.Split != nil || len(p.Joining) > 0 })
		})
	}
}

// totalRows is the number of rows of table counted through server id.
func (c *testCluster) totalRows(id, table string) (int64, error) {
	counts, err := c.seriesCounts(id, table)
	var n int64
	for _, v := range counts {
		n += v
	}
	return n, err
}

// checkRowsEverywhere checks every running server answers want rows.
func (c *testCluster) checkRowsEverywhere(table string, want int64, skip ...string) {
	c.t.Helper()
	for id := range c.nodes {
		if slices.Contains(skip, id) {
			continue
		}
		got, err := c.totalRows(id, table)
		if err != nil || got != want {
			c.t.Errorf("rows via %s: %d, %v; want %d", id, got, err, want)
		}
	}
}

// settledAtRF reports whether every partition of table has exactly rf
// servers, all live in h, nothing joining and no split.
func settledAtRF(f *metadata.File, rf int, h api.HealthResponse) bool {
	live := map[string]bool{}
	for _, s := range h.Servers {
		live[s.ID] = s.Live
	}
	for _, p := range f.Partitions {
		if p.Split != nil || len(p.Joining) > 0 || len(p.Servers) != rf {
			return false
		}
		for _, pl := range p.Servers {
			if !live[pl.ServerID] {
				return false
			}
		}
	}
	return true
}

// currentFile reads table's current METADATA through server id.
func (c *testCluster) currentFile(id, table string) *metadata.File {
	c.t.Helper()
	n := c.nodes[id]
	if err := n.router.Refresh(context.Background(), table); err != nil {
		c.t.Fatal(err)
	}
	_, f, err := n.router.Table(context.Background(), table)
	if err != nil {
		c.t.Fatal(err)
	}
	return f
}

// TestRebalanceOnJoin: a table of five partitions at RF 3 on three
// servers; a 4th and a 5th server join. The master moves replicas (join
// new, then remove old) until every server holds within one of the mean
// (3), every partition is back at exactly 3 live
// servers, and every row is answered through every server.
func TestRebalanceOnJoin(t *testing.T) {
	c := startCluster(t, 3, masterOn)
	c.createTable("s1", "rb", 3)
	const base = int64(1_700_000_000) * 1e9
	c.insertSpread("s1", "rb", base, 600)
	c.splitInto("s1", "rb", base, 120e9, 5)
	want, err := c.totalRows("s1", "rb")
	if err != nil || want != 600 {
		t.Fatalf("setup: %d rows, %v", want, err)
	}

	c.start("s4")
	c.start("s5")
	var h api.HealthResponse
	waitLong(t, 3*time.Minute, "the partitions to rebalance onto s4 and s5", func() bool {
		time.Sleep(200 * time.Millisecond)
		h = c.health("s1")
		return h.Balanced && len(h.Problems) == 0 && settledAtRF(c.currentFile("s1", "rb"), 3, h)
	})
	for _, s := range h.Servers {
		if math.Abs(float64(s.Partitions)-h.Mean) > 1 || h.Mean != 3 {
			t.Errorf("server %s holds %d partition replicas; mean %.1f (15 over 5 servers), want within one of it", s.ID, s.Partitions, h.Mean)
		}
	}
	// The moved-from replicas drop once their data is pushed (rule 3);
	// the data stays whole throughout.
	c.checkRowsEverywhere("rb", want)
	waitFor(t, "every server to hold only its assigned replicas", func() bool {
		total := 0
		for _, n := range c.nodes {
			for _, st := range n.ReplicaStatuses() {
				if st.Table == "rb" {
					total++
				}
			}
		}
		return total == 15
	})
}

// TestDrainOfflineAndStale: on four servers (RF 3, five partitions,
// balanced), the health report behind `tsdb admin stale` is clean; it
// reports each fault the test induces, and is clean again after each
// repair:
//   - drain s2: the master moves everything off it (s2 ends with no
//     placement and no local replica, nothing lost, the report lists the
//     drain until undone); undrain and `rebalance` bring it back into use;
//   - offline a partition: inserts into it and queries of it get 503
//     partition_offline, the report lists it, online undoes it;
//   - stop s3 (its lease goes): the report lists the expired lease and the
//     under-replicated partitions; the master replaces s3 everywhere, in
//     the metadata servers too; s3 restarted drops its stale copies.
func TestDrainOfflineAndStale(t *testing.T) {
	c := startCluster(t, 4, masterOn, func(cfg *Config) { cfg.DeadAfter = 10 * time.Second })
	c.createTable("s1", "st", 3)
	const base = int64(1_700_000_000) * 1e9
	c.insertSpread("s1", "st", base, 600)
	c.splitInto("s1", "st", base, 120e9, 5)
	cl := c.client("s1")
	cl.must(202, cl.do("POST", "/api/v1/cluster/rebalance", nil), nil)
	clean := func(what string) api.HealthResponse {
		t.Helper()
		var h api.HealthResponse
		deadline := time.Now().Add(3 * time.Minute)
		for {
			h = c.health("s1")
			if len(h.Problems) == 0 && h.Balanced {
				return h
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out after 3m waiting for %s: balanced=%v problems=%+v servers=%+v\npartitions=%+v",
					what, h.Balanced, h.Problems, h.Servers, c.currentFile("s1", "st").Partitions)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	h := clean("a clean, balanced report")
	want := int64(600)

	// Drain s2.
	var dr api.DrainResponse
	cl.must(200, cl.do("POST", "/api/v1/servers/s2/drain", nil), &dr)
	if !dr.Draining || dr.Since.IsZero() {
		t.Fatalf("drain answer %+v", dr)
	}
	h = c.health("s1")
	if !hasProblem(h, api.ProblemDraining, "s2") {
		t.Errorf("report during the drain lacks it: %v", problemKinds(h))
	}
	waitLong(t, 3*time.Minute, "s2 to drain", func() bool {
		time.Sleep(200 * time.Millisecond)
		h = c.health("s1")
		i := slices.IndexFunc(h.Servers, func(s api.ServerHealth) bool { return s.ID == "s2" })
		return i >= 0 && h.Servers[i].Partitions == 0 && len(c.nodes["s2"].ReplicaStatuses()) == 0
	})
	if !hasProblem(h, api.ProblemDraining, "s2") || len(h.Problems) != 1 {
		t.Errorf("report after the drain: %+v, want only s2's drain", h.Problems)
	}
	for _, id := range c.currentFile("s1", "st").Partitions {
		if len(id.Servers) != 3 {
			t.Errorf("partition %s has %d servers after the drain", id.ID, len(id.Servers))
		}
	}
	c.checkRowsEverywhere("st", want)
	cl.must(200, cl.do("DELETE", "/api/v1/servers/s2/drain", nil), &dr)
	cl.must(202, cl.do("POST", "/api/v1/cluster/rebalance", nil), nil)
	h = clean("s2 back in use after undrain and rebalance")
	if i := slices.IndexFunc(h.Servers, func(s api.ServerHealth) bool { return s.ID == "s2" }); i < 0 || h.Servers[i].Partitions == 0 {
		t.Errorf("s2 holds nothing after the rebalance: %+v", h.Servers)
	}

	// Offline and online a partition.
	f := c.currentFile("s1", "st")
	p := f.Partitions[2]
	path := fmt.Sprintf("/api/v1/tables/st/partitions/%s/", p.ID)
	cl.must(200, cl.do("POST", path+"offline", nil), nil)
	waitFor(t, "every server to see the partition offline", func() bool {
		for _, n := range c.nodes {
			_, f, ok := n.router.Cached("st")
			if q, found := f.Partition(p.ID); !ok || !found || !q.Offline {
				return false
			}
		}
		return true
	})
	in := []byte(fmt.Sprintf("m,s=x v=1 %d\n", *p.Begin+1))
	r := c.client("s3").do("POST", "/write?db=st&precision=ns", in)
	if code, _ := errorOf(t, r); r.status != 503 || code != api.CodeOffline {
		t.Errorf("insert into the offline partition: %d %s, want 503 %s", r.status, r.body, api.CodeOffline)
	}
	r = c.client("s4").do("GET", fmt.Sprintf("/api/v1/tables/st/query?agg=count&fields=v&from=%d&to=%d", *p.Begin, *p.End), nil)
	if r.status != 503 || !strings.Contains(string(r.body), api.CodeOffline) {
		t.Errorf("query of the offline partition: %d %s, want 503 %s", r.status, r.body, api.CodeOffline)
	}
	h = c.health("s1")
	if !slices.ContainsFunc(h.Problems, func(q api.Problem) bool {
		return q.Kind == api.ProblemOffline && q.Partition != nil && *q.Partition == p.ID
	}) {
		t.Errorf("report lacks the offline partition: %+v", h.Problems)
	}
	cl.must(200, cl.do("POST", path+"online", nil), nil)
	waitFor(t, "the insert to work again", func() bool {
		return c.client("s3").do("POST", "/write?db=st&precision=ns", in).status == 204
	})
	want++
	clean("a clean report after online")
	c.checkRowsEverywhere("st", want)

	// Stop s3: an expired lease and under-replicated partitions, then the
	// master's repair.
	old := map[uuid.UUID]bool{}
	for _, st := range c.nodes["s3"].ReplicaStatuses() {
		old[st.Placement] = true
	}
	c.stop("s3")
	delete(c.nodes, "s3")
	h = c.health("s1")
	if !hasProblem(h, api.ProblemLeaseExpired, "s3") || !hasProblem(h, api.ProblemUnderReplicated, "") {
		t.Errorf("report right after s3 stopped: %+v; want lease_expired s3 and under_replicated", h.Problems)
	}
	h = clean("the master to repair s3's absence")
	for _, s := range h.Servers {
		if s.ID == "s3" {
			t.Errorf("s3 is still in the report after the repair: %+v", s)
		}
	}
	cfg := c.config("st")
	if len(cfg.MetadataServers) != 3 || slices.Contains(cfg.MetadataServers, "s3") {
		t.Errorf("metadata servers after the repair: %v, want 3 without s3", cfg.MetadataServers)
	}
	c.checkRowsEverywhere("st", want)

	// s3 comes back after it was removed: its old copies are UNLOAD,
	// pushed to the partitions' servers and dropped (the rebalance its
	// return starts may give it new placements); the report ends clean.
	if len(old) == 0 {
		t.Fatal("setup: s3 held no replica before it stopped")
	}
	c.start("s3")
	waitFor(t, "the returning s3 to drop its stale copies", func() bool {
		return !slices.ContainsFunc(c.nodes["s3"].ReplicaStatuses(), func(st ReplicaStatus) bool { return old[st.Placement] })
	})
	clean("a clean report with s3 back")
	c.checkRowsEverywhere("st", want)
}

// TestSplitAbortWithoutChildMajority: a split whose child has no live
// majority cannot finalize; after DeadAfter the master commits SPLIT_ABORT.
// The parent serves on (inserts into the child's range succeed), the other
// child's partial copy drops, and no row is lost.
func TestSplitAbortWithoutChildMajority(t *testing.T) {
	var blocked atomic.Bool
	blocked.Store(true)
	c := startCluster(t, 3, func(cfg *Config) {
		// The master's repairs and aborts, without rebalancing (it would
		// trim the RF 1 partition's second server under moveTo).
		cfg.MasterTick = 200 * time.Millisecond
		cfg.LifecycleTick = 100 * time.Millisecond
		cfg.DeadAfter = 2 * time.Second
		if cfg.ID == "s1" {
			// s1's split pushes wait, so the split cannot finalize before
			// s3 is gone.
			cfg.knobs.BlockPush = func(tg metadata.Target) bool { return blocked.Load() && tg.Kind == metadata.TargetSplit }
		}
	})
	c.createTable("s1", "ab", 1)
	f := c.currentFile("s1", "ab")
	if f.Partitions[0].Servers[0].ServerID != "s1" {
		// RF 1 picks one server; the test needs it to be s1.
		moveTo(t, c, "ab", f.Partitions[0].ID, "s1")
	}
	const base = int64(1_700_000_000) * 1e9
	c.insertSpread("s1", "ab", base, 200)
	pid := c.currentFile("s1", "ab").Partitions[0].ID
	at := base + 100e9
	_, err := c.nodes["s1"].RequestChange(context.Background(), "ab", func(_ metadata.TableConfig, f *metadata.File) (metadata.Op, error) {
		return metadata.Op{Type: metadata.OpSplitBegin, SplitBegin: &metadata.SplitBeginOp{PartitionID: pid, Points: []int64{at},
			Children: []metadata.SplitChild{
				{ID: uuid.New(), Servers: []metadata.Placement{{ServerID: "s2", PlacementID: uuid.New()}}},
				{ID: uuid.New(), Servers: []metadata.Placement{{ServerID: "s3", PlacementID: uuid.New()}}},
			}}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "s2 to load its child", func() bool {
		return slices.ContainsFunc(c.nodes["s2"].ReplicaStatuses(), func(st ReplicaStatus) bool { return st.Table == "ab" })
	})
	c.stop("s3")
	delete(c.nodes, "s3")
	waitFor(t, "the master to abort the split", func() bool {
		time.Sleep(100 * time.Millisecond)
		p := c.currentFile("s1", "ab").Partitions
		return len(p) == 1 && p[0].ID == pid && p[0].Split == nil
	})
	blocked.Store(false)
	c.insertLP("s2", "ab", []byte(fmt.Sprintf("m,s=late v=1 %d\n", at+1)))
	waitFor(t, "s2's partial child copy to drop", func() bool {
		return !slices.ContainsFunc(c.nodes["s2"].ReplicaStatuses(), func(st ReplicaStatus) bool { return st.Table == "ab" })
	})
	c.checkRowsEverywhere("ab", 201)
}

// moveTo makes server the only server of a partition of an RF 1 table
// (join, wait for the join to finalize, remove the other).
func moveTo(t *testing.T, c *testCluster, table string, pid uuid.UUID, server string) {
	t.Helper()
	cl := c.client(server)
	body, _ := json.Marshal(api.ServerChangeRequest{Server: server})
	cl.must(200, cl.do("POST", fmt.Sprintf("/api/v1/tables/%s/partitions/%s/join", table, pid), body), nil)
	var other string
	waitFor(t, "the join to finalize", func() bool {
		p, _ := c.currentFile(server, table).Partition(pid)
		for _, pl := range p.Servers {
			if pl.ServerID != server {
				other = pl.ServerID
			}
		}
		return len(p.Joining) == 0 && len(p.Servers) == 2
	})
	body, _ = json.Marshal(api.ServerChangeRequest{Server: other})
	cl.must(200, cl.do("POST", fmt.Sprintf("/api/v1/tables/%s/partitions/%s/leave", table, pid), body), nil)
}
