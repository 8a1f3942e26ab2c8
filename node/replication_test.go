package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tsdb/tsdb/cluster/rpc"
	"github.com/tsdb/tsdb/cluster/wire"
	"github.com/tsdb/tsdb/http/api"
	"github.com/tsdb/tsdb/metadata"
	"github.com/tsdb/tsdb/model"
	"github.com/tsdb/tsdb/replication"
)

// lpBatch is line protocol for n rows of series "<prefix>-<i%series>" at
// times base+i, field v=i.
func lpBatch(prefix string, base int64, n, series int) []byte {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "m,s=%s-%d v=%d %d\n", prefix, i%series, i, base+int64(i))
	}
	return []byte(b.String())
}

// insertLP posts line protocol through server id and fails the test unless
// it is acknowledged.
func (c *testCluster) insertLP(id, table string, body []byte, headers ...string) {
	c.t.Helper()
	cl := c.client(id)
	r := cl.do("POST", "/write?db="+table+"&precision=ns", body, headers...)
	if r.status != 204 {
		c.t.Fatalf("insert via %s: %d %s", id, r.status, r.body)
	}
}

// replicaStates asks server id for its replicas of table.
func (c *testCluster) replicaStates(id, table string) []wire.ReplicaStatus {
	c.t.Helper()
	var resp wire.ReplicasResponse
	if err := c.rpc.Call(context.Background(), c.nodes[id].Addr(), wire.PathReplicas, wire.ReplicasRequest{Table: table, Counts: true}, &resp); err != nil {
		c.t.Fatalf("replicas of %s: %v", id, err)
	}
	return resp.Replicas
}

// converged reports whether every listed server holds exactly one replica
// of table with rows rows and the same checksum as the others.
func (c *testCluster) converged(table string, rows int64, servers ...string) bool {
	sum := ""
	for _, id := range servers {
		reps := c.replicaStates(id, table)
		if len(reps) != 1 || reps[0].Rows != rows {
			return false
		}
		if sum == "" {
			sum = reps[0].Checksum
		}
		if reps[0].Checksum != sum {
			return false
		}
	}
	return true
}

// convergedAtLeast reports whether the listed servers each hold one replica
// of table with the same checksum and at least minRows rows.
func (c *testCluster) convergedAtLeast(table string, minRows int64, servers ...string) bool {
	first := c.replicaStates(servers[0], table)
	if len(first) != 1 || first[0].Rows < minRows {
		return false
	}
	return c.converged(table, first[0].Rows, servers...)
}

func (c *testCluster) queryAll(id, table string) string {
	c.t.Helper()
	cl := c.client(id)
	r := cl.do("GET", "/api/v1/tables/"+table+"/query?limit=1000000", nil)
	if r.status != 200 {
		c.t.Fatalf("query via %s: %d %s", id, r.status, r.body)
	}
	return string(r.body)
}

// TestReplicationConverges: inserts through every server of a 3-server,
// RF 3 table reach every replica (same rows, same versions: equal
// checksums), and queries through every server give the same answer.
func TestReplicationConverges(t *testing.T) {
	c := startCluster(t, 3)
	c.createTable("s1", "cpu", 3)
	const perServer = 500
	for i, id := range []string{"s1", "s2", "s3"} {
		c.insertLP(id, "cpu", lpBatch(id, int64(i)*1_000_000, perServer, 50))
	}
	// The same keys written through two servers: last writer wins
	// everywhere.
	c.insertLP("s1", "cpu", lpBatch("shared", 5_000_000, 100, 10))
	c.insertLP("s2", "cpu", lpBatch("shared", 5_000_000, 100, 10))
	want := int64(3*perServer + 100)
	waitFor(t, "every replica converging", func() bool { return c.converged("cpu", want, "s1", "s2", "s3") })
	first := c.queryAll("s1", "cpu")
	for _, id := range []string{"s2", "s3"} {
		if got := c.queryAll(id, "cpu"); got != first {
			t.Fatalf("query via %s differs from s1's", id)
		}
	}
	var resp api.RawQueryResponse
	if err := json.Unmarshal([]byte(first), &resp); err != nil || int64(len(resp.Rows)) != want {
		t.Fatalf("%d rows, want %d (err %v)", len(resp.Rows), want, err)
	}
}

// TestReplicaCatchesUpAfterRestart: a replica stopped during inserts gets
// every row it missed once it is back; quorum inserts keep being
// acknowledged while it is down.
func TestReplicaCatchesUpAfterRestart(t *testing.T) {
	c := startCluster(t, 3, func(cfg *Config) {
		if cfg.ID == "s2" {
			cfg.AckTimeout = time.Second // for the consistency=all insert below
		}
	})
	c.createTable("s1", "cpu", 3)
	c.insertLP("s1", "cpu", lpBatch("before", 0, 300, 30))
	waitFor(t, "first convergence", func() bool { return c.converged("cpu", 300, "s1", "s2", "s3") })
	c.stop("s3")
	for i := range 5 {
		c.insertLP("s1", "cpu", lpBatch(fmt.Sprintf("down%d", i), int64(i+1)*1_000_000, 200, 20))
	}
	// all needs every replica: with s3 down it cannot be acknowledged.
	cl := c.client("s2")
	r := cl.do("POST", "/write?db=cpu", lpBatch("all", 9_000_000, 10, 10), "X-TSDB-Consistency", "all")
	if code, _ := errorOf(t, r); r.status != 503 || code != api.CodeOutcomeUnknownRows {
		t.Fatalf("consistency=all with a replica down: %d %s, want 503 %s", r.status, r.body, api.CodeOutcomeUnknownRows)
	}
	c.start("s3")
	want := int64(300 + 5*200 + 10) // the "all" rows were written by the coordinator: they may appear, and do
	waitFor(t, "s3 catching up", func() bool { return c.converged("cpu", want, "s1", "s2", "s3") })
}

// TestJoinAndLeave: a fourth server joins the partition under insert load,
// receives every row, finalizes its join and serves; then a server leaves
// and drops its data only after the others confirmed everything.
func TestJoinAndLeave(t *testing.T) {
	c := startCluster(t, 4)
	c.createTable("s1", "cpu", 3)
	_, f, _ := c.nodes["s1"].backendMetadata("cpu", "")
	p := f.Partitions[0]
	var joiner string
	for _, id := range []string{"s1", "s2", "s3", "s4"} {
		if !slices.ContainsFunc(p.Servers, func(pl metadata.Placement) bool { return pl.ServerID == id }) {
			joiner = id
		}
	}
	c.insertLP("s1", "cpu", lpBatch("pre", 0, 1000, 100))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var batches atomic.Int64
	var loadErr atomic.Value
	wg.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			cl := c.client(p.Servers[i%3].ServerID)
			r := cl.do("POST", "/write?db=cpu", lpBatch(fmt.Sprintf("load%d", i), int64(i+1)*1_000_000, 50, 10))
			if r.status != 204 {
				loadErr.Store(fmt.Sprintf("%d %s", r.status, r.body))
				return
			}
			batches.Add(1)
		}
	})
	cl := c.client("s2")
	cl.must(200, cl.do("POST", "/api/v1/tables/cpu/partitions/"+p.ID.String()+"/join", []byte(`{"server":"`+joiner+`"}`)), nil)
	waitFor(t, joiner+" finalizing its join", func() bool {
		_, f, err := c.nodes["s1"].backendMetadata("cpu", "")
		return err == nil && len(f.Partitions[0].Joining) == 0 &&
			slices.ContainsFunc(f.Partitions[0].Servers, func(pl metadata.Placement) bool { return pl.ServerID == joiner })
	})
	cancel()
	wg.Wait()
	if e := loadErr.Load(); e != nil {
		t.Fatalf("an insert failed during the join: %v", e)
	}
	want := int64(1000 + batches.Load()*50)
	all := []string{"s1", "s2", "s3", "s4"}
	waitFor(t, "four replicas converging", func() bool { return c.converged("cpu", want, all...) })
	// The joiner now serves queries.
	if got := c.queryAll(joiner, "cpu"); got != c.queryAll("s1", "cpu") {
		t.Fatal("the joiner answers differently")
	}
	// Leave: the leaver pushes what others lack, then drops its replica.
	leaver := p.Servers[0].ServerID
	cl.must(200, cl.do("POST", "/api/v1/tables/cpu/partitions/"+p.ID.String()+"/leave", []byte(`{"server":"`+leaver+`"}`)), nil)
	waitFor(t, leaver+" dropping its replica", func() bool { return len(c.replicaStates(leaver, "cpu")) == 0 })
	rest := slices.DeleteFunc(slices.Clone(all), func(s string) bool { return s == leaver })
	waitFor(t, "the other three converging", func() bool { return c.converged("cpu", want, rest...) })
}

// TestPushToStalePlacementRefused: a push naming a placement the receiver
// does not hold is refused with 409 stale_placement and changes nothing.
func TestPushToStalePlacementRefused(t *testing.T) {
	c := startCluster(t, 3)
	c.createTable("s1", "cpu", 3)
	c.insertLP("s1", "cpu", lpBatch("a", 0, 10, 10))
	waitFor(t, "convergence", func() bool { return c.converged("cpu", 10, "s1", "s2", "s3") })
	before := c.replicaStates("s2", "cpu")[0]
	err := c.rpc.Call(context.Background(), c.nodes["s2"].Addr(), wire.PathReplicate, wire.PushRequest{
		Table: "cpu", PartitionID: before.PartitionID, FromServer: "s1", FromPlacement: uuid.New(),
		ToPlacement: uuid.New(), TxnSeq: 1, Count: 0, LastSeq: 1,
	}, nil)
	var se *rpc.StatusError
	if !errors.As(err, &se) || se.Status != 409 || se.Code != api.CodeStalePlacement {
		t.Fatalf("push to an unknown placement: %v, want 409 %s", err, api.CodeStalePlacement)
	}
	after := c.replicaStates("s2", "cpu")[0]
	if after.Checksum != before.Checksum || after.HighSeq != before.HighSeq {
		t.Fatalf("the refused push changed the replica: %+v → %+v", before, after)
	}
	// A forwarded insert naming a placement that does not serve the
	// partition is "moved".
	err = c.rpc.Call(context.Background(), c.nodes["s2"].Addr(), wire.PathInsert, wire.ForwardInsertRequest{
		Table: "cpu", PartitionID: before.PartitionID, ToPlacement: uuid.New(), TxnSeq: 1, Count: 1,
		Rows: replication.AppendRows(nil, []model.Row{{Time: 1, Series: "x", Fields: []model.Field{{Name: "v", Value: model.Float(1)}}}}),
	}, nil)
	if !errors.As(err, &se) || se.Status != 409 || se.Code != api.CodeMoved {
		t.Fatalf("forward to a placement that does not serve: %v, want 409 %s", err, api.CodeMoved)
	}
}

// TestCorruptPushRefused: a push whose rows or snapshot chunk do not
// decode is answered 400 bad_request (the body is at fault, not the
// server), and changes nothing.
func TestCorruptPushRefused(t *testing.T) {
	c := startCluster(t, 3)
	c.createTable("s1", "cpu", 3)
	c.insertLP("s1", "cpu", lpBatch("a", 0, 10, 10))
	waitFor(t, "convergence", func() bool { return c.converged("cpu", 10, "s1", "s2", "s3") })
	before := c.replicaStates("s2", "cpu")[0]
	for name, body := range map[string][]byte{
		"rows":  []byte("R\x01\x05garbage"),
		"chunk": []byte("K\x01\x09\x00\x00\x00\x00a\x00\x01\x02\x03\x01\x00"),
	} {
		err := c.rpc.Call(context.Background(), c.nodes["s2"].Addr(), wire.PathReplicate, wire.PushRequest{
			Table: "cpu", PartitionID: before.PartitionID, FromServer: "s1", FromPlacement: uuid.New(),
			ToPlacement: before.Placement, TxnSeq: 1, Count: 1, LastSeq: 1, Rows: body,
		}, nil)
		var se *rpc.StatusError
		if !errors.As(err, &se) || se.Status != 400 || se.Code != "bad_request" {
			t.Fatalf("corrupt %s: %v, want 400 bad_request", name, err)
		}
	}
	after := c.replicaStates("s2", "cpu")[0]
	if after.Checksum != before.Checksum || after.HighSeq != before.HighSeq {
		t.Fatalf("a corrupt push changed the replica: %+v → %+v", before, after)
	}
}

// TestStaleFrontEndRedirected: a front end whose METADATA is stale (its
// watch misses every notification) routes inserts to a server that left
// the partition; the "moved" answer makes it reload the METADATA and route
// again, and the client sees only successes.
func TestStaleFrontEndRedirected(t *testing.T) {
	c := startCluster(t, 4, func(cfg *Config) {
		if cfg.ID == "fe" {
			cfg.knobs.MissEvent = func(metadata.TableEvent) bool { return true }
		}
	})
	c.createTable("s1", "cpu", 3)
	c.start("fe") // a front end holding no replica, whose watch misses everything
	_, f, _ := c.nodes["s1"].backendMetadata("cpu", "")
	p := f.Partitions[0]
	c.insertLP("fe", "cpu", lpBatch("warm", 0, 10, 10)) // fe caches the METADATA now
	_, stale, _ := c.nodes["fe"].router.Cached("cpu")
	// The fourth server joins, then one of the first three leaves: its
	// replica is dropped, and fe's cached METADATA still lists it.
	var outsider string
	for _, id := range []string{"s1", "s2", "s3", "s4"} {
		if !slices.ContainsFunc(p.Servers, func(pl metadata.Placement) bool { return pl.ServerID == id }) {
			outsider = id
		}
	}
	cl := c.client("s1")
	path := "/api/v1/tables/cpu/partitions/" + p.ID.String()
	cl.must(200, cl.do("POST", path+"/join", []byte(`{"server":"`+outsider+`"}`)), nil)
	waitFor(t, outsider+" finalizing its join", func() bool {
		_, f, err := c.nodes["s1"].backendMetadata("cpu", "")
		return err == nil && len(f.Partitions[0].Joining) == 0 && len(f.Partitions[0].Servers) == 4
	})
	leaver := p.Servers[0].ServerID
	cl.must(200, cl.do("POST", path+"/leave", []byte(`{"server":"`+leaver+`"}`)), nil)
	waitFor(t, leaver+" dropping its replica", func() bool { return len(c.replicaStates(leaver, "cpu")) == 0 })
	if _, cached, _ := c.nodes["fe"].router.Cached("cpu"); cached.TxnSeq != stale.TxnSeq {
		t.Fatal("fe's METADATA is not stale: the test would prove nothing")
	}
	// fe tries the leaver first a third of the time: among 30 inserts it
	// does (or the chance it never does is 1 in 190,000), and every insert
	// must succeed.
	for i := range 30 {
		c.insertLP("fe", "cpu", lpBatch(fmt.Sprintf("after%d", i), int64(i+1)*1_000_000, 5, 5))
	}
	if _, cached, _ := c.nodes["fe"].router.Cached("cpu"); cached.TxnSeq <= stale.TxnSeq {
		t.Fatalf("fe still routes with txnseq %d: it was never redirected", cached.TxnSeq)
	}
	rest := slices.DeleteFunc([]string{"s1", "s2", "s3", "s4"}, func(s string) bool { return s == leaver })
	waitFor(t, "the remaining replicas converging", func() bool { return c.converged("cpu", 10+30*5, rest...) })
}

// TestLocalMovedRefreshes: a front end whose own replica stopped serving
// (UNLOAD after it left the partition) while its cached METADATA still lists
// it gets "moved" from its own replica, reloads, and routes the insert to
// the remaining servers.
func TestLocalMovedRefreshes(t *testing.T) {
	c := startCluster(t, 4)
	c.createTable("s1", "cpu", 3)
	_, f, _ := c.nodes["s1"].backendMetadata("cpu", "")
	p := f.Partitions[0]
	var outsider string
	for _, id := range []string{"s1", "s2", "s3", "s4"} {
		if !slices.ContainsFunc(p.Servers, func(pl metadata.Placement) bool { return pl.ServerID == id }) {
			outsider = id
		}
	}
	cl := c.client(outsider)
	path := "/api/v1/tables/cpu/partitions/" + p.ID.String()
	cl.must(200, cl.do("POST", path+"/join", []byte(`{"server":"`+outsider+`"}`)), nil)
	waitFor(t, "the join finalized", func() bool {
		_, f, err := c.nodes["s1"].backendMetadata("cpu", "")
		return err == nil && len(f.Partitions[0].Joining) == 0 && len(f.Partitions[0].Servers) == 4
	})
	leaver := c.nodes[p.Servers[0].ServerID]
	_, before, _ := leaver.router.Cached("cpu")
	cl.must(200, cl.do("POST", path+"/leave", []byte(`{"server":"`+leaver.ID()+`"}`)), nil)
	waitFor(t, "the leaver's replica unloading or dropped", func() bool {
		st, ok := leaver.replica.StatusOf(p.Servers[0].PlacementID)
		return !ok || st.Discovery.Status == metadata.StatusUnload
	})
	// Put the leaver's router back on the METADATA that still lists it.
	cfg, _, _ := leaver.router.Cached("cpu")
	leaver.router.Forget("cpu")
	leaver.router.Update(cfg, before)
	c.insertLP(leaver.ID(), "cpu", lpBatch("late", 0, 5, 5))
	if _, now, _ := leaver.router.Cached("cpu"); now.TxnSeq <= before.TxnSeq {
		t.Fatal("the leaver kept its stale METADATA: it was not redirected")
	}
}

// TestQuorumRead: a row acknowledged by a quorum that has not reached s3
// (pushes to s3 are blocked) is missing from a plain read through s3, and
// present in a quorum read through s3, which first has its peers push it
// what they hold (ending their backoff).
func TestQuorumRead(t *testing.T) {
	var blocked atomic.Bool
	blocked.Store(true)
	c := startCluster(t, 3, func(cfg *Config) {
		cfg.knobs.BlockPush = func(t metadata.Target) bool { return t.ServerID == "s3" && blocked.Load() }
	})
	c.createTable("s1", "cpu", 3)
	c.insertLP("s1", "cpu", []byte("q v=1 1000\n"))
	cl := c.client("s3")
	read := func(consistency string) string {
		r := cl.do("GET", "/api/v1/tables/cpu/query?series=q", nil, "X-TSDB-Consistency", consistency)
		if r.status != 200 {
			t.Fatalf("read (%s) via s3: %d %s", consistency, r.status, r.body)
		}
		return string(r.body)
	}
	if got := read("one"); strings.Contains(got, `"q"`) {
		t.Fatalf("s3 has the row although every push to it fails: %s", got)
	}
	blocked.Store(false)
	if got := read("quorum"); !strings.Contains(got, `"q"`) {
		t.Fatalf("a quorum read misses a quorum-acknowledged row: %s", got)
	}
	r := cl.do("GET", "/api/v1/tables/cpu/query", nil, "X-TSDB-Consistency", "most")
	if r.status != 400 || !strings.Contains(string(r.body), "X-TSDB-Consistency") {
		t.Fatalf("bad consistency on a read: %d %s", r.status, r.body)
	}
}

// TestLargeInsertAndQueryThroughFrontEnd: an insert near the body limit
// and its answer pass through a front end holding no replica: the
// forwarded insert is cut into parts under the internal body limit (the
// same limit, since servers share it), and the replicas' pushes of such
// large rows stay under it too.
func TestLargeInsertAndQueryThroughFrontEnd(t *testing.T) {
	const limit = 2 << 20
	c := startCluster(t, 3, func(cfg *Config) { cfg.MaxBodyBytes = limit })
	c.createTable("s1", "cpu", 3)
	c.start("fe")
	big := strings.Repeat("x", 10_000)
	var b strings.Builder
	for i := 0; b.Len() < limit*9/10; i++ {
		fmt.Fprintf(&b, "m,s=%d note=\"%s\" %d\n", i, big, i)
	}
	rows := strings.Count(b.String(), "\n")
	c.insertLP("fe", "cpu", []byte(b.String()))
	cl := c.client("fe")
	// A quorum read: the insert was acknowledged by two of the three
	// replicas, and a read of one replica may meet the third before the
	// pushes reach it.
	r := cl.do("GET", "/api/v1/tables/cpu/query?limit=1000000", nil, api.HeaderConsistency, api.ConsistencyQuorum)
	var resp api.RawQueryResponse
	if r.status != 200 || json.Unmarshal(r.body, &resp) != nil || len(resp.Rows) != rows {
		t.Fatalf("query via the front end: %d, %d rows of %d (%d bytes)", r.status, len(resp.Rows), rows, len(r.body))
	}
	waitFor(t, "the replicas converging", func() bool { return c.converged("cpu", int64(rows), "s1", "s2", "s3") })
}

// TestFrontEndAheadOfItsOwnReplicas: a server whose table watch has not
// delivered the table's creation yet (the event is missed here) receives
// an insert and a query for it. Its router loads the METADATA on demand and
// routes to the server's own replica, which does not exist yet: the server
// catches up with the newer view first (rule 8) instead of answering
// "moved" until the front end gives up.
func TestFrontEndAheadOfItsOwnReplicas(t *testing.T) {
	c := startCluster(t, 3, func(cfg *Config) {
		if cfg.ID == "s3" {
			cfg.ReconcileInterval = time.Hour
			cfg.knobs.MissEvent = func(metadata.TableEvent) bool { return true }
		}
	})
	c.createTable("s1", "cpu", 3)
	c.insertLP("s3", "cpu", []byte("m v=1 1\n"))
	if got := c.queryAll("s3", "cpu"); !strings.Contains(got, `"m"`) {
		t.Fatalf("query via s3: %s", got)
	}
}
